// The host half of the one host-name grammar, `<op>_<variant>_<out>_<in>`
// with Metal type names (the kernel half is MPS_OPS_HOST_NAME in
// csrc/kernels/include/mps_ops/elementwise.h). Names are built once per
// (variant, out, in) and cached, so the hot path formats no strings.
#pragma once

#include "backend.h"

#include <c10/core/ScalarType.h>

#include <array>
#include <atomic>

namespace mps_ops {

// nullptr for dtypes Metal has no type for (double, complex, ...).
const char* metal_type_name(c10::ScalarType dtype);

enum class Variant : uint8_t {
  dense,
  strided,
  dense_lhs_scalar,
  dense_rhs_scalar,
  reduce,  // threadgroup reductions over output slices (reduction.h)
  merge,   // their second pass where slices were split over several groups
  count
};
const char* variant_name(Variant variant);

std::string host_name(const char* op, Variant variant, c10::ScalarType out, c10::ScalarType in);

// Kernels of one op, found by (variant, output dtype, input dtype).
class KernelCache {
 public:
  explicit KernelCache(const char* op) : op_(op) {}
  const char* op() const { return op_; }
  // Raises NotImplementedError naming the op, dtypes and device if the
  // library has no such kernel.
  const KernelHandle* get(Variant variant, c10::ScalarType out, c10::ScalarType in);

 private:
  static constexpr int n_dtypes = static_cast<int>(c10::ScalarType::NumOptions);
  const char* op_;
  std::array<std::atomic<const KernelHandle*>,
             static_cast<int>(Variant::count) * n_dtypes * n_dtypes>
      slots_{};
};

}  // namespace mps_ops
