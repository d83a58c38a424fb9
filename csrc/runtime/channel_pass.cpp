#include "channel_pass.h"

#include "kernel_function.h"
#include "per_element.h"

#include "../kernels/batch_norm_params.h"
#include "../kernels/include/mps_ops/shape_limits.h"

#include <algorithm>
#include <functional>
#include <numeric>

namespace mps_ops {

ChannelLayout channel_layout(const at::Tensor& input) {
  const at::MemoryFormat format = input.suggest_memory_format();
  const int64_t channels = input.size(1);
  const int64_t spatial = std::accumulate(input.sizes().begin() + 2, input.sizes().end(), int64_t{1},
                                          std::multiplies<int64_t>());
  return ChannelLayout{format, channels, format == at::MemoryFormat::Contiguous ? spatial : 1, channels * spatial};
}

ReductionPlan channel_plan(const at::Tensor& x) {
  std::vector<int64_t> reduced(x.dim() - 1);
  std::iota(reduced.begin(), reduced.end(), 1);
  reduced[0] = 0;
  return plan_reduction(x, reduced);
}

void run_channel_pass(KernelCache& kernels, const at::Tensor& out, const std::vector<at::Tensor>& inputs,
                      const at::Tensor& coefficients, const ChannelLayout& layout, int formula) {
  if (out.numel() == 0) {
    return;
  }
  TORCH_CHECK(layout.per_sample <= UINT32_MAX, "mps_ops: ", kernels.op(), " over more than 2**32 - 1 elements per index of dim 0");
  constexpr int64_t tile = elementwise_tile;
  batch_norm_apply_params p{};
  p.inner = static_cast<unsigned>(layout.inner);
  p.channels = static_cast<unsigned>(layout.channels);
  p.step_r = static_cast<unsigned>(tile % layout.inner);
  p.step_c = static_cast<unsigned>((tile / layout.inner) % layout.channels);
  p.formula = formula;
  const int64_t batch = out.size(0);
  const int64_t per_piece = std::max<int64_t>(1, UINT32_MAX / layout.per_sample);
  const unsigned per_thread = elements_per_thread(out.element_size());
  for (int64_t start = 0; start < batch; start += per_piece) {
    const int64_t length = std::min(per_piece, batch - start);
    const at::Tensor out_piece = out.narrow(0, start, length);
    std::vector<at::Tensor> operands{out_piece};
    for (const at::Tensor& in : inputs) {
      operands.push_back(in.narrow(0, start, length));
    }
    operands.push_back(coefficients);
    p.count = static_cast<unsigned>(out_piece.numel());
    KernelFunction function(kernels.get(Variant::dense, out.scalar_type(), out.scalar_type()));
    function.bind_operand_list(operands).bind(p);
    function.dispatch(Dim3{tiled_threads(static_cast<uint64_t>(p.count), per_thread), 1, 1});
  }
}

}  // namespace mps_ops
