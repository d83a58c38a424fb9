"""The registry's dtypes against the kernels: every dtype an entry lists has
each of the entry's `kernels` instantiated for it (host name
`<kernel>_<variant>_<out>_<Metal type of the dtype>`), every instantiated
kernel is reached by some entry's dtype, and each kernel an entry names is
one its stub file asks for. Read from the kernel sources (the table
tools/macos_build.py embeds), so it holds on any platform, before any build.
"""

from __future__ import annotations

import os
import re
import sys
from collections import defaultdict

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))

import codegen  # noqa: E402
import macos_build  # noqa: E402

CLANG = "clang++-16"
VARIANTS = "dense_lhs_scalar|dense_rhs_scalar|dense|strided|reduce|merge"
HOST_NAME = re.compile(rf"^(?P<op>\w+?)_(?:{VARIANTS})_(?P<out>[a-z]+)_(?P<in>[a-z]+)$")

ENTRIES = codegen.load_registry()


@pytest.fixture(scope="module")
def input_types():
    """kernel op -> the Metal input types it is instantiated for."""
    table = macos_build.kernel_table(macos_build.kernel_files(), macos_build.include_dirs(), CLANG)
    types = defaultdict(set)
    for record in table:
        m = HOST_NAME.match(record.host_name)
        assert m, f"{record.host_name} is outside the host-name grammar"
        types[m["op"]].add(m["in"])
    return types


def test_every_entry_names_its_kernels():
    assert [e.name for e in ENTRIES if not e.kernels] == []


def missing_kernels(entry, input_types) -> list[str]:
    return [
        f"{kernel} for {dtype} (no {kernel}_*_*_{codegen.METAL_TYPE[entry.kernel_dtype(dtype)]})"
        for kernel in entry.kernels
        for dtype in entry.dtypes
        if codegen.METAL_TYPE[entry.kernel_dtype(dtype)] not in input_types.get(kernel, ())
    ]


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.name)
def test_every_registry_dtype_has_its_kernels(entry, input_types):
    missing = missing_kernels(entry, input_types)
    assert not missing, f"{entry.name} lists dtypes without kernels: {missing}"


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.name)
def test_named_kernels_are_the_stub_files(entry):
    """A kernel the registry names is one the entry's stub file, or a file
    whose stubs it calls, looks up, so the list cannot drift from the stubs
    unnoticed. (A shaped entry's stubs take the kernel from the registry
    itself.)"""
    if entry.shape:
        return
    stub = entry.stub_sources()
    assert [k for k in entry.kernels if f'"{k}"' not in stub] == []


def unreachable_kernels(entries, input_types) -> list[str]:
    """Kernels no registry dtype reaches: an op no entry names, or an input
    type none of the entries naming the op lists. Such a kernel is never run,
    so never tested, on any backend."""
    reached = defaultdict(set)
    for entry in entries:
        # The kernels the entry names, and any other its stub file looks up
        # (upsample_aa_backward: float32 only, where the Lanczos op also takes uint8).
        for kernel in set(entry.kernels) | entry.stub_kernels():
            reached[kernel].update(codegen.METAL_TYPE[entry.kernel_dtype(d)] for d in entry.dtypes)
    return sorted(f"{op} for {metal}" for op, types in input_types.items() for metal in types
                  if metal not in reached.get(op, ()))


def test_every_kernel_is_reached_by_a_registry_dtype(input_types):
    assert unreachable_kernels(ENTRIES, input_types) == []


def test_an_unreachable_kernel_is_caught(input_types):
    """The check fails for a kernel whose dtype the entry leaves out."""
    import dataclasses

    narrowed = [dataclasses.replace(e, dtypes=tuple(d for d in e.dtypes if d != "int16"))
                if e.name == "heaviside" else e for e in ENTRIES]
    assert unreachable_kernels(narrowed, input_types) == ["heaviside for short"]


def test_a_dtype_without_a_kernel_is_caught(input_types):
    """The check fails for a dtype the kernels lack (heaviside has no uint16)."""
    import dataclasses

    (heaviside,) = [e for e in ENTRIES if e.name == "heaviside"]
    widened = dataclasses.replace(heaviside, dtypes=heaviside.dtypes + ("uint16",))
    assert missing_kernels(widened, input_types) == ["heaviside for uint16 (no heaviside_*_*_ushort)"]


def test_dtype_sets_read_from_the_kernel_header():
    sets = codegen.dtype_sets()
    assert sets["floating"] == ("float16", "bfloat16", "float32")
    assert sets["all"] == tuple(codegen.METAL_TYPE)
    assert codegen.expand_dtypes(["integral", "floating", "float32"], sets, "t") == (
        "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32")
    with pytest.raises(codegen.RegistryError, match="neither a Metal dtype nor a set"):
        codegen.expand_dtypes(["floats"], sets, "t")


def test_a_kernel_reached_through_a_called_stub_file_counts_and_a_missing_file_is_refused(tmp_path):
    """`calls` names the stub files whose stubs an entry's call directly:
    their kernels are the entry's (linalg_lstsq names geqrf's, from qr.mm),
    and a file that does not exist is a registry error."""
    import dataclasses

    import yaml

    (lstsq,) = [e for e in ENTRIES if e.name == "linalg_lstsq"]
    assert {"geqrf", "ormqr", "svd"} <= lstsq.stub_kernels()
    assert "geqrf" not in dataclasses.replace(lstsq, calls=()).stub_kernels()
    with open(codegen.REGISTRY) as f:
        raw = yaml.safe_load(f)
    (entry,) = [e for e in raw["ops"] if e["name"] == "linalg_lstsq"]
    entry["calls"] = ["qr", "no_such_stubs"]
    path = tmp_path / "native_functions.yaml"
    path.write_text(yaml.safe_dump(raw))
    with pytest.raises(codegen.RegistryError, match=r"linalg_lstsq: csrc/operations/no_such_stubs\.mm does not exist"):
        codegen.load_registry(str(path))
