# David & Goliath environment. `make run` starts the server; `make test` runs every test.
GO      ?= go
PYTHON  ?= python3
BIN     := bin
PKGS    := ./...

.PHONY: all build run test test-go test-python bench fuzz lint fmt golden clean

all: build

build:
	$(GO) build -o $(BIN)/ ./cmd/...

# The main job: build and start the batch server on loopback, serving the
# trained policies in policies/ as opponents "policy:<name>" and the search
# each guides as "search:policy:<name>". OPPONENT is the strongest trained bot
# (docs/training.md), the one to play against.
OPPONENT ?= search:policy:imitate-search
run: build
	@echo "strongest trained opponent: \"opponent\": \"$(OPPONENT)\" (bare network: policy:imitate-search)"
	$(BIN)/dgserver --addr 127.0.0.1:8080 --policies policies

# Every test: Go (vet + race) and the Python package against the real server.
test: lint test-go test-python

test-go:
	$(GO) test -race -count=1 $(PKGS)

test-python: build
	@if [ -f python/pyproject.toml ]; then $(MAKE) -C python test PYTHON=$(PYTHON); else echo "python/: no package yet"; fi

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./env/... ./obs/ ./server/

# Each fuzz target for FUZZTIME (go test -fuzz takes one target at a time).
FUZZTIME ?= 30s
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzPlay$$' -fuzztime $(FUZZTIME) ./env/
	$(GO) test -run '^$$' -fuzz '^FuzzDeserialize$$' -fuzztime $(FUZZTIME) ./env/
	$(GO) test -run '^$$' -fuzz '^FuzzEncode$$' -fuzztime $(FUZZTIME) ./obs/
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./env/policy/
	$(GO) test -run '^$$' -fuzz '^FuzzRequestDecoding$$' -fuzztime $(FUZZTIME) ./server/

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

fmt:
	gofmt -w $$(git ls-files '*.go')

golden:
	$(GO) test ./env/ -run TestGolden -update

clean:
	rm -rf $(BIN)
