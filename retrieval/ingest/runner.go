package ingest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"strings"
	"time"

	"github.com/agentbus/agentbus/retrieval"
	"github.com/agentbus/agentbus/schemas"
)

// RecordSchema is the schema every JSONL line is checked against.
const RecordSchema = "index.record"

// maxLine bounds one JSONL line.
const maxLine = 16 << 20

// mark is a journal entry that holds once the first end chunks of the
// buffer are written.
type mark struct {
	end int
	e   entry
}

// span is a buffered document: its chunks end at buf[end].
type span struct {
	id  string
	end int
}

// runner is the state of one run.
type runner struct {
	in      *Ingester
	ctx     context.Context
	journal *journal
	sum     Summary
	prog    Progress
	seen    map[string]string // document id → where it was first seen
	buf     []retrieval.Chunk
	docs    []span // the buffered documents, in order
	marks   []mark
	cur     string // the file being read, for progress
	base    int64  // bytes of the files before it
}

func (r *runner) summary(start time.Time) Summary {
	s := r.sum
	s.Duration = time.Since(start)
	return s
}

func (r *runner) problem(p Problem) {
	r.sum.Errors = append(r.sum.Errors, p)
	r.prog.Errors = len(r.sum.Errors)
}

func (r *runner) report(file string) {
	if r.in.cfg.Progress == nil {
		return
	}
	p := r.prog
	p.Errors = len(r.sum.Errors)
	p.Documents, p.Chunks, p.Skipped = r.sum.Documents, r.sum.Chunks, r.sum.Skipped
	p.File = file
	if p.File == "" {
		p.File = r.cur
	}
	r.in.cfg.Progress(p)
}

// file reads one file, resuming or skipping it as the journal says.
func (r *runner) file(f fileEntry) error {
	lim := r.in.cfg.Limits
	if f.size > lim.MaxFileBytes {
		r.problem(Problem{File: f.display, Code: CodeTooLarge,
			Reason: fmt.Sprintf("%d bytes, over the limit of %d", f.size, lim.MaxFileBytes)})
		r.prog.Files++
		r.prog.Bytes += f.size
		return nil
	}
	data, err := os.ReadFile(f.path)
	if err != nil {
		r.problem(Problem{File: f.display, Reason: unwrapPath(err), Code: CodeIO})
		r.prog.Files++
		return nil
	}
	sum := sha256.Sum256(data)
	e := entry{Path: f.abs, Tenant: r.in.cfg.Tenant, Backend: r.in.cfg.Backend.Name(),
		Size: f.size, MTime: f.mtime, SHA256: hex.EncodeToString(sum[:])}
	from := 0
	if prev, ok := r.journal.lookup(f.abs); ok && prev.SHA256 == e.SHA256 && prev.Size == int64(len(data)) {
		if prev.Done && r.stillThere(f) {
			r.sum.Skipped++
			r.prog.Files++
			r.prog.Bytes += f.size
			r.report(f.display)
			return nil
		}
		if !prev.Done {
			from = prev.Line
		}
	}
	r.sum.Files++
	r.cur, r.base = f.display, r.prog.Bytes
	if err := r.read(f, data, from, e); err != nil {
		return err
	}
	r.prog.Files++
	r.prog.Bytes = r.base + f.size
	r.report(f.display)
	return nil
}

// stillThere reports whether a file the journal has as done still has
// its document in the index: one deleted since (through a DocumentStore)
// is read again. A JSONL file's documents are not checked (there may be
// millions); a backend that is not a DocumentStore is trusted.
func (r *runner) stillThere(f fileEntry) bool {
	if r.in.store == nil || FormatOf(f.path) == FormatJSONL {
		return true
	}
	_, err := r.in.store.Document(r.ctx, r.in.cfg.Tenant, f.rel)
	return !errors.Is(err, retrieval.ErrNotFound)
}

// read indexes one file's content from JSONL line from on, and queues
// the journal entry e (with Done set) to hold once its chunks are
// written. A file that cannot be read is a problem, not an error.
func (r *runner) read(f fileEntry, data []byte, from int, e entry) error {
	format, err := Detect(f.path, data)
	if err == nil && format == FormatJSONL {
		if err := checkUTF8(f.display, format, data); err != nil {
			r.problem(problemOf(f.display, err))
		} else if err := r.jsonl(f, bytes.NewReader(data), from, e); err != nil {
			return err
		}
	} else {
		ex, err := Extract(f.path, data, r.in.cfg.Limits)
		if err != nil {
			r.problem(problemOf(f.display, err))
		} else {
			r.extracted(f, ex)
		}
	}
	e.Done = true
	return r.add(nil, e)
}

// extracted makes one document of a file that is not JSONL: its id is
// the path relative to the directory given, its title the extraction's
// or the file name.
func (r *runner) extracted(f fileEntry, ex Extracted) {
	title := ex.Title
	if title == "" {
		title = baseTitle(f.rel)
	}
	md := maps.Clone(f.meta)
	if md == nil {
		md = map[string]any{}
	}
	md["path"] = f.rel
	doc := retrieval.Document{ID: f.rel, Title: title, Source: f.display, Metadata: md}
	if !r.unique(doc.ID, f.display, 0) {
		return
	}
	r.buffer(doc.ID, Chunks(r.in.chunker, 0, doc, ex))
}

// unique records id as seen at file:line, or reports it as a duplicate.
func (r *runner) unique(id, file string, line int) bool {
	where := Problem{File: file, Line: line}.String()
	where = strings.TrimSuffix(where, ": ")
	if first, dup := r.seen[id]; dup {
		r.problem(Problem{File: file, Line: line, Reason: fmt.Sprintf("duplicate document id %q (first at %s)", id, first), Code: CodeInvalid})
		return false
	}
	r.seen[id] = where
	return true
}

// record is one JSONL line after validation.
type record struct {
	ID       string         `json:"id"`
	Title    string         `json:"title"`
	Text     string         `json:"text"`
	Metadata map[string]any `json:"metadata"`
}

// jsonl reads one document per line, after line from.
func (r *runner) jsonl(f fileEntry, src io.Reader, from int, e ...entry) error {
	sc := bufio.NewScanner(src)
	sc.Buffer(make([]byte, 0, 64*1024), maxLine)
	n := 0
	var read int64
	for sc.Scan() {
		n++
		read += int64(len(sc.Bytes())) + 1
		r.prog.Bytes = r.base + read
		if n <= from {
			continue
		}
		if err := r.ctx.Err(); err != nil {
			return err
		}
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) > 0 {
			r.line(f, n, line)
		}
		if len(e) > 0 {
			m := e[0]
			m.Line = n
			if err := r.add(nil, m); err != nil {
				return err
			}
		}
	}
	if err := sc.Err(); err != nil {
		reason := err.Error()
		if errors.Is(err, bufio.ErrTooLong) {
			reason = fmt.Sprintf("line longer than %d bytes; the rest of the file is not read", maxLine)
		}
		r.problem(Problem{File: f.display, Line: n + 1, Reason: reason, Code: CodeInvalid})
	}
	return nil
}

// line indexes one JSONL line, or reports what is wrong with it.
func (r *runner) line(f fileEntry, n int, line []byte) {
	if err := schemas.Validate(RecordSchema, line); err != nil {
		var ve *schemas.ValidationError
		if !errors.As(err, &ve) {
			r.problem(Problem{File: f.display, Line: n, Reason: err.Error(), Code: CodeInvalid})
			return
		}
		parts := make([]string, len(ve.Problems))
		for i, p := range ve.Problems {
			parts[i] = p.Message
			if p.Pointer != "" {
				parts[i] = p.Pointer + ": " + p.Message
			}
		}
		r.problem(Problem{File: f.display, Line: n, Reason: strings.Join(parts, "; "), Code: CodeInvalid})
		return
	}
	var rec record
	if err := json.Unmarshal(line, &rec); err != nil {
		r.problem(Problem{File: f.display, Line: n, Reason: err.Error(), Code: CodeInvalid})
		return
	}
	if !r.unique(rec.ID, f.display, n) {
		return
	}
	md := rec.Metadata
	if len(f.meta) > 0 {
		md = maps.Clone(f.meta)
		maps.Copy(md, rec.Metadata)
	}
	doc := retrieval.Document{ID: rec.ID, Title: rec.Title, Text: rec.Text, Source: f.display, Metadata: md}
	r.buffer(doc.ID, r.in.chunker.Chunk(doc))
}

// buffer queues a document's chunks for the next batch.
func (r *runner) buffer(docID string, chunks []retrieval.Chunk) {
	r.sum.Documents++
	r.buf = append(r.buf, chunks...)
	r.docs = append(r.docs, span{id: docID, end: len(r.buf)})
}

// add queues chunks and a journal entry that holds once they are
// written, and writes full batches.
func (r *runner) add(chunks []retrieval.Chunk, e entry) error {
	r.buf = append(r.buf, chunks...)
	r.marks = append(r.marks, mark{end: len(r.buf), e: e})
	return r.flush(false)
}

// flush writes full batches, or everything when all is set, and journals
// the entries that then hold. With a DocumentStore a batch ends at a
// document's end (a document is never split between two calls, so its
// replacement stays atomic) and a document with no chunks is written
// too: its replacement by nothing deletes what an earlier run indexed.
func (r *runner) flush(all bool) error {
	size := r.in.cfg.BatchSize
	for (len(r.buf) >= size || (all && len(r.buf) > 0)) || (r.in.store != nil && (len(r.docs) >= size || (all && len(r.docs) > 0))) {
		n := min(size, len(r.buf))
		if r.in.store != nil {
			d := 0 // documents in the batch
			for d < len(r.docs) && (d == 0 || r.docs[d-1].end < n) && d < size {
				d++
			}
			n = r.docs[d-1].end
			for d < len(r.docs) && d < size && r.docs[d].end == n {
				d++ // documents with no chunks right after
			}
			if err := r.in.store.ReplaceBatch(r.ctx, r.in.cfg.Tenant, r.versions(d)); err != nil {
				return fmt.Errorf("ingest: replace %d documents (%d chunks) for tenant %s: %w", d, n, r.in.cfg.Tenant, err)
			}
			r.docs = append(r.docs[:0:0], r.docs[d:]...)
			for i := range r.docs {
				r.docs[i].end -= n
			}
		} else {
			if err := r.in.cfg.Backend.Index(r.ctx, r.in.cfg.Tenant, r.buf[:n]); err != nil {
				return fmt.Errorf("ingest: index %d chunks for tenant %s: %w", n, r.in.cfg.Tenant, err)
			}
			r.docs = r.docs[:0]
		}
		r.buf = append(r.buf[:0:0], r.buf[n:]...)
		r.sum.Chunks += n
		if err := r.commit(n); err != nil {
			return err
		}
		r.report("")
	}
	return r.commit(0)
}

// versions is the first d buffered documents with their chunks.
func (r *runner) versions(d int) []retrieval.Version {
	out := make([]retrieval.Version, d)
	start := 0
	for i, s := range r.docs[:d] {
		out[i] = retrieval.Version{DocID: s.id, Chunks: r.buf[start:s.end]}
		start = s.end
	}
	return out
}

// commit journals the marks whose chunks are written (end ≤ n, the number
// just written), the last one per file only, and shifts the rest.
func (r *runner) commit(n int) error {
	var done []entry
	last := map[string]int{}
	i := 0
	for ; i < len(r.marks) && r.marks[i].end <= n; i++ {
		e := r.marks[i].e
		if j, ok := last[e.Path]; ok {
			done[j] = e
			continue
		}
		last[e.Path] = len(done)
		done = append(done, e)
	}
	r.marks = r.marks[i:]
	for k := range r.marks {
		r.marks[k].end -= n
	}
	if len(done) == 0 {
		return nil
	}
	return r.journal.record(done)
}
