# Wayfinder developer commands. `make demo` and `make test` are all a fresh
# machine needs: they install Chromium (and the PostgreSQL server binaries)
# when missing, build, and run.

GO            ?= go
BIN           := bin/wayfinder
TOOLS         := $(CURDIR)/.tools/bin
export PATH   := $(TOOLS):$(PATH)

# Pinned code generators and linters, installed by `go install`.
BUF_VERSION                := v1.75.0
PROTOC_GEN_GO_VERSION      := v1.36.12
PROTOC_GEN_GO_GRPC_VERSION := v1.6.2
GRPC_GATEWAY_VERSION       := v2.32.0
STATICCHECK_VERSION        := v0.8.2

TEST_FLAGS ?= -race -count=1 -timeout 30m

# make bench: the pinned Playwright MCP it compares with, and flags for
# cmd/wfbench (e.g. BENCH_FLAGS="-iterations 5 -pages form,table").
PLAYWRIGHT_MCP_VERSION := 0.0.83
PLAYWRIGHT_MCP_DIR     := $(CURDIR)/.tools/playwright-mcp
PLAYWRIGHT_MCP_CLI     := $(PLAYWRIGHT_MCP_DIR)/node_modules/@playwright/mcp/cli.js
PLAYWRIGHT_MCP_STAMP   := $(PLAYWRIGHT_MCP_DIR)/.installed-$(PLAYWRIGHT_MCP_VERSION)
BENCH_FLAGS            ?=

.PHONY: all build run demo test chaos fuzz deploy-check deploy-smoke lint gen check-gen tools deps bench clean

all: build

# Build information stamped into the binary (wayfinder version, the
# wayfinder_build_info metric); the Dockerfile passes the same flags.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
DATE    ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS := -X github.com/wayfinder/wayfinder/internal/version.Version=$(VERSION) -X github.com/wayfinder/wayfinder/internal/version.Commit=$(COMMIT) -X github.com/wayfinder/wayfinder/internal/version.Date=$(DATE)

## build: compile the server to bin/wayfinder
build:
	$(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/wayfinder

## deps: install Chromium and PostgreSQL when missing
deps:
	@scripts/ensure-deps.sh

## run: start the service on its defaults (managed Postgres, system Chromium)
run: deps build
	$(BIN) serve

## demo: start the service, run a task against a bundled demo site, print the result
demo: deps build
	$(BIN) demo

## test: run every test against a real Postgres and a real headless Chromium
test: deps
	$(GO) test $(TEST_FLAGS) ./...

# make chaos writes the resilience figures here (docs/benchmarks.md renders them).
CHAOS_REPORT ?= $(CURDIR)/docs/data/resilience.json
# make fuzz: how long each native fuzz target runs.
FUZZTIME ?= 20s

## chaos: kill Chromium, a replica and Postgres under load (serial, no -race; about 6 minutes)
chaos: deps
	CHAOS_REPORT=$(CHAOS_REPORT) $(GO) test -tags chaos -count=1 -p 1 -timeout 15m -run '^TestChaos' ./internal/server

## fuzz: run each native fuzz target for FUZZTIME
fuzz:
	$(GO) test ./internal/api -run '^$$' -fuzz '^FuzzValidateParams$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/api -run '^$$' -fuzz '^FuzzFlatParams$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/suite -run '^$$' -fuzz '^FuzzParseFile$$' -fuzztime $(FUZZTIME)

## deploy-check: validate the Dockerfile, deploy/k8s and deploy/compose.yaml offline (nested module deploy/check)
deploy-check: $(TOOLS)/staticcheck
	@if [ "$$(id -u)" -eq 0 ] && ! apt-cache show tini >/dev/null 2>&1; then apt-get update -qq; fi
	cd deploy/check && $(GO) vet -tags smoke ./... && staticcheck -tags smoke ./... && $(GO) test -count=1 ./...

## deploy-smoke: build as the image does, run it unprivileged under tini in a PID namespace
deploy-smoke: deps
	@command -v tini >/dev/null 2>&1 || { [ "$$(id -u)" -eq 0 ] && apt-get install -y -qq --no-install-recommends tini >/dev/null; }
	cd deploy/check && $(GO) test -tags smoke -count=1 -timeout 20m -run TestImageLikeSmoke ./...

## lint: gofmt, go vet and staticcheck
lint: $(TOOLS)/staticcheck
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags chaos ./internal/server
	staticcheck ./...
	staticcheck -tags chaos ./internal/server

## gen: regenerate api/gen and api/openapi from api/proto
gen: $(TOOLS)/buf $(TOOLS)/protoc-gen-go $(TOOLS)/protoc-gen-go-grpc $(TOOLS)/protoc-gen-grpc-gateway $(TOOLS)/protoc-gen-openapiv2
	rm -rf api/gen api/openapi/*.json
	buf lint
	buf generate

## check-gen: fail when the committed generated code differs from `make gen`
check-gen: gen
	@git diff --exit-code -- api/gen api/openapi || { echo "generated code is stale: run make gen and commit"; exit 1; }
	@test -z "$$(git status --porcelain -- api/gen api/openapi)" || { git status --porcelain -- api/gen api/openapi; echo "untracked generated files: run make gen and commit"; exit 1; }

## bench: measure the page layer beside Playwright MCP (writes docs/benchmarks.md), then run the Go benchmarks
bench: deps $(PLAYWRIGHT_MCP_STAMP)
	$(GO) run ./cmd/wfbench -playwright-mcp $(PLAYWRIGHT_MCP_CLI) $(BENCH_FLAGS)
	$(GO) test -run '^$$' -bench . -benchmem ./...

# The peer `make bench` measures against, pinned, installed with npm into
# .tools (never a browser: it drives the system Chromium).
$(PLAYWRIGHT_MCP_STAMP):
	@command -v npm >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "bench: installing nodejs and npm with apt-get" >&2; \
	    DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null; \
	  else echo "bench: Node.js >= 18 and npm are needed (Debian/Ubuntu: apt-get install nodejs npm)" >&2; exit 1; fi; }
	rm -rf $(PLAYWRIGHT_MCP_DIR) && mkdir -p $(PLAYWRIGHT_MCP_DIR)
	cd $(PLAYWRIGHT_MCP_DIR) && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install --no-audit --no-fund --save-exact \
	  --loglevel=error @playwright/mcp@$(PLAYWRIGHT_MCP_VERSION)
	touch $@

tools: $(TOOLS)/buf $(TOOLS)/protoc-gen-go $(TOOLS)/protoc-gen-go-grpc $(TOOLS)/protoc-gen-grpc-gateway $(TOOLS)/protoc-gen-openapiv2 $(TOOLS)/staticcheck

$(TOOLS)/buf:
	GOBIN=$(TOOLS) $(GO) install github.com/bufbuild/buf/cmd/buf@$(BUF_VERSION)
$(TOOLS)/protoc-gen-go:
	GOBIN=$(TOOLS) $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)
$(TOOLS)/protoc-gen-go-grpc:
	GOBIN=$(TOOLS) $(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GO_GRPC_VERSION)
$(TOOLS)/protoc-gen-grpc-gateway:
	GOBIN=$(TOOLS) $(GO) install github.com/grpc-ecosystem/grpc-gateway/v2/protoc-gen-grpc-gateway@$(GRPC_GATEWAY_VERSION)
$(TOOLS)/protoc-gen-openapiv2:
	GOBIN=$(TOOLS) $(GO) install github.com/grpc-ecosystem/grpc-gateway/v2/protoc-gen-openapiv2@$(GRPC_GATEWAY_VERSION)
$(TOOLS)/staticcheck:
	GOBIN=$(TOOLS) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

clean:
	rm -rf bin .tools
