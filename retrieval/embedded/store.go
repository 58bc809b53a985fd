package embedded

import (
	"bytes"
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
	meta   map[string]any
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
	graphName   = "vectors.hnsw"
	bleveName   = "bleve"
	storeFormat = 1
)

// loadStore reads a tenant's chunks; a missing file is an empty store.
func loadStore(dir string) (storeFile, error) {
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

// saveStore writes a tenant's chunks atomically: a temporary file, synced,
// then renamed over the old one.
func saveStore(dir string, s storeFile) error {
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(s); err != nil {
		return fmt.Errorf("encode %s: %w", storeName, err)
	}
	return writeAtomic(filepath.Join(dir, storeName), buf.Bytes())
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
