package compose_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentbus/agentbus/agents/agentkit/kittest"
	"github.com/agentbus/agentbus/agents/compose"
)

// selectOutput is a select step's output keeping docs.
func selectOutput(docs ...map[string]any) string {
	b, _ := json.Marshal(map[string]any{"documents": docs, "dropped": []any{}})
	return string(b)
}

func TestWebComposeCitesWebResultsWithTheirURLs(t *testing.T) {
	const url = "https://nats.io/blog/release-2026"
	web := map[string]any{"id": url, "title": "NATS 2026 release", "source": url,
		"text":     "The 2026 release of NATS adds atomic batch publishing to JetStream streams. Batches commit all messages or none.",
		"metadata": map[string]any{"url": url, "provider": "tavily"}}
	local := hit{ID: "guide.md#0", DocID: "guide.md", Title: "Guide", Source: "guide.md",
		Text: "JetStream streams store messages durably on disk. Consumers acknowledge each message they process."}
	for _, capability := range []string{compose.CapabilitySummarize, compose.CapabilityDetailedReport} {
		t.Run(capability, func(t *testing.T) {
			a := kittest.New(t, compose.New, compose.Config{})
			req := request(capability, `{"query":"what does the latest NATS release add to JetStream streams"}`, map[string]string{
				"search": searchOutput("q", local), "select": selectOutput(web)})
			out, rec := kittest.Run[compose.Output](t, a, "agent."+capability+".output", req)
			var cited *compose.Citation
			for i, c := range out.Citations {
				if c.DocID == url {
					cited = &out.Citations[i]
				} else if c.URL != "" {
					t.Errorf("local citation with a URL: %+v", c)
				}
			}
			if cited == nil || cited.URL != url || cited.Source != url {
				t.Fatalf("the web result is not cited with its URL: %+v\n%s", out.Citations, out.Answer)
			}
			if !strings.Contains(out.Answer, url) {
				t.Fatalf("the answer does not show the URL:\n%s", out.Answer)
			}
			if streamed(t, rec) != out.Answer {
				t.Fatal("streamed answer differs from the output's")
			}
		})
	}
	t.Run("no select step: as before", func(t *testing.T) {
		a := kittest.New(t, compose.New, compose.Config{})
		req := request(compose.CapabilitySummarize, `{}`, map[string]string{"search": searchOutput("q", local)})
		out, _ := kittest.Run[compose.Output](t, a, "agent.summarize.output", req)
		if strings.Contains(out.Answer, "Web sources") || len(out.Citations) == 0 || out.Citations[0].URL != "" {
			t.Fatalf("answer %q citations %+v", out.Answer, out.Citations)
		}
	})
}
