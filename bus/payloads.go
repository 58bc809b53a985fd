package bus

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/subjects"
)

// Large payloads (events/payloadref.go says why they travel as
// references): a step's input, output or artifact data above a threshold
// is put in subjects.ObjectPayloads under a name that begins
// "<tenant>/<workflow>/", and an events.PayloadRef takes its place in the
// message. The object stays until its workflow is purged (RemovePayloads).

// DefaultPayloadThreshold is the size above which a step's data is
// offloaded unless configured otherwise: a quarter of NATS's default
// 1 MiB message limit, so that a step request carrying several inline
// dependency outputs still fits.
const DefaultPayloadThreshold = 256 << 10

// ContentTypeJSON is the media type of offloaded step data.
const ContentTypeJSON = "application/json"

// ErrPayloadCorrupt: a payload's bytes do not match its reference's size
// or SHA-256.
var ErrPayloadCorrupt = errors.New("bus: payload does not match its reference")

// PayloadsStore is the configuration of subjects.ObjectPayloads for a
// replication factor. Its objects have no TTL: they live as long as the
// workflow that refers to them, and the retention purge removes them.
func PayloadsStore(replicas int) jetstream.ObjectStoreConfig {
	return jetstream.ObjectStoreConfig{
		Bucket: subjects.ObjectPayloads, Description: "agentbus step inputs, outputs and artifacts too large for a message",
		Storage: jetstream.FileStorage, Replicas: replicas,
	}
}

// PayloadPrefix is the name prefix of a workflow's payloads:
// "<tenant>/<workflow>/".
func PayloadPrefix(tenant, workflow string) (string, error) {
	if err := subjects.ValidTenant(tenant); err != nil {
		return "", err
	}
	if err := subjects.ValidWorkflow(workflow); err != nil {
		return "", err
	}
	return tenant + "/" + workflow + "/", nil
}

func (b *Bus) payloadStore(ctx context.Context) (jetstream.ObjectStore, error) {
	return b.objectStore(ctx, &b.payloads, PayloadsStore)
}

// PutPayload stores data in subjects.ObjectPayloads under
// "<base>/<kind>-<sha256 prefix>" and returns its reference. base must
// begin with the payload's tenant and workflow (PayloadPrefix). The name
// holds the data's digest, so that two deliveries of one step attempt
// with different outputs never overwrite what the other's reference
// names.
func (b *Bus) PutPayload(ctx context.Context, base, kind, contentType string, data []byte) (events.PayloadRef, error) {
	sum := sha256.Sum256(data)
	digest := hex.EncodeToString(sum[:])
	ref := events.PayloadRef{
		Bucket: subjects.ObjectPayloads, Key: strings.TrimSuffix(base, "/") + "/" + kind + "-" + digest[:16],
		Size: int64(len(data)), SHA256: digest, ContentType: contentType,
	}
	os, err := b.payloadStore(ctx)
	if err != nil {
		return events.PayloadRef{}, err
	}
	meta := jetstream.ObjectMeta{Name: ref.Key, Headers: nats.Header{"Content-Type": []string{contentType}}}
	if _, err := os.Put(ctx, meta, bytes.NewReader(data)); err != nil {
		return events.PayloadRef{}, fmt.Errorf("bus: store payload %s: %w", ref.Key, err)
	}
	return ref, nil
}

// Offload returns raw unchanged when it is at most threshold bytes (or
// threshold is negative), else stores it (PutPayload) and returns its
// reference's JSON. For a small value it costs a length check.
func (b *Bus) Offload(ctx context.Context, threshold int, base, kind string, raw json.RawMessage) (json.RawMessage, error) {
	if threshold < 0 || len(raw) <= threshold {
		return raw, nil
	}
	ref, err := b.PutPayload(ctx, base, kind, ContentTypeJSON, raw)
	if err != nil {
		return nil, err
	}
	return ref.JSON(), nil
}

// Payload is an open payload: its reference's size and type, and its
// bytes to read. Close it.
type Payload struct {
	io.ReadCloser
	Size        int64
	ContentType string
}

// OpenPayload opens the payload ref names for a reader of tenant: a
// reference to another tenant's payload, or to another bucket, is
// ErrNotFound, as is one whose object is gone (its workflow purged).
// The reader checks the object store's own digest at its end; GetPayload
// also checks the reference's SHA-256.
func (b *Bus) OpenPayload(ctx context.Context, tenant string, ref events.PayloadRef) (*Payload, error) {
	if ref.Bucket != subjects.ObjectPayloads || !strings.HasPrefix(ref.Key, tenant+"/") {
		return nil, fmt.Errorf("%w: payload %s is not tenant %s's", ErrNotFound, ref, tenant)
	}
	os, err := b.payloadStore(ctx)
	if err != nil {
		return nil, err
	}
	res, err := os.Get(ctx, ref.Key)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil, fmt.Errorf("%w: payload %s is gone (its workflow was purged, or the store lost it)", ErrNotFound, ref)
	}
	if err != nil {
		return nil, fmt.Errorf("bus: read payload %s: %w", ref.Key, err)
	}
	p := &Payload{ReadCloser: res, Size: ref.Size, ContentType: ref.ContentType}
	if info, err := res.Info(); err == nil {
		p.Size = int64(info.Size)
		if ct := info.Headers.Get("Content-Type"); ct != "" {
			p.ContentType = ct
		}
	}
	return p, nil
}

// GetPayload reads the payload ref names for a reader of tenant and
// checks it against the reference: a mismatch is ErrPayloadCorrupt, a
// missing or foreign one ErrNotFound (OpenPayload).
func (b *Bus) GetPayload(ctx context.Context, tenant string, ref events.PayloadRef) ([]byte, error) {
	p, err := b.OpenPayload(ctx, tenant, ref)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	if p.Size != ref.Size {
		return nil, fmt.Errorf("%w: %s: the store holds %d bytes", ErrPayloadCorrupt, ref, p.Size)
	}
	buf := bytes.NewBuffer(make([]byte, 0, p.Size))
	if _, err := io.Copy(buf, p); err != nil {
		return nil, fmt.Errorf("bus: read payload %s: %w", ref.Key, err)
	}
	if err := CheckPayload(ref, buf.Bytes()); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// CheckPayload reports whether data is what ref names (size and SHA-256).
func CheckPayload(ref events.PayloadRef, data []byte) error {
	sum := sha256.Sum256(data)
	if int64(len(data)) != ref.Size || hex.EncodeToString(sum[:]) != ref.SHA256 {
		return fmt.Errorf("%w: %s: read %d bytes with another digest", ErrPayloadCorrupt, ref, len(data))
	}
	return nil
}

// Resolve returns raw unchanged unless it is a payload reference, and
// then the payload it names, read for a reader of tenant (GetPayload). A
// malformed reference is events.ErrBadRef. For a value that is not a
// reference it costs a length check or a substring search.
func (b *Bus) Resolve(ctx context.Context, tenant string, raw json.RawMessage) (json.RawMessage, error) {
	ref, ok, err := events.ParseRef(raw)
	if err != nil || !ok {
		return raw, err
	}
	return b.GetPayload(ctx, tenant, ref)
}

// RemovePayloads removes every payload of a workflow ("<tenant>/<workflow>/…")
// with its delete marker and returns how many it removed; the retention
// purge calls it. It lists the store's objects (their metadata), which
// are only the large payloads of workflows not yet purged.
func (b *Bus) RemovePayloads(ctx context.Context, tenant, workflow string) (int, error) {
	prefix, err := PayloadPrefix(tenant, workflow)
	if err != nil {
		return 0, err
	}
	os, err := b.payloadStore(ctx)
	if err != nil {
		return 0, err
	}
	return b.removeObjects(ctx, os, subjects.ObjectPayloads, prefix)
}

// MaxPayload is the largest message the server accepts, in bytes (1 MiB
// unless its max_payload says otherwise).
func (b *Bus) MaxPayload() int64 { return b.nc.MaxPayload() }
