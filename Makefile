# traceaudit build, test and demo targets. Everything builds with
# CGO_ENABLED=0: the binary is one static file to copy to a GPU box.
export CGO_ENABLED := 0
GO        ?= go
BIN       := bin/traceaudit
FUZZTIME  ?= 10s
FUZZBUDGET ?=
DEMO      := fixtures/r0_baseline.pt.trace.json.gz
# make install copies the binary here (go install's folder by default).
BINDIR    ?= $(shell $(GO) env GOPATH)/bin

# Version stamping (traceaudit version, tool_version in JSON): the nearest
# tag (git describe), else "devel"; the commit, "-dirty" with uncommitted
# changes.
PKG       := github.com/traceaudit/traceaudit
VERSION   ?= $(shell git describe --tags --dirty 2>/dev/null || echo devel)
COMMIT    ?= $(shell c=$$(git rev-parse --short=12 HEAD 2>/dev/null) && { git diff --quiet HEAD 2>/dev/null && echo $$c || echo $$c-dirty; } || echo unknown)
LDFLAGS   := -X $(PKG)/internal/version.version=$(VERSION) -X $(PKG)/internal/version.commit=$(COMMIT)
# make dist: one tarball per platform, with SHA256SUMS.
PLATFORMS := linux/amd64 linux/arm64
DIST      := dist

.PHONY: all build install dist test race lint bench demo fuzz fuzz-ci clean calibrate calibrate-smoke calibrate-bundle

all: lint test build

build:
	$(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/traceaudit

install: build
	install -d "$(BINDIR)"
	install -m 0755 $(BIN) "$(BINDIR)/traceaudit"
	@echo "installed $(BINDIR)/traceaudit"

# Release tarballs for copying to GPU boxes: traceaudit, LICENSE and
# README.md in traceaudit-VERSION-OS-ARCH/, reproducible (sorted entries,
# the commit's time, no owner), and their SHA-256 sums.
dist:
	rm -rf "$(DIST)" && mkdir -p "$(DIST)"
	@set -e; mtime=$$(git log -1 --format=%ct 2>/dev/null || echo 0); \
	for p in $(PLATFORMS); do \
	  os=$${p%/*}; arch=$${p#*/}; name=traceaudit-$(VERSION)-$$os-$$arch; \
	  echo "dist: $$name"; \
	  mkdir -p "$(DIST)/$$name"; \
	  GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o "$(DIST)/$$name/traceaudit" ./cmd/traceaudit; \
	  cp LICENSE README.md "$(DIST)/$$name/"; \
	  tar -C "$(DIST)" --sort=name --mtime=@$$mtime --owner=0 --group=0 --numeric-owner -cf - "$$name" | gzip -n -9 > "$(DIST)/$$name.tar.gz"; \
	  rm -rf "$(DIST)/$$name"; \
	done; \
	cd "$(DIST)" && sha256sum *.tar.gz > SHA256SUMS && cat SHA256SUMS

# The whole suite: unit, golden, fixture and cross-check tests, plus the
# committed fuzz corpora as regression inputs.
test:
	$(GO) test ./...

# The packages that run goroutines, under the race detector (needs cgo and
# a C compiler).
race:
	CGO_ENABLED=1 $(GO) test -race -timeout 30m ./replay/ ./ingest/... ./internal/... ./driver/... ./analyze/... ./timeline/...

lint:
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

# Benchmarks: the Go benchmarks of the readers and analyzers, then
# traceaudit against the Python references on generated 250 MB and 1 GB
# Chrome traces and a 2 M-row nsys export, each as its own process (see
# docs/performance.md). BENCHFLAGS=-skip-1gb skips the 1 GB trace.
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./ingest/... ./analyze/...
	$(GO) run ./cmd/benchrun $(BENCHFLAGS)

# The main job on the shipped sample trace.
demo: build
	./$(BIN) analyze $(DEMO)

# Bounded fuzzing of every fuzz target: FUZZTIME each (a duration, or a
# count such as 5000x), or the count FUZZBUDGET gives a target by name.
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for t in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    ft=$(FUZZTIME); \
	    for kv in $(FUZZBUDGET); do [ "$${kv%%=*}" = "$$t" ] && ft=$${kv#*=}; done; \
	    echo "fuzz $$pkg $$t ($$ft)"; \
	    $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $$ft -fuzzminimizetime 100x $$pkg || exit 1; \
	  done; \
	done

# CI fuzzes each target for a number of inputs, not a time: a duration races
# Go's fuzzing coordinator at its deadline, which on a loaded machine fails
# the target with a bare "context deadline exceeded" and no failing input
# (CI failed so on FuzzReduce). The counts take 2-9 s a target on the 2-core
# development VM with a cold cache; a target not named gets 2000 inputs.
FUZZ_CI_BUDGET = FuzzReduce=100000x FuzzParse=60000x FuzzReadFile=3000x \
	FuzzScan=1000x FuzzRenderers=4000x FuzzDecode=150000x
fuzz-ci:
	$(MAKE) fuzz FUZZTIME=2000x FUZZBUDGET="$(FUZZ_CI_BUDGET)"

# Calibration of the replay against real PyTorch fixes (issue 12), on a GPU
# box with torch and no Go: PAIRS=a,b (default all; `python3
# fixtures/capture/calibrate/calibrate.py --list` lists them), BIN= a
# prebuilt traceaudit (default .device/traceaudit, from calibrate-bundle),
# CAL_OUT= where table.md, results.json and calibrate.tar.gz go, CALFLAGS=
# more flags (--tests .device/t runs the GPU test binaries first).
PAIRS    ?=
CAL_OUT  ?= calibrate-out
CALFLAGS ?=
CAL_BIN   = $(if $(filter command line,$(origin BIN)),$(BIN),.device/traceaudit)
CAL       = fixtures/capture/calibrate

calibrate:
	python3 $(CAL)/calibrate.py --pairs "$(PAIRS)" --bin $(CAL_BIN) --debs .device/debs --out $(CAL_OUT) $(CALFLAGS)

# The harness's plumbing here, without torch or a GPU: its unit tests, then
# every pair with synthetic timings, fixture traces and dry-run replays.
calibrate-smoke: build
	python3 -m unittest discover -s $(CAL)
	python3 $(CAL)/calibrate.py --smoke --pairs "$(PAIRS)" --bin $(BIN) --nsys $(CAL)/testdata/fake-nsys \
	  --out /tmp/traceaudit-calibrate-smoke --work /tmp/traceaudit-calibrate-smoke-work
	@cat /tmp/traceaudit-calibrate-smoke/table.md

# What travels to the GPU box (git-ignored .device/): the static binary
# (gzipped: traceaudit.gz), the GPU test binaries of replay/cuda and
# replay/cudaexec (t.tgz, unpacked into .device/t/ there), and the
# libdw1/libelf1 .deb files from .debs/ that nsys needs there; the tree and
# these stay under the device tool's 64 MiB. Prints the run commands.
calibrate-bundle:
	rm -rf .device/t && mkdir -p .device/t
	$(GO) build -trimpath -ldflags "$(LDFLAGS) -s" -o .device/traceaudit ./cmd/traceaudit
	$(GO) test -c -ldflags=-s -o .device/t/replay-cuda.test ./replay/cuda
	$(GO) test -c -ldflags=-s -o .device/t/replay-cudaexec.test ./replay/cudaexec
	gzip -kf .device/traceaudit
	tar czf .device/t.tgz -C .device t
	@if ls .debs/*.deb >/dev/null 2>&1; then mkdir -p .device/debs && cp .debs/*.deb .device/debs/; \
	else echo "calibrate-bundle: no .debs/*.deb: nsys will not run on the box (Chrome traces only)" >&2; fi
	@du -ch .device/traceaudit.gz .device/t.tgz .device/debs | tail -1
	@python3 $(CAL)/bundle_command.py

clean:
	rm -rf bin $(DIST)
