# The two commands a newcomer needs (see README.md):
#   make demo   set up, then run the main example on the embedded default
#   make test   set up, then run the whole test suite
.PHONY: setup setup-gpu gpu-check demo test fuzz bench bench-sqlpeer

setup:
	@scripts/setup.sh

demo: setup
	@scripts/demo.sh

# Each file reader's fuzz target runs briefly (Go takes one -fuzz per run);
# seed corpora in operators/sources/testdata/fuzz.
FILE_FUZZ = FuzzCSV FuzzJSONL FuzzIPCFile FuzzIPCStream FuzzParquet

test: setup
	go test -count=1 ./...
	@# The DuckDB peer (its own module): benchmark answers and SQL feature
	@# comparisons against DuckDB. The first build compiles DuckDB's bindings.
	cd bench/sqlpeer && go test -count=1 ./...
	@# The statement path's fuzzers, briefly (seeds: every example script).
	go test ./lang -run '^$$' -fuzz '^FuzzParse$$' -fuzztime 5s
	go test ./planner/bind -run '^$$' -fuzz '^FuzzBind$$' -fuzztime 5s
	go test ./planner -run '^$$' -fuzz '^FuzzPlan$$' -fuzztime 5s
	@for f in $(FILE_FUZZ); do \
		go test ./operators/sources -run '^$$' -fuzz "^$$f\$$" -fuzztime 5s || exit 1; \
	done
	go test ./planner/catalog -run '^$$' -fuzz '^FuzzParse$$' -fuzztime 5s -fuzzminimizetime 100x
	go test ./planner/infra -run '^$$' -fuzz '^FuzzParse$$' -fuzztime 5s -fuzzminimizetime 100x

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
	TIERFLOW_ORT_LIB=$(ORT_GPU_LIB) TIERFLOW_REQUIRE_GPU=1 go test -count=1 -v -run 'CUDA|RealMachine' ./runtime/onnx ./runtime/devices
	TIERFLOW_ORT_LIB=$(ORT_GPU_LIB) bin/tierflow devices
