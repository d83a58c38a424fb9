// Parameters shared by threshold.metal and its host stub
// (csrc/operations/threshold.mm): one definition, one layout. Plain C++ that MSL
// and the host compiler both accept (no address spaces, no Metal types; `long`
// is 64-bit on both sides).
#pragma once

namespace mps_ops {

// threshold / threshold_backward: x <= bound ? value : the other operand.
// Floating inputs read bound and value (bound as the caller gave it, value
// already rounded to the input's dtype), integer inputs the *_integer pair
// (both truncated to the input's dtype), as the CPU converts them.
struct threshold_params {
  float bound;
  float value;
  long bound_integer;
  long value_integer;
};

// hardtanh_backward: the gradient passes where lower < x < upper.
struct hardtanh_backward_params {
  float lower;
  float upper;
};

}  // namespace mps_ops
