"""The jobs bench_gpu.py times: per kernel family, our kernels and torch's
CUDA kernels doing the same call on the same inputs of at least
MIN_INPUT_BYTES, made on the GPU.

A Case builds its inputs lazily (a few hundred MB each) and names the call;
the harness runs the call under emulate() for ours and plainly for torch's.
Families follow issue 13's list: element-wise (dense, strided, scalar
broadcast), reductions over the last, a middle and all dims with short and
long slices, pooling forward and backward, pdist, margin losses, masked
softmax, segment_reduce, embedding_renorm, mode, and the other registry ops
with benchmark inputs (benchmarks/op_inputs.py)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import torch

from op_inputs import OPS, half_size_2d, layout_inputs, registry_ops

# Inputs of at least this many bytes (issue 13: 256 MB), so the GPU's caches
# (50 MB of L2 on an H100) hold a small part of them.
MIN_INPUT_BYTES = 256 << 20
TIMED_DTYPES = (torch.float32, torch.float16, torch.bfloat16)

# The random family: rejection samplers (Philox blocks and logs per draw,
# several draws a count), high in arithmetic per byte, and the in-place
# fills (a Philox block per 4 elements, written once), whose bound the rule
# decides.
SAMPLERS = frozenset({"poisson", "binomial", "_standard_gamma", "_sample_dirichlet"})
RANDOM_FILLS = frozenset({"cauchy_", "log_normal_", "geometric_"})

# Ops whose arithmetic per byte is high (series, continued fractions, Newton
# steps, loops over a degree; multilabel margin compares every class with
# every listed target, O(classes) work per element): the `weak-baseline`
# rule's "low arithmetic per byte" is every other op. Each is named here once.
HIGH_ARITHMETIC = frozenset({
    "special_ndtri", "special_log_ndtr", "special_airy_ai", "special_erfcx",
    "special_laguerre_polynomial_l", "special_legendre_polynomial_p", "gcd", "lcm",
    "_pdist_forward", "_pdist_backward", "_cdist_backward", "mode", "_upsample_lanczos2d_aa",
    "multilabel_margin_loss_forward", "multilabel_margin_loss_backward",
    # A recursion in log space (an exp per term and a log per state, and
    # one time step after another), not a pass over memory.
    "_ctc_loss", "_ctc_loss_backward",
    # Series of digamma, logs and powers per element (the Beta's in
    # double-float), against torch's float kernels.
    "_standard_gamma_grad", "_dirichlet_grad",
}) | SAMPLERS

# Ops that draw from the generator: the benchmark compares their speed, not
# their values.
RANDOM_OPS = SAMPLERS | RANDOM_FILLS | {"rrelu_with_noise"}


@dataclass
class Case:
    family: str
    kernel: str  # the op (and direction) timed
    shape: tuple
    dtype: torch.dtype
    maker: Callable  # () -> list of inputs on the current default device
    call: Callable  # (*inputs) -> result
    high_arithmetic: bool = False
    random: bool = False  # results not pinned by the inputs: not compared
    # torch's way to do the same job where `call` has no CUDA kernel
    # (BASELINES); None: `call` itself.
    baseline: Callable = None
    # Matrix results (a decomposition, matrix_exp): accuracy normwise, as
    # LAPACK measures it, not entry by entry.
    matrix_results: bool = False

    def make(self) -> list:
        """The inputs, on the GPU."""
        return _on_gpu(self.maker)()


def _narrow_into_out(x):
    out = torch.empty(0, dtype=x.dtype, device=x.device)
    return out.resize_(x.shape[0], x.size(1) // 2, *x.shape[2:]).copy_(x.narrow(1, 0, x.size(1) // 2))


# Ops whose aten call has no CUDA kernel in torch (or wants an argument only
# CUDA checks): torch's CUDA kernels doing the same job.
BASELINES = {
    "_add_relu": lambda a, b: torch.relu_(torch.add(a, b)),  # two kernels: torch has no fused one
    "narrow_copy": _narrow_into_out,
    # CUDA requires a mask type; 2: a mask of the input's shape.
    "_masked_softmax": lambda x: torch.ops.aten._masked_softmax(x, x > 1.0, -1, 2),
}


def _elements(dtype, factor: int = 1) -> int:
    """A power of two of elements of dtype filling at least MIN_INPUT_BYTES / factor."""
    itemsize = torch.empty((), dtype=dtype).element_size()
    return 1 << math.ceil(math.log2(MIN_INPUT_BYTES / factor / itemsize))


def _dtypes(record) -> list:
    wanted = [d for d in TIMED_DTYPES if d in record.dtypes]
    return wanted or [record.dtypes[-1]]  # integer-only ops: their widest


def _on_gpu(make, device="cuda"):
    def build():
        torch.manual_seed(0)
        with torch.device(device):
            # A 0-dim second operand stays a CPU scalar, as users pass one.
            made = make()
            if device == "meta":
                return made
            return [t.cpu() if t.dim() == 0 and i > 0 else t.to(device) for i, t in enumerate(made)]
    return build


def input_shapes(case) -> list:
    """The shapes of a case's inputs, made on the meta device (no memory)."""
    return [tuple(t.shape) for t in _on_gpu(case.maker, "meta")()]


def elementwise_cases(records) -> list:
    cases = []
    for name, spec in OPS.items():
        if spec.kind not in ("elementwise", "inplace_only") or name not in records:
            continue
        for dtype in _dtypes(records[name]):
            n = _elements(dtype)
            rows, cols = n // 4096, 4096
            for layout in ("dense", "strided", "scalar_broadcast"):
                if layout == "scalar_broadcast" and len(spec.makers) != 2:
                    continue  # a unary op on one expanded element computes one value
                fn = spec.inplace if spec.kind == "inplace_only" else spec.fn
                cases.append(Case(f"elementwise {layout}", name, (rows, cols), dtype,
                                  lambda s=spec, l=layout, d=dtype, r=rows, c=cols: layout_inputs(s, l, r, c, d),
                                  fn, high_arithmetic=name in HIGH_ARITHMETIC,
                                  random=name in RANDOM_OPS, baseline=BASELINES.get(name)))
    return cases


# (label, shape, dims): the reduced dims of a shape whose numel fills the inputs.
def _reduction_shapes(n: int) -> list:
    return [
        ("last dim, short slices", (n // 256, 256), (-1,)),
        ("last dim, square", (math.isqrt(n), -(-n // math.isqrt(n))), (-1,)),
        ("last dim, long slices", (256, n // 256), (-1,)),
        ("middle dim", (256, n // (256 * 256), 256), (1,)),
        ("first dim, long", (n // 256, 256), (0,)),
        ("all dims", (n // 4096, 4096), None),
    ]


def _moment(fn):
    return lambda dims: (lambda x: fn(x, dim=dims, out=torch.empty(0, dtype=x.dtype, device=x.device)))


REDUCTIONS = {
    "var": _moment(torch.var),
    "std": _moment(torch.std),
    # Overrides: the functional form, which returns the variance and the mean.
    "var_mean": lambda dims: (lambda x: torch.var_mean(x, dim=dims)),
    "std_mean": lambda dims: (lambda x: torch.std_mean(x, dim=dims)),
    "_aminmax": lambda dims: ((lambda x: torch._aminmax(x, dims[0])) if dims and len(dims) == 1
                              else (lambda x: torch._aminmax(x))),
}
WHOLE_TENSOR = {  # reduce everything only
    "max": lambda x: torch.max(x, out=torch.empty(0, dtype=x.dtype, device=x.device)),
    "min": lambda x: torch.min(x, out=torch.empty(0, dtype=x.dtype, device=x.device)),
}


def reduction_cases(records) -> list:
    cases = []
    for name, make_call in REDUCTIONS.items():
        for dtype in _dtypes(records[name]):
            for label, shape, dims in _reduction_shapes(_elements(dtype)):
                cases.append(Case(f"reduction {label}", name, shape, dtype,
                                  lambda s=shape, d=dtype: [torch.randn(s).to(d)], make_call(dims)))
    for name, call in WHOLE_TENSOR.items():
        for dtype in _dtypes(records[name]):
            n = _elements(dtype)
            cases.append(Case("reduction all dims", name, (n,), dtype,
                              lambda n=n, d=dtype: [torch.randn(n).to(d)], call))
    for dtype in _dtypes(records["batch_norm_update_stats"]):
        n = _elements(dtype)
        shape = (32, 256, n // (32 * 256))
        cases.append(Case("reduction batch_norm stats", "batch_norm_update_stats", shape, dtype,
                          lambda s=shape, d=dtype: [torch.randn(s).to(d)],
                          lambda x: torch.batch_norm_update_stats(x, None, None, 0.1)))
    for dtype in _dtypes(records["mode"]):
        n = _elements(dtype)
        cases.append(Case("mode last dim", "mode", (n // 256, 256), dtype,
                          lambda n=n, d=dtype: [torch.randint(0, 16, (n // 256, 256)).to(d)],
                          lambda x: torch.mode(x, -1), high_arithmetic=True))
    return cases


def own_input_cases(records) -> list:
    """Every other op with benchmark inputs in op_inputs.py, dense, at full
    size: pooling (forward here, backward below), pdist and cdist's
    backward, margin losses, masked softmax, segment_reduce,
    embedding_renorm, take/put, view copies, the optimizer step, glu's jvps,
    logspace, the normalization backwards, grid_sample's backward, the CTC
    loss, the antialiased resizes' backwards, nonzero_static, the samplers,
    the jagged <-> padded conversions, fake quantization, the distribution
    gradients, index_reduce."""
    cases = []
    skip = set(REDUCTIONS) | set(WHOLE_TENSOR) | {"batch_norm_update_stats", "mode"} | set(POOL2D_BACKWARDS)
    for name, spec in OPS.items():
        record = records.get(spec.record or name)
        if spec.kind in ("elementwise", "inplace_only") or name in skip or record is None:
            continue
        if not record.active:  # the running torch lacks it (lanczos before 2.12)
            continue
        for dtype in _dtypes(record):
            # (rows, cols) per op kind: inputs of MIN_INPUT_BYTES where the op is
            # linear in its input; pdist and cdist are quadratic in their rows.
            n = _elements(dtype)
            if name.startswith(("_pdist", "_cdist")):
                rows, cols = 4096, 256  # 8 M distances of 256 values (cdist: 4 M)
            elif spec.kind == "pool":
                rows, cols = 256, -(-n // (2 * 3 * 4 * 256))
            elif spec.kind == "view_copy":
                rows, cols = n // (2 * 4096), 4096
            else:
                rows, cols = n // 1024, 1024
            family = {"pool": "pooling forward", "loss": "losses"}.get(spec.kind, spec.kind)
            if name == "embedding_renorm_":
                family = "embedding_renorm"
            elif "masked_softmax" in name:
                family = "masked softmax"
            elif "softmax" in name:
                family = "softmax backward" if "backward" in name else "softmax"
            elif "segment" in name:
                family = "segment_reduce"
            elif name.startswith(("_pdist", "_cdist")):
                family = "pdist"
            elif name.startswith("grid_sampler"):
                family = "grid_sample"
            elif name.startswith("_ctc_loss"):
                family = "ctc_loss"
            elif name.endswith("2d_aa_backward"):
                family = "resize backward"
            elif name == "nonzero_static":
                family = "nonzero_static"
            elif name in ("_jagged_to_padded_dense_forward", "_padded_dense_to_jagged_forward"):
                family = "jagged"
            elif name in SAMPLERS | RANDOM_FILLS:
                family = "random"
            elif "fake_quantize" in name or name == "_fused_moving_avg_obs_fq_helper":
                family = "fake_quantize"
            elif name in ("_standard_gamma_grad", "_dirichlet_grad"):
                family = "distribution gradients"
            elif name == "index_reduce":
                family = "index_reduce"
            # Softmax forward also over vocabulary-length rows (32 K), where
            # few rows share the GPU.
            shapes = [(rows, cols)] + ([(n // 32768, 32768)] if family == "softmax" else [])
            for r, c in shapes:
                make = lambda s=spec, r=r, c=c, d=dtype: layout_inputs(s, "dense", r, c, d)  # noqa: E731
                cases.append(Case(family, name, (r, c), dtype, make, spec.fn,
                                  high_arithmetic=name in HIGH_ARITHMETIC,
                                  random=name in RANDOM_OPS, baseline=BASELINES.get(name)))
    return cases


def _half(x) -> tuple:
    return tuple(max(1, size // 2) for size in x.shape[-3:])


def _gradient_of(forward, shape, dtype):
    """A maker of (gradient of ones, input, *indices) for a pooling forward
    call at full size: the backward's inputs."""
    def make():
        x = torch.randn(shape).to(dtype)
        out = forward(x)
        out, extra = (out[0], list(out[1:])) if isinstance(out, tuple) else (out, [])
        return [torch.ones_like(out), x, *extra]
    return make


# 2-D pooling's backward overrides: a CNN's feature maps (op_inputs.py),
# contiguous and channels-last (torch's CUDA kernels differ for the two).
POOL2D_BACKWARDS = ("max_pool2d_with_indices_backward", "avg_pool2d_backward")


def pool_backward_cases(records) -> list:
    cases = []
    for name in POOL2D_BACKWARDS:
        spec = OPS[name]
        for dtype in _dtypes(records[name]):
            n = _elements(dtype)
            for layout in ("dense", "transposed"):
                make = lambda s=spec, layout=layout, n=n, d=dtype: layout_inputs(s, layout, n // 1024, 1024, d)  # noqa: E731
                shape = (n // (64 * 32 * 32), 64, 32, 32) + (("channels_last",) if layout == "transposed" else ())
                cases.append(Case("pooling backward", name, shape, dtype, make, spec.fn))
    for dtype in _dtypes(records["_adaptive_avg_pool2d"]):
        n = _elements(dtype)
        shape = (2, 12, 256, -(-n // (2 * 12 * 256)))
        avg = _gradient_of(lambda x: torch.nn.functional.adaptive_avg_pool2d(x, half_size_2d(x)), shape, dtype)
        cases.append(Case("pooling backward", "_adaptive_avg_pool2d_backward", shape, dtype, avg,
                          torch.ops.aten._adaptive_avg_pool2d_backward))
    for dtype in _dtypes(records["_adaptive_avg_pool3d"]):
        n = _elements(dtype)
        shape = (2, 3, 256, -(-n // (2 * 3 * 4 * 256)), 4)
        avg = _gradient_of(lambda x: torch.nn.functional.adaptive_avg_pool3d(x, _half(x)), shape, dtype)
        cases.append(Case("pooling backward", "_adaptive_avg_pool3d_backward", shape, dtype, avg,
                          torch.ops.aten._adaptive_avg_pool3d_backward))
        top = _gradient_of(lambda x: torch.nn.functional.adaptive_max_pool3d(x, _half(x), return_indices=True),
                           shape, dtype)
        cases.append(Case("pooling backward", "adaptive_max_pool3d_backward", shape, dtype, top,
                          torch.ops.aten.adaptive_max_pool3d_backward))
    return cases


def matmul_cases(records) -> list:
    """Ops of matrix products: _int_mm at a transformer layer's size, int8
    times int8, 4096 cubed (torch's CUDA kernel is cuBLASLt's, on tensor
    cores), and linalg_matrix_exp of 64 matrices 256 x 256 of norm about 13
    (three squarings; ours runs torch's matmul for its products, torch's
    CUDA op its own schedule). Compute rows, reported beside their ratios."""
    cases = []
    if "_int_mm" in records and records["_int_mm"].active:
        size = 4096
        make = lambda: [torch.randint(-128, 128, (size, size), dtype=torch.int8) for _ in range(2)]  # noqa: E731
        cases.append(Case("matmul", "_int_mm", (size, size, size), torch.int8, make, torch._int_mm,
                          high_arithmetic=True))
    if "linalg_matrix_exp" in records and records["linalg_matrix_exp"].active:
        shape = (64, 256, 256)
        make = lambda: [torch.randn(shape) / 16]  # noqa: E731
        cases.append(Case("matmul", "linalg_matrix_exp", shape, torch.float32, make, torch.linalg.matrix_exp,
                          high_arithmetic=True, matrix_results=True))
    return cases


def _symmetric(shape):
    a = torch.randn(shape)
    return a + a.mT


def _lu_solve_inputs(batch, n, columns):
    lu, pivots = torch.linalg.lu_factor(torch.randn(batch, n, n) + n ** 0.5 * torch.eye(n))
    return [lu, pivots, torch.randn(batch, n, columns)]


def linalg_cases(records) -> list:
    """The decompositions (and least squares) a Mac lacks up to 2.13, one
    threadgroup per matrix in ours (torch's CUDA ops are cuSOLVER's and
    MAGMA's): 64 matrices a call at sizes where one threadgroup still
    serves. Compute rows. Each call returns what the inputs pin down:
    eigenvector and singular vector signs are the implementation's, so
    their magnitudes."""
    specs = [
        ("_linalg_eigh", (64, 128, 128), lambda: [_symmetric((64, 128, 128))],
         lambda a: torch.linalg.eigh(a).eigenvectors.abs()),
        ("_linalg_svd", (64, 128, 96), lambda: [torch.randn(64, 128, 96)],
         lambda a: torch.linalg.svd(a, full_matrices=False).U.abs()),
        ("geqrf", (64, 256, 128), lambda: [torch.randn(64, 256, 128)], torch.geqrf),
        ("linalg_qr", (64, 256, 128), lambda: [torch.randn(64, 256, 128)], torch.linalg.qr),
        ("linalg_lu_solve", (64, 256, 256), lambda: _lu_solve_inputs(64, 256, 64), torch.linalg.lu_solve),
        # gels, the one driver torch's CUDA op takes (ours: geqrf, ormqr and
        # torch's solve_triangular).
        ("linalg_lstsq", (64, 256, 128), lambda: [torch.randn(64, 256, 128), torch.randn(64, 256, 16)],
         lambda a, b: torch.linalg.lstsq(a, b, driver="gels").solution),
    ]
    return [Case("linalg", name, shape, torch.float32, make, call, high_arithmetic=True, matrix_results=True)
            for name, shape, make, call in specs if name in records and records[name].active]


def all_cases(families=None) -> list:
    records = {name: r for name, r in registry_ops().items()}
    cases = (elementwise_cases(records) + reduction_cases(records) + own_input_cases(records)
             + pool_backward_cases(records) + matmul_cases(records) + linalg_cases(records))
    if families:
        cases = [c for c in cases if any(f in c.family or f == c.kernel for f in families)]
    return cases
