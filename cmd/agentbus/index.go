package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentbus/agentbus/retrieval/ingest"
)

func newIndex() *cobra.Command {
	var f searchFlags
	var asJSON bool
	var batch int
	var remote, token string
	cmd := &cobra.Command{
		Use:   "index PATH...",
		Short: "Index Markdown, text and JSONL files (directories recursively) into a tenant's search index",
		Long: `Index Markdown (.md, .markdown) and text (.txt) files — one document each, its id the path
relative to the directory given — and JSONL files (.jsonl), one document per line:
{"id", "title", "text", "metadata"} (schema index.record). Documents are cut into chunks,
embedded and written in batches.

A run can be interrupted at any moment: rerunning the same command skips the files already
indexed and unchanged, and continues a JSONL file after its last finished line (journal in
<data>/index-journal/<tenant>.jsonl).

Bad lines and unreadable files are reported with file:line and the reason, and the rest is
indexed. Exit status: 0 when everything was indexed, 1 when some lines or files were not
(the others were), 2 when interrupted (rerun to resume), 3 for bad flags, an unusable
backend or a data directory in use by another agentbus process.

With --url the files are uploaded to a running agentbus (POST /v1/documents) and indexed there
by its ingest workers, as a workflow whose progress is printed; HTML, PDF, DOCX, CSV and XLSX are
read there too.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if remote != "" {
				return runIndexRemote(cmd, remote, f.tenant, token, asJSON, args)
			}
			b, release, err := f.lockAndOpen("index")
			if err != nil {
				return err
			}
			defer release()
			defer b.Close()
			bar := newProgressBar(cmd.ErrOrStderr())
			in, err := ingest.New(ingest.Config{Backend: b, Tenant: f.tenant, BatchSize: batch,
				Journal: journalPath(f.data, f.tenant), Progress: bar.update})
			if err != nil {
				return &exitError{code: exitUsage, msg: err.Error()}
			}
			sum, err := in.Run(cmd.Context(), args...)
			bar.done()
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				_ = enc.Encode(sum)
			} else {
				printSummary(out, sum, f.tenant, b.Name())
			}
			switch {
			case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
				return &exitError{code: exitCanceled, msg: "interrupted; rerun the same command to resume"}
			case err != nil:
				return &exitError{code: exitFailed, msg: err.Error()}
			case len(sum.Errors) > 0:
				return &exitError{code: exitFailed, msg: plural(len(sum.Errors), "problem") + "; the rest was indexed"}
			}
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the summary as JSON")
	cmd.Flags().IntVar(&batch, "batch", 64, "chunks per write to the index")
	cmd.Flags().StringVar(&remote, "url", "", "upload to a running agentbus at this gateway URL (POST /v1/documents) instead of indexing locally; its ingest workers index the files")
	cmd.Flags().StringVar(&token, "token", "", "bearer token for --url (when the gateway has auth on); also AGENTBUS_TOKEN")
	return cmd
}

// runIndexRemote is index --url: upload, follow, sum up. Exit status as
// for a local run.
func runIndexRemote(cmd *cobra.Command, url, tenant, token string, asJSON bool, paths []string) error {
	if token == "" {
		token = os.Getenv("AGENTBUS_TOKEN")
	}
	files, problems := uploadFiles(paths)
	if len(files) == 0 {
		return &exitError{code: exitUsage, msg: fmt.Sprintf("no file to upload under %s (%d problems)", strings.Join(paths, ", "), len(problems))}
	}
	c := newClient(url, tenant)
	c.token = token
	start := time.Now()
	sum, err := indexRemote(cmd.Context(), c, files, cmd.ErrOrStderr())
	sum.Duration = time.Since(start)
	sum.Errors = append(problems, sum.Errors...)
	out := cmd.OutOrStdout()
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		_ = enc.Encode(sum)
	} else if err == nil {
		printSummary(out, sum, tenant, url)
	}
	switch {
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return &exitError{code: exitCanceled, msg: "interrupted: the upload goes on on the server if it was accepted"}
	case err != nil:
		return &exitError{code: exitFailed, msg: err.Error()}
	case len(sum.Errors) > 0:
		return &exitError{code: exitFailed, msg: plural(len(sum.Errors), "problem") + "; the rest was indexed"}
	}
	return nil
}

func printSummary(w io.Writer, s ingest.Summary, tenant, backend string) {
	fmt.Fprintf(w, "indexed %d documents (%d chunks) from %d files into tenant %s in %s\n",
		s.Documents, s.Chunks, s.Files, tenant, s.Duration.Round(time.Millisecond))
	fmt.Fprintf(w, "backend: %s\n", backend)
	if s.Skipped > 0 {
		fmt.Fprintf(w, "skipped %d files indexed before and unchanged\n", s.Skipped)
	}
	if len(s.Errors) > 0 {
		fmt.Fprintf(w, "%s:\n", plural(len(s.Errors), "problem"))
		for _, p := range s.Errors {
			fmt.Fprintf(w, "  %s\n", p)
		}
	}
}

// progressBar renders ingest progress: a bar redrawn in place on a
// terminal, a plain line every few seconds otherwise.
type progressBar struct {
	w        io.Writer
	tty      bool
	last     time.Time
	every    time.Duration
	drawn    bool
	lastLine ingest.Progress
}

func newProgressBar(w io.Writer) *progressBar {
	p := &progressBar{w: w, every: 5 * time.Second}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.tty, p.every = true, 100*time.Millisecond
		}
	}
	return p
}

func (p *progressBar) update(pr ingest.Progress) {
	p.lastLine = pr
	if time.Since(p.last) < p.every {
		return
	}
	p.last = time.Now()
	p.draw(pr)
}

func (p *progressBar) draw(pr ingest.Progress) {
	pct := 100.0
	if pr.BytesTotal > 0 {
		pct = 100 * float64(pr.Bytes) / float64(pr.BytesTotal)
	}
	stats := fmt.Sprintf("%3.0f%% %d/%d files, %d documents, %d chunks, %d skipped, %d problems",
		pct, pr.Files, pr.FilesTotal, pr.Documents, pr.Chunks, pr.Skipped, pr.Errors)
	if !p.tty {
		fmt.Fprintf(p.w, "indexing: %s\n", stats)
		return
	}
	const width = 24
	n := int(pct / 100 * width)
	file := pr.File
	if len(file) > 30 {
		file = "…" + file[len(file)-29:]
	}
	fmt.Fprintf(p.w, "\r\033[K[%s%s] %s %s", strings.Repeat("█", n), strings.Repeat("░", width-n), stats, file)
	p.drawn = true
}

// done draws the final state (and ends the bar's line).
func (p *progressBar) done() {
	if p.lastLine.FilesTotal == 0 {
		return
	}
	p.draw(p.lastLine)
	if p.drawn {
		fmt.Fprintln(p.w)
	}
}

// plural is "1 problem", "2 problems".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
