package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"time"

	"github.com/agentbus/agentbus/retrieval"
	"github.com/agentbus/agentbus/subjects"
)

// Sentinel errors.
var (
	// ErrConfig: the Config is not usable.
	ErrConfig = errors.New("ingest: invalid config")
	// ErrJournal: the progress journal could not be read or written.
	ErrJournal = errors.New("ingest: journal")
)

// Config says where documents go and how they are cut.
type Config struct {
	// Backend receives the chunks. Required.
	Backend retrieval.Backend
	// Tenant is whose index is written. Required.
	Tenant string
	// Chunker sizes chunks; the zero value means its defaults.
	Chunker retrieval.ChunkerConfig
	// BatchSize is how many chunks go to one Backend.Index call; default 64.
	BatchSize int
	// Journal is the progress journal's path, e.g.
	// <data>/index-journal/<tenant>.jsonl; "" means runs are not resumable.
	Journal string
	// Progress, when set, is called after every batch and every file,
	// on the goroutine that called Run.
	Progress func(Progress)
}

func (c *Config) setDefaults() {
	if c.BatchSize <= 0 {
		c.BatchSize = 64
	}
}

// Validate reports every problem with the configuration.
func (c Config) Validate() error {
	var errs []error
	if c.Backend == nil {
		errs = append(errs, fmt.Errorf("%w: Backend is required", ErrConfig))
	}
	if err := subjects.ValidTenant(c.Tenant); err != nil {
		errs = append(errs, fmt.Errorf("%w: Tenant: %w", ErrConfig, err))
	}
	return errors.Join(errs...)
}

// Progress is how far a run has got. Totals are known once the paths are
// listed; documents and chunks have no total until the files are read.
type Progress struct {
	Files      int    `json:"files"`
	FilesTotal int    `json:"files_total"`
	Bytes      int64  `json:"bytes"`
	BytesTotal int64  `json:"bytes_total"`
	Documents  int    `json:"documents"`
	Chunks     int    `json:"chunks"`
	Skipped    int    `json:"skipped"`
	Errors     int    `json:"errors"`
	File       string `json:"file,omitempty"`
}

// Problem is one thing that could not be indexed: where and why.
type Problem struct {
	File string `json:"file"`
	// Line is the 1-based line of a JSONL record; 0 for a whole file.
	Line   int    `json:"line,omitempty"`
	Reason string `json:"reason"`
}

// String is "file:line: reason", or "file: reason" for a whole file.
func (p Problem) String() string {
	if p.Line > 0 {
		return p.File + ":" + strconv.Itoa(p.Line) + ": " + p.Reason
	}
	return p.File + ": " + p.Reason
}

// Summary is what a run did.
type Summary struct {
	// Files is how many files were read (wholly, or the rest of a
	// JSONL file after its last finished line).
	Files int `json:"files"`
	// Skipped is how many files were finished in an earlier run and have
	// not changed since.
	Skipped int `json:"skipped"`
	// Documents and Chunks count what was written in this run.
	Documents int           `json:"documents"`
	Chunks    int           `json:"chunks"`
	Errors    []Problem     `json:"errors,omitempty"`
	Duration  time.Duration `json:"duration_ns"`
}

// Ingester writes documents into one tenant's index. It is not safe for
// concurrent use: run one at a time per journal.
type Ingester struct {
	cfg     Config
	chunker *retrieval.Chunker
}

// New returns an Ingester for cfg after applying its defaults.
func New(cfg Config) (*Ingester, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ch, err := retrieval.NewChunker(cfg.Chunker)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return &Ingester{cfg: cfg, chunker: ch}, nil
}

// Run indexes the files at paths (files, or directories walked
// recursively for .md, .markdown, .txt and .jsonl files; hidden entries
// are skipped). It returns the summary so far together with any error
// that stopped it: the context's, the backend's or the journal's.
func (in *Ingester) Run(ctx context.Context, paths ...string) (Summary, error) {
	start := time.Now()
	r := &runner{in: in, ctx: ctx, seen: map[string]string{}}
	files, problems := list(paths)
	r.sum.Errors = problems
	for _, f := range files {
		r.prog.FilesTotal++
		r.prog.BytesTotal += f.size
	}
	j, err := openJournal(ctx, in.cfg, in.cfg.Journal)
	if err != nil {
		return r.summary(start), err
	}
	r.journal = j
	defer j.close()
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return r.summary(start), err
		}
		if err := r.file(f); err != nil {
			return r.summary(start), err
		}
	}
	if err := r.flush(true); err != nil {
		return r.summary(start), err
	}
	r.report("")
	return r.summary(start), nil
}

// JSONL indexes the JSONL documents read from src, naming them name in
// problems. It keeps no journal: rerunning it rewrites the same chunks.
// This is how a corpus embedded in the binary is indexed.
func (in *Ingester) JSONL(ctx context.Context, name string, src io.Reader) (Summary, error) {
	start := time.Now()
	r := &runner{in: in, ctx: ctx, seen: map[string]string{}, journal: &journal{}}
	r.prog.FilesTotal = 1
	err := r.jsonl(fileEntry{path: name, display: name}, src, 0)
	if err == nil {
		err = r.flush(true)
	}
	r.prog.Files = 1
	r.report("")
	return r.summary(start), err
}

func displayPath(p string) string { return filepath.ToSlash(p) }
