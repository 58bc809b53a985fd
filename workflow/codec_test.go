package workflow_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/agentbus/agentbus/events"
	"github.com/agentbus/agentbus/workflow"
)

// TestCheckpointDictionaryFixed fails if a released dictionary changes:
// checkpoints compressed with it could no longer be read. A new dictionary
// gets a file and an id of its own.
func TestCheckpointDictionaryFixed(t *testing.T) {
	for file, want := range map[string]string{
		"checkpoint_v1.zdict":     "d54c4003652e1838dba5fb17ee0aab668e4a554ddddc6f230da047ff1a58100e",
		"checkpoint_dict_v1.json": "9445ee5e26be10ff79355bf91a3c07bf7782b21dea30a7a5adff2f33e37c85cd",
	} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		if got := hex.EncodeToString(sum[:]); got != want {
			t.Errorf("%s has sha256 %s, want %s: a released dictionary must never change", file, got, want)
		}
	}
}

func sampleCheckpoint() *workflow.Checkpoint {
	now := time.Date(2026, 11, 27, 12, 0, 0, 123456789, time.UTC)
	return &workflow.Checkpoint{
		TenantID: "default", WorkflowID: "wf-42", Status: events.StateWorking, Phase: workflow.PhaseExecuting,
		Plan: events.Plan{Steps: []events.PlanStep{{ID: "a", Capability: "echo", Input: json.RawMessage(`"x"`)}}},
		Tasks: map[string]*workflow.Task{"a": {Capability: "echo", Status: events.StateCompleted, Attempt: 1,
			Output: json.RawMessage(`{"step_id":"a","input":"x"}`), DispatchedAt: &now, CompletedAt: &now}},
		CreatedAt: now, UpdatedAt: now, EventCount: 4,
	}
}

func TestCheckpointCodecRoundTrip(t *testing.T) {
	cp := sampleCheckpoint()
	plain, err := workflow.EncodeCheckpoint(cp, true)
	if err != nil {
		t.Fatal(err)
	}
	packed, err := workflow.EncodeCheckpoint(cp, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(packed) >= len(plain)/2 {
		t.Errorf("compressed %d bytes of %d: want under half", len(packed), len(plain))
	}
	for name, stored := range map[string][]byte{"plain": plain, "compressed": packed} {
		var got workflow.Checkpoint
		if err := workflow.DecodeCheckpoint(stored, &got); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		again, _ := workflow.EncodeCheckpoint(&got, true)
		if !bytes.Equal(again, plain) {
			t.Errorf("%s: decoded\n%s\nwant\n%s", name, again, plain)
		}
	}
	js, err := workflow.CheckpointJSON(packed)
	if err != nil || !bytes.Equal(js, plain) {
		t.Errorf("CheckpointJSON = %s, %v", js, err)
	}
}

func TestCheckpointCodecCorrupt(t *testing.T) {
	packed, _ := workflow.EncodeCheckpoint(sampleCheckpoint(), false)
	for name, bad := range map[string][]byte{
		"truncated":  packed[:len(packed)/2],
		"flipped":    append(append([]byte{}, packed[:8]...), bytes.Repeat([]byte{0xff}, len(packed)-8)...),
		"magic only": {0x28, 0xb5, 0x2f, 0xfd},
	} {
		var cp workflow.Checkpoint
		err := workflow.DecodeCheckpoint(bad, &cp)
		if !errors.Is(err, workflow.ErrCheckpointEncoding) {
			t.Errorf("%s: err = %v, want ErrCheckpointEncoding", name, err)
		}
	}
}

func BenchmarkCheckpointCodec(b *testing.B) {
	plain, _ := workflow.EncodeCheckpoint(sampleCheckpoint(), true)
	packed, _ := workflow.CompressCheckpoint(nil, plain)
	b.Run("compress", func(b *testing.B) {
		b.SetBytes(int64(len(plain)))
		buf := make([]byte, 0, 4096)
		for b.Loop() {
			buf, _ = workflow.CompressCheckpoint(buf[:0], plain)
		}
		b.ReportMetric(float64(len(packed)), "stored-B")
	})
	b.Run("decompress", func(b *testing.B) {
		b.SetBytes(int64(len(plain)))
		for b.Loop() {
			_, _ = workflow.CheckpointJSON(packed)
		}
	})
}

// TestCheckpointZstdCLI: the zstd command line decodes a stored
// checkpoint with the shipped dictionary, as the README says (skipped
// where zstd is not installed).
func TestCheckpointZstdCLI(t *testing.T) {
	bin, err := exec.LookPath("zstd")
	if err != nil {
		t.Skip("no zstd program here")
	}
	plain, _ := workflow.EncodeCheckpoint(sampleCheckpoint(), true)
	packed, _ := workflow.CompressCheckpoint(nil, plain)
	cmd := exec.Command(bin, "-D", "checkpoint_v1.zdict", "-d", "-c")
	cmd.Stdin = bytes.NewReader(packed)
	out, err := cmd.CombinedOutput()
	if err != nil || !bytes.Equal(out, plain) {
		t.Fatalf("zstd -D checkpoint_v1.zdict -d: %v\n%s", err, out)
	}
}
