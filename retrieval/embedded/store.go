package embedded

import (
	"bytes"
	"encoding/binary"
	"encoding/gob"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/agentbus/agentbus/retrieval"
)

// record is one stored chunk. Metadata is stored as JSON because gob
// cannot encode map[string]any values without registering every dynamic
// type; meta is its decoded form (unexported, so gob skips it).
type record struct {
	ID, DocID, Title, Text, Source string
	MetaJSON                       []byte
	Date                           time.Time
	Vector                         []float32
	// VecKey is the record's node in the vector graph, "<id>\x00<gen>";
	// empty when the vector is zero. A replaced record gets a new node
	// and its old one is left behind as dead, never deleted (see vector.go).
	VecKey string
	// Indexed is when the chunk was written (UTC, milliseconds); zero for
	// chunks written before this field existed.
	Indexed time.Time
	meta    map[string]any
}

func newRecord(c retrieval.Chunk) (record, error) {
	r := record{ID: c.ID, DocID: c.DocID, Title: c.Title, Text: c.Text, Source: c.Source,
		Date: c.Date, Vector: c.Vector}
	if len(c.Metadata) > 0 {
		b, err := json.Marshal(c.Metadata)
		if err != nil {
			return record{}, fmt.Errorf("%w: chunk %q metadata: %v", retrieval.ErrInvalidDocument, c.ID, err)
		}
		r.MetaJSON = b
		// Hits carry what a reopened index would return: the JSON form.
		_ = json.Unmarshal(b, &r.meta)
	}
	return r, nil
}

func (r record) hit(score float64) retrieval.Hit {
	return retrieval.Hit{ID: r.ID, DocID: r.DocID, Title: r.Title, Text: r.Text, Source: r.Source,
		Metadata: r.meta, Score: score}
}

// storeFile is the on-disk form of a tenant's chunks.
type storeFile struct {
	Version  int
	Embedder string
	NextGen  uint64 // the next VecKey generation
	Records  []record
}

const (
	storeName   = "chunks.gob"
	logName     = "chunks.log"
	graphName   = "vectors.hnsw"
	bleveName   = "bleve"
	storeFormat = 1
)

// logEntry is one Index call's records, appended to chunks.log: writing a
// batch costs the batch, not the whole store (a full rewrite per batch made
// indexing quadratic). The log is folded into chunks.gob once it holds more
// records than the store has, and when the tenant is opened.
type logEntry struct {
	Embedder string
	NextGen  uint64
	// Deleted are chunk IDs removed by this call, applied before Records.
	Deleted []string
	Records []record
}

// appendLog appends e to the tenant's log as one frame — a 4-byte length,
// then e in gob — and syncs it. Each frame has its own gob stream, so a log
// written by several processes one after the other still reads.
func appendLog(dir string, e logEntry) error {
	var buf bytes.Buffer
	buf.Write([]byte{0, 0, 0, 0})
	if err := gob.NewEncoder(&buf).Encode(e); err != nil {
		return fmt.Errorf("encode %s: %w", logName, err)
	}
	b := buf.Bytes()
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	f, err := os.OpenFile(filepath.Join(dir, logName), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", logName, err)
	}
	return nil
}

// readLog returns the entries of the tenant's log in order. A torn last
// frame (a crash in the middle of an append) ends the log: that batch was
// never acknowledged.
func readLog(dir string) ([]logEntry, error) {
	b, err := os.ReadFile(filepath.Join(dir, logName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []logEntry
	for len(b) >= 4 {
		n := int(binary.BigEndian.Uint32(b))
		if len(b)-4 < n {
			break
		}
		var e logEntry
		if err := gob.NewDecoder(bytes.NewReader(b[4 : 4+n])).Decode(&e); err != nil {
			break
		}
		out = append(out, e)
		b = b[4+n:]
	}
	return out, nil
}

// loadStore reads a tenant's chunks — the store, then the log's batches
// over it — and reports how many batches the log held; a missing file is
// an empty store.
func loadStore(dir string) (storeFile, int, error) {
	s, err := loadSnapshot(dir)
	if err != nil {
		return s, 0, err
	}
	log, err := readLog(dir)
	if err != nil || len(log) == 0 {
		return s, 0, err
	}
	at := make(map[string]int, len(s.Records))
	for i, r := range s.Records {
		at[r.ID] = i
	}
	for _, e := range log {
		s.NextGen = max(s.NextGen, e.NextGen)
		if e.Embedder != "" {
			s.Embedder = e.Embedder
		}
		if len(e.Deleted) > 0 {
			s.Records = without(s.Records, e.Deleted)
			clear(at)
			for i, r := range s.Records {
				at[r.ID] = i
			}
		}
		for _, r := range e.Records {
			if len(r.MetaJSON) > 0 {
				if err := json.Unmarshal(r.MetaJSON, &r.meta); err != nil {
					return storeFile{}, 0, fmt.Errorf("read %s: chunk %q metadata: %w", logName, r.ID, err)
				}
			}
			if i, ok := at[r.ID]; ok {
				s.Records[i] = r
				continue
			}
			at[r.ID] = len(s.Records)
			s.Records = append(s.Records, r)
		}
	}
	return s, len(log), nil
}

// without returns recs less those whose ID is in ids, order kept.
func without(recs []record, ids []string) []record {
	gone := make(map[string]bool, len(ids))
	for _, id := range ids {
		gone[id] = true
	}
	out := recs[:0]
	for _, r := range recs {
		if !gone[r.ID] {
			out = append(out, r)
		}
	}
	return out
}

// loadSnapshot reads chunks.gob; a missing file is an empty store.
func loadSnapshot(dir string) (storeFile, error) {
	b, err := os.ReadFile(filepath.Join(dir, storeName))
	if errors.Is(err, fs.ErrNotExist) {
		return storeFile{Version: storeFormat}, nil
	}
	if err != nil {
		return storeFile{}, err
	}
	var s storeFile
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&s); err != nil {
		return storeFile{}, fmt.Errorf("read %s: %w", storeName, err)
	}
	if s.Version != storeFormat {
		return storeFile{}, fmt.Errorf("%s has format %d, want %d", storeName, s.Version, storeFormat)
	}
	for i := range s.Records {
		if len(s.Records[i].MetaJSON) > 0 {
			if err := json.Unmarshal(s.Records[i].MetaJSON, &s.Records[i].meta); err != nil {
				return storeFile{}, fmt.Errorf("read %s: chunk %q metadata: %w", storeName, s.Records[i].ID, err)
			}
		}
	}
	return s, nil
}

// saveStore writes a tenant's chunks atomically — a temporary file, synced,
// then renamed over the old one — and then drops the log it folds in. (A
// crash between the two leaves a log whose batches the store already
// holds: replaying them changes nothing.)
func saveStore(dir string, s storeFile) error {
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(s); err != nil {
		return fmt.Errorf("encode %s: %w", storeName, err)
	}
	if err := writeAtomic(filepath.Join(dir, storeName), buf.Bytes()); err != nil {
		return err
	}
	return removeIfExists(filepath.Join(dir, logName))
}

func writeAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	return nil
}
