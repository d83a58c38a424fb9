#!/usr/bin/env bash
# The suite and the sanitizers on an NVIDIA GPU, with the CUDA backend: a
# stand-in for an Apple GPU under real parallelism (docs/design.md, "The CUDA
# backend"). For the borrowed GPU machine: no network, no pip, no clang-19.
#
#   bash tools/gpu_check.sh RESULTS_DIR [--tests|--sanitize|--bench]
#
# Needs, carried with the tree: build/cuda (the PTX: `python tools/cuda_build.py`
# where clang-19 is) and build/wheels (pure or cp312 wheels of what the tests
# import beyond torch: expecttest, hypothesis, attrs, sortedcontainers, pyyaml,
# numpy, mpmath; unpacked here into build/pydeps for modules not installed).
# Each mode builds the extension (incrementally) and fits 10 minutes:
#   --tests     the whole suite on CUDA tensors, each test file in its own
#               process (default)
#   --sanitize  tools/gpu_launch_all.py under compute-sanitizer racecheck,
#               memcheck (torch's caching allocator off) and synccheck
#   --bench     benchmarks/bench_ops.py timings on the GPU
# Writes RESULTS_DIR/gpu_check.txt (what ran, passed, failed, skipped, host
# names launched and never launched; a one-line summary last) beside the logs.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
RESULTS="${1:?usage: bash tools/gpu_check.sh RESULTS_DIR [--tests|--sanitize|--bench]}"
MODE="${2:---tests}"
mkdir -p "$RESULTS"
RESULTS="$(cd "$RESULTS" && pwd)"
cd "$ROOT"
start=$(date +%s)
elapsed() { echo $(( $(date +%s) - start )); }

case "$MODE" in
  --tests|--sanitize|--bench) ;;
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
    # Each test file in its own pytest, four at a time: a crash (the first
    # run's segmentation faults) ends one file, not the suite. SIGINT at a
    # file's or the run's deadline: pytest stops and still writes its JUnit
    # XML, so a run cut short reports what it did. test_files.txt: file, exit
    # status (139: crashed, 130/124: cut short).
    export MPS_OPS_LAUNCH_LOG="$RESULTS/launched_tests.txt" RESULTS
    export PER_FILE="${GPU_CHECK_FILE_SECONDS:-150}"
    # CXX and CC unset: the machine's CXX (g++) is for the extension; the
    # device-free tool tests pick their own clang.
    ls test/test_*.py | timeout -s INT "$(( budget - 20 ))" env -u CXX -u CC xargs -P 4 -I{} sh -c '
      name=$(basename {} .py)
      timeout -s INT "$PER_FILE" python -X faulthandler -m pytest {} -q -rfEs -p no:cacheprovider \
        --junitxml="$RESULTS/tests/$name.xml" > "$RESULTS/tests/$name.log" 2>&1
      echo "$name $?" >> "$RESULTS/test_files.txt"'
    echo "gpu_check: test files done after $(elapsed) s"
    (cd "$RESULTS/tests" && tar czf ../tests_logs.tgz *.log)
    ;;
  --sanitize)
    sanitizer="$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)"
    per_tool=$(( (budget - 15) / 3 ))
    for tool in racecheck memcheck synccheck; do
      rm -f "$RESULTS/launched_$tool.txt"
      extra=()
      [ "$tool" = memcheck ] && extra=(env PYTORCH_NO_CUDA_MEMORY_CACHING=1)
      # The launcher stops starting calls 30 s before the tool's limit.
      MPS_OPS_LAUNCH_LOG="$RESULTS/launched_$tool.txt" timeout "$per_tool" "${extra[@]}" \
        "$sanitizer" --tool "$tool" --print-limit 200 --log-file "$RESULTS/$tool.log" \
        python tools/gpu_launch_all.py --deadline "$(( per_tool - 30 ))" \
        --report "$RESULTS/launch_$tool.json" > "$RESULTS/${tool}_stdout.log" 2>&1
      echo "gpu_check: $tool exited $? after $(elapsed) s"
    done
    ;;
  --bench)
    timeout "$(( budget - 10 ))" python benchmarks/bench_ops.py --out "$RESULTS/bench" \
      > "$RESULTS/bench.log" 2>&1
    echo "gpu_check: bench exited $? after $(elapsed) s"
    ;;
esac
python tools/gpu_check_report.py "$RESULTS" --mode="$MODE"
