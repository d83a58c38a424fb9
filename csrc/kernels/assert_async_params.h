// Parameters shared by assert_async.metal and its host stub
// (csrc/operations/assert_async.mm): one definition, one layout. Plain C++
// that MSL and the host compiler both accept.
#pragma once

namespace mps_ops {

// The one value's parts: 1, or 2 for a complex value read as its real and
// imaginary parts.
struct assert_async_params {
  int parts;
};

}  // namespace mps_ops
