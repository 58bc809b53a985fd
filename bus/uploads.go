package bus

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentbus/agentbus/subjects"
)

// Uploaded documents wait in a JetStream object store between the
// gateway that received them and the ingest step that indexes them: a
// step message carries only their names, so an upload of any size never
// meets NATS's message size limit, is replicated like every stream, and
// survives the death of any process until it is indexed.

// UploadsMaxAge bounds how long an upload waits for its ingest step; one
// still there after it is dropped, and its step fails saying so.
const UploadsMaxAge = 7 * 24 * time.Hour

// ErrUploadTooLarge: an upload is larger than the reader's bound.
var ErrUploadTooLarge = errors.New("bus: upload larger than allowed")

// UploadsStore is the configuration of subjects.ObjectUploads for a
// replication factor.
func UploadsStore(replicas int) jetstream.ObjectStoreConfig {
	return jetstream.ObjectStoreConfig{
		Bucket: subjects.ObjectUploads, Description: "agentbus uploaded documents waiting to be indexed",
		TTL: UploadsMaxAge, Storage: jetstream.FileStorage, Replicas: replicas,
	}
}

// UploadName is the object name of an upload's n-th file:
// "<tenant>/<upload>/<n>". The tenant prefix keeps one tenant's step from
// naming another's files: an ingest agent reads only names under its
// step's tenant.
func UploadName(tenant, upload string, n int) (string, error) {
	if err := subjects.ValidTenant(tenant); err != nil {
		return "", err
	}
	if err := subjects.ValidWorkflow(upload); err != nil {
		return "", fmt.Errorf("upload id: %w", err)
	}
	return fmt.Sprintf("%s/%s/%d", tenant, upload, n), nil
}

// objectStoreCache keeps the uploads store once opened: opening asks the
// server for the bucket's stream, a round trip every upload would pay.
type objectStoreCache struct {
	mu sync.Mutex
	os jetstream.ObjectStore
}

// uploads opens the object store, creating it when a deployment provisioned
// before it existed has none yet.
func (b *Bus) uploads(ctx context.Context) (jetstream.ObjectStore, error) {
	return b.objectStore(ctx, &b.objects, UploadsStore)
}

// objectStore opens the object store config names, once per cache,
// creating it (with the checkpoints' replicas) when a deployment
// provisioned before it existed has none yet.
func (b *Bus) objectStore(ctx context.Context, cache *objectStoreCache, config func(replicas int) jetstream.ObjectStoreConfig) (jetstream.ObjectStore, error) {
	cache.mu.Lock()
	defer cache.mu.Unlock()
	if cache.os != nil {
		return cache.os, nil
	}
	os, err := b.openObjectStore(ctx, config)
	if err == nil {
		cache.os = os
	}
	return os, err
}

func (b *Bus) openObjectStore(ctx context.Context, config func(replicas int) jetstream.ObjectStoreConfig) (jetstream.ObjectStore, error) {
	bucket := config(1).Bucket
	os, err := b.js.ObjectStore(ctx, bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		replicas, rerr := b.checkpointsReplicas(ctx)
		if rerr != nil {
			replicas = 1 // not provisioned at all: a test's bare server
		}
		os, err = b.js.CreateObjectStore(ctx, config(replicas))
		if errors.Is(err, jetstream.ErrBucketExists) {
			os, err = b.js.ObjectStore(ctx, bucket)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("bus: object store %s: %w", bucket, err)
	}
	return os, nil
}

// PutUpload stores r under name (see UploadName) and returns its size.
func (b *Bus) PutUpload(ctx context.Context, name string, r io.Reader) (int64, error) {
	os, err := b.uploads(ctx)
	if err != nil {
		return 0, err
	}
	info, err := os.Put(ctx, jetstream.ObjectMeta{Name: name}, r)
	if err != nil {
		return 0, fmt.Errorf("bus: store upload %s: %w", name, err)
	}
	return int64(info.Size), nil
}

// GetUpload reads the upload name of tenant, at most max bytes of it: a
// larger one is ErrUploadTooLarge, a missing one ErrNotFound.
func (b *Bus) GetUpload(ctx context.Context, tenant, name string, max int64) ([]byte, error) {
	if !strings.HasPrefix(name, tenant+"/") {
		return nil, fmt.Errorf("%w: upload %q is not tenant %s's", ErrNotFound, name, tenant)
	}
	os, err := b.uploads(ctx)
	if err != nil {
		return nil, err
	}
	res, err := os.Get(ctx, name)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil, fmt.Errorf("%w: upload %s (dropped after %s, or already indexed)", ErrNotFound, name, UploadsMaxAge)
	}
	if err != nil {
		return nil, fmt.Errorf("bus: read upload %s: %w", name, err)
	}
	defer res.Close()
	if info, err := res.Info(); err == nil && int64(info.Size) > max {
		return nil, fmt.Errorf("%w: %s is %d bytes, the limit is %d", ErrUploadTooLarge, name, info.Size, max)
	}
	data, err := io.ReadAll(io.LimitReader(res, max+1))
	if err != nil {
		return nil, fmt.Errorf("bus: read upload %s: %w", name, err)
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%w: %s is over %d bytes", ErrUploadTooLarge, name, max)
	}
	return data, nil
}

// DeleteUpload removes an upload; one already gone is no error.
func (b *Bus) DeleteUpload(ctx context.Context, name string) error {
	os, err := b.uploads(ctx)
	if err != nil {
		return err
	}
	if err := os.Delete(ctx, name); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
		return fmt.Errorf("bus: delete upload %s: %w", name, err)
	}
	return nil
}

// ListUploads returns the names of tenant's uploads waiting in the store.
func (b *Bus) ListUploads(ctx context.Context, tenant string) ([]string, error) {
	os, err := b.uploads(ctx)
	if err != nil {
		return nil, err
	}
	infos, err := os.List(ctx)
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("bus: list uploads: %w", err)
	}
	var names []string
	for _, info := range infos {
		if strings.HasPrefix(info.Name, tenant+"/") && !info.Deleted {
			names = append(names, info.Name)
		}
	}
	return names, nil
}

// UploadBytes sums the sizes of tenant's uploads waiting in the store. It
// lists the store's objects (every tenant's: their metadata, not their
// data), which are only those not yet indexed.
func (b *Bus) UploadBytes(ctx context.Context, tenant string) (int64, error) {
	os, err := b.uploads(ctx)
	if err != nil {
		return 0, err
	}
	infos, err := os.List(ctx)
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("bus: list uploads: %w", err)
	}
	var n int64
	for _, info := range infos {
		if strings.HasPrefix(info.Name, tenant+"/") && !info.Deleted {
			n += int64(info.Size)
		}
	}
	return n, nil
}
