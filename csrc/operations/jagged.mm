// Host stubs of _jagged_to_padded_dense_forward and
// _padded_dense_to_jagged_forward: `fill` ops for every torch release (a
// nested jagged tensor's to_padded_tensor, and building one from a padded
// tensor, raised on a Mac). Kernels in csrc/kernels/jagged.metal. The CPU's
// checks and messages, in its order; it reads each offset on the host, these
// stubs only the last one where the output's size needs it (total_L not
// given). Bad offsets the CPU meets as a failed copy (rows outside the
// values, a negative length) raise RuntimeError from a KernelFlag.
#include "../runtime/error_checks.h"
#include "../runtime/host_name.h"
#include "../runtime/kernel_flag.h"
#include "../runtime/kernel_function.h"
#include "../runtime/op_checks.h"

#include "../kernels/jagged_params.h"

#include <ATen/ops/empty.h>
#include <ATen/Dispatch.h>
#include <c10/util/accumulate.h>

#include <cstring>
#include <optional>
#include <vector>

namespace mps_ops {
namespace {

// The integer dtype of each size in bytes: the kernels move elements as
// these (the registry's computes_in), complex64 as long.
c10::ScalarType bits_dtype(int64_t bytes) {
  switch (bytes) {
    case 1: return at::kByte;
    case 2: return at::kShort;
    case 4: return at::kInt;
    default: return at::kLong;
  }
}

// Rows of `inner` elements of `t` as the widest integers, up to 8 bytes,
// that divide a row's bytes and `t`'s start in its buffer (a float32 row of
// 1024 as 512 longs): fewer, wider loads and stores on every GPU. Fresh
// outputs start at 0.
int64_t move_bytes(const at::Tensor& t, int64_t inner) {
  const int64_t element = t.element_size();
  int64_t bytes = 8;
  while (bytes > element && ((inner * element) % bytes != 0 || (t.storage_offset() * element) % bytes != 0)) {
    bytes /= 2;
  }
  return bytes;
}

// `t` (contiguous), rows of `inner` elements, as rows of `bytes`-wide
// integers.
at::Tensor in_moved_units(const at::Tensor& t, int64_t inner, int64_t bytes) {
  return t.view({-1, inner}).view(bits_dtype(bytes));
}

// Metal has no double: float64 and complex128 raise TypeError (check_dtype);
// every other dtype the CPU takes is moved by its bits, complex64 too.
void check_moved_dtype(const char* op, const at::Tensor& t) {
  if (t.scalar_type() != at::kComplexFloat) {
    check_dtype(op, t);
  }
  TORCH_CHECK_TYPE(t.scalar_type() != at::kComplexDouble, "mps_ops: ", op, " of dtype complex128 on ", t.device(),
                   ": Metal has no float64");
}

// The padding value in values' dtype, cast as the CPU's kernel casts it (no
// range check: -1 is uint8's 255, a NaN x86's INT_MIN in int32), its bits
// low first, repeated across a moved unit of `bytes`.
unsigned long padding_bits(double value, c10::ScalarType dtype, int64_t bytes) {
  unsigned long bits = 0;
  AT_DISPATCH_ALL_TYPES_AND3(at::kBool, at::kHalf, at::kBFloat16, dtype, "padding_bits", [&] {
    const scalar_t converted = c10::convert<scalar_t>(value);
    std::memcpy(&bits, &converted, sizeof(converted));
  });
  for (int64_t filled = c10::elementSize(dtype); filled < bytes; filled *= 2) {
    bits |= bits << (8 * filled);
  }
  return bits;
}

// Bad offsets' messages (the kernels' flags and the host's checks).
constexpr const char* outside_rows = "offsets select rows outside the values or a negative length";
constexpr const char* final_offset_mismatch =
    "_padded_dense_to_jagged_forward(): final offset should match total_L value";

// The single offsets tensor, in the CPU's checks.
at::Tensor single_offsets(const char* op, at::TensorList offsets_list, bool one_length = true) {
  TORCH_CHECK(offsets_list.size() == 1 && one_length, op, ": only a single jagged dim is supported for now");
  const at::Tensor& offsets = offsets_list[0];
  TORCH_CHECK(offsets.dim() == 1, op, ": expected 1D offsets, but got offsets.dim() == ", offsets.dim());
  return offsets;
}

// The offsets as contiguous int64 on the device (the CPU reads any dtype's
// offsets as int64 too).
at::Tensor long_offsets_on(const at::Tensor& offsets, const at::Tensor& device_like) {
  return offsets.to(device_like.device(), at::kLong).contiguous();
}

// _padded_dense_to_jagged_forward's checks of each batch item, in the CPU's
// order, over the offsets read on the host (where the kernel's flag, or more
// items than padded has, says one fails): its length against the padded
// rows, then select's IndexError past padded's items, then rows outside the
// jagged side or a negative length (ours: the CPU fails in its copy there).
void raise_first_bad_item(const at::Tensor& offsets, const at::Tensor& padded, int64_t jagged_rows) {
  const at::Tensor host = offsets.to(at::kCPU, at::kLong).contiguous();
  const int64_t* o = host.const_data_ptr<int64_t>();
  const int64_t rows = padded.size(1);
  bool backwards = false;
  for (int64_t b = 0; b + 1 < host.numel(); ++b) {
    const int64_t start = o[b], length = o[b + 1] - o[b];
    TORCH_CHECK(length <= rows, "_padded_dense_to_jagged_forward(): found batch item of length ", length,
                " when max length specified by padded input is ", rows);
    TORCH_CHECK_INDEX(b < padded.size(0), "select(): index ", b, " out of range for tensor of size ",
                      padded.sizes(), " at dimension 0");
    // Where the CPU's copy fails: a negative length leaves padded rows to
    // copy into none, or the rows leave the jagged side.
    TORCH_CHECK(!(length < 0 && length + rows > 0) && !(length > 0 && (start < 0 || start + length > jagged_rows)),
                "_padded_dense_to_jagged_forward(): ", outside_rows);
    backwards = backwards || length < 0;
  }
  // Ours also raises for the negative lengths the CPU's copies take (the
  // kernel says why).
  TORCH_CHECK(!backwards, "_padded_dense_to_jagged_forward(): ", outside_rows);
}

// Both kernels' parameters: `inner` moved units a row, `rows` padded rows an
// item, `items` items, `jagged_rows` rows on the jagged side.
jagged_params params_for(const char* op, int64_t inner, int64_t rows, int64_t items, int64_t jagged_rows) {
  TORCH_CHECK(inner <= UINT32_MAX && items * rows <= UINT32_MAX, "mps_ops: ", op,
              " with more than 2**32 - 1 padded rows or elements a row");
  const fast_divisor by_rows = make_fast_divisor(static_cast<unsigned>(rows));
  jagged_params p{};
  p.inner = static_cast<unsigned long>(inner);
  p.row_threads = static_cast<unsigned long>((inner + jagged_per_thread - 1) / jagged_per_thread);
  p.jagged_rows = static_cast<unsigned long>(jagged_rows);
  p.rows = by_rows.divisor;
  p.rows_multiplier = by_rows.multiplier;
  p.rows_shift = by_rows.shift;
  return p;
}

// x along a row's threads, y the padded rows (`items` items of p.rows);
// 256 threads a group, as wide along x as the row's threads allow.
void dispatch_padded(KernelFunction& function, const jagged_params& p, int64_t items) {
  uint32_t x = 1;
  while (x < 256 && x < p.row_threads) {
    x *= 2;
  }
  function.dispatch(Dim3{static_cast<uint32_t>(p.row_threads), static_cast<uint32_t>(items * p.rows), 1},
                    Dim3{x, 256 / x, 1});
}

}  // namespace

at::Tensor _jagged_to_padded_dense_forward(const at::Tensor& values, at::TensorList offsets_list,
                                           c10::SymIntArrayRef max_lengths, double padding_value) {
  static KernelCache kernels("jagged_to_padded");
  constexpr const char* op = "_jagged_to_padded_dense_forward()";
  const at::Tensor& offsets = single_offsets(op, offsets_list, max_lengths.size() == 1);
  check_device(op, values);
  check_dtype(op, values);  // the CPU's kernel takes neither complex nor the wide unsigned types
  TORCH_CHECK_NOT_IMPLEMENTED(!is_wide_unsigned(values.scalar_type()),
                              "\"_jagged_to_padded_dense_forward\" not implemented for '",
                              c10::toString(values.scalar_type()), "' on ", values.device());
  // (The CPU's shape arithmetic fails on a 0-dim values with std::length_error.)
  TORCH_CHECK_VALUE(values.dim() >= 1, op, ": expected values of at least 1 dim, but got values.dim() == 0");
  const int64_t batches = offsets.size(0) - 1;
  const int64_t max_length = max_lengths[0].guard_int(__FILE__, __LINE__);
  std::vector<int64_t> shape{batches, max_length};
  shape.insert(shape.end(), values.sizes().begin() + 1, values.sizes().end());
  at::Tensor out = at::empty(shape, values.options());
  if (out.numel() == 0) {
    return out;
  }
  const int64_t inner = c10::multiply_integers(values.sizes().begin() + 1, values.sizes().end());
  const at::Tensor dense_values = values.contiguous();
  const int64_t bytes = move_bytes(dense_values, inner);
  const int64_t inner_units = inner * values.element_size() / bytes;
  jagged_params p = params_for(op, inner_units, max_length, batches, values.size(0));
  p.padding = padding_bits(padding_value, values.scalar_type(), bytes);
  KernelFlag bad_offsets;
  KernelFunction function(kernels.get(Variant::dense, bits_dtype(bytes), bits_dtype(bytes)));
  function
      .bind_operands(in_moved_units(out, inner, bytes), in_moved_units(dense_values, inner, bytes),
                     long_offsets_on(offsets, values))
      .bind(p, bad_offsets);
  dispatch_padded(function, p, batches);
  check_flag(op, std::move(bad_offsets), [](const KernelFlag& flag) {
    TORCH_CHECK(!flag.raised(), "_jagged_to_padded_dense_forward(): ", outside_rows);
  });
  return out;
}

at::Tensor _padded_dense_to_jagged_forward(const at::Tensor& padded, at::TensorList offsets_list,
                                           std::optional<c10::SymInt> total_L) {
  static KernelCache kernels("padded_to_jagged");
  constexpr const char* op = "_padded_dense_to_jagged_forward()";
  const at::Tensor& offsets = single_offsets(op, offsets_list);
  check_device(op, padded);
  // The last offset is read only where the output's size needs it, or
  // where the CPU's check of it would come before padded's rank check.
  const auto final_offset = [&] { return offsets[-1].item<int64_t>(); };
  std::optional<int64_t> total;
  if (total_L.has_value()) {
    total = total_L->guard_int(__FILE__, __LINE__);
    if (padded.dim() < 2 || offsets.size(0) <= 1) {
      TORCH_CHECK(final_offset() == *total, final_offset_mismatch);
    }
  }
  TORCH_CHECK(padded.dim() >= 2, op, ": expected padded dim >= 2, but padded.dim() == ", padded.dim());
  check_moved_dtype(op, padded);
  const int64_t jagged_rows = total.has_value() ? *total : final_offset();
  std::vector<int64_t> shape{jagged_rows};
  shape.insert(shape.end(), padded.sizes().begin() + 2, padded.sizes().end());
  at::Tensor out = at::empty(shape, padded.options());
  const int64_t batches = offsets.size(0) - 1, rows = padded.size(1);
  const int64_t inner = c10::multiply_integers(padded.sizes().begin() + 2, padded.sizes().end());
  if (batches > padded.size(0)) {
    raise_first_bad_item(offsets, padded, jagged_rows);  // raises: at the latest select's IndexError
  }
  if (batches <= 0) {
    return out;
  }
  if (rows == 0 || inner == 0) {  // no kernel: the items' checks on the host
    TORCH_CHECK(!total.has_value() || final_offset() == *total, final_offset_mismatch);
    raise_first_bad_item(offsets, padded, jagged_rows);
    return out;
  }
  const at::Tensor dense_padded = padded.contiguous();
  const int64_t bytes = move_bytes(dense_padded, inner);
  const int64_t inner_units = inner * padded.element_size() / bytes;
  const jagged_params p = params_for(op, inner_units, rows, batches, jagged_rows);
  const at::Tensor device_offsets = long_offsets_on(offsets, padded);
  KernelFlag bad_offsets(2);
  KernelFunction function(kernels.get(Variant::dense, bits_dtype(bytes), bits_dtype(bytes)));
  function
      .bind_operands(in_moved_units(out, inner, bytes), in_moved_units(dense_padded, inner, bytes),
                     device_offsets)
      .bind(p, bad_offsets, static_cast<uint32_t>(batches));
  dispatch_padded(function, p, batches);
  check_flag(op, std::move(bad_offsets), [device_offsets, padded, jagged_rows](const KernelFlag& flag) {
    TORCH_CHECK(!flag.raised(1), final_offset_mismatch);
    if (flag.raised(0)) {
      raise_first_bad_item(device_offsets, padded, jagged_rows);
    }
  });
  return out;
}

}  // namespace mps_ops
