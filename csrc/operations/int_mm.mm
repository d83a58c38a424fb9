// Host stubs of _int_mm (functional and out=): the int8 matrix product with
// int32 sums, a `fill` for torch 2.9 to 2.14 (torch.ao's and torchao's int8
// dynamic quantization call it). Kernel in csrc/kernels/int_mm.metal. The
// CPU's checks, messages and order (int_mm_out_cpu): both 2-D, the inner
// sizes, self int8 (or uint8, from torch 2.12), mat2 int8, then out: int32, the exact size (it
// is never resized), 2-D, contiguous. dtypes are named as the CPU names
// them (caffe2's type names: "unsigned char", "long int").
#include "../runtime/error_checks.h"
#include "../runtime/host_name.h"
#include "../runtime/kernel_function.h"
#include "../runtime/op_checks.h"

#include "../kernels/int_mm_params.h"

#include <ATen/ops/empty.h>
#include <torch/version.h>

namespace mps_ops {

namespace {

constexpr const char* int_mm_name = "int_mm_out_cpu";

// From torch 2.12 on, the CPU's kernel takes a uint8 self too (its message
// changed with it; read from each release's libtorch_cpu).
constexpr bool self_may_be_uint8 =
    TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 12);

void check_int_mm_inputs(const at::Tensor& self, const at::Tensor& mat2) {
  TORCH_CHECK(self.dim() == 2, int_mm_name, ": Expected self to be of dimension 2 but got ", self.dim());
  TORCH_CHECK(mat2.dim() == 2, int_mm_name, ": Expected mat2 to be of dimension 2 but got ", mat2.dim());
  TORCH_CHECK(self.size(1) == mat2.size(0), int_mm_name, ": self.size(1) needs to match mat2.size(0) but got ",
              self.size(1), " and ", mat2.size(0));
  if (self_may_be_uint8) {
    TORCH_CHECK(self.scalar_type() == at::kChar || self.scalar_type() == at::kByte, int_mm_name,
                ": Expected self dtype to be int8 or uint8 but got ", self.dtype());
  } else {
    TORCH_CHECK(self.scalar_type() == at::kChar, int_mm_name, ": Expected self dtype to be of type int8 but got ",
                self.dtype());
  }
  TORCH_CHECK(mat2.scalar_type() == at::kChar, int_mm_name, ": Expected mat2 dtype to be of type int8 but got ",
              mat2.dtype());
}

}  // namespace

at::Tensor& _int_mm_out(const at::Tensor& self, const at::Tensor& mat2, at::Tensor& out) {
  static KernelCache kernels("int_mm");
  check_devices("_int_mm", {&self, &mat2, &out});
  check_int_mm_inputs(self, mat2);
  TORCH_CHECK(out.scalar_type() == at::kInt, int_mm_name, ": Expected result dtype to be of type kInt but got ",
              out.dtype());
  // (size(1) of a 1-D out raises the CPU's IndexError, as its check does.)
  TORCH_CHECK(out.size(0) == self.size(0), int_mm_name, ": Expected result.size(0) to be ", self.size(0),
              " but got ", out.size(0));
  TORCH_CHECK(out.size(1) == mat2.size(1), int_mm_name, ": Expected result.size(1) to be ", mat2.size(1),
              " but got ", out.size(1));
  TORCH_CHECK(out.dim() == 2, int_mm_name, ": Expected result to be of dimension 2 but got ", out.dim());
  TORCH_CHECK(out.is_contiguous(), int_mm_name, ": Expected result to be contiguous.");
  check_no_aliasing(out, {&self, &mat2});
  const int64_t rows = self.size(0), inner = self.size(1), columns = mat2.size(1);
  if (out.numel() == 0) {
    return out;
  }
  TORCH_CHECK(rows <= UINT32_MAX && inner <= UINT32_MAX && columns <= UINT32_MAX, "mps_ops: _int_mm of ", self.sizes(),
              " and ", mat2.sizes(), " on ", self.device(), ": a size past 2**32 - 1");
  int_mm_params p{};
  p.rows = static_cast<unsigned>(rows);
  p.inner = static_cast<unsigned>(inner);
  p.columns = static_cast<unsigned>(columns);
  KernelFunction function(kernels.get(Variant::dense, at::kInt, self.scalar_type()));
  function.bind_operands(out, self.contiguous(), mat2.contiguous()).bind(p);
  const auto groups = [](int64_t n) { return static_cast<uint32_t>((n + int_mm_tile - 1) / int_mm_tile); };
  function.dispatch(Dim3{groups(columns) * int_mm_side, groups(rows) * int_mm_side, 1},
                    Dim3{int_mm_side, int_mm_side, 1});
  return out;
}

at::Tensor _int_mm(const at::Tensor& self, const at::Tensor& mat2) {
  // The CPU sizes its result first: a 0-dim self or a 1-D mat2 raises
  // IndexError there, before the checks.
  at::Tensor out = at::empty({self.size(0), mat2.size(1)}, self.options().dtype(at::kInt));
  return _int_mm_out(self, mat2, out);
}

}  // namespace mps_ops
