package workflow

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// A stored checkpoint (a value of KV AGENTBUS_CHECKPOINTS) is either its
// JSON, as written with Config.PlainCheckpoints and before checkpoints
// were compressed, or a zstd frame of that JSON compressed against a
// dictionary shipped in this package (RFC 8878, the frame naming the
// dictionary's id). A checkpoint's revisions are near copies of one
// another and of every other workflow's: the field names, states, event
// types and subjects that make up most of its bytes are in the
// dictionary, so a revision of a few KiB stores in a few hundred bytes
// (BenchmarkStorage) without relying on the server's stream compression.
//
// A dictionary is never changed once released: a new one gets the next
// id, and every reader keeps the old ones (TestCheckpointDictionaryFixed).

// ErrCheckpointEncoding is wrapped by the errors of a stored checkpoint
// that is neither JSON nor a zstd frame this package can decompress.
var ErrCheckpointEncoding = errors.New("workflow: stored checkpoint")

// checkpointDictV1 is dictionary 1 in the zstd dictionary format, built
// from checkpoint_dict_v1.json (a checkpoint of a made-up workflow that
// has every field) by internal/mkdict (the repository's): the `zstd` command line and any
// zstd library read it (zstd -D checkpoint_v1.zdict -d).
//
//go:generate go run ../internal/mkdict -id 1 -in checkpoint_dict_v1.json -out checkpoint_v1.zdict
//go:embed checkpoint_v1.zdict
var checkpointDictV1 []byte

// maxCheckpoint bounds what a stored checkpoint may decompress to: far
// above any message a server accepts (its max_payload is at most 64 MiB),
// so that a corrupt or hostile value cannot make a reader allocate
// without limit.
const maxCheckpoint = 64 << 20

// zstdMagic starts every zstd frame; JSON never starts with it.
var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

// codec holds the encoder and decoder, built once on first use: both are
// safe for concurrent EncodeAll and DecodeAll, and immutable to callers
// (like a compiled regexp).
type codec struct {
	enc *zstd.Encoder
	dec *zstd.Decoder
}

var checkpointCodec = sync.OnceValues(func() (*codec, error) {
	enc, err := zstd.NewWriter(nil,
		zstd.WithEncoderDict(checkpointDictV1),
		zstd.WithEncoderLevel(zstd.SpeedFastest), // as small as SpeedDefault here at half the time
		zstd.WithEncoderCRC(false),               // the stream's own records are checksummed
		zstd.WithZeroFrames(true))
	if err != nil {
		return nil, err
	}
	dec, err := zstd.NewReader(nil,
		zstd.WithDecoderDicts(checkpointDictV1),
		zstd.WithDecoderMaxMemory(maxCheckpoint),
		zstd.WithDecoderConcurrency(0))
	if err != nil {
		return nil, err
	}
	return &codec{enc: enc, dec: dec}, nil
})

// CompressCheckpoint returns a checkpoint's JSON as it is stored
// compressed, appended to dst.
func CompressCheckpoint(dst, checkpointJSON []byte) ([]byte, error) {
	c, err := checkpointCodec()
	if err != nil {
		return nil, fmt.Errorf("%w: compressor: %w", ErrCheckpointEncoding, err)
	}
	return c.enc.EncodeAll(checkpointJSON, dst), nil
}

// CheckpointJSON returns a stored checkpoint's JSON: the value itself
// when it is JSON, else its frame decompressed.
func CheckpointJSON(stored []byte) ([]byte, error) {
	if !bytes.HasPrefix(stored, zstdMagic) {
		return stored, nil
	}
	c, err := checkpointCodec()
	if err != nil {
		return nil, fmt.Errorf("%w: decompressor: %w", ErrCheckpointEncoding, err)
	}
	out, err := c.dec.DecodeAll(stored, make([]byte, 0, 4*len(stored)))
	if err != nil {
		return nil, fmt.Errorf("%w: decompress %d bytes: %w", ErrCheckpointEncoding, len(stored), err)
	}
	return out, nil
}

// EncodeCheckpoint returns cp as it is stored: its JSON, compressed
// unless plain.
func EncodeCheckpoint(cp *Checkpoint, plain bool) ([]byte, error) {
	b, err := json.Marshal(cp)
	if err != nil || plain {
		return b, err
	}
	return CompressCheckpoint(nil, b)
}

// DecodeCheckpoint decodes a stored checkpoint, compressed or not, into
// cp.
func DecodeCheckpoint(stored []byte, cp *Checkpoint) error {
	b, err := CheckpointJSON(stored)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, cp)
}

// UnmarshalCheckpoint decodes a stored checkpoint, compressed or not,
// into v: a *Checkpoint or any view of its JSON (a struct of the fields
// a reader needs, a map).
func UnmarshalCheckpoint(stored []byte, v any) error {
	b, err := CheckpointJSON(stored)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}
