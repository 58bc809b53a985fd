package bus

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentbus/agentbus/subjects"
)

// Forgetting: a workflow whose retention has passed, or that a client
// deletes, leaves the store with everything it wrote. Each of its pieces
// is a subject of its own (its events, replies and timers in their
// streams, its checkpoint and control record as KV keys, an upload's
// objects), so a stream purge filtered to that subject removes it whole —
// every revision, no delete marker left behind — and the disk space comes
// back as the blocks empty.

// PurgeSubject removes every message stream stores on subject and returns
// how many it removed; a stream that does not exist removed none.
func (b *Bus) PurgeSubject(ctx context.Context, stream, subject string) (uint64, error) {
	return purgeSubject(ctx, b.nc, stream, subject)
}

func purgeSubject(ctx context.Context, nc *nats.Conn, stream, subject string) (uint64, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
	}
	req, _ := json.Marshal(map[string]string{"filter": subject})
	m, err := nc.RequestWithContext(ctx, "$JS.API.STREAM.PURGE."+stream, req)
	if err != nil {
		return 0, fmt.Errorf("bus: purge %s from %s: %w", subject, stream, err)
	}
	var resp struct {
		Success bool                `json:"success"`
		Purged  uint64              `json:"purged"`
		Error   *jetstream.APIError `json:"error"`
	}
	if err := json.Unmarshal(m.Data, &resp); err != nil {
		return 0, fmt.Errorf("bus: purge %s from %s: %w", subject, stream, err)
	}
	switch {
	case resp.Error != nil && resp.Error.ErrorCode == jetstream.JSErrCodeStreamNotFound:
		return 0, nil
	case resp.Error != nil:
		return 0, fmt.Errorf("bus: purge %s from %s: %w", subject, stream, resp.Error)
	case !resp.Success:
		return 0, fmt.Errorf("bus: purge %s from %s: refused: %s", subject, stream, m.Data)
	}
	return resp.Purged, nil
}

// Purge removes key with every kept revision and leaves no delete marker:
// the key is as if it had never been written, and watchers are not told
// (delete it first, DeleteIf, for them to be). It returns how many
// revisions it removed.
func (s *KV) Purge(ctx context.Context, key string) (uint64, error) {
	s.ops.write()
	return purgeSubject(ctx, s.nc, "KV_"+s.bucket, "$KV."+s.bucket+"."+key)
}

// DeleteIf deletes key only if its newest revision is still rev (a delete
// marker that watchers see, the older revisions kept): the fence of a
// purge, so that a write that raced it fails its own revision check
// instead of being purged unseen. A key that changed since rev is
// ErrConflict.
func (s *KV) DeleteIf(ctx context.Context, key string, rev uint64) error {
	s.ops.write()
	return mapKVErr(key, s.kv.Delete(ctx, key, jetstream.LastRevision(rev)))
}

// RemoveUploads removes every object of an upload ("<tenant>/<upload>/…",
// UploadName), their delete markers too, and returns how many objects it
// removed. An upload already gone removed none.
func (b *Bus) RemoveUploads(ctx context.Context, tenant, upload string) (int, error) {
	prefix, err := UploadName(tenant, upload, 0)
	if err != nil {
		return 0, err
	}
	prefix = strings.TrimSuffix(prefix, "0")
	os, err := b.uploads(ctx)
	if err != nil {
		return 0, err
	}
	return b.removeObjects(ctx, os, subjects.ObjectUploads, prefix)
}

// removeObjects removes every object of bucket (open as os) whose name
// begins with prefix, their delete markers too, and returns how many
// objects it removed. It lists the bucket's objects: their metadata, not
// their data.
func (b *Bus) removeObjects(ctx context.Context, os jetstream.ObjectStore, bucket, prefix string) (int, error) {
	infos, err := os.List(ctx, jetstream.ListObjectsShowDeleted())
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("bus: list %s: %w", bucket, err)
	}
	n := 0
	for _, info := range infos {
		if !strings.HasPrefix(info.Name, prefix) {
			continue
		}
		if !info.Deleted {
			if err := os.Delete(ctx, info.Name); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
				return n, fmt.Errorf("bus: delete %s from %s: %w", info.Name, bucket, err)
			}
			n++
		}
		// The delete leaves the object's metadata as a marker; it goes
		// too, so that nothing of it stays on disk.
		meta := "$O." + bucket + ".M." + base64.URLEncoding.EncodeToString([]byte(info.Name))
		if _, err := b.PurgeSubject(ctx, "OBJ_"+bucket, meta); err != nil {
			return n, err
		}
	}
	return n, nil
}
