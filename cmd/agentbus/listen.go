package main

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"

	"github.com/agentbus/agentbus/broker"
)

// probeHTTP binds the HTTP address and lets it go, so that serve says at
// once that the port is taken instead of after opening the store and
// indexing the sample corpus. Port 0 (random) is not probed.
func probeHTTP(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		// Say so before the embedded server starts and the sample corpus
		// is indexed, not after.
		return &exitError{code: exitUsage, msg: fmt.Sprintf("--http-addr %q: want HOST:PORT, e.g. 127.0.0.1:8080 (port 0: random)", addr)}
	}
	if port == "0" {
		return nil
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return listenFailed("http", "--http-addr", addr, err)
	}
	return l.Close()
}

// httpListenFailed is the gateway's Listen error as the user needs it.
func httpListenFailed(addr string, err error) error {
	var oe *net.OpError
	if errors.As(err, &oe) {
		return listenFailed("http", "--http-addr", addr, oe.Err)
	}
	return &exitError{code: exitUsage, msg: err.Error()}
}

// serverStartFailed turns broker.Start's error into the message a user
// needs: a taken NATS port named with the flag that moves it.
func serverStartFailed(err error) error {
	var le *broker.ListenError
	if errors.As(err, &le) && le.Route {
		return listenFailed("nats cluster", "--cluster-addr", le.Addr, le.Err)
	}
	if errors.As(err, &le) {
		return listenFailed("nats", "--nats-addr", le.Addr, le.Err)
	}
	return &exitError{code: exitUsage, msg: err.Error()}
}

// listenFailed is "nats listen 127.0.0.1:4222: address already in use
// (another agentbus serve or nats-server? choose another port with
// --nats-addr)", exit status 3.
func listenFailed(what, flag, addr string, err error) error {
	cause := err.Error()
	var errno syscall.Errno
	if errors.As(err, &errno) {
		cause = errno.Error()
	}
	hint := ""
	if errors.Is(err, syscall.EADDRINUSE) {
		other := "another agentbus serve or gateway"
		if strings.HasPrefix(what, "nats") {
			other = "another agentbus serve or a nats-server"
		}
		hint = fmt.Sprintf(" (is %s running? choose another address with %s)", other, flag)
	}
	return &exitError{code: exitUsage, msg: fmt.Sprintf("%s listen %s: %s%s", what, addr, strings.TrimSpace(cause), hint)}
}
