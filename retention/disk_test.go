package retention_test

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/retention"
	"github.com/agentbus/agentbus/subjects"
)

// TestDiskReturns: N ended workflows (1,000, enough to fill and empty
// the streams' file blocks in the time make test allows;
// AGENTBUS_RETENTION_N for more), each with checkpoint revisions, events, a control record, a
// session turn (ten to a session) and, one in ten, an upload, grow the
// JetStream store; once the sweep has purged them all, the store is back
// within 10 % of what it was empty. -short skips it.
func TestDiskReturns(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: seeds thousands of workflows")
	}
	n := 1000
	if v := os.Getenv("AGENTBUS_RETENTION_N"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("AGENTBUS_RETENTION_N=%q: want a positive count", v)
		}
	}
	x := newWorld(t)
	ctx := t.Context()
	empty := diskUsage(t, x.env.Dir)
	start := time.Now()
	for i := range n {
		status := events.StateCompleted
		if i%4 == 3 {
			status = events.StateFailed
		}
		x.seed(ctx, wf{tenant: fmt.Sprintf("t%d", i%3), id: fmt.Sprintf("w%05d", i), status: status,
			session: fmt.Sprintf("s%d", i/10), upload: i%10 == 0, revisions: 8, events: 12})
	}
	seeded := time.Since(start)
	full := diskUsage(t, x.env.Dir)
	now := time.Now().Add(24 * time.Hour)
	s := x.sweeper(retention.Policy{Completed: time.Minute, Failed: 2 * time.Minute}, &now)
	start = time.Now()
	purged, passes := 0, 0
	for {
		r, err := s.Once(ctx)
		if err != nil {
			t.Fatal(err)
		}
		passes++
		purged += r.Purged
		if r.Purged == 0 && !r.More {
			break
		}
	}
	swept := time.Since(start)
	if purged != n {
		t.Errorf("purged %d, want %d", purged, n)
	}
	after := diskUsage(t, x.env.Dir)
	t.Logf("%d workflows: store empty %s, seeded %s (in %s), after the sweep %s (%d passes, %s, %.0f workflows/s); %+.1f %% of empty "+
		"(%s on disk in blocks: %s empty, %s seeded, %s after)",
		n, kb(empty.total), kb(full.total), seeded.Round(time.Millisecond), kb(after.total), passes, swept.Round(time.Millisecond),
		float64(n)/swept.Seconds(), 100*(float64(after.total)-float64(empty.total))/float64(empty.total),
		"allocated", kb(empty.allocated), kb(full.allocated), kb(after.allocated))
	t.Logf("without the leases bucket (the sweep's own lease, rewritten each pass; its block is compacted only once it rolls): "+
		"empty %s, after %s, %+.1f %%", kb(empty.data()), kb(after.data()), 100*(float64(after.data())-float64(empty.data()))/float64(empty.data()))
	if float64(after.data()) > 1.1*float64(empty.data()) {
		t.Errorf("store after the sweep %s, more than 10 %% over empty %s", kb(after.data()), kb(empty.data()))
	}
}

// usage is a store's size: the files' sizes, what the file system
// allocated for them, and the leases bucket's share of the sizes.
type usage struct{ total, allocated, leases int64 }

// data is the size without the leases bucket.
func (u usage) data() int64 { return u.total - u.leases }

// diskUsage sums the sizes of the files under dir.
func diskUsage(t *testing.T, dir string) usage {
	t.Helper()
	var u usage
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			u.total += info.Size()
			u.allocated += allocated(info)
			if strings.Contains(path, "KV_"+subjects.BucketLeases) {
				u.leases += info.Size()
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// allocated is what the file system allocated for a file (its size where
// that is not known).
func allocated(info fs.FileInfo) int64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512
	}
	return info.Size()
}

func kb(n int64) string { return fmt.Sprintf("%.1f KiB", float64(n)/1024) }
