package bus_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
)

func TestUploadsRoundTrip(t *testing.T) {
	env := bustest.New(t)
	ctx := testCtx(t)
	name, err := bus.UploadName(tenant, "up1", 0)
	if err != nil {
		t.Fatal(err)
	}
	if name != "acme/up1/0" {
		t.Fatalf("UploadName = %q", name)
	}
	// Larger than one object store chunk (128 KiB), so it is stored in parts.
	data := bytes.Repeat([]byte("0123456789abcdef"), 20_000)
	n, err := env.Bus.PutUpload(ctx, name, bytes.NewReader(data))
	if err != nil || n != int64(len(data)) {
		t.Fatalf("PutUpload = %d, %v", n, err)
	}
	got, err := env.Bus.GetUpload(ctx, tenant, name, int64(len(data)))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("GetUpload: %d bytes, %v", len(got), err)
	}
	if _, err := env.Bus.GetUpload(ctx, tenant, name, int64(len(data))-1); !errors.Is(err, bus.ErrUploadTooLarge) {
		t.Fatalf("GetUpload under its size: %v, want ErrUploadTooLarge", err)
	}
	if _, err := env.Bus.GetUpload(ctx, "beta", name, int64(len(data))); !errors.Is(err, bus.ErrNotFound) {
		t.Fatalf("another tenant read the upload: %v, want ErrNotFound", err)
	}
	if err := env.Bus.DeleteUpload(ctx, name); err != nil {
		t.Fatal(err)
	}
	if err := env.Bus.DeleteUpload(ctx, name); err != nil {
		t.Fatalf("deleting twice: %v", err)
	}
	if _, err := env.Bus.GetUpload(ctx, tenant, name, int64(len(data))); !errors.Is(err, bus.ErrNotFound) || !strings.Contains(err.Error(), "already indexed") {
		t.Fatalf("GetUpload after delete: %v, want ErrNotFound saying why", err)
	}
}

func TestUploadNameRefusesBadTokens(t *testing.T) {
	for _, c := range [][2]string{{"", "up"}, {"acme", "a.b"}, {"acme", ""}, {"a*", "up"}} {
		if _, err := bus.UploadName(c[0], c[1], 0); err == nil {
			t.Errorf("UploadName(%q, %q) accepted", c[0], c[1])
		}
	}
}
