package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentbus/agentbus/corpus"
	"github.com/agentbus/agentbus/llm"
	"github.com/agentbus/agentbus/retrieval"
	"github.com/agentbus/agentbus/retrieval/eval"
	"github.com/agentbus/agentbus/retrieval/ingest"
)

func newEval() *cobra.Command {
	var f searchFlags
	var queriesPath, qrelsPath string
	var k int
	var profiles []string
	var asJSON, raw bool
	var set, rerank, llmURL, llmModel string
	var llmTimeout time.Duration
	cmd := &cobra.Command{
		Use:   "eval",
		Short: "Score search (every profile, the RRF ensemble, and RRF reranked) on labelled queries: NDCG@k, Recall@k, MRR",
		Long: `Run labelled queries in BEIR format — queries.jsonl ({"_id", "text"} per line) and a qrels
TSV ("query-id\tcorpus-id\tscore", graded) — against a tenant's index with every search
profile, with the RRF ensemble (vector lists weighted 0.5; a comparison's sides searched as
lists of their own) and with RRF reranked (--rerank), and print NDCG@k, Recall@k and MRR@k.
Queries go through query understanding first, as in the search agent: framing words
("how do I", "compare", "in detail") are not searched; --raw searches them as given.
Relevance is per document: chunk hits count for their document at the rank of its first
chunk.

Without --queries and --qrels, a labelled set shipped in the binary is used (--set: shipped,
60 queries, or realistic, 76 held-out queries written as Go developers ask; both over the Go
standard library documentation); if the tenant's index is empty, that corpus is indexed into
it first. With them, an empty index is an error (exit status 3): index the documents the
qrels judge first (agentbus index).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (queriesPath == "") != (qrelsPath == "") {
				return &exitError{code: exitUsage, msg: "give both --queries and --qrels, or neither for the shipped corpus"}
			}
			if queriesPath != "" && cmd.Flags().Changed("set") {
				return &exitError{code: exitUsage, msg: "give --set or --queries and --qrels, not both"}
			}
			queries, qrels, err := loadLabels(set, queriesPath, qrelsPath)
			if err != nil {
				return &exitError{code: exitUsage, msg: err.Error()}
			}
			reranker, err := evalReranker(rerank, llmURL, llmModel, llmTimeout)
			if err != nil {
				return err
			}
			b, release, err := f.lockAndOpen("eval")
			if err != nil {
				return err
			}
			defer release()
			defer b.Close()
			ctx := cmd.Context()
			if queriesPath == "" {
				errw := cmd.ErrOrStderr()
				if err := indexSampleCorpus(ctx, b, f.tenant, f.data, slog.New(slog.NewTextHandler(errw, nil)), errw); err != nil {
					return &exitError{code: exitFailed, msg: err.Error()}
				}
			} else if err := f.notEmpty(ctx, b); err != nil {
				return err
			}
			rep, err := eval.Run(ctx, eval.Config{Backend: b, Tenant: f.tenant, K: k, Profiles: profiles, Reranker: reranker, Raw: raw}, queries, qrels)
			if err != nil {
				return &exitError{code: exitFailed, msg: err.Error()}
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(rep)
			}
			return rep.WriteTable(out)
		},
	}
	f.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&queriesPath, "queries", "", "BEIR queries.jsonl (default: the shipped corpus's)")
	fl.StringVar(&qrelsPath, "qrels", "", "BEIR qrels TSV (default: the shipped corpus's)")
	fl.IntVarP(&k, "k", "k", 10, "cut-off of every metric")
	fl.StringSliceVar(&profiles, "profiles", nil, "profiles to run and fuse (default: every profile of the backend)")
	fl.BoolVar(&asJSON, "json", false, "print the report, with per-query scores, as JSON")
	fl.StringVar(&set, "set", corpus.SetShipped, "shipped labelled set to score: shipped or realistic (without --queries/--qrels)")
	fl.BoolVar(&raw, "raw", false, "search each query's text as given, without query understanding")
	fl.StringVar(&rerank, "rerank", retrieval.RerankDeterministic, "reranker of the rrf+rerank run: deterministic, or llm (with --llm-url; falls back to deterministic)")
	fl.StringVar(&llmURL, "llm-url", "", "OpenAI-compatible API base URL for --rerank llm; key from "+llm.APIKeyEnv)
	fl.StringVar(&llmModel, "llm-model", "gpt-4o-mini", "model of --rerank llm")
	fl.DurationVar(&llmTimeout, "llm-timeout", 15*time.Second, "bound on one LLM rerank call")
	return cmd
}

// evalReranker is the reranker --rerank names.
func evalReranker(name, url, model string, timeout time.Duration) (retrieval.Reranker, error) {
	switch name {
	case retrieval.RerankDeterministic:
		return retrieval.Deterministic{}, nil
	case retrieval.RerankLLM:
		if url == "" {
			return nil, &exitError{code: exitUsage, msg: "--rerank llm needs --llm-url"}
		}
		chat, err := llm.NewChat(llm.ChatConfig{URL: url, Model: model, APIKey: os.Getenv(llm.APIKeyEnv), Timeout: timeout})
		if err != nil {
			return nil, &exitError{code: exitUsage, msg: "--llm-url: " + err.Error()}
		}
		r, err := retrieval.NewLLM(retrieval.LLMConfig{Chat: chat})
		if err != nil {
			return nil, &exitError{code: exitUsage, msg: err.Error()}
		}
		return r, nil
	}
	return nil, &exitError{code: exitUsage, msg: fmt.Sprintf("--rerank %q: want deterministic or llm", name)}
}

// notEmpty reports an empty tenant index as the error it is for labelled
// queries: every score would be 0, most likely because --data, --tenant or
// the backend is not the one the documents were indexed into.
func (f *searchFlags) notEmpty(ctx context.Context, b retrieval.Backend) error {
	n, err := b.Count(ctx, f.tenant)
	if err != nil {
		return &exitError{code: exitFailed, msg: err.Error()}
	}
	if n > 0 {
		return nil
	}
	where, index := "data directory "+f.data, fmt.Sprintf("agentbus index --data %s --tenant %s", f.data, f.tenant)
	if f.backend == "vespa" {
		where, index = "Vespa at "+f.vespaURL, fmt.Sprintf("agentbus index --tenant %s --search-backend vespa --vespa-url %s", f.tenant, f.vespaURL)
	}
	return &exitError{code: exitUsage, msg: fmt.Sprintf("the search index of tenant %s is empty (%s): nothing to evaluate; index the documents first (%s PATH...), or check --data, --tenant and --search-backend",
		f.tenant, where, index)}
}

// loadLabels reads the given files, or the shipped labelled set of that
// name when both paths are empty.
func loadLabels(set, queriesPath, qrelsPath string) ([]eval.Query, eval.Qrels, error) {
	if queriesPath == "" {
		s, ok := corpus.LabelledSet(set)
		if !ok {
			return nil, nil, fmt.Errorf("--set %q: want %s or %s", set, corpus.SetShipped, corpus.SetRealistic)
		}
		qs, err := eval.ReadQueries(s.Queries(), s.QueriesName)
		if err != nil {
			return nil, nil, err
		}
		qr, err := eval.ReadQrels(s.Qrels(), s.QrelsName)
		return qs, qr, err
	}
	qs, err := eval.LoadQueries(queriesPath)
	if err != nil {
		return nil, nil, err
	}
	qr, err := eval.LoadQrels(qrelsPath)
	return qs, qr, err
}

func printProblems(w io.Writer, s ingest.Summary) {
	var lines []string
	for _, p := range s.Errors {
		lines = append(lines, "  "+p.String())
	}
	if len(lines) > 0 {
		fmt.Fprintf(w, "%s:\n%s\n", plural(len(lines), "problem"), strings.Join(lines, "\n"))
	}
}
