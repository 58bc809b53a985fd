package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/agentbus/agentbus/gateway"
	"github.com/agentbus/agentbus/gateway/ws"
)

// wsFlags are the event-stream flags of the roles that serve HTTP (serve,
// gateway). Zero values mean the gateway's defaults; the gateway validates.
type wsFlags struct {
	sendQueue    int
	pingInterval time.Duration
	idleTimeout  time.Duration
	writeDelay   time.Duration
	hubLinger    time.Duration
	corsOrigins  []string
	// maxUpload and filesPerStep bound POST /v1/documents.
	maxUpload    int64
	filesPerStep int
}

func (f *wsFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.IntVar(&f.sendQueue, "ws-send-queue", 1<<20, "bytes of frames a WebSocket or SSE client may be behind the live tail before it is closed (4008) to resume from its offset")
	fl.DurationVar(&f.pingInterval, "ws-ping-interval", 20*time.Second, "WebSocket ping interval")
	fl.DurationVar(&f.idleTimeout, "ws-idle-timeout", 60*time.Second, "close a WebSocket (1008) after this long without a pong or a client frame")
	fl.DurationVar(&f.writeDelay, "ws-write-delay", 0, "let frames gather this long before one write (fewer system calls with many fast subscribers; adds at most this latency)")
	fl.DurationVar(&f.hubLinger, "ws-hub-linger", 10*time.Second, "keep following a workflow this long after its last live subscriber left")
	fl.Int64Var(&f.maxUpload, "max-upload-bytes", 64<<20, "largest POST /v1/documents body, in bytes (413 above it, naming the limit)")
	fl.IntVar(&f.filesPerStep, "upload-files-per-step", 32, "files one ingest step indexes: smaller batches spread an upload over more workers")
	fl.StringSliceVar(&f.corsOrigins, "cors-origins", nil, "origins whose pages may call the API and open WebSockets with a bearer token, e.g. https://app.example.com (* for any); unset: same origin only")
}

func (f *wsFlags) documents() gateway.DocumentsConfig {
	return gateway.DocumentsConfig{MaxUploadBytes: f.maxUpload, FilesPerStep: f.filesPerStep}
}

func (f *wsFlags) cors() gateway.CORSConfig { return gateway.CORSConfig{Origins: f.corsOrigins} }

func (f *wsFlags) config() ws.Config {
	return ws.Config{SendQueueBytes: f.sendQueue, PingInterval: f.pingInterval, IdleTimeout: f.idleTimeout,
		WriteDelay: f.writeDelay, HubLinger: f.hubLinger}
}
