"""python -m mps_ops.demo: run every registered op on the default backend and
print its result beside torch's CPU result.

On a Mac with the Metal backend the tensors are on ``mps``; elsewhere the
kernels run through the CPU emulator (nothing here ran on Apple hardware)."""

from __future__ import annotations

import torch

import mps_ops
from mps_ops.testing import device, emulate

SAMPLES = {
    "aten::special_ndtri": lambda: (torch.special.ndtri, (torch.tensor([1e-30, 0.025, 0.5, 0.975, 1.0]),)),
    "aten::special_log_ndtr": lambda: (torch.special.log_ndtr, (torch.tensor([-40.0, -3.0, 0.0, 3.0, 10.0]),)),
    "aten::special_airy_ai": lambda: (torch.special.airy_ai, (torch.tensor([-20.0, -2.5, 0.0, 2.5, 20.0]),)),
    "aten::special_laguerre_polynomial_l": lambda: (
        torch.special.laguerre_polynomial_l, (torch.tensor([0.0, 0.5, 1.0, 2.0, 4.0]), torch.tensor(3.0))),
    "aten::special_legendre_polynomial_p": lambda: (
        torch.special.legendre_polynomial_p, (torch.tensor([-1.0, -0.5, 0.0, 0.5, 1.0]), torch.tensor(4.0))),
    "aten::heaviside": lambda: (torch.heaviside, (torch.tensor([-2.0, 0.0, 3.0]), torch.tensor(0.5))),
    "aten::frexp": lambda: (torch.frexp, (torch.tensor([8.0, 0.3, -5.0, 0.0]),)),
}


def _fmt(value) -> str:
    if isinstance(value, tuple):
        return " | ".join(_fmt(v) for v in value)
    return str([round(v, 6) if isinstance(v, float) else v for v in value.cpu().tolist()])


def main() -> int:
    print(f"mps_ops backend: {mps_ops.backend} (tensors on {device()})")
    failures = 0
    for record in mps_ops.ops():
        make = SAMPLES.get(record.name)
        if make is None:
            print(f"\n{record.name}: no demo sample")
            continue
        fn, args = make()
        expected = fn(*args)
        moved = tuple(a.to(device()) if a.dim() > 0 else a for a in args)
        with mps_ops.profile() as prof, emulate():
            actual = fn(*moved)
        same = all(
            torch.allclose(a.cpu().double(), e.double(), rtol=1e-5, atol=1e-6, equal_nan=True)
            for a, e in zip(actual if isinstance(actual, tuple) else (actual,),
                            expected if isinstance(expected, tuple) else (expected,))
        )
        failures += not same
        print(f"\n{record.name}  [{record.policy}, {'active' if record.active else 'inactive'}]")
        print(f"  kernels: {', '.join(prof.kernels()) or 'none dispatched'}")
        print(f"  mps_ops: {_fmt(actual)}")
        print(f"  cpu:     {_fmt(expected)}")
        print(f"  {'match' if same else 'MISMATCH'}")
    print(f"\n{len(mps_ops.ops())} ops, {failures} mismatches")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
