// Parameters shared by logspace.metal and its host stub
// (csrc/operations/logspace.mm): one definition, one layout. Plain C++ that MSL
// and the host compiler both accept (no address spaces, no Metal types; `long`
// is 64-bit on both sides).
#pragma once

namespace mps_ops {

// logspace: element i is base ** e_i, e_i = start + step * i below `halfway`
// and end - step * (steps - 1 - i) from there (the CPU's two-sided walk).
// Doubles the host computed travel as (hi, lo) float pairs; Metal has no
// double.
struct logspace_params {
  float start[2];
  float end[2];
  float step[2];
  float base[2];
  float log2_base[2];
  long steps;
  long halfway;
};

}  // namespace mps_ops
