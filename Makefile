# David & Goliath environment. `make run` starts the server; `make test` runs every test.
GO      ?= go
PYTHON  ?= python3
BIN     := bin
PKGS    := ./...

.PHONY: all build run test test-go test-python bench fuzz lint fmt golden clean chromium

all: build

build:
	$(GO) build -o $(BIN)/ $$($(GO) list ./cmd/... | grep -v '/cmd/libdgenv$$')
	$(GO) build -buildmode=c-shared -o $(BIN)/libdgenv.so ./cmd/libdgenv
	rm -f $(BIN)/libdgenv.h
	# The test build (-tags testgame: env/games registers the test games too),
	# for the Python tests: dgserver, dgeval and the in-process library.
	$(GO) build -tags testgame -o $(BIN)/dgserver-testgame ./cmd/dgserver
	$(GO) build -tags testgame -o $(BIN)/dgeval-testgame ./cmd/dgeval
	$(GO) build -tags testgame -buildmode=c-shared -o $(BIN)/libdgenv-testgame.so ./cmd/libdgenv
	rm -f $(BIN)/libdgenv-testgame.h

# The main job: build and start the batch server on loopback, serving the
# trained policies in policies/ as opponents "policy:<name>" and the search
# each guides as "search:policy:<name>". OPPONENT is the strongest trained bot
# (docs/training.md): the server's default opponent (sessions.default_opponent),
# playing the other seats of a session that names none.
OPPONENT ?= search:policy:expert
run: build
	@echo "default opponent (sessions.default_opponent): $(OPPONENT) (the strongest bare network at 3 to 6 players: policy:expert-p3-split, policy:expert-p4-c3, policy:expert-p5-split, policy:expert-p6-split)"
	DGSERVER_SESSIONS_DEFAULT_OPPONENT='$(OPPONENT)' $(BIN)/dgserver --addr 127.0.0.1:8080 --policies policies

# Every test: Go (vet + race) and the Python package against the real server.
# On a fresh machine the Python test extras take minutes to download and
# install (torch, Ray): that runs in the background while the Go tests run,
# and its log is printed when it is done.
test: lint
	@mkdir -p $(BIN); rm -f $(BIN)/python-install.rc; \
	( $(MAKE) --no-print-directory -C python install PYTHON=$(PYTHON) > $(BIN)/python-install.log 2>&1; \
	  echo $$? > $(BIN)/python-install.rc ) & pid=$$!; \
	$(MAKE) --no-print-directory test-go; go_rc=$$?; \
	wait $$pid; echo "--- python install:"; cat $(BIN)/python-install.log; \
	if [ "$$(cat $(BIN)/python-install.rc)" != 0 ]; then echo "installing the Python package failed"; exit 1; fi; \
	$(MAKE) --no-print-directory test-python; py_rc=$$?; \
	if [ $$go_rc != 0 ]; then echo "the Go tests failed (above)"; exit $$go_rc; fi; \
	exit $$py_rc

test-go: chromium
	$(GO) test -race -count=1 $(PKGS)
	# the test build (env/games registers the test games): every game's checks
	$(GO) test -race -count=1 -tags testgame ./env/games/ ./cmd/dgeval/

# The browser tests (server/webtest) drive headless Chromium: install Debian's
# package "chromium" when it is missing. Without apt-get they skip, loudly.
chromium:
	@if [ -n "$$DGENV_CHROMIUM" ] || command -v chromium >/dev/null 2>&1; then :; \
	elif command -v apt-get >/dev/null 2>&1; then \
		echo "installing chromium (Debian package chromium) for the browser tests"; \
		SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium; \
	else \
		echo "!!! no chromium and no apt-get: the browser tests (server/webtest) will be SKIPPED !!!"; \
	fi

test-python: build
	@if [ -f python/pyproject.toml ]; then $(MAKE) -C python test PYTHON=$(PYTHON); else echo "python/: no package yet"; fi

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./env/... ./obs/ ./server/

# Each fuzz target for FUZZTIME (go test -fuzz takes one target at a time).
FUZZTIME ?= 30s
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzPlay$$' -fuzztime $(FUZZTIME) ./env/card/
	$(GO) test -run '^$$' -fuzz '^FuzzDeserialize$$' -fuzztime $(FUZZTIME) ./env/card/
	$(GO) test -run '^$$' -fuzz '^FuzzEncode$$' -fuzztime $(FUZZTIME) ./env/card/
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./env/policy/
	$(GO) test -run '^$$' -fuzz '^FuzzRequestDecoding$$' -fuzztime $(FUZZTIME) ./server/

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) vet -tags testgame $(PKGS)

fmt:
	gofmt -w $$(git ls-files '*.go')

golden:
	$(GO) test ./env/card/ -run TestGolden -update

clean:
	rm -rf $(BIN)
