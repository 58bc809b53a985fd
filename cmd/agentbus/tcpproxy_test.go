package main

import (
	"io"
	"net"
	"sync"
	"testing"
)

// tcpProxy forwards connections from its own loopback address to target,
// and can cut them: every open connection is closed and new ones are
// refused until it is healed. The chaos test routes each pair of
// cluster servers through one, so that a node can be partitioned from
// the others while its process runs on.
type tcpProxy struct {
	l      net.Listener
	target string
	mu     sync.Mutex
	cut    bool
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

// newTCPProxy listens on a free loopback port until the test ends.
func newTCPProxy(t *testing.T, target string) *tcpProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{l: l, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() { _ = l.Close(); p.setCut(true); p.wg.Wait() })
	return p
}

// setTarget points the proxy at target, for connections from now on.
func (p *tcpProxy) setTarget(target string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.target = target
}

// Addr is where the proxy listens.
func (p *tcpProxy) Addr() string { return p.l.Addr().String() }

func (p *tcpProxy) accept() {
	defer p.wg.Done()
	for {
		in, err := p.l.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			_ = in.Close()
			continue
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			_ = in.Close()
			continue
		}
		p.conns[in], p.conns[out] = struct{}{}, struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(in, out)
		go p.pipe(out, in)
	}
}

// pipe copies one direction; either side closing closes both.
func (p *tcpProxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	_, _ = io.Copy(dst, src)
	_ = dst.Close()
	_ = src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}

// setCut cuts (closing every connection through the proxy, refusing new
// ones) or heals the proxy.
func (p *tcpProxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if !cut {
		return
	}
	for c := range p.conns {
		_ = c.Close()
	}
}
