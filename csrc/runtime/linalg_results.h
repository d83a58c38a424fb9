// What the linear-algebra stubs (eig, eigh, svd, qr, lu_solve) share about
// their results: batch shapes, the kernels' per-matrix status codes and the
// CPU's LinAlgError for them, and outs that take LAPACK's strides.
#pragma once

#include "op_checks.h"

#include <ATen/core/Tensor.h>

#include <initializer_list>
#include <string>
#include <vector>

namespace mps_ops {

// `batch` followed by `trailing`: a result's shape from its batch dims.
std::vector<int64_t> batch_shape_with(at::IntArrayRef batch, std::initializer_list<int64_t> trailing);

// The batch dims of a (..., m, n) tensor.
at::IntArrayRef matrix_batch(const at::Tensor& a);

// The per-matrix status codes of a one-threadgroup-per-matrix kernel (eig,
// eigh, svd): `info` starts as pending_kernel_codes' -1 for every matrix and
// the kernel's last step writes each code (0: converged), so a -1 read back
// (a command buffer the GPU stopped) raises, never passes as results.
at::Tensor pending_kernel_codes(int64_t matrices, const at::Tensor& like);

// `info`'s codes, read back in one copy.
std::vector<int> read_kernel_codes(const at::Tensor& info, const char* name);

// The CPU's ": (Batch element m)" that LinAlgError messages carry for batched
// inputs ("" for a single matrix).
std::string batch_element(bool batched, int64_t m);

// The CPU's LinAlgError for the first matrix whose code is not 0: "failed to
// converge because the input matrix is ill-conditioned or has too many
// repeated <repeated_what> (error code: k)".
void check_converged(const std::vector<int>& codes, const char* name, bool batched, const char* repeated_what);

// torch's checkLinalgCompatibleDtype for an out=: `result` castable to its
// dtype, in the CPU's words (`name` leading them, `which` the out's name).
void check_linalg_castable(const char* name, c10::ScalarType result, const at::Tensor& out, const char* which);

// Which outs take the result's strides (LAPACK's column-major ones) when
// check_output resizes them: any resized one (structured ops: the CPU asks
// for the strides it sets), or only an empty one (ops that resize another
// size contiguous). An out of the right size keeps its own.
enum class Restride { resized, empty_only };

// check_output, then the strides as `restride` says; the caller copies.
void check_output_taking_strides(const char* op, at::Tensor& out, const at::Tensor& value,
                                 std::initializer_list<const at::Tensor*> read, OutputDtype rule, Restride restride);

}  // namespace mps_ops
