// The op table generated from csrc/native_functions.yaml (build/generated/
// registry.cpp) and the per-overload registration functions it points to.
#pragma once

#include <torch/library.h>

namespace mps_ops::generated {

struct OverloadRecord {
  const char* name;  // e.g. "special_ndtri.out"
  void (*impl)(torch::Library& library);
  // The aten schema, where releases we support lack the overload (the
  // registry's `schemas`), else "".
  const char* schema;
};

struct OpRecord {
  const char* name;    // e.g. "aten::special_ndtri"
  const char* policy;  // "fill", "override" or "repair"
  const char* dtypes;  // comma-separated torch dtype names
  const char* opinfo;  // comma-separated OpInfo names
  const char* forms;   // comma-separated OpInfo call forms that reach our kernels
  const char* shape;   // a standard shape (SHAPES in tools/codegen.py) or ""
  // A shaped op's sample domain as a Python literal:
  // ((argument or "*" for every input, (lo, hi, integers)), ...); "()" if none.
  const char* domain;
  // An override's releases (major.minor, comma-separated) whose stock MPS
  // kernel is MPSGraph; "" for a fill.
  const char* mpsgraph;
  // A repair's releases (major.minor, comma-separated) whose stock MPS
  // kernel fails for inputs ours takes; "" otherwise.
  const char* repairs;
  // OpInfos whose input gradients reach the op (comma-separated).
  const char* grad_opinfo;
  // An override's measured ratio against torch's CUDA kernel on an NVIDIA
  // GPU ("lowest-highest GPU at commit"), or "".
  const char* gpu_ratio;
  const OverloadRecord* overloads;
  int overload_count;
};

extern const OpRecord op_records[];
extern const int op_record_count;

}  // namespace mps_ops::generated
