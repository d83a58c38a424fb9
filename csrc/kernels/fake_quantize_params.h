// Parameters shared by fake_quantize.metal and its host stub
// (csrc/operations/fake_quantize.mm): one definition, one layout. Plain C++
// that MSL and the host compiler both accept (no address spaces, no Metal
// types).
#pragma once

namespace mps_ops {

// Where an element's scale and zero point come from.
enum fake_quantize_qparams_source : int {
  fake_quantize_qparams_in_params = 0,  // per tensor, the host's values below
  fake_quantize_qparams_in_buffers = 1,  // per channel (or one), read on the device
};

// How the zero point joins the rounding: the CPU's integer zero points are
// added to the rounded x / scale, its floating ones (per channel) before
// rounding, as one fused multiply-add.
enum fake_quantize_rounding : int {
  fake_quantize_round_then_add = 0,
  fake_quantize_add_then_round = 1,
};

// fake_quantize_cachemask (and fake_quantize_learnable_grad) over `count`
// elements of one memory order, the
// channel of element i being (i / channel_stride) % channels (the axis's
// stride in that order and its size; 1 and 1 per tensor).
struct fake_quantize_params {
  unsigned int count;  // elements (the host allows no more than 2**32 - 1)
  unsigned int channel_stride;
  unsigned int channels;
  float quant_min;
  float quant_max;
  float scale;  // fake_quantize_qparams_in_params only
  float zero_point;
  int qparams_source;  // fake_quantize_qparams_source
  int rounding;  // fake_quantize_rounding
  int zero_point_is_float;  // buffer zero points hold float bits (else int32)
  int read_enabled;  // an enabled flag (int32) on the device: 0 passes x through, mask all true
  float grad_factor;  // fake_quantize_learnable_grad only: the factor on d(scale) and d(zero point)
};

// fake_quantize_observe (the fused observer): one thread per channel
// (`channels`: 1 per tensor), each updating its running minimum and maximum
// from the input's (when observer_on) and choosing its scale and zero point
// from them (when fake_quant_on). The switches are int32 on the device.
struct fake_quantize_observe_params {
  unsigned int channels;
  float averaging_const;
  int quant_min;
  int quant_max;
  int symmetric;  // preserve sparsity: a zero point in the middle of the range
  int observe_input;  // 0 for an empty input: nothing to observe, whatever the switch
};

}  // namespace mps_ops
