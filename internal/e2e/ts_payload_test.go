package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/agentbus/agentbus/agents"
	"github.com/agentbus/agentbus/client"
	"github.com/agentbus/agentbus/events"
)

// bigText serves "bigtext": {"text": "ab" repeated input.n times}.
type bigText struct{}

func (bigText) Card() agents.Card {
	return agents.Card{Name: "bigtext", Version: "1.0.0", Capabilities: []string{"bigtext"}, Description: "returns a large text"}
}

func (bigText) Handle(_ context.Context, req agents.Request, _ agents.Emitter) (json.RawMessage, error) {
	var in struct {
		N int `json:"n"`
	}
	if err := json.Unmarshal(req.Input, &in); err != nil {
		return nil, err
	}
	return json.Marshal(map[string]string{"text": strings.Repeat("ab", in.N)})
}

// A 50 MB output crosses the TypeScript agent both ways: a Go agent's
// 50 MB output reaches it as a reference in dependency_outputs, which it
// resolves from the object store; its own 50 MB output (the text
// shouted) it stores there and answers as a reference; the Go SDK
// resolves the result, checksum equal.
func TestTypeScriptAgentLargePayload(t *testing.T) {
	dir := buildTSAgent(t)
	s := startStackWith(t, stackOptions{agents: []agents.Agent{bigText{}}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	logs := &agentLogs{}
	cmd := exec.Command("node", "dist/agent.js")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NATS_URL="+s.env.URL)
	startAgent(t, "ts", cmd, logs)
	logs.await(ctx, t, func(l agentLine) bool { return l.Msg == "ready" })

	const n = 25 << 20 // "ab" × n: 50 MiB of text
	c, err := client.New(client.Config{URL: s.base()})
	if err != nil {
		t.Fatal(err)
	}
	plan := &events.Plan{Steps: []events.PlanStep{
		{ID: "make", Capability: "bigtext", Input: json.RawMessage(`{"n":` + jsonInt(n) + `}`)},
		{ID: "loud", Capability: "shout", Input: json.RawMessage(`{}`), DependsOn: []string{"make"}},
	}}
	if _, err := c.Submit(ctx, client.Submission{WorkflowID: "ts-big", Plan: plan}); err != nil {
		t.Fatal(err)
	}
	res, err := c.Wait(ctx, "ts-big")
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(map[string]string{"text": strings.Repeat("AB", n)})
	sum := sha256.Sum256(want)
	ref, ok := client.ParseRef(res.Result)
	if !ok || ref.Size != int64(len(want)) || ref.SHA256 != hex.EncodeToString(sum[:]) ||
		!strings.HasPrefix(ref.Key, "default/ts-big/loud/1/output-") {
		t.Fatalf("result %s: want the TypeScript agent's reference to %d bytes", res.Result, len(want))
	}
	got, err := c.Resolve(ctx, res.Result)
	if err != nil {
		t.Fatal(err)
	}
	if gs := sha256.Sum256(got); gs != sum {
		t.Fatalf("resolved %d bytes with another checksum", len(got))
	}
}

func jsonInt(n int) string { b, _ := json.Marshal(n); return string(b) }
