package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// fault is what the servers log when a compressed block cannot be read.
var fault = []byte("s2:")

func main() {
	if len(os.Args) > 2 && os.Args[1] == "serve" {
		serve(os.Args[2])
		return
	}
	dir := flag.String("dir", "", "a directory for the servers' stores, configurations and logs (required)")
	rounds := flag.Int("rounds", 25, "faults to inject: each a kill -9 and restart, or a SIGSTOP of 1–4 s, of a random server")
	plain := flag.Bool("plain", false, "store uncompressed (the control)")
	basePort := flag.Int("port", 14301, "the first client port; routes use port+1900 and up")
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "s2repro: -dir is required")
		os.Exit(2)
	}
	found, err := run(*dir, *rounds, *plain, *basePort)
	if err != nil {
		fmt.Fprintln(os.Stderr, "s2repro:", err)
		os.Exit(2)
	}
	if found {
		os.Exit(1)
	}
}

// serve runs a nats-server from a configuration file until it is killed.
func serve(conf string) {
	opts, err := server.ProcessConfigFile(conf)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	s, err := server.NewServer(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	s.ConfigureLogger()
	s.Start()
	s.WaitForShutdown()
}

type node struct {
	conf, logPath string
	cmd           *exec.Cmd
}

func (n *node) start() error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	log, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	n.cmd = exec.Command(self, "serve", n.conf)
	n.cmd.Stdout, n.cmd.Stderr = log, log
	return n.cmd.Start()
}

// faults counts the fault's lines in the servers' logs.
func faults(nodes []*node) int {
	c := 0
	for _, n := range nodes {
		b, _ := os.ReadFile(n.logPath)
		c += bytes.Count(b, fault)
	}
	return c
}

func run(dir string, rounds int, plain bool, port int) (bool, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, err
	}
	nodes := make([]*node, 3)
	routes := fmt.Sprintf("nats-route://127.0.0.1:%d, nats-route://127.0.0.1:%d, nats-route://127.0.0.1:%d", port+1900, port+1901, port+1902)
	url := ""
	for i := range nodes {
		conf := filepath.Join(dir, fmt.Sprintf("n%d.conf", i+1))
		body := fmt.Sprintf("server_name: n%d\nport: %d\njetstream { store_dir: %q, sync_interval: always }\ncluster { name: s2repro, listen: 127.0.0.1:%d, routes: [%s] }\n",
			i+1, port+i, filepath.Join(dir, fmt.Sprintf("store%d", i+1)), port+1900+i, routes)
		if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
			return false, err
		}
		nodes[i] = &node{conf: conf, logPath: filepath.Join(dir, fmt.Sprintf("n%d.log", i+1))}
		if err := nodes[i].start(); err != nil {
			return false, err
		}
		url += fmt.Sprintf("nats://127.0.0.1:%d,", port+i)
	}
	defer func() {
		for _, n := range nodes {
			_ = n.cmd.Process.Signal(syscall.SIGKILL)
			_ = n.cmd.Process.Signal(syscall.SIGCONT)
			_ = n.cmd.Wait()
		}
	}()
	nc, err := connect(url)
	if err != nil {
		return false, err
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	cmp := jetstream.S2Compression
	if plain {
		cmp = jetstream.NoCompression
	}
	var kv jetstream.KeyValue
	if err := retry(func(ctx context.Context) error {
		_, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: "EV", Subjects: []string{"ev.>"}, Storage: jetstream.FileStorage,
			Compression: cmp, MaxAge: time.Hour, Duplicates: time.Minute, Replicas: 3})
		if err != nil {
			return err
		}
		kv, err = js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "CP", History: 8, Storage: jetstream.FileStorage, Compression: !plain, Replicas: 3})
		return err
	}); err != nil {
		return false, err
	}
	fmt.Printf("three servers, an R3 stream and an R3 KV bucket, compressed: %v; %d faults\n", !plain, rounds)
	var published atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	payload := bytes.Repeat([]byte(`{"state":"working","step_id":"s0","message":"dispatched to echo"}`), 10)
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				k := published.Add(1)
				pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				_, _ = js.Publish(pctx, fmt.Sprintf("ev.%d", k%300), payload, jetstream.WithMsgID(fmt.Sprint(k)))
				_, _ = kv.Put(pctx, fmt.Sprintf("k%d", k%200), payload)
				cancel()
			}
		}()
	}
	for r := range rounds {
		time.Sleep(time.Duration(1500+rand.IntN(2000)) * time.Millisecond)
		i := rand.IntN(len(nodes))
		n := nodes[i]
		if rand.IntN(2) == 0 {
			d := time.Duration(1000+rand.IntN(3000)) * time.Millisecond
			_ = n.cmd.Process.Signal(syscall.SIGSTOP)
			time.Sleep(d)
			_ = n.cmd.Process.Signal(syscall.SIGCONT)
			fmt.Printf("round %2d: stopped n%d for %s; %d published; fault lines in the logs: %d\n", r+1, i+1, d, published.Load(), faults(nodes))
			continue
		}
		_ = n.cmd.Process.Signal(syscall.SIGKILL)
		_ = n.cmd.Wait()
		time.Sleep(time.Duration(500+rand.IntN(2000)) * time.Millisecond)
		if err := n.start(); err != nil {
			return false, err
		}
		fmt.Printf("round %2d: killed n%d and restarted it; %d published; fault lines in the logs: %d\n", r+1, i+1, published.Load(), faults(nodes))
	}
	close(stop)
	wg.Wait()
	time.Sleep(5 * time.Second) // let the restarted server recover, or fail to
	found := faults(nodes)
	for _, n := range nodes {
		b, _ := os.ReadFile(n.logPath)
		for _, line := range bytes.Split(b, []byte("\n")) {
			if bytes.Contains(line, fault) {
				fmt.Printf("%s: %s\n", filepath.Base(n.logPath), line)
			}
		}
	}
	if found > 0 {
		fmt.Printf("REPRODUCED: %d lines of the servers' logs (in %s) say a compressed block could not be read\n", found, dir)
		return true, nil
	}
	fmt.Println("not reproduced: no server logged an unreadable block")
	return false, nil
}

func connect(url string) (*nats.Conn, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
		if err == nil || time.Now().After(deadline) {
			return nc, err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// retry calls f with a 5 s deadline until it succeeds or a minute passed:
// a cluster just started has no meta leader for a while.
func retry(f func(context.Context) error) error {
	deadline := time.Now().Add(time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := f(ctx)
		cancel()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(500 * time.Millisecond)
	}
}
