#!/usr/bin/env bash
# Type-checks every Objective-C++ file under csrc/metal/ on Linux
# (and its plain C++ headers and .cpp files as plain C++):
# clang -fsyntax-only against tools/objc_stubs/ (declarations of the Metal,
# Foundation and libdispatch API we use, written from Apple's documentation)
# and PyTorch's installed headers (ATen/mps/MPSStream.h, MPSDevice.h, c10).
# Warnings are errors: a misspelled selector is only a warning in clang.
#
# Each file is checked twice, as the macOS 15 SDK and as the macOS 14 SDK
# would declare the API (MTLMathMode exists only in the first).
#
# This proves the code is well-typed against those declarations; it proves
# nothing about behaviour, and nothing where the stubs and Apple's SDK differ.
#
#   tools/check_objc.sh                 check csrc/metal/*.mm
#   tools/check_objc.sh FILE.mm ...     check these files instead
#   tools/check_objc.sh --host-stubs [FILE ...]
#                                       check instead, as plain C++, the host
#                                       stubs (csrc/operations/*.mm) and the
#                                       runtime (csrc/runtime/*.cpp), which
#                                       every platform compiles: with another
#                                       torch's headers, that they still
#                                       build against it, and as a Mac's
#                                       compiler sees them (macOS's int64_t,
#                                       __APPLE__: tools/macos_host; two
#                                       files at once)
#   CXX=clang++-17 tools/check_objc.sh  another clang (default clang++-16)
#   TORCH_INCLUDE=/path/to/torch/include tools/check_objc.sh
#                                       another torch's headers (e.g. a macOS wheel's,
#                                       from tools/torch_headers.py)
#
# The C++ standard is the one torch's BuildExtension compiles the extension
# with: C++20 from torch 2.13 on (its headers need it: std::bit_width,
# operator<=>), C++17 before; read from the headers' torch/version.h.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CXX="${CXX:-clang++-16}"
PYTHON="${PYTHON:-python}"

if ! command -v "$CXX" >/dev/null 2>&1; then
  echo "check_objc: $CXX not found (Debian: apt-get install -y clang-16)" >&2
  exit 2
fi

if [ -z "${TORCH_INCLUDE:-}" ]; then
  TORCH_INCLUDE="$("$PYTHON" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "include"))')"
fi
if [ ! -f "$TORCH_INCLUDE/ATen/mps/MPSStream.h" ]; then
  echo "check_objc: no ATen/mps/MPSStream.h under $TORCH_INCLUDE" >&2
  exit 2
fi

# torch/version.h moved between releases (2.15: torch/headeronly/): ask the
# preprocessor rather than a path.
torch_version_macros="$(printf '#include <torch/version.h>\n' |
  "$CXX" -x c++ -E -dM -isystem "$TORCH_INCLUDE" -isystem "$TORCH_INCLUDE/torch/csrc/api/include" - 2>/dev/null || true)"
torch_major="$(sed -n 's/^#define TORCH_VERSION_MAJOR \([0-9]*\).*/\1/p' <<<"$torch_version_macros")"
torch_minor="$(sed -n 's/^#define TORCH_VERSION_MINOR \([0-9]*\).*/\1/p' <<<"$torch_version_macros")"
if [ -z "$torch_major" ] || [ -z "$torch_minor" ]; then
  echo "check_objc: torch/version.h under $TORCH_INCLUDE defines no TORCH_VERSION_MAJOR/MINOR" >&2
  exit 2
fi
if [ "$torch_major" -gt 2 ] || { [ "$torch_major" -eq 2 ] && [ "$torch_minor" -ge 13 ]; }; then
  cxx_std=c++20
else
  cxx_std=c++17
fi
echo "check_objc: torch $torch_major.$torch_minor headers from $TORCH_INCLUDE, -std=$cxx_std"

# What a Mac's compiler sees of its platform, for every check below (the
# Linux build already checks Linux): macOS's integer types (tools/macos_host:
# int64_t is long long there, long here), __APPLE__ defined and __linux__
# not, so torch's headers take their macOS branches (SymInt's size_t
# operators, Scalar's `long` constructor). Word-split where used: ROOT holds
# no blanks.
MACOS_MODEL="-isystem $ROOT/tools/macos_host -U__linux__ -U__linux -Ulinux -U__gnu_linux__ -D__APPLE__ -D__MACH__"

if [ "${1:-}" = "--host-stubs" ]; then
  shift
  if [ "$#" -gt 0 ]; then
    stubs=("$@")
  else
    shopt -s nullglob
    stubs=("$ROOT"/csrc/operations/*.mm "$ROOT"/csrc/runtime/*.cpp)
    shopt -u nullglob
  fi
  PYTHON_INCLUDE="$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')"
  export CXX cxx_std TORCH_INCLUDE ROOT PYTHON_INCLUDE MACOS_MODEL
  # Errors only: warnings are the build's business.
  printf '%s\n' "${stubs[@]}" | xargs -P 2 -I{} sh -c '
    if "$CXX" -x c++ -std="$cxx_std" -fsyntax-only -w $MACOS_MODEL -isystem "$TORCH_INCLUDE" \
        -isystem "$TORCH_INCLUDE/torch/csrc/api/include" -isystem "$PYTHON_INCLUDE" -I "$ROOT/csrc" "{}"; then
      echo "check_objc: ok   $(basename "{}") (host, plain C++)"
    else
      echo "check_objc: FAIL $(basename "{}") (host, plain C++)" >&2
      exit 1
    fi' || exit 1
  exit 0
fi

if [ "$#" -gt 0 ]; then
  files=("$@")
else
  shopt -s nullglob
  files=("$ROOT"/csrc/metal/*.mm)
  shopt -u nullglob
fi
if [ "${#files[@]}" -eq 0 ]; then
  echo "check_objc: no .mm files to check" >&2
  exit 2
fi

flags=(
  -x objective-c++ -std="$cxx_std" -fsyntax-only
  -fobjc-runtime=macosx -fblocks -fobjc-exceptions -fno-objc-arc
  -Wall -Wextra -Werror
  # Selector and protocol mistakes, and nil where Apple says nonnull.
  -Wobjc-method-access -Wobjc-signed-char-bool -Wnonnull -Wnullable-to-nonnull-conversion
  -Wundeclared-selector -Wincomplete-implementation
  $MACOS_MODEL
  # Our stubs and torch's headers are system headers, like the SDK's.
  -isystem "$ROOT/tools/objc_stubs"
  -isystem "$TORCH_INCLUDE"
  -isystem "$TORCH_INCLUDE/torch/csrc/api/include"
  -I "$ROOT/csrc"
  -iquote "$ROOT/csrc/metal"
  -DMPS_OPS_WITH_METAL
)

status=0

# The C++ face of the backend must stay plain C++ (host code includes it), and
# so must its .cpp files (builtin_libraries.cpp is tested on Linux). Headers
# that refuse to build without __OBJC__ are Objective-C++ only.
for h in "$ROOT"/csrc/metal/*.h "$ROOT"/csrc/metal/*.cpp; do
  [ -e "$h" ] || continue
  if grep -q '^#if !defined(__OBJC__)' "$h"; then continue; fi
  if "$CXX" -x c++ -std="$cxx_std" -fsyntax-only -Wall -Wextra -Werror -Wno-pragma-once-outside-header \
      $MACOS_MODEL -isystem "$TORCH_INCLUDE" -isystem "$TORCH_INCLUDE/torch/csrc/api/include" -I "$ROOT/csrc" "$h"; then
    echo "check_objc: ok   $(basename "$h") (plain C++)"
  else
    echo "check_objc: FAIL $(basename "$h") (plain C++)" >&2
    status=1
  fi
done

for f in "${files[@]}"; do
  for sdk in 150000 140000; do
    if "$CXX" "${flags[@]}" -DMPS_OPS_STUB_MACOS_SDK="$sdk" "$f"; then
      echo "check_objc: ok   $(basename "$f") (macOS SDK ${sdk:0:2} declarations)"
    else
      echo "check_objc: FAIL $(basename "$f") (macOS SDK ${sdk:0:2} declarations)" >&2
      status=1
    fi
  done
done
exit "$status"
