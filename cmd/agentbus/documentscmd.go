package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/agentbus/agentbus/agents/ingest"
	"github.com/agentbus/agentbus/retrieval"
)

// newDocuments is `agentbus documents list|get|delete`: the tenant's
// indexed documents, through GET/DELETE /v1/documents (answered by the
// workers running the ingest capability). Upload with agentbus index
// --url.
func newDocuments() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "documents",
		Short: "List, describe or delete the tenant's indexed documents (upload with agentbus index --url)",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newDocumentsList(), newDocumentsGet(), newDocumentsDelete())
	return cmd
}

func newDocumentsList() *cobra.Command {
	var f clientFlags
	var after string
	var limit int
	var all bool
	cmd := &cobra.Command{
		Use:   "list [flags]",
		Short: "List the tenant's indexed documents in id order, a page at a time",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c := newClientFor(f)
			var docs []retrieval.DocumentInfo
			var page retrieval.DocumentPage
			for {
				q := url.Values{"limit": {strconv.Itoa(limit)}}
				if after != "" {
					q.Set("after", after)
				}
				page = retrieval.DocumentPage{}
				if err := getAnswer(cmd.Context(), c, "/v1/documents?"+q.Encode(), &page); err != nil {
					return err
				}
				docs = append(docs, page.Documents...)
				after = page.Next
				if !all || after == "" {
					break
				}
			}
			w := cmd.OutOrStdout()
			if f.json {
				return printJSON(w, retrieval.DocumentPage{Documents: docs, Next: page.Next, Total: page.Total})
			}
			if len(docs) == 0 {
				fmt.Fprintln(w, "no documents (upload some with: agentbus index --url URL FILE…)")
				return nil
			}
			tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tCHUNKS\tINDEXED\tTITLE\tSOURCE")
			for _, d := range docs {
				fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", d.ID, d.Chunks, stamp(d.Indexed), cell(d.Title, 40), dash(d.Source))
			}
			_ = tw.Flush()
			fmt.Fprintf(w, "%d of %d documents\n", len(docs), page.Total)
			if page.Next != "" {
				fmt.Fprintf(w, "more: agentbus documents list --after %s (or --all)\n", page.Next)
			}
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().IntVar(&limit, "limit", 100, "documents a page (1 to 1000)")
	cmd.Flags().StringVar(&after, "after", "", "start after this document id (the last of the previous page)")
	cmd.Flags().BoolVar(&all, "all", false, "read every page")
	return cmd
}

func newDocumentsGet() *cobra.Command {
	var f clientFlags
	cmd := &cobra.Command{
		Use:   "get [flags] DOCUMENT_ID",
		Short: "Describe one indexed document: its chunks, when it was indexed, its title and source",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var d retrieval.DocumentInfo
			if err := getAnswer(cmd.Context(), newClientFor(f), "/v1/documents/"+documentPath(args[0]), &d); err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if f.json {
				return printJSON(w, d)
			}
			fmt.Fprintf(w, "document %s: %d chunks, indexed %s\n", d.ID, d.Chunks, stamp(d.Indexed))
			if d.Title != "" {
				fmt.Fprintf(w, "  title:  %s\n", d.Title)
			}
			if d.Source != "" {
				fmt.Fprintf(w, "  source: %s\n", d.Source)
			}
			return nil
		},
	}
	f.register(cmd)
	return cmd
}

func newDocumentsDelete() *cobra.Command {
	var f clientFlags
	cmd := &cobra.Command{
		Use:   "delete [flags] DOCUMENT_ID",
		Short: "Remove a document with every chunk of it from the tenant's index",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			resp, err := newClientFor(f).do(cmd.Context(), http.MethodDelete, "/v1/documents/"+documentPath(args[0]), nil)
			if err != nil {
				return &exitError{code: exitUsage, msg: err.Error()}
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return &exitError{code: exitUsage, msg: apiErr(resp).Error()}
			}
			var d ingest.Deleted
			if err := json.NewDecoder(resp.Body).Decode(&d); err != nil {
				return &exitError{code: exitUsage, msg: "reading the answer: " + err.Error()}
			}
			w := cmd.OutOrStdout()
			if f.json {
				return printJSON(w, d)
			}
			fmt.Fprintf(w, "deleted document %s (%d chunks)\n", d.ID, d.Chunks)
			return nil
		},
	}
	f.register(cmd)
	return cmd
}

// documentPath escapes a document id for GET/DELETE /v1/documents/{id...}
// segment by segment: an id may hold slashes.
func documentPath(id string) string {
	parts := strings.Split(id, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/")
}
