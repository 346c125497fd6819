# traceaudit build, test and demo targets. Everything builds with
# CGO_ENABLED=0: the binary is one static file to copy to a GPU box.
export CGO_ENABLED := 0
GO        ?= go
BIN       := bin/traceaudit
FUZZTIME  ?= 10s
DEMO      := fixtures/r0_baseline.pt.trace.json.gz

.PHONY: all build test race lint bench demo fuzz fuzz-ci clean

all: lint test build

build:
	$(GO) build -trimpath -o $(BIN) ./cmd/traceaudit

# The whole suite: unit, golden, fixture and cross-check tests, plus the
# committed fuzz corpora as regression inputs.
test:
	$(GO) test ./...

# The packages that run goroutines, under the race detector (needs cgo and
# a C compiler).
race:
	CGO_ENABLED=1 $(GO) test -race ./replay/ ./ingest/... ./internal/...

lint:
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

# Benchmarks: the Go benchmarks of the readers and analyzers, then
# traceaudit against the Python references on generated 250 MB and 1 GB
# Chrome traces and a 2 M-row nsys export, each as its own process (see
# README, "Performance"). BENCHFLAGS=-skip-1gb skips the 1 GB trace.
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./ingest/... ./analyze/...
	$(GO) run ./internal/benchrun $(BENCHFLAGS)

# The main job on the shipped sample trace.
demo: build
	./$(BIN) analyze $(DEMO)

# Bounded fuzzing of every fuzz target (FUZZTIME each).
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for t in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "fuzz $$pkg $$t ($(FUZZTIME))"; \
	    $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

fuzz-ci:
	$(MAKE) fuzz FUZZTIME=5s

clean:
	rm -rf bin
