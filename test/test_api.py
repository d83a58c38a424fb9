"""The Python surface: mps_ops.ops(), policies, profile(), backend, and the
generated files staying in step with the registry."""

from __future__ import annotations

import os
import subprocess
import sys

import torch

import mps_ops
from mps_ops._registry import _exists

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIRST_OPS = {
    "aten::special_ndtri", "aten::special_log_ndtr", "aten::special_airy_ai",
    "aten::special_laguerre_polynomial_l", "aten::special_legendre_polynomial_p",
    "aten::heaviside", "aten::frexp",
}


def test_backend_is_named():
    if torch.backends.mps.is_available():
        expected = {"metal"}
    elif torch.cuda.is_available():
        # setup.py builds the CUDA backend where a GPU and the PTX are, unless
        # MPS_OPS_BACKEND=emulator asked for the emulator.
        expected = {"cuda", "emulator"}
    else:
        expected = {"emulator"}
    assert mps_ops.backend in expected


def test_ops_lists_the_registry_with_its_fields():
    records = mps_ops.ops()
    assert FIRST_OPS <= {r.name for r in records}
    for r in records:
        assert r.policy in ("fill", "override", "repair")
        # An op without OpInfo (e.g. _add_relu) has tests of our own instead.
        assert isinstance(r.opinfo, tuple) and all(isinstance(n, str) for n in r.opinfo)
        assert r.dtypes and all(isinstance(d, torch.dtype) for d in r.dtypes)
        assert torch.float64 not in r.dtypes
        assert isinstance(r.active, bool)


def test_fill_ops_are_active_where_torch_lacks_an_mps_kernel():
    # After import, every fill overload dispatches on MPS: ours where torch
    # has no kernel (an inactive op is one this torch covers or lacks entirely:
    # torch 2.11 has no _upsample_lanczos2d_aa; the CPU wheel here no MPS
    # kernel at all).
    fill = [r for r in mps_ops.ops() if r.policy == "fill"]
    for r in fill:
        for overload in filter(_exists, r.overloads):  # torch 2.11 has no _upsample_lanczos2d_aa
            assert torch._C._dispatch_has_kernel_for_dispatch_key(f"aten::{overload}", "MPS"), (r.name, overload)
    assert any(r.active for r in fill)


def test_profile_records_each_dispatch():
    from mps_ops.testing import device, emulate

    x = torch.rand(10, device=device())
    with mps_ops.profile() as prof, emulate():
        torch.special.ndtri(x)
    (d,) = prof.dispatches
    assert d.kernel == "ndtri_dense_float_float"
    assert d.threads == (32, 1, 1)  # one tile of 32 threads, four float elements each
    assert d.group_size[0] >= 1
    # out, in, the element count, the (empty) params every element-wise kernel takes
    assert d.buffers == (40, 40, 4, 4)
    assert d.operand_slots == 2


def test_profile_is_off_outside_the_block():
    from mps_ops.testing import device, emulate

    with mps_ops.profile() as prof:
        pass
    with emulate():
        torch.special.ndtri(torch.rand(3, device=device()))
    assert prof.dispatches == []


def test_docs_ops_table_is_generated_from_the_registry():
    result = subprocess.run(
        [sys.executable, os.path.join(ROOT, "tools", "codegen.py"), "--check-docs",
         os.path.join(ROOT, "docs", "ops.md")],
        capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stderr


def test_kernel_names_follow_the_one_host_name_grammar():
    """<op>_<variant>_<out>_<in> with Metal type names (emulator: the Metal
    backend lists its library's functions differently). That every registry
    dtype has its kernel is proven by test_opinfo's dispatch assertions."""
    import re

    if mps_ops.backend != "emulator":
        return
    types = "bool|uchar|char|short|ushort|int|uint|long|ulong|half|bfloat|float"
    grammar = re.compile(rf"^[a-z0-9_]+?_(dense|strided|dense_lhs_scalar|dense_rhs_scalar|reduce|merge)_({types})_({types})$")
    names = mps_ops._C.kernel_names()
    assert names, "no kernels registered"
    bad = [n for n in names if not grammar.match(n)]
    assert not bad, bad


def test_profiles_nest():
    from mps_ops.testing import device, emulate

    x = torch.rand(3, device=device())
    with mps_ops.profile() as outer, emulate():
        torch.special.ndtri(x)
        with mps_ops.profile() as inner:
            torch.special.log_ndtr(x)
        torch.special.airy_ai(x)
    assert [d.kernel.split("_dense")[0] for d in inner.dispatches] == ["log_ndtr"]
    assert [d.kernel.split("_dense")[0] for d in outer.dispatches] == ["ndtri", "log_ndtr", "airy_ai"]
