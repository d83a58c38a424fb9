#include "contiguous_output.h"

#include <ATen/ops/empty.h>

#include <utility>
#include <vector>

namespace mps_ops {

ContiguousOutput::ContiguousOutput(const at::Tensor& out, std::optional<c10::ScalarType> dtype,
                                   Contents contents)
    : out_(out) {
  const c10::ScalarType want = dtype.value_or(out.scalar_type());
  if (out.is_contiguous() && out.scalar_type() == want) {
    tensor = out;
  } else if (contents == Contents::keep) {
    // (to() with a memory format would return a strided 1-D out itself.)
    tensor = out.to(want).contiguous();
  } else {
    tensor = at::empty(out.sizes(), out.options().dtype(want));
  }
}

void ContiguousOutput::copy_back() const {
  if (!tensor.is_same(out_)) {
    out_.copy_(tensor);
  }
}

at::Tensor batched_column_major_copy(const at::Tensor& t) {
  return t.mT().clone(at::MemoryFormat::Contiguous).mT();
}

at::Tensor empty_batched_column_major(at::IntArrayRef sizes, const at::TensorOptions& options) {
  std::vector<int64_t> transposed(sizes.begin(), sizes.end());
  std::swap(transposed.end()[-1], transposed.end()[-2]);
  return at::empty(transposed, options).mT();
}

}  // namespace mps_ops
