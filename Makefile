# agentbus — the entry point for running, testing and measuring.
GO          ?= go
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
BIN         ?= bin/agentbus
ARGS        ?=
NPM         ?= npm

.PHONY: run build test web web-test lint bench bench-compare bench-dashboard fuzz cluster cluster-down cluster-restart chaos clean

# -buildvcs=auto stamps the commit into the binary (agentbus version)
# even where GOFLAGS turns it off; a tree without git builds all the same.
# Release builds can set the version: make build LDFLAGS='-X main.version=v1.2.0'
LDFLAGS     ?=
BUILDFLAGS   = -buildvcs=auto $(if $(LDFLAGS),-ldflags '$(LDFLAGS)')

## run: build and start agentbus serve (embedded NATS, orchestrator, agents,
## HTTP gateway). The shell execs the binary, so Ctrl-C reaches agentbus
## itself, which shuts down cleanly and exits 0: make reports no error.
run:
	$(GO) build $(BUILDFLAGS) -o $(BIN) ./cmd/agentbus && exec $(abspath $(BIN)) serve $(ARGS)

## build: build the binary into bin/
build:
	$(GO) build $(BUILDFLAGS) -o $(BIN) ./cmd/agentbus

## test: the dashboard's unit tests (Vitest), vet and the whole suite with
## the race detector (its own vet pass off: go vet ./... ran every check
## it would, and more), three packages at a time: most of the suite waits
## on timers, elections and processes, and two at a time (go's default on
## two cores) left a quarter of the machine idle
test: web-test
	$(GO) vet ./...
	$(GO) test -race -count=1 -vet=off -p 3 -timeout 20m ./...

## web: rebuild the dashboard's assets (web/ → gateway/dashboard/dist, which
## is committed: the Go build never needs Node). A test fails when dist is
## older than web/src.
web:
	cd web && $(NPM) ci && $(NPM) run build

## web-test: the dashboard's front-end unit tests (DAG layout, resume logic,
## plan validation)
web-test:
	cd web && $(NPM) ci && $(NPM) test

## lint: gofmt, go vet, the import layers (internal/layers: no package
## imports a higher layer of DESIGN.md §4, no cycle) and staticcheck
lint:
	@unformatted="$$(gofmt -l $$(git ls-files '*.go'))"; if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) run ./internal/layers -deps
	$(GO) run $(STATICCHECK) ./...

## bench: the benchmarks, each beside its baseline in the same run
bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 2s ./...

## bench-compare: BENCH (regexp) of PKG for BASE and the working tree,
## interleaved COUNT times in one run, compared by benchstat
## (e.g. make bench-compare BASE=main~3 BENCH='Workflow$$|WorkflowsParallel$$')
bench-compare:
	BASE='$(BASE)' PKG='$(PKG)' BENCH='$(BENCH)' BENCHTIME='$(BENCHTIME)' COUNT='$(COUNT)' GO='$(GO)' scripts/bench-compare

## bench-dashboard: 2,000 events streamed to the dashboard in headless
## Chromium: time to show the last one and the longest frame meanwhile
## (figures in the log; with AGENTBUS_ARTIFACTS=DIR, also DIR/dashboard-stream.json)
bench-dashboard:
	AGENTBUS_BENCH_DASHBOARD=1 $(GO) test -count=1 -v -run '^TestDashboardStream$$' ./internal/e2e/

## fuzz: run each fuzz target for FUZZTIME (default 30s)
FUZZTIME ?= 30s
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzBuilders -fuzztime $(FUZZTIME) ./subjects
	$(GO) test -run '^$$' -fuzz FuzzApply -fuzztime $(FUZZTIME) ./workflow
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME) ./events
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeControl$$' -fuzztime $(FUZZTIME) ./events
	$(GO) test -run '^$$' -fuzz FuzzDecodeClientFrame -fuzztime $(FUZZTIME) ./gateway/ws
	$(GO) test -run '^$$' -fuzz FuzzDecodeRPC -fuzztime $(FUZZTIME) ./gateway/a2a
	$(GO) test -run '^$$' -fuzz FuzzParseTokens -fuzztime $(FUZZTIME) ./gateway
	$(GO) test -run '^$$' -fuzz '^FuzzExtract$$' -fuzztime $(FUZZTIME) ./agents/entities
	$(GO) test -run '^$$' -fuzz '^FuzzEnhance$$' -fuzztime $(FUZZTIME) ./agents/enhance
	$(GO) test -run '^$$' -fuzz '^FuzzParseResult$$' -fuzztime $(FUZZTIME) ./retrieval/vespa
	$(GO) test -run '^$$' -fuzz '^FuzzDocType$$' -fuzztime $(FUZZTIME) ./retrieval/vespa

## cluster: a local three-node cluster on loopback (three serve processes,
## R3 streams; NATS 4222-4224, HTTP 8080-8082, routes 6222-6224) in the
## background; prints how to reach it. ARGS go to every serve.
cluster: build
	BIN=$(BIN) ARGS='$(ARGS)' scripts/cluster up

## cluster-down: stop the local cluster (its data stays in data/cluster)
cluster-down:
	scripts/cluster down

## cluster-restart: a rolling restart (an upgrade) of the local cluster:
## build, then one node at a time SIGTERM, start with the new binary, and
## wait until its replicas are current (GET /readyz) before the next
cluster-restart: build
	BIN=$(BIN) ARGS='$(ARGS)' scripts/cluster restart

## chaos: the full chaos test (not in make test, which runs a short one):
## three serve processes, 300 workflows, ten faults one at a time (SIGKILL,
## SIGSTOP, SIGTERM, each node brought back), CHAOS_COUNT runs in a row
## (default 1); AGENTBUS_CHAOS_SEED replays a run, AGENTBUS_CHAOS_LOGS=DIR
## keeps the nodes' logs
CHAOS_COUNT ?= 1
chaos:
	AGENTBUS_CHAOS=1 $(GO) test -count=$(CHAOS_COUNT) -timeout 0 -v -run '^TestClusterChaos$$' ./cmd/agentbus

clean:
	rm -rf bin data
