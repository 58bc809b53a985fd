package main

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/agentbus/agentbus/llm"
	"github.com/agentbus/agentbus/retrieval"
	"github.com/agentbus/agentbus/retrieval/vespa"
	"github.com/agentbus/agentbus/subjects"
)

// searchFlags choose the search backend and tenant of index and eval.
type searchFlags struct {
	data, tenant, backend, vespaURL string
}

func (f *searchFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.data, "data", "./data", "data directory (the embedded index lives in <data>/search, the resume journal in <data>/index-journal)")
	fl.StringVar(&f.tenant, "tenant", "default", "tenant whose index is used")
	fl.StringVar(&f.backend, "search-backend", "embedded", "search backend: embedded or vespa")
	fl.StringVar(&f.vespaURL, "vespa-url", "", "Vespa container URL, e.g. http://localhost:8080 (with --search-backend vespa)")
}

// searchDir is where the embedded backend keeps its indexes under data.
func searchDir(data string) string { return filepath.Join(data, "search") }

// journalPath is the resume journal of a tenant's `agentbus index` runs.
func journalPath(data, tenant string) string {
	return filepath.Join(data, "index-journal", tenant+".jsonl")
}

// openEmbedded opens the embedded backend under dir; nil while that
// backend is not part of the build.
var openEmbedded func(dir string, e llm.Embedder) (retrieval.Backend, error)

// open returns the backend the flags name.
func (f *searchFlags) open() (retrieval.Backend, error) {
	if err := subjects.ValidTenant(f.tenant); err != nil {
		return nil, &exitError{code: exitUsage, msg: "--tenant: " + err.Error()}
	}
	switch f.backend {
	case "embedded":
		if f.vespaURL != "" {
			return nil, &exitError{code: exitUsage, msg: "--vespa-url needs --search-backend vespa"}
		}
		if openEmbedded == nil {
			return nil, &exitError{code: exitUsage, msg: "--search-backend embedded: not available in this build yet; use --search-backend vespa --vespa-url URL"}
		}
		b, err := openEmbedded(searchDir(f.data), llm.LocalEmbedder{})
		if err != nil {
			return nil, &exitError{code: exitUsage, msg: err.Error()}
		}
		return b, nil
	case "vespa":
		if f.vespaURL == "" {
			return nil, &exitError{code: exitUsage, msg: "--search-backend vespa needs --vespa-url"}
		}
		b, err := vespa.New(vespa.Config{URL: f.vespaURL})
		if err != nil {
			return nil, &exitError{code: exitUsage, msg: err.Error()}
		}
		return b, nil
	}
	return nil, &exitError{code: exitUsage, msg: fmt.Sprintf("--search-backend %q: want embedded or vespa", f.backend)}
}
