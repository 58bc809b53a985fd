package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentbus/agentbus/gateway"
	"github.com/agentbus/agentbus/sessions"
	"github.com/agentbus/agentbus/subjects"
)

// newSession is `agentbus session ID`: a conversation's turns and summary.
func newSession() *cobra.Command {
	var f clientFlags
	var user string
	cmd := &cobra.Command{
		Use:   "session [flags] [SESSION_ID]",
		Short: "List your conversation sessions, or print one's turns and rolling summary (continue it with ask --session)",
		Long: "Without an id, list the conversation sessions (newest first) with their turn counts and last\n" +
			"queries. With one, print its turns (what was asked, how a follow-up was resolved, the answer's\n" +
			"first sentence and its sources) and its rolling summary. A token with a user reads that user's\n" +
			"sessions; --user names one with an admin token (or with auth off).\n" +
			"Exit status: 0 found, 3 usage or connection error or an unknown session.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := "/v1/sessions"
			if len(args) == 1 {
				id := args[0]
				if err := subjects.ValidSession(id); err != nil {
					return &exitError{code: exitUsage, msg: fmt.Sprintf("session id %q: want a token matching %s", id, subjects.TokenPattern)}
				}
				path += "/" + url.PathEscape(id)
			}
			if user != "" {
				path += "?user=" + url.QueryEscape(user)
			}
			c := newClientFor(f)
			resp, err := c.do(cmd.Context(), http.MethodGet, path, nil)
			if err != nil {
				return &exitError{code: exitUsage, msg: err.Error()}
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return &exitError{code: exitUsage, msg: apiErr(resp).Error()}
			}
			body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
			if err != nil {
				return &exitError{code: exitUsage, msg: "reading the answer: " + err.Error()}
			}
			out := cmd.OutOrStdout()
			if f.json {
				_, err := fmt.Fprintln(out, strings.TrimSpace(string(body)))
				return err
			}
			if len(args) == 0 {
				var l gateway.SessionsResponse
				if err := json.Unmarshal(body, &l); err != nil {
					return &exitError{code: exitUsage, msg: "reading the answer: " + err.Error()}
				}
				printSessions(out, l)
				return nil
			}
			var s gateway.SessionResponse
			if err := json.Unmarshal(body, &s); err != nil {
				return &exitError{code: exitUsage, msg: "reading the answer: " + err.Error()}
			}
			printSession(out, s)
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&user, "user", "", "the user whose session to read (admin token, or auth off)")
	return cmd
}

// printSessions writes a list of sessions for people.
func printSessions(w io.Writer, l gateway.SessionsResponse) {
	if len(l.Sessions) == 0 {
		fmt.Fprintln(w, "no sessions (start one with: agentbus ask --new-session QUERY)")
		return
	}
	for _, s := range l.Sessions {
		fmt.Fprintf(w, "%s  %d turns  %s  last: %s\n", s.SessionID, s.TurnCount, s.UpdatedAt.Local().Format("2006-01-02 15:04"), s.LastQuery)
	}
}

// printSession writes a session for people.
func printSession(w io.Writer, s gateway.SessionResponse) {
	who := ""
	if s.User != "" {
		who = ", user " + s.User
	}
	fmt.Fprintf(w, "session %s (tenant %s%s): %d turns\n", s.SessionID, s.TenantID, who, s.TurnCount)
	if older := s.TurnCount - len(s.Turns); older > 0 {
		fmt.Fprintf(w, "  (%d older turns are in the summary only)\n", older)
	}
	for _, t := range s.Turns {
		fmt.Fprintf(w, "\n%d. %s  [%s, workflow %s]\n", t.N, t.Query, t.Status, t.WorkflowID)
		if t.ResolvedQuery != "" {
			fmt.Fprintf(w, "   resolved: %s\n", t.ResolvedQuery)
		}
		if a := sessions.FirstSentence(t.Answer); a != "" {
			fmt.Fprintf(w, "   answer:   %s\n", a)
		}
		var cites []struct {
			DocID string `json:"doc_id"`
			URL   string `json:"url"`
		}
		if json.Unmarshal(t.Citations, &cites) == nil && len(cites) > 0 {
			var docs []string
			for _, c := range cites {
				d := c.DocID
				if c.URL != "" {
					d = c.URL
				}
				if !slices.Contains(docs, d) {
					docs = append(docs, d)
				}
			}
			fmt.Fprintf(w, "   sources:  %s\n", strings.Join(docs, ", "))
		}
	}
	if s.Summary != "" {
		fmt.Fprintf(w, "\nsummary of turns 1-%d (%s):\n", s.SummaryCovers, s.SummaryBy)
		for _, l := range strings.Split(s.Summary, "\n") {
			fmt.Fprintf(w, "  %s\n", l)
		}
	}
}
