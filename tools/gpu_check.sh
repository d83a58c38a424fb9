#!/usr/bin/env bash
# The suite and the sanitizers on an NVIDIA GPU, with the CUDA backend: a
# stand-in for an Apple GPU under real parallelism (docs/design.md, "The CUDA
# backend"). For the borrowed GPU machine: no network, no pip, no clang-19.
#
#   bash tools/gpu_check.sh RESULTS_DIR [--tests|--sanitize [TOOL ...]|--compare|--bench|--profile]
#
# Needs, carried with the tree: build/cuda (the PTX: `python tools/cuda_build.py`
# where clang-19 is) and build/wheels (pure or cp312 wheels of what the tests
# import beyond torch: expecttest, hypothesis, attrs, sortedcontainers, pyyaml,
# numpy, mpmath; unpacked here into build/pydeps for modules not installed).
# Each mode builds the extension (incrementally) and fits 10 minutes:
#   --tests     the whole suite on CUDA tensors, each test file in its own
#               process (default; GPU_TEST_FILES="test/test_a.py test/test_b.py":
#               only those; GPU_CHECK_JOBS=N: N files at a time, default 4;
#               GPU_CHECK_FILE_SECONDS: each file's limit, default 150;
#               GPU_CHECK_SHARDS=N: each file split over N processes). The
#               whole suite no longer fits one 540 s command: at stop 49 it
#               took two, every file but five at GPU_CHECK_JOBS=8 (stop 50's
#               62, test_put left out too: 253 s), then test_bad_inputs,
#               test_edge_values, test_opinfo, test_overrides and
#               test_cuda_backend_build at 5 with GPU_CHECK_FILE_SECONDS=445
#               (each 250-360 s there; 350-440+ s on stop 51's slower start,
#               where test_edge_values, test_opinfo and test_cuda_backend_build
#               ran again in 3 shards each, GPU_CHECK_JOBS=9: 450 s)
#   --sanitize [TOOL ...]
#               tools/gpu_launch_all.py under compute-sanitizer racecheck,
#               memcheck (torch's caching allocator off) and synccheck, or
#               the TOOLs named (one run each, when three do not fit);
#               SANITIZE_ONLY="take put_": those overloads' calls only
#   --compare   tools/gpu_launch_all.py's calls on the GPU, again with the
#               threadgroups in reverse order, and on the emulator (built in
#               a copy of the tree); tools/gpu_compare.py compares the results
#   --bench     benchmarks/bench_gpu.py: ours against torch's CUDA kernels
#               (BENCH_FAMILIES=reduction,pooling: a subset)
#   --profile   Nsight Compute (ncu) over one call of ours and one of torch's
#               per case of BENCH_FAMILIES (BENCH_DTYPES=float16: only those):
#               throughput, occupancy, stall reasons, instructions (ncu.csv)
# Writes RESULTS_DIR/gpu_check.txt (what ran, passed, failed, skipped, host
# names launched and never launched; a one-line summary last) beside the logs.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
RESULTS="${1:?usage: bash tools/gpu_check.sh RESULTS_DIR [--tests|--sanitize [TOOL ...]|--compare|--bench|--profile]}"
MODE="${2:---tests}"
shift $(( $# < 2 ? $# : 2 ))
TOOLS=("$@")
[ ${#TOOLS[@]} -eq 0 ] && TOOLS=(racecheck memcheck synccheck)
mkdir -p "$RESULTS"
RESULTS="$(cd "$RESULTS" && pwd)"
cd "$ROOT"
start=$(date +%s)
elapsed() { echo $(( $(date +%s) - start )); }

case "$MODE" in
  --tests|--sanitize|--compare|--bench|--profile) ;;
  *) echo "gpu_check: unknown mode $MODE" >&2; exit 2 ;;
esac
if [ ! -f build/cuda/kernels.txt ]; then
  echo "gpu_check: no build/cuda/kernels.txt: run python tools/cuda_build.py where clang-19 is and carry build/cuda" >&2
  exit 2
fi

# Test dependencies the machine lacks, from the carried wheels (a wheel is a
# zip: unpacking it is what pip would do for these).
python - <<'PY'
import glob, importlib.util, os, zipfile
wanted = {"expecttest": "expecttest", "hypothesis": "hypothesis", "attr": "attrs",
          "sortedcontainers": "sortedcontainers", "yaml": "pyyaml", "numpy": "numpy",
          "mpmath": "mpmath"}
target = os.path.join("build", "pydeps")
for module, dist in wanted.items():
    if importlib.util.find_spec(module) is not None:
        continue
    wheels = sorted(glob.glob(os.path.join("build", "wheels", f"{dist}-*.whl")))
    if not wheels:
        print(f"gpu_check: {module} is not installed and no build/wheels/{dist}-*.whl was carried")
        continue
    zipfile.ZipFile(wheels[-1]).extractall(target)
    print(f"gpu_check: {module} from {os.path.basename(wheels[-1])}")
PY
export PYTHONPATH="$ROOT:$ROOT/build/pydeps${PYTHONPATH:+:$PYTHONPATH}"

echo "gpu_check: building the CUDA backend ($(elapsed) s)"
if ! MPS_OPS_BACKEND=cuda MAX_JOBS="${MAX_JOBS:-16}" python setup.py build_ext --inplace \
    > "$RESULTS/build.log" 2>&1; then
  tail -n 40 "$RESULTS/build.log"
  python tools/gpu_check_report.py "$RESULTS" --mode="$MODE" --build-failed
  exit 1
fi
python -c 'import mps_ops, torch; assert mps_ops.backend == "cuda", mps_ops.backend; print("gpu_check: mps_ops", mps_ops.backend, "on", torch.cuda.get_device_name())' \
  2>&1 | tee "$RESULTS/import.log"
echo "gpu_check: built in $(elapsed) s"
budget=$(( ${GPU_CHECK_SECONDS:-570} - $(elapsed) ))

case "$MODE" in
  --tests)
    rm -rf "$RESULTS/launched_tests.txt" "$RESULTS/tests" "$RESULTS/test_files.txt"
    mkdir -p "$RESULTS/tests"
    # Each test file in its own pytest, GPU_CHECK_JOBS at a time: a crash (the first
    # run's segmentation faults) ends one file, not the suite. SIGINT at a
    # file's or the run's deadline: pytest stops and still writes its JUnit
    # XML, so a run cut short reports what it did. test_files.txt: file, exit
    # status (139: crashed, 130/124: cut short).
    export MPS_OPS_LAUNCH_LOG="$RESULTS/launched_tests.txt" RESULTS
    export PER_FILE="${GPU_CHECK_FILE_SECONDS:-150}"
    # CXX and CC unset: the machine's CXX (g++) is for the extension; the
    # device-free tool tests pick their own clang.
    # test_mps_coverage_data.py reads the macOS wheels from PyPI, which the
    # GPU machine cannot reach, and runs no kernel: CI runs it.
    # GPU_CHECK_SHARDS=N: each file as N processes (MPS_OPS_TEST_SHARD, test/conftest.py),
    # named test_x.shard<i>of<N>.
    shards="${GPU_CHECK_SHARDS:-1}"
    ls ${GPU_TEST_FILES:-test/test_*.py} | grep -v -x -F test/test_mps_coverage_data.py \
      | while read -r file; do for i in $(seq 0 $(( shards - 1 ))); do echo "$file $i"; done; done \
      | timeout -s INT "$(( budget - 20 ))" env -u CXX -u CC SHARDS="$shards" xargs -P "${GPU_CHECK_JOBS:-4}" -L 1 sh -c '
      name=$(basename "$0" .py)
      [ "$SHARDS" -gt 1 ] && name="$name.shard$1of$SHARDS"
      MPS_OPS_TEST_SHARD="$1/$SHARDS" timeout -s INT "$PER_FILE" python -X faulthandler -m pytest "$0" -q -rfEs \
        -p no:cacheprovider --junitxml="$RESULTS/tests/$name.xml" > "$RESULTS/tests/$name.log" 2>&1
      echo "$name $?" >> "$RESULTS/test_files.txt"'
    echo "gpu_check: test files done after $(elapsed) s"
    (cd "$RESULTS/tests" && tar czf ../tests_logs.tgz *.log)
    ;;
  --sanitize)
    sanitizer="$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)"
    per_tool=$(( (budget - 15) / ${#TOOLS[@]} ))
    for tool in "${TOOLS[@]}"; do
      rm -f "$RESULTS/launched_$tool.txt"
      extra=()
      [ "$tool" = memcheck ] && extra=(env PYTORCH_NO_CUDA_MEMORY_CACHING=1)
      # The launcher stops starting calls 30 s before the tool's limit.
      MPS_OPS_LAUNCH_LOG="$RESULTS/launched_$tool.txt" timeout "$per_tool" "${extra[@]}" \
        "$sanitizer" --tool "$tool" --print-limit 200 --log-file "$RESULTS/$tool.log" \
        python tools/gpu_launch_all.py --deadline "$(( per_tool - 30 ))" ${SANITIZE_ONLY:+--only $SANITIZE_ONLY} \
        --report "$RESULTS/launch_$tool.json" > "$RESULTS/${tool}_stdout.log" 2>&1
      echo "gpu_check: $tool exited $? after $(elapsed) s"
    done
    ;;
  --compare)
    launch() { timeout "$(( budget / 4 ))" python tools/gpu_launch_all.py "$@"; }
    launch --record "$RESULTS/gpu.pt" --report "$RESULTS/launch_gpu.json" > "$RESULTS/launch_gpu.log" 2>&1
    echo "gpu_check: GPU launches exited $? after $(elapsed) s"
    MPS_OPS_CUDA_REVERSE_GROUPS=1 launch --reverse-groups --record "$RESULTS/gpu_reversed.pt" \
      > "$RESULTS/launch_gpu_reversed.log" 2>&1
    echo "gpu_check: reversed GPU launches exited $? after $(elapsed) s"
    # The emulator's results for the same calls: the extension built for the
    # emulator in a copy of the tree (one backend per build), with clang
    # (CXX unset: the machine's g++ is for the CUDA build).
    emu="${TMPDIR:-/tmp}/mps_ops_emulator"
    rm -rf "$emu" && mkdir -p "$emu"
    tar --exclude=./build --exclude='./mps_ops/_C*.so' -cf - . | tar -xf - -C "$emu"
    (cd "$emu" && env -u CXX -u CC MPS_OPS_BACKEND=emulator MAX_JOBS="${MAX_JOBS:-16}" \
       python setup.py build_ext --inplace > "$RESULTS/emulator_build.log" 2>&1 \
     && PYTHONPATH="$emu:$ROOT/build/pydeps" timeout "$(( budget / 3 ))" python tools/gpu_launch_all.py \
       --record "$RESULTS/emulator.pt" > "$RESULTS/launch_emulator.log" 2>&1)
    echo "gpu_check: emulator build and launches exited $? after $(elapsed) s"
    python tools/gpu_compare.py "$RESULTS/emulator.pt" "$RESULTS/gpu.pt" \
      --report "$RESULTS/compare_emulator.json" > "$RESULTS/compare_emulator.txt" 2>&1
    python tools/gpu_compare.py "$RESULTS/gpu.pt" "$RESULTS/gpu_reversed.pt" \
      --report "$RESULTS/compare_reversed.json" > "$RESULTS/compare_reversed.txt" 2>&1
    rm -f "$RESULTS"/*.pt  # tens of MB each; the comparisons keep what differs
    ;;
  --bench)
    # Ours against torch's CUDA kernels (issue 13); the JSON, its table and
    # chart land in RESULTS_DIR. Cases not started by the deadline are listed.
    python benchmarks/bench_gpu.py --json "$RESULTS/bench_gpu.json" --deadline "$(( budget - 60 ))" \
      ${BENCH_FAMILIES:+--families "$BENCH_FAMILIES"} > "$RESULTS/bench.log" 2>&1
    echo "gpu_check: bench exited $? after $(elapsed) s"
    ;;
  --profile)
    ncu="$(command -v ncu || echo /usr/local/cuda/bin/ncu)"
    timeout "$(( budget - 10 ))" "$ncu" --profile-from-start off --csv --page details \
      --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats \
      --section InstructionStats --section MemoryWorkloadAnalysis \
      python benchmarks/bench_gpu.py --profile ${BENCH_FAMILIES:+--families "$BENCH_FAMILIES"} \
      ${BENCH_DTYPES:+--dtypes "$BENCH_DTYPES"} > "$RESULTS/ncu.csv" 2> "$RESULTS/ncu.log"
    echo "gpu_check: ncu exited $? after $(elapsed) s"
    ;;
esac
python tools/gpu_check_report.py "$RESULTS" --mode="$MODE"
