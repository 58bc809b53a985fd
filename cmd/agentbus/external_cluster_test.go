package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/subjects"
)

// natsServerBin is the real nats-server, built once from the module this
// repository requires when none is on PATH.
var natsServerBin built

// natsServerBinary is the nats-server the test runs: the one on PATH
// (.ci/run installs it: go install github.com/nats-io/nats-server/v2@v2.15.2),
// else one built from the module cache at the version go.mod requires.
func natsServerBinary(t testing.TB) string {
	if p, err := exec.LookPath("nats-server"); err == nil {
		return p
	}
	if home, err := os.UserHomeDir(); err == nil { // where go install puts it
		if p := filepath.Join(home, "go", "bin", "nats-server"); fileExists(p) {
			return p
		}
	}
	return natsServerBin.get(t, "github.com/nats-io/nats-server/v2", "nats-server")
}

// natsNode is a nats-server process started on the repository's nats.conf.
type natsNode struct {
	name, client string
	env          []string
	cmd          *exec.Cmd
	done         chan struct{}
}

func (n *natsNode) start(t *testing.T, bin, conf string) {
	t.Helper()
	n.cmd = exec.Command(bin, "-c", conf)
	n.cmd.Env = append(os.Environ(), n.env...)
	logf, err := os.Create(filepath.Join(t.TempDir(), n.name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	n.cmd.Stdout, n.cmd.Stderr = logf, logf
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	n.done = make(chan struct{})
	cmd, done := n.cmd, n.done
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("%s log:\n%s", n.name, b)
		}
	})
}

// TestExternalClusterWithNatsConf is the production path: three nats-server
// processes on the repository's nats.conf (only environment variables
// differ), agentbus's roles as separate processes pointed at all three
// with --replicas 3; a workflow completes, the server leading the steps
// stream is killed with SIGKILL, and workflows still complete.
func TestExternalClusterWithNatsConf(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes")
	}
	bin := natsServerBinary(t)
	conf, err := filepath.Abs("../../nats.conf")
	if err != nil {
		t.Fatal(err)
	}
	nodes := make([]*natsNode, 3)
	routes := make([]string, 3)
	addrs := bustest.FreeAddrs(t, 6) // three route, three client addresses, all distinct
	routeAddrs, clientAddrs := addrs[:3], addrs[3:]
	for i := range nodes {
		routes[i] = "nats-route://" + routeAddrs[i]
	}
	var urls []string
	for i := range nodes {
		n := &natsNode{name: fmt.Sprintf("n%d", i+1), client: clientAddrs[i]}
		n.env = []string{"NATS_SERVER_NAME=" + n.name, "NATS_LISTEN=" + n.client, "NATS_STORE_DIR=" + t.TempDir(),
			"NATS_CLUSTER_LISTEN=" + routeAddrs[i], "NATS_ROUTES=[" + strings.Join(routes, ", ") + "]"}
		n.start(t, bin, conf)
		nodes[i] = n
		urls = append(urls, "nats://"+n.client)
	}
	all := strings.Join(urls, ",")
	common := []string{"--nats", all, "--replicas", "3", "--log-level", "info"}
	orch := startProc(t, append([]string{"orchestrator"}, common...)...)
	orch.waitLine(t, regexp.MustCompile(`msg="agentbus orchestrator ready"`))
	startProc(t, append([]string{"worker", "--capabilities", "echo,sleep", "--heartbeat", "200ms", "--ack-wait", "2s"}, common...)...).
		waitLine(t, workerLine)
	gw := startProc(t, append([]string{"gateway", "--http-addr", "127.0.0.1:0"}, common...)...)
	m := gw.waitLine(t, regexp.MustCompile(`msg="agentbus gateway ready" nats=\S+ http=(\S+)`))
	c := &serveCluster{nodes: []*serveNode{{name: "gateway", httpURL: m[1]}}}

	var ids []string
	for i := range 6 {
		id := fmt.Sprintf("ext-%d", i)
		c.submitTo(t, id, i)
		ids = append(ids, id)
	}
	awaitCompleted(t, c, ids)

	// Kill the server leading the steps stream; the roles fail over.
	c.nodes[0].natsURL = all
	leader := c.leaderOf(t, all, subjects.StreamSteps)
	for _, n := range nodes {
		if n.name == leader {
			_ = syscall.Kill(n.cmd.Process.Pid, syscall.SIGKILL)
			<-n.done
		}
	}
	lost := time.Now()
	for i := 6; i < 12; i++ {
		id := fmt.Sprintf("ext-%d", i)
		c.submitTo(t, id, i)
		ids = append(ids, id)
	}
	awaitCompleted(t, c, ids)
	t.Logf("nats-server %s (leader of %s) killed: 6 more workflows completed within %s", leader, subjects.StreamSteps, time.Since(lost).Round(time.Millisecond))
	for _, id := range ids {
		c.checkWorkflow(t, id, nil)
	}
}
