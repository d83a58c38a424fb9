// Parameter structs shared by kernels and their host stubs: one definition,
// one layout. Plain C++ that both MSL and the host compiler accept (no
// address spaces, no Metal types; `long` is 64-bit on both sides).
#pragma once

#include "shape_limits.h"

namespace mps_ops {

// _add_relu: alpha and the upper clamp (the largest value of self's dtype,
// as the CPU clamps) in the computing dtype: the float pair for float
// tensors, the integer pair for integer ones.
struct add_relu_params {
  float alpha;
  float upper;
  long integer_alpha;
  long integer_upper;
};

// logit_: inputs are clamped to [eps, 1 - eps] when eps >= 0 (eps < 0: none).
struct logit_params {
  float eps;
};

// Adaptive 3-D pooling: the (N, C, D, H, W) input and (N, C, OD, OH, OW)
// output (a 4-D tensor has N = 1), strides in elements; index_strides are
// those of the max pool's indices tensor.
struct pool3d_geometry {
  long in_sizes[5];
  long in_strides[5];
  long out_sizes[5];
  long out_strides[5];
  long index_strides[5];
};

// _pdist_forward / _pdist_backward: n rows of m elements, the norm's p.
struct pdist_params {
  float p;
  long n;
  long m;
};

// multi_margin_loss (+ backward) over n samples of c classes. Backward:
// the gradient of sample i is grad[grad_per_sample ? i : 0] * scale.
struct multi_margin_params {
  float margin;
  int p;
  int grad_per_sample;
  long n;
  long c;
  float scale;
};

// multilabel_margin_loss (+ backward): n samples of c classes; backward's
// gradient of sample i is grad[grad_per_sample ? i : 0] * scale.
struct multilabel_margin_params {
  int grad_per_sample;
  long n;
  long c;
  float scale;
};

// embedding_renorm_: rows of `dim` elements, rows_total of them; strides in
// elements; renorm rows whose norm_type-norm exceeds max_norm.
struct embedding_renorm_params {
  float max_norm;
  float norm_type;
  long rows_total;
  long dim;
  long row_stride;
  long column_stride;
};

// _fused_adagrad_: the hyperparameters; lr comes from a tensor when
// lr_from_tensor (the tensor_lr overload), grad_scale and found_inf only when
// their flags say they were given.
struct adagrad_params {
  float lr;
  float lr_decay;
  float weight_decay;
  float eps;
  int maximize;
  int lr_from_tensor;
  int has_grad_scale;
  int has_found_inf;
};

// glu_jvp / glu_backward_jvp: the half shape (ndim dims, innermost last) and
// each operand's strides in elements, [operand][dim]. 8 x 8 keeps it within
// what one setBytes carries here (1 KiB).
enum { glu_max_operands = 8, glu_max_dims = 8 };
struct glu_geometry {
  long sizes[glu_max_dims];
  long strides[glu_max_operands][glu_max_dims];
  int ndim;
};

// _segment_reduce (+ backward): data viewed as (outer, length, inner) around
// the reduced axis, segments per outer row; offsets (outer, segments + 1).
// reduction: 0 sum, 1 mean, 2 max, 3 min, 4 prod.
struct segment_params {
  long outer;
  long length;
  long inner;
  long segments;
  int reduction;
  int has_initial;
  float initial;
};

// fractional_max_pool2d/3d (+ backward): planes of (depth, height, width)
// (depth 1 for 2-D) pooled by (pool_t, pool_h, pool_w) windows into
// (out_t, out_h, out_w); input strides in elements (batch, channel, t, h, w);
// output, indices and samples contiguous, `sample_count` samples per plane
// (2-D: width, height; 3-D: time, height, width).
struct fractional_pool_params {
  long batch;
  long channels;
  long depth;
  long height;
  long width;
  long out_t;
  long out_h;
  long out_w;
  long pool_t;
  long pool_h;
  long pool_w;
  long in_strides[5];
  int sample_count;
};

// sum: the total times scale (mean: 1 / count).
struct sum_params {
  float scale;
};

// Kernels whose functor or reducer needs nothing but the elements (bound
// all the same: every element-wise and reduction kernel takes a params slot).
struct no_params {
  int unused;
};

// var / std: divide the sum of squares by max(0, n - correction).
struct moments_params {
  float correction;
  int take_sqrt;
};

// Where the elements reduced into each output lie (csrc/runtime/reduction.h
// builds it). Both dimension lists run innermost first, strides in elements
// of the input. Output slice s starts at the offset its index decomposes to
// over the outer dims; its elements are the inner dims' positions from there.
struct reduction_layout {
  long outer_sizes[max_ndim];
  long outer_strides[max_ndim];
  long inner_sizes[max_ndim];
  long inner_strides[max_ndim];
  int outer_ndim;
  int inner_ndim;
  long inner_numel;
};

// rrelu_with_noise: training draws each slope from the noise tensor (filled
// on the host's generator); evaluation is leaky_relu with the mean slope.
struct rrelu_params {
  float slope;
  int training;
};

// _upsample_lanczos2d_aa: one separable pass resamples dim `axis` (2: H,
// 3: W) of an (N, C, H, W) input into `sizes`; each output index along the
// axis reads `taps` weights (fixed-point with `precision` fraction bits for
// uint8). Strides in elements.
struct lanczos_pass_params {
  long sizes[4];
  long in_strides[4];
  long out_strides[4];
  int axis;
  int taps;
  int precision;
};

// _upsample_lanczos2d_aa_backward: a contiguous (N, C, H, W) grad_input
// gathered from the (N, C, OH, OW) grad_output through both axes' weights.
struct lanczos_backward_params {
  long channels;
  long height;
  long width;
  long out_height;
  long out_width;
  long grad_output_strides[4];
  int taps_h;
  int taps_w;
};

// take / put_: self indexed as if flattened, through its sizes and byte
// strides (row-major decomposition). put_: `count` (target, source position)
// pairs sorted by target; whether the writes accumulate.
struct put_params {
  long sizes[max_ndim];
  long strides[max_ndim];
  long count;
  int ndim;
  int accumulate;
};

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
