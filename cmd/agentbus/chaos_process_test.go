package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/subjects"
)

// The chaos test: three serve processes with R3 streams, clients that
// submit (and approve) through whichever node answers, and faults one at
// a time — SIGKILL then a restart on the node's store, SIGSTOP for a few
// seconds then SIGCONT, SIGTERM then a restart (a rolling restart's step),
// a partition (every route to and from the node cut at a TCP proxy for a
// few seconds, the node running on alone) — while workflows run. Clients
// send a node requests only while its /readyz answers 200, as a load
// balancer would. Every accepted workflow
// completes, each step once, every event log whole, and no submission or
// approval is refused (503) while two nodes are up.
//
// `make test` runs a short version: 60 workflows, a kill, a stop and a
// term, no proxies (TestServeClusterSurvivesNodeLoss's followers stay in
// that test); AGENTBUS_CHAOS=1 (make chaos) the full one: 300 workflows,
// ten faults. AGENTBUS_CHAOS_PARTITIONS=1 adds partitions (off by default:
// the cluster once often did not heal from one within two minutes; 8 of 8
// runs healed at the end of November 2026). AGENTBUS_CHAOS_SEED
// replays a run's choice of faults; AGENTBUS_CHAOS_LOGS=DIR keeps every
// node's output there.

// chaosPlan is workflow i's plan: chains, diamonds, sleeps across the
// workers' AckWait (2s here) and steps that await approval. (With every
// echo a 1 ms sleep, whose start event would expose a step run again as a
// new attempt, the cluster did not heal within two minutes of a fault in
// three of seven full runs, against none of eleven like this: see the
// README.)
func chaosPlan(i int) (plan string, approval bool) {
	switch i % 5 {
	case 3:
		return `{"steps":[{"id":"a","capability":"echo","input":{"n":1}},
			{"id":"long","capability":"sleep","input":{"ms":2500},"depends_on":["a"]}]}`, false
	case 4:
		return `{"steps":[{"id":"a","capability":"echo","input":{"n":1},"requires_approval":true},
			{"id":"b","capability":"echo","input":{"n":2},"depends_on":["a"]}]}`, true
	}
	return clusterPlan(i), false
}

// chaosRun is the state the test's clients and faults share.
type chaosRun struct {
	c *serveCluster
	// mu guards the nodes' URLs against a fault's kill and restart.
	mu sync.Mutex
	// down counts nodes killed or stopped.
	down atomic.Int32
	// refused lists 503s met while two nodes were up.
	refusedMu sync.Mutex
	refused   []string
	http      *http.Client
	// past holds the output of the processes killed.
	past []string
	// heals lists the leader stepdowns awaitCurrent needed.
	heals []string
	// faulted marks a node under a fault; gen counts each node's fault
	// starts and ends, so that a request can tell it met one.
	faulted [3]atomic.Bool
	gen     [3]atomic.Int64
	// proxies[i][j] carries node i's routes to node j (nil for i == j).
	proxies [3][3]*tcpProxy
}

// node is one node's index and HTTP URL.
type node struct {
	i   int
	url string
}

// nodes returns the running nodes, starting at i.
func (r *chaosRun) nodes(i int) []node {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []node
	for k := range r.c.nodes {
		j := (i + k) % len(r.c.nodes)
		if u := r.c.nodes[j].httpURL; u != "" {
			out = append(out, node{j, u})
		}
	}
	return out
}

// ready asks a node's /readyz, as a load balancer would before sending
// it a request.
func (r *chaosRun) ready(u string) bool {
	c := http.Client{Timeout: 4 * time.Second}
	resp, err := c.Get(u + "/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// post sends body to path on whichever node answers, starting at node i,
// until one answers with a status other than 503, and returns it. A 503
// while at most one node is down is recorded as a refusal.
func (r *chaosRun) post(t *testing.T, i int, path, body string) (int, []byte) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for attempt := 0; time.Now().Before(deadline); attempt++ {
		for _, n := range r.nodes(i + attempt) {
			if !r.ready(n.url) {
				continue // as a load balancer would: the next node
			}
			downBefore, gen := r.down.Load(), r.gen[n.i].Load()
			resp, err := r.http.Post(n.url+path, "application/json", strings.NewReader(body))
			if err != nil {
				continue // killed or stopped: the next node
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusServiceUnavailable {
				return resp.StatusCode, b
			}
			// A refusal counts when at most one node was down and the
			// one that answered met no fault while it answered.
			if downBefore <= 1 && r.down.Load() <= 1 && gen%2 == 0 && r.gen[n.i].Load() == gen {
				r.refusedMu.Lock()
				r.refused = append(r.refused, fmt.Sprintf("%s %s: %s %s", n.url, path, resp.Status, b))
				r.refusedMu.Unlock()
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Errorf("POST %s: no node answered within 2 minutes", path)
	return 0, nil
}

// submit submits workflow id with plan i, the same id each try.
func (r *chaosRun) submit(t *testing.T, id string, i int) {
	plan, _ := chaosPlan(i)
	status, body := r.post(t, i, "/v1/workflows", fmt.Sprintf(`{"workflow_id":%q,"plan":%s}`, id, plan))
	if status != http.StatusAccepted && !(status == http.StatusConflict && strings.Contains(string(body), `"exists"`)) {
		t.Errorf("submit %s: %d %s", id, status, body)
	}
}

// approve approves workflow id's step a once it awaits approval.
func (r *chaosRun) approve(t *testing.T, id string, i int) {
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		for _, n := range r.nodes(i) {
			resp, err := r.http.Get(n.url + "/v1/workflows/" + id)
			if err != nil {
				continue
			}
			var st struct {
				Status string `json:"status"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&st)
			resp.Body.Close()
			switch st.Status {
			case "input-required":
				status, body := r.post(t, i, "/v1/workflows/"+id+"/approve", `{"approve":true,"step_id":"a"}`)
				if status != http.StatusOK && status != http.StatusConflict {
					t.Errorf("approve %s: %d %s", id, status, body)
				}
			case "working", "submitted", "":
			default:
				return
			}
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// fault is one fault: what it does to node i.
type fault struct {
	kind string // kill or stop
	node int
	out  time.Duration // how long the node stays down or stopped
}

// inject applies f and brings the node back; it returns how long a
// restarted node took to print its ready line.
func (r *chaosRun) inject(t *testing.T, f fault) time.Duration {
	t.Helper()
	n := r.c.nodes[f.node]
	r.down.Add(1)
	r.gen[f.node].Add(1)
	r.faulted[f.node].Store(true)
	defer func() {
		r.faulted[f.node].Store(false)
		r.gen[f.node].Add(1)
		r.down.Add(-1)
	}()
	switch f.kind {
	case "partition":
		// Every route to and from the node cut: it runs on, alone.
		for j := range 3 {
			if j != f.node {
				r.proxies[f.node][j].setCut(true)
				r.proxies[j][f.node].setCut(true)
			}
		}
		time.Sleep(f.out)
		for j := range 3 {
			if j != f.node {
				r.proxies[f.node][j].setCut(false)
				r.proxies[j][f.node].setCut(false)
			}
		}
	case "kill", "term":
		r.mu.Lock()
		if f.kind == "kill" {
			r.c.kill(t, f.node)
		} else {
			// A rolling restart's step: SIGTERM, the node stops cleanly
			// (lame duck: its leaderships handed over), and comes back.
			n.httpURL = ""
			r.mu.Unlock()
			if err := syscall.Kill(n.p.pid(), syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			select {
			case <-n.p.done:
			case <-time.After(60 * time.Second):
				t.Fatalf("n%d did not stop within 60s of SIGTERM", f.node+1)
			}
			r.mu.Lock()
		}
		r.past = append(r.past, n.p.output())
		r.mu.Unlock()
		time.Sleep(f.out)
		p := startProc(t, n.args...)
		m := p.waitLine(t, readyLine)
		var took time.Duration
		if s := startupIn.FindStringSubmatch(p.output()); s != nil {
			took, _ = time.ParseDuration(s[1])
		}
		r.mu.Lock()
		n.p, n.natsURL, n.httpURL = p, m[1], m[2]
		r.mu.Unlock()
		return took
	case "stop":
		if err := syscall.Kill(n.p.pid(), syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		time.Sleep(f.out)
		if err := syscall.Kill(n.p.pid(), syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
	}
	return 0
}

// awaitCurrent waits until every stream of agentbus has a leader and all
// its replicas current: the cluster has healed and may take the next fault.
func (r *chaosRun) awaitCurrent(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r.mu.Lock()
	b, err := r.c.connect(ctx, t, "test-current")
	r.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	streams := []string{subjects.StreamWorkflows, subjects.StreamSteps, subjects.StreamReplies, subjects.StreamEvents, subjects.StreamTimers,
		"KV_" + subjects.BucketCheckpoints, "KV_" + subjects.BucketControl}
	current := func(c *jetstream.ClusterInfo) bool {
		if c == nil {
			return false // a consumer or stream answering without its cluster yet
		}
		ok := c.Leader != "" && len(c.Replicas) == 2
		for _, p := range c.Replicas {
			ok = ok && p.Current && !p.Offline
		}
		return ok
	}
	start := time.Now()
	stepped := map[string]bool{}
	// stepDown is what an operator does for a replica that does not catch
	// up (after a partition, nats-server has been seen to retry "Expected
	// first catchup entry to be a snapshot and peerstate" for minutes): a
	// new leader sends it a fresh snapshot. Once per asset, after 30s.
	stepDown := func(what, subj string) {
		if stepped[subj] || time.Since(start) < 30*time.Second {
			return
		}
		stepped[subj] = true
		_, err := b.Conn().Request(subj, nil, 5*time.Second)
		r.mu.Lock()
		r.heals = append(r.heals, fmt.Sprintf("%s not current after 30s: leader stepped down (%v)", what, err))
		r.mu.Unlock()
	}
	// Each look-up gets 5s, so that one the cluster does not answer (its
	// JetStream API has been seen silent for minutes) still lets the wait
	// step down a leader and say what it last saw.
	var last string
	for _, name := range streams {
		for {
			rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
			s, err := b.JetStream().Stream(rctx, name)
			rcancel()
			if err == nil && current(s.CachedInfo().Cluster) {
				break
			}
			if err == nil {
				last = fmt.Sprintf("%+v", s.CachedInfo().Cluster)
			} else {
				last = err.Error()
			}
			if ctx.Err() != nil {
				t.Fatalf("stream %s not current within 2 minutes: last seen %s (stepdowns tried: %v)", name, last, r.heals)
			}
			stepDown("stream "+name, "$JS.API.STREAM.LEADER.STEPDOWN."+name)
			time.Sleep(100 * time.Millisecond)
		}
	}
	// The durable consumers too: a consumer still electing its leader
	// when the next fault comes would be a second fault at once.
	for _, sc := range [][2]string{{subjects.StreamSteps, "step-echo"}, {subjects.StreamSteps, "step-sleep"},
		{subjects.StreamWorkflows, subjects.ConsumerSubmissions}, {subjects.StreamReplies, subjects.ConsumerReplies}} {
		for {
			rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
			c, err := b.JetStream().Consumer(rctx, sc[0], sc[1])
			rcancel()
			if err == nil && current(c.CachedInfo().Cluster) {
				break
			}
			if err == nil {
				last = fmt.Sprintf("%+v", c.CachedInfo().Cluster)
			} else {
				last = err.Error()
			}
			if ctx.Err() != nil {
				t.Fatalf("consumer %s on %s not current within 2 minutes: last seen %s (stepdowns tried: %v)", sc[1], sc[0], last, r.heals)
			}
			stepDown("consumer "+sc[1], "$JS.API.CONSUMER.LEADER.STEPDOWN."+sc[0]+"."+sc[1])
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// chaosSettings are the sizes of a run.
type chaosSettings struct {
	workflows, faults int
	seed              uint64
	// partitions routes the nodes through TCP proxies and adds partition
	// faults (AGENTBUS_CHAOS_PARTITIONS=1 only: see the README, Running on
	// a NATS cluster).
	partitions bool
}

func chaosConfig(t *testing.T) chaosSettings {
	s := chaosSettings{workflows: 60, faults: 3, seed: uint64(time.Now().UnixNano())}
	if os.Getenv("AGENTBUS_CHAOS") != "" {
		s.workflows, s.faults = 300, 10
	}
	if os.Getenv("AGENTBUS_CHAOS_PARTITIONS") != "" {
		s.faults, s.partitions = max(s.faults, 4), true
	}
	if v := os.Getenv("AGENTBUS_CHAOS_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("AGENTBUS_CHAOS_SEED %q: %v", v, err)
		}
		s.seed = n
	}
	return s
}

// startupIn finds how long a serve took to be ready, in its ready line.
var startupIn = regexp.MustCompile(`msg="agentbus ready" .* startup=(\S+)`)

// chaosRecoveries matches the lines of the nodes' logs that say what the
// reconciler and the election waits did.
var chaosRecoveries = regexp.MustCompile(`msg="(recovery: [^"]*|publish stored after a stream election|follower stalled[^"]*|step reply not stored; trying again|nats server stopped in lame duck mode[^"]*)"`)

func TestClusterChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("real processes")
	}
	set := chaosConfig(t)
	rng := rand.New(rand.NewPCG(set.seed, set.seed))
	t.Logf("chaos: %d workflows, %d faults, seed %d (AGENTBUS_CHAOS_SEED replays it)", set.workflows, set.faults, set.seed)
	r := &chaosRun{http: &http.Client{Timeout: 30 * time.Second}}
	args := []string{"--jetstream-sync", "always"}
	if os.Getenv("AGENTBUS_CHAOS_COMPRESS") == "1" {
		// The store S2-compressed, as --compress-streams makes it: off by
		// default until it survives this test (README, Compression).
		args = append(args, "--compress-streams")
	}
	if set.partitions {
		r.c = startProxiedCluster(t, &r.proxies, args...)
	} else {
		r.c = startServeCluster(t, args...)
	}
	c := r.c
	if dir := os.Getenv("AGENTBUS_CHAOS_LOGS"); dir != "" {
		// Kept whether the run passes or fails (t.Fatal included).
		t.Cleanup(func() {
			for k, out := range r.logs() {
				if err := os.WriteFile(fmt.Sprintf("%s/chaos-%d.log", dir, k), []byte(out), 0o644); err != nil {
					t.Error(err)
				}
			}
		})
	}
	var faults []fault
	for k := range set.faults {
		f := fault{kind: "kill", node: rng.IntN(3), out: time.Duration(1+rng.IntN(3)) * time.Second}
		kinds := 3
		if set.partitions {
			kinds = 4
		}
		switch k % kinds {
		case 1:
			f.kind, f.out = "stop", time.Duration(2+rng.IntN(4))*time.Second
		case 2:
			f.kind, f.out = "term", 0
		case 3:
			f.kind, f.out = "partition", time.Duration(3+rng.IntN(5))*time.Second
		}
		faults = append(faults, f)
	}
	ids := make([]string, set.workflows)
	for i := range ids {
		ids[i] = fmt.Sprintf("chaos-%03d", i)
	}
	// Clients: four submitters, and an approver for each workflow that
	// awaits one.
	next := atomic.Int32{}
	var clients sync.WaitGroup
	submitted := make(chan struct{})
	perFault := max(set.workflows/(set.faults+1), 1)
	for range 4 {
		clients.Add(1)
		go func() {
			defer clients.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(ids) {
					return
				}
				r.submit(t, ids[i], i)
				if _, approval := chaosPlan(i); approval {
					clients.Add(1)
					go func() { defer clients.Done(); r.approve(t, ids[i], i) }()
				}
				if i == len(ids)-1 {
					close(submitted)
				}
				time.Sleep(20 * time.Millisecond) // a steady stream, not a burst
			}
		}()
	}
	var restarts []string
	for k, f := range faults {
		// Each fault while workflows are being submitted.
		for int(next.Load()) < min((k+1)*perFault, len(ids)) {
			time.Sleep(50 * time.Millisecond)
		}
		took := r.inject(t, f)
		line := fmt.Sprintf("%s n%d for %s", f.kind, f.node+1, f.out)
		if f.kind == "kill" || f.kind == "term" {
			line += fmt.Sprintf(", ready %s after its restart", took.Round(time.Millisecond))
		}
		restarts = append(restarts, line)
		r.awaitCurrent(t)
	}
	select {
	case <-submitted:
	case <-time.After(5 * time.Minute):
		t.Fatal("not every workflow was submitted within 5 minutes")
	}
	clients.Wait()
	awaitCompleted(t, c, ids)
	checkAll(t, c, ids)
	for _, refusal := range r.refused {
		t.Errorf("refused while two nodes were up: %s", refusal)
	}
	counts := map[string]int{}
	for _, out := range r.logs() {
		for _, m := range chaosRecoveries.FindAllStringSubmatch(out, -1) {
			counts[m[1]]++
		}
	}
	t.Logf("faults: %s", strings.Join(restarts, "; "))
	if len(r.heals) > 0 {
		t.Logf("healing the cluster needed: %s", strings.Join(r.heals, "; "))
	}
	t.Logf("all %d workflows completed, each step once, every log whole; refusals while two nodes were up: %d; what the nodes' logs say: %v",
		len(ids), len(r.refused), counts)
}

// startProxiedCluster is startServeCluster with every route through a
// TCP proxy of its own pair of nodes (proxies[i][j]: node i's route to
// node j), so that a node can be cut off. Each node advertises no route
// address its peers could reach (cluster advertise 127.0.0.1:<1,2,3>, in
// a --nats-config file), so that none learns a way around the proxies.
func startProxiedCluster(t *testing.T, proxies *[3][3]*tcpProxy, extra ...string) *serveCluster {
	t.Helper()
	// The proxies listen first, so that no free address picked for a
	// route is one a proxy takes after.
	for i := range 3 {
		for j := range 3 {
			if j != i {
				proxies[i][j] = newTCPProxy(t, "")
			}
		}
	}
	addrs := bustest.FreeAddrs(t, 6) // three route, three client addresses, all distinct
	routeAddrs, natsAddrs := addrs[:3], addrs[3:]
	c := &serveCluster{}
	for i := range 3 {
		var routes []string
		for j := range 3 {
			if j != i {
				proxies[i][j].setTarget(routeAddrs[j])
				routes = append(routes, "nats://"+proxies[i][j].Addr())
			}
		}
		// Each its own unreachable address: servers that advertised the
		// same one were taken for one another's duplicate routes (a node
		// restarted once never rejoined).
		conf := fmt.Sprintf("%s/cluster-%d.conf", t.TempDir(), i+1)
		if err := os.WriteFile(conf, []byte(fmt.Sprintf("cluster {\n  advertise: \"127.0.0.1:%d\"\n}\n", i+1)), 0o644); err != nil {
			t.Fatal(err)
		}
		c.nodes = append(c.nodes, newServeNode(t, i, natsAddrs[i], routeAddrs[i], routes, append([]string{"--nats-config", conf}, extra...)...))
	}
	c.start(t)
	return c
}

// logs is the output of every serve process of the run: those killed,
// then the live ones.
func (r *chaosRun) logs() []string {
	logs := slices.Clone(r.past)
	for _, n := range r.c.nodes {
		logs = append(logs, n.p.output())
	}
	return logs
}

// checkAll checks every workflow (checkWorkflow) within an overall
// deadline, 2 minutes, where a healthy run takes seconds: a check phase
// that crawls fails, naming its slowest checks, rather than running on.
// (A compressed soak once crawled here for more than 7 minutes.)
func checkAll(t *testing.T, c *serveCluster, ids []string) {
	t.Helper()
	type took struct {
		id string
		d  time.Duration
	}
	var slow []took
	start := time.Now()
	report := func() string {
		sort.Slice(slow, func(i, j int) bool { return slow[i].d > slow[j].d })
		var b strings.Builder
		for k, s := range slow[:min(len(slow), 10)] {
			if k > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%s %s", s.id, s.d.Round(time.Millisecond))
		}
		return b.String()
	}
	for k, id := range ids {
		if time.Since(start) > 2*time.Minute {
			if os.Getenv("AGENTBUS_CHAOS_HOLD") == "1" {
				t.Logf("holding the cluster for 20 minutes: %v", c.live())
				time.Sleep(20 * time.Minute)
			}
			t.Fatalf("checked %d of %d workflows in %s; slowest checks: %s", k, len(ids), time.Since(start).Round(time.Second), report())
		}
		at := time.Now()
		c.checkWorkflow(t, id, nil)
		if d := time.Since(at); d > 500*time.Millisecond {
			slow = append(slow, took{id, d})
		}
	}
	t.Logf("checked %d workflows in %s; checks over 500 ms: %d (%s)", len(ids), time.Since(start).Round(time.Millisecond), len(slow), report())
}
