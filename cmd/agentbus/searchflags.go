package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/agentbus/agentbus/corpus"
	"github.com/agentbus/agentbus/llm"
	"github.com/agentbus/agentbus/retrieval"
	"github.com/agentbus/agentbus/retrieval/embedded"
	"github.com/agentbus/agentbus/retrieval/ingest"
	"github.com/agentbus/agentbus/retrieval/vespa"
	"github.com/agentbus/agentbus/subjects"
)

// backendFlags choose the search backend and the embedder of every command
// that reads or writes an index (serve, worker, index, eval). Indexing and
// searching must use the same embedder: the embedded backend re-embeds a
// tenant whose embedder changed when it opens it.
type backendFlags struct {
	backend, vespaURL, embedURL, embedModel string
	// vectors is the embedded backend's offline vector model: hash or lsa.
	vectors string
}

func (f *backendFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.backend, "search-backend", "embedded", "search backend: embedded (a local index under the data directory) or vespa")
	fl.StringVar(&f.vespaURL, "vespa-url", "", "Vespa container URL, e.g. http://localhost:8080 (with --search-backend vespa)")
	fl.StringVar(&f.embedURL, "embed-url", "", "OpenAI-compatible API base URL for embeddings (key from "+llm.APIKeyEnv+"); unset: the deterministic local embedder")
	fl.StringVar(&f.embedModel, "embed-model", "text-embedding-3-small", "embeddings model (with --embed-url)")
	fl.StringVar(&f.vectors, "vector-model", "hash", "offline vectors of the embedded backend without --embed-url: hash (local-hash-256, word and character hashing) "+
		"or lsa (local-lsa-128: latent semantic analysis learned from each tenant's own chunks at index time; every command reading the index must say so too)")
}

// embedder is the embedder the flags name.
func (f *backendFlags) embedder() (llm.Embedder, error) {
	if f.embedURL == "" {
		return llm.LocalEmbedder{}, nil
	}
	e, err := llm.NewOpenAIEmbedder(llm.OpenAIEmbedderConfig{BaseURL: f.embedURL, Model: f.embedModel, APIKey: os.Getenv(llm.APIKeyEnv)})
	if err != nil {
		return nil, &exitError{code: exitUsage, msg: "--embed-url: " + err.Error()}
	}
	return e, nil
}

// check reports a bad combination of the flags without opening anything.
func (f *backendFlags) check() error {
	if _, err := f.embedder(); err != nil {
		return err
	}
	switch {
	case f.vectors != "" && f.vectors != "hash" && f.vectors != "lsa":
		return &exitError{code: exitUsage, msg: fmt.Sprintf("--vector-model %q: want hash or lsa", f.vectors)}
	case f.vectors == "lsa" && (f.embedURL != "" || f.backend != "embedded"):
		return &exitError{code: exitUsage, msg: "--vector-model lsa is the embedded backend's offline model: not with --embed-url or --search-backend vespa"}
	}
	switch f.backend {
	case "embedded":
		if f.vespaURL != "" {
			return &exitError{code: exitUsage, msg: "--vespa-url needs --search-backend vespa"}
		}
	case "vespa":
		if f.vespaURL == "" {
			return &exitError{code: exitUsage, msg: "--search-backend vespa needs --vespa-url"}
		}
	default:
		return &exitError{code: exitUsage, msg: fmt.Sprintf("--search-backend %q: want embedded or vespa", f.backend)}
	}
	return nil
}

// open returns the backend the flags name; the embedded one keeps its
// indexes in dir.
func (f *backendFlags) open(dir string) (retrieval.Backend, error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	emb, err := f.embedder()
	if err != nil {
		return nil, err
	}
	switch f.backend {
	case "embedded":
		cfg := embedded.Config{Dir: dir, Embedder: emb}
		if f.vectors == "lsa" {
			cfg.LSA = &llm.LSAConfig{}
		}
		b, err := embedded.Open(cfg)
		if err != nil {
			return nil, &exitError{code: exitUsage, msg: err.Error()}
		}
		return b, nil
	case "vespa":
		b, err := vespa.New(vespa.Config{URL: f.vespaURL, Embedder: emb})
		if err != nil {
			return nil, &exitError{code: exitUsage, msg: "--vespa-url: " + err.Error()}
		}
		return b, nil
	}
	return nil, &exitError{code: exitUsage, msg: fmt.Sprintf("--search-backend %q: want embedded or vespa", f.backend)}
}

// searchFlags choose the search backend and tenant of index and eval.
type searchFlags struct {
	backendFlags
	data, tenant string
}

func (f *searchFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.data, "data", "./data", "data directory (the embedded index lives in <data>/index, the resume journal in <data>/index-journal)")
	fl.StringVar(&f.tenant, "tenant", "default", "tenant whose index is used")
	f.backendFlags.register(cmd)
}

// lockAndOpen checks the flags, locks the data directory (release
// unlocks it) and opens the backend the flags name. Bad flags are reported
// before anything is created or locked.
func (f *searchFlags) lockAndOpen(command string) (b retrieval.Backend, release func(), err error) {
	if err := subjects.ValidTenant(f.tenant); err != nil {
		return nil, nil, &exitError{code: exitUsage, msg: "--tenant: " + err.Error()}
	}
	if err := f.check(); err != nil {
		return nil, nil, err
	}
	release, err = lockData(f.data, command)
	if err != nil {
		return nil, nil, err
	}
	b, err = f.backendFlags.open(searchDir(f.data))
	if err != nil {
		release()
		return nil, nil, err
	}
	return b, release, nil
}

// searchDir is where the embedded backend keeps its indexes under data.
func searchDir(data string) string { return filepath.Join(data, "index") }

// journalPath is the resume journal of a tenant's `agentbus index` runs.
func journalPath(data, tenant string) string {
	return filepath.Join(data, "index-journal", tenant+".jsonl")
}

// indexSampleCorpus indexes the shipped sample corpus into tenant's index
// if that index is empty, so that a first query has something to find. A
// marker file in dir (the data directory) records a start that did not
// finish — serve stopped mid-way — and the next start indexes the corpus
// again (chunks replace themselves by id) rather than keep half of it. It
// reports what it did on w and log.
func indexSampleCorpus(ctx context.Context, b retrieval.Backend, tenant, dir string, log *slog.Logger, w io.Writer) error {
	marker := filepath.Join(dir, "sample-corpus."+tenant+".indexing")
	_, err := os.Stat(marker)
	interrupted := err == nil
	n, err := b.Count(ctx, tenant)
	if err != nil {
		return fmt.Errorf("sample corpus: %w", err)
	}
	if n > 0 && !interrupted {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("sample corpus: %w", err)
	}
	if err := os.WriteFile(marker, []byte("indexing the sample corpus; removed when done\n"), 0o644); err != nil {
		return fmt.Errorf("sample corpus: %w", err)
	}
	why := "empty index"
	if interrupted {
		why = "the last indexing of the sample corpus did not finish"
	}
	log.Info(why+": indexing the shipped corpus ("+corpus.DocumentsName+", Go standard library documentation) for tenant "+tenant, "backend", b.Name())
	in, err := ingest.New(ingest.Config{Backend: b, Tenant: tenant, BatchSize: corpus.IndexBatch})
	if err != nil {
		return err
	}
	sum, err := in.JSONL(ctx, corpus.DocumentsName, corpus.Documents())
	if err != nil {
		return fmt.Errorf("sample corpus: %w", err)
	}
	if w != nil {
		printProblems(w, sum)
	}
	if err := os.Remove(marker); err != nil {
		return fmt.Errorf("sample corpus: %w", err)
	}
	log.Info("sample corpus indexed", "documents", sum.Documents, "chunks", sum.Chunks, "took", sum.Duration.Round(1e6))
	return nil
}
