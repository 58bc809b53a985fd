package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentbus/agentbus/corpus"
)

// TestAskAnswersFromTheSampleCorpus is the out-of-the-box path: serve on an
// empty data directory indexes the sample corpus, and `ask` with a complex
// question runs the complex flow — the three planning agents in parallel,
// an ensemble search over both profiles, a detailed report — whose answer
// cites documents that contain what it says.
func TestAskAnswersFromTheSampleCorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("indexes the whole sample corpus")
	}
	// Indexing 6,000 chunks under -race takes a while.
	info := startServeWith(t, serveFlags{data: t.TempDir(), eventsMaxAge: time.Hour, sampleCorpus: true}, 5*time.Minute).info

	t.Run("README sample", func(t *testing.T) { checkREADMESample(t, info.HTTPURL) })
	t.Run("comparison", func(t *testing.T) { checkComparison(t, info.HTTPURL) })

	const question = "Compare how net/url parses a URL query string with how net/http reads form values, and explain in detail"
	code, out, stderr := cli(t, "ask", "--url", info.HTTPURL, "--json", question)
	if code != exitCompleted {
		t.Fatalf("ask exit %d: %s\n%s", code, stderr, out)
	}
	fs := frames(t, out)

	// The complex flow: the planning agents all dispatched before search,
	// search before the report.
	var dispatched []string
	for _, f := range fs {
		if f["type"] != "status" {
			continue
		}
		d, _ := f["data"].(map[string]any)
		if msg, _ := d["message"].(string); strings.HasPrefix(msg, "dispatched to ") {
			dispatched = append(dispatched, strings.TrimPrefix(msg, "dispatched to "))
		}
	}
	is := slices.Index(dispatched, "search")
	ir := slices.Index(dispatched, "detailed_report")
	for _, p := range []string{"profile_selection", "entity_extraction", "query_enhancement"} {
		if i := slices.Index(dispatched, p); i < 0 || i > is {
			t.Fatalf("dispatch order %v: %s not before search", dispatched, p)
		}
	}
	if is < 0 || ir < is {
		t.Fatalf("dispatch order %v: want search, then detailed_report", dispatched)
	}

	var end struct {
		Type string `json:"type"`
		Data struct {
			Result struct {
				Answer    string `json:"answer"`
				Citations []struct {
					N     int    `json:"n"`
					DocID string `json:"doc_id"`
				} `json:"citations"`
			} `json:"result"`
			Outputs map[string]json.RawMessage `json:"outputs"`
		} `json:"data"`
	}
	last, _ := json.Marshal(fs[len(fs)-1])
	if err := json.Unmarshal(last, &end); err != nil || end.Type != "complete" {
		t.Fatalf("last frame %s (%v)", last, err)
	}
	var found struct {
		Ensemble     bool     `json:"ensemble"`
		ProfilesUsed []string `json:"profiles_used"`
		Hits         []struct {
			Profiles []string `json:"profiles"`
		} `json:"hits"`
	}
	if err := json.Unmarshal(end.Data.Outputs["search"], &found); err != nil {
		t.Fatalf("search output %s: %v", end.Data.Outputs["search"], err)
	}
	if !found.Ensemble || !slices.Contains(found.ProfilesUsed, "bm25") || !slices.Contains(found.ProfilesUsed, "vector") || len(found.Hits) == 0 {
		t.Fatalf("search output %s: want an ensemble of bm25 and vector with hits", end.Data.Outputs["search"])
	}

	// Every cited sentence is in the document it cites; the answer cites
	// net/url, which holds the answer.
	docs := corpusTexts(t)
	cited := map[int]string{}
	for _, c := range end.Data.Result.Citations {
		cited[c.N] = c.DocID
	}
	if !slices.ContainsFunc(end.Data.Result.Citations, func(c struct {
		N     int    `json:"n"`
		DocID string `json:"doc_id"`
	}) bool {
		return c.DocID == "go/net/url"
	}) {
		t.Fatalf("citations %+v do not include go/net/url", end.Data.Result.Citations)
	}
	checked := 0
	for _, m := range regexp.MustCompile(`(?m)(?:^|- |\] )([^\[\]\n]+?)\.? \[(\d+)\]`).FindAllStringSubmatch(end.Data.Result.Answer, -1) {
		var n int
		_ = json.Unmarshal([]byte(m[2]), &n)
		doc, ok := cited[n]
		if !ok {
			t.Fatalf("answer cites [%d], which is not in the citations", n)
		}
		sentence := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(m[1]), "- "), ".")
		if !strings.Contains(docs[doc], squash(sentence)) {
			t.Errorf("sentence %q cites [%d] %s, which does not contain it", sentence, n, doc)
		}
		checked++
	}
	if checked < 3 {
		t.Fatalf("only %d cited sentences in the answer:\n%s", checked, end.Data.Result.Answer)
	}
}

// TestAskRemembersPerTenant: a fact a user states about themselves in one
// workflow is stored by the memory agent and shown to the tenant's later
// workflows — never to another tenant's.
func TestAskRemembersPerTenant(t *testing.T) {
	s := startServe(t, t.TempDir())
	ask := func(tenant, q string) string {
		t.Helper()
		code, out, stderr := cli(t, "ask", "--url", s.info.HTTPURL, "--tenant", tenant, "--json", q)
		if code != exitCompleted {
			t.Fatalf("ask %q (tenant %s): exit %d: %s\n%s", q, tenant, code, stderr, out)
		}
		fs := frames(t, out)
		last, _ := json.Marshal(fs[len(fs)-1])
		var end struct {
			Data struct {
				Result struct {
					Answer string `json:"answer"`
				} `json:"result"`
			} `json:"data"`
		}
		if err := json.Unmarshal(last, &end); err != nil {
			t.Fatal(err)
		}
		return end.Data.Result.Answer
	}
	ask("acme", "I work with Go and I live in Lisbon. What is a goroutine?")
	if a := ask("acme", "how do I read a file?"); !strings.Contains(a, "You said") || !strings.Contains(a, "Lisbon") {
		t.Fatalf("acme's later answer does not recall its facts:\n%s", a)
	}
	if a := ask("globex", "how do I read a file?"); strings.Contains(a, "Lisbon") || strings.Contains(a, "You said") {
		t.Fatalf("globex's answer shows acme's facts:\n%s", a)
	}
}

// checkComparison: a comparison of two types gets a side-by-side section
// whose every side cites the types' own documentation (go/sync), and no
// passage from an unrelated package — the instruction words "compare"
// and "in detail" are not searched like content.
func checkComparison(t *testing.T, url string) {
	code, out, stderr := cli(t, "ask", "--url", url, "--json", "compare sync.Mutex and sync.RWMutex in detail")
	if code != exitCompleted {
		t.Fatalf("ask exit %d: %s\n%s", code, stderr, out)
	}
	fs := frames(t, out)
	last, _ := json.Marshal(fs[len(fs)-1])
	var end struct {
		Type string `json:"type"`
		Data struct {
			Result struct {
				Answer    string `json:"answer"`
				Citations []struct {
					N     int    `json:"n"`
					DocID string `json:"doc_id"`
				} `json:"citations"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(last, &end); err != nil || end.Type != "complete" {
		t.Fatalf("last frame %s (%v)", last, err)
	}
	answer := end.Data.Result.Answer
	docOf := map[string]string{}
	for _, c := range end.Data.Result.Citations {
		docOf[fmt.Sprint(c.N)] = c.DocID
		if c.DocID != "go/sync" {
			t.Errorf("cites %s, unrelated to sync.Mutex and sync.RWMutex:\n%s", c.DocID, answer)
		}
	}
	if !strings.Contains(answer, "## sync.Mutex vs sync.RWMutex") {
		t.Fatalf("no side-by-side section:\n%s", answer)
	}
	for _, side := range []string{"sync.Mutex", "sync.RWMutex"} {
		i := strings.Index(answer, "### "+side+"\n")
		if i < 0 {
			t.Fatalf("no section for %s:\n%s", side, answer)
		}
		sec := answer[i+len(side)+5:]
		if j := strings.Index(sec, "#"); j >= 0 {
			sec = sec[:j]
		}
		ns := regexp.MustCompile(`\[(\d+)\]`).FindAllStringSubmatch(sec, -1)
		if len(ns) == 0 || docOf[ns[0][1]] != "go/sync" {
			t.Fatalf("the %s section cites %v, want go/sync:\n%s", side, ns, answer)
		}
	}
}

// corpusTexts maps each sample corpus document to its text, squashed.
func corpusTexts(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	sc := bufio.NewScanner(corpus.Documents())
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var d struct{ ID, Title, Text string }
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			t.Fatal(err)
		}
		out[d.ID] = squash(d.Title + " " + d.Text)
	}
	return out
}

// squash collapses runs of white space, as sentence splitting does.
func squash(s string) string { return strings.Join(strings.Fields(s), " ") }
