package natsauth_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/crypto/bcrypt"

	"github.com/agentbus/agentbus/broker"
	"github.com/agentbus/agentbus/bus"
	"github.com/agentbus/agentbus/bus/bustest"
	"github.com/agentbus/agentbus/internal/natsauth"
)

// deadline bounds every wait in these tests; nothing sleeps.
const deadline = 30 * time.Second

// answerWait bounds the wait for the answer to one attempt: the server
// answers or refuses at once, so reaching it is a failure of its own.
const answerWait = 5 * time.Second

// env is a real nats-server started with a rendered configuration, with
// agentbus's streams and buckets provisioned by a system user.
type env struct {
	t     *testing.T
	srv   *broker.Server
	url   string
	creds natsauth.Credentials
	sys   *bus.Bus // agentbus-orchestrator
	conf  string   // the rendered configuration
}

// start renders m with fresh passwords, starts a server on a random port
// with it, provisions as the orchestrator user and turns on direct get on
// the events stream (agentbus does not need it; a tenant may use it).
func start(t *testing.T, m *natsauth.Model) *env {
	t.Helper()
	creds := natsauth.Credentials{}
	if _, _, err := creds.Sync(m.Users()); err != nil {
		t.Fatal(err)
	}
	var conf bytes.Buffer
	if err := m.Render(&conf, creds, natsauth.RenderOptions{Cost: bcrypt.MinCost, Source: t.Name()}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "accounts.conf")
	if err := os.WriteFile(path, conf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	srv, err := broker.Start(broker.Config{DataDir: filepath.Join(dir, "data"), Addr: "127.0.0.1:-1", ConfigFile: path,
		Name: "natsauth", Logger: bustest.Logger(t)})
	if err != nil {
		t.Fatalf("start nats-server with the rendered configuration: %v\n%s", err, conf.String())
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	e := &env{t: t, srv: srv, url: srv.ClientURL(), creds: creds, conf: conf.String()}
	e.sys = e.system(natsauth.UserOrchestrator)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	if err := e.sys.Provision(ctx, bus.StreamsConfig{}); err != nil {
		t.Fatalf("provision as %s: %v", natsauth.UserOrchestrator, err)
	}
	js := e.sys.JetStream()
	s, err := js.Stream(ctx, "AGENTBUS_EVENTS")
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.CachedInfo().Config
	cfg.AllowDirect = true
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatalf("allow direct get on AGENTBUS_EVENTS: %v", err)
	}
	return e
}

// system connects one of agentbus's own users through package bus.
func (e *env) system(user string) *bus.Bus {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	b, err := bus.Connect(ctx, bus.Config{URL: e.url, Name: user, Logger: bustest.Logger(e.t),
		Options: []nats.Option{nats.UserInfo(user, e.creds[user])}})
	if err != nil {
		e.t.Fatalf("connect as %s: %v", user, err)
	}
	e.t.Cleanup(b.Close)
	return b
}

// client is a bare nats.go connection of one user, the way a tenant's own
// program (in any language) would connect, with JetStream opened under
// natsauth.APIPrefix.
type client struct {
	t    *testing.T
	user string
	nc   *nats.Conn
	js   jetstream.JetStream
	errs chan error // asynchronous errors: permissions violations
}

func (e *env) connect(user string) *client {
	e.t.Helper()
	c := &client{t: e.t, user: user, errs: make(chan error, 64)}
	nc, err := nats.Connect(e.url, nats.UserInfo(user, e.creds[user]), nats.Name(user),
		nats.PermissionErrOnSubscribe(true),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			select {
			case c.errs <- err:
			default:
			}
		}))
	if err != nil {
		e.t.Fatalf("connect as %s: %v", user, err)
	}
	e.t.Cleanup(nc.Close)
	c.nc = nc
	if c.js, err = jetstream.NewWithAPIPrefix(nc, natsauth.APIPrefix); err != nil {
		e.t.Fatal(err)
	}
	return c
}

// outcome is how the server answered one attempt.
type outcome struct {
	// kind is "permissions" (the server refused the publish), "no
	// responders", "status NNN" (a JetStream status answer), "api error"
	// (a JetStream API error), "answer" (anything else) or "timeout".
	kind   string
	detail string
	msg    *nats.Msg
}

func (o outcome) String() string { return o.kind + ": " + o.detail }

// refused reports whether the attempt was turned away (anything but an
// answer or silence).
func (o outcome) refused() bool { return o.kind != "answer" && o.kind != "timeout" }

// request publishes data on subject with a fresh inbox as the reply
// subject and reports the first thing that comes back: an answer on the
// inbox, or the server's permissions violation for subject.
func (c *client) request(subject string, hdr nats.Header, data []byte) outcome {
	c.t.Helper()
	c.drainErrs()
	inbox := c.nc.NewInbox()
	ch := make(chan *nats.Msg, 16)
	sub, err := c.nc.ChanSubscribe(inbox, ch)
	if err != nil {
		c.t.Fatalf("%s: subscribe to its inbox: %v", c.user, err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := c.nc.PublishMsg(&nats.Msg{Subject: subject, Reply: inbox, Header: hdr, Data: data}); err != nil {
		return outcome{kind: "client error", detail: err.Error()}
	}
	if err := c.nc.Flush(); err != nil {
		c.t.Fatalf("%s: flush: %v", c.user, err)
	}
	timer := time.NewTimer(answerWait)
	defer timer.Stop()
	for {
		select {
		case err := <-c.errs:
			if o, ok := permissionOutcome(err, subject); ok {
				return o
			}
		case m := <-ch:
			return classify(m)
		case <-timer.C:
			return outcome{kind: "timeout", detail: "no answer within " + answerWait.String()}
		}
	}
}

// publishOnly publishes with a foreign reply subject and waits only for a
// permissions violation: the answer, if any, goes elsewhere.
func (c *client) publishOnly(subject, reply string, hdr nats.Header, data []byte) outcome {
	c.t.Helper()
	c.drainErrs()
	if err := c.nc.PublishMsg(&nats.Msg{Subject: subject, Reply: reply, Header: hdr, Data: data}); err != nil {
		return outcome{kind: "client error", detail: err.Error()}
	}
	// The server answers a refused publish before the PONG of a flush.
	if err := c.nc.Flush(); err != nil {
		c.t.Fatalf("%s: flush: %v", c.user, err)
	}
	for {
		select {
		case err := <-c.errs:
			if o, ok := permissionOutcome(err, subject); ok {
				return o
			}
		default:
			return outcome{kind: "sent", detail: "published"}
		}
	}
}

func (c *client) drainErrs() {
	for {
		select {
		case <-c.errs:
		default:
			return
		}
	}
}

func permissionOutcome(err error, subject string) (outcome, bool) {
	if errors.Is(err, nats.ErrPermissionViolation) && strings.Contains(err.Error(), `"`+subject+`"`) {
		return outcome{kind: "permissions", detail: err.Error()}, true
	}
	return outcome{}, false
}

// classify names an answer: a status, a JetStream API error, or data.
func classify(m *nats.Msg) outcome {
	if st := m.Header.Get("Status"); st != "" {
		if st == "503" && len(m.Data) == 0 {
			return outcome{kind: "no responders", detail: "503", msg: m}
		}
		return outcome{kind: "status " + st, detail: m.Header.Get("Description"), msg: m}
	}
	var api struct {
		Error *struct {
			Code        int    `json:"code"`
			ErrCode     int    `json:"err_code"`
			Description string `json:"description"`
		} `json:"error"`
	}
	if json.Unmarshal(m.Data, &api) == nil && api.Error != nil {
		return outcome{kind: "api error", detail: fmt.Sprintf("%d/%d %s", api.Error.Code, api.Error.ErrCode, api.Error.Description), msg: m}
	}
	return outcome{kind: "answer", detail: string(m.Data), msg: m}
}

// subscribe subscribes and reports a permissions violation, if any, once
// the server has seen the subscription; a message that came in the
// meantime is returned for the caller to look at.
func (c *client) subscribe(subject string) (*nats.Subscription, *nats.Msg, error) {
	c.t.Helper()
	sub, err := c.nc.SubscribeSync(subject)
	if err != nil {
		return nil, nil, err
	}
	if err := c.nc.Flush(); err != nil {
		c.t.Fatal(err)
	}
	// The violation, if any, came before the flush's PONG: NextMsg
	// returns it at once.
	m, err := sub.NextMsg(time.Millisecond)
	if errors.Is(err, nats.ErrPermissionViolation) {
		return nil, nil, err
	}
	return sub, m, nil
}

// secret is in everything tenant beta owns; no attempt of acme's may ever
// bring it back.
const secret = "beta-secret"

func leaks(m *nats.Msg) bool {
	if m == nil {
		return false
	}
	if bytes.Contains(m.Data, []byte(secret)) || strings.Contains(m.Subject, ".beta.") {
		return true
	}
	for _, vs := range m.Header {
		for _, v := range vs {
			if strings.Contains(v, secret) {
				return true
			}
		}
	}
	return false
}

// ceHeaders are the CloudEvent headers of a message of tenant/workflow.
func ceHeaders(typ, tenant, workflow, id string) nats.Header {
	h := nats.Header{}
	for k, v := range map[string]string{
		"ce-specversion": "1.0", "ce-id": id, "ce-source": "/natsauth/test", "ce-type": typ,
		"ce-time": time.Now().UTC().Format(time.RFC3339), "ce-tenantid": tenant, "ce-workflowid": workflow,
		"Content-Type": "application/json",
	} {
		h.Set(k, v)
	}
	return h
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
