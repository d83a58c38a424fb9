#!/usr/bin/env bash
# Prepare a fresh machine and install mps_ops in editable mode.
#  - Linux: clang >= 15 for the emulator (_Float16 on x86); Debian's clang-16.
#  - Linux: clang-19 for the CUDA target (tools/cuda_build.py: _Float16 on
#    nvptx and __nvvm_activemask need LLVM 19). The CUDA toolkit it also needs
#    (ptxas, libdevice) is not installed here: /usr/local/cuda* or CUDA_PATH.
#  - torch: kept if already installed (2.9 or newer), else torch==2.13.0.
#  - the extension is built against that torch (--no-build-isolation: an
#    isolated build would fetch another torch).
set -euo pipefail
cd "$(dirname "$0")/.."

have_clang() {
  for c in clang++-16 clang++-17 clang++-18 clang++-15; do
    command -v "$c" >/dev/null 2>&1 && return 0
  done
  return 1
}

# Only what is missing, so a second run installs nothing.
packages=()
if [ "$(uname -s)" = "Linux" ]; then
  have_clang || packages+=(clang-16)
  command -v clang++-19 >/dev/null 2>&1 || packages+=(clang-19)
fi
if [ "${#packages[@]}" -gt 0 ]; then
  echo "bootstrap: installing ${packages[*]} (emulator: clang-16, CUDA target: clang-19)"
  if [ "$(id -u)" = "0" ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq "${packages[@]}" >/dev/null
fi

PY="${PYTHON:-python3}"
if ! "$PY" -c "import torch" >/dev/null 2>&1; then
  "$PY" -m pip install -q "torch==2.13.0"
fi
"$PY" -m pip install -q numpy pyyaml ninja pytest expecttest hypothesis
MAX_JOBS="${MAX_JOBS:-2}" "$PY" -m pip install -q --no-build-isolation -e .
echo "bootstrap: mps_ops installed"
