"""Per-release MPS status of every aten operator overload, derived from the
released macOS arm64 torch wheels (the data behind mps_ops.audit).

    python tools/mps_coverage.py                      # derive all releases, write the data file
    python tools/mps_coverage.py --releases 2.15.0    # derive some releases only (prints them)
    python tools/mps_coverage.py --check              # derive and compare with the committed file

What it reads, per release (each wheel downloaded once with pip, kept in
tools/torch_headers.py's cache, `<cache>/wheels/<version>/`; nothing is
imported or run from the wheel):

- `torchgen/packaged/ATen/native/native_functions.yaml`: every operator overload
  and its dispatch table. An overload with no MPS kernel of its own is
  composite ('C') when CompositeImplicitAutograd (explicitly, or by having no
  dispatch table at all), CompositeExplicitAutograd(NonFunctional) covers it,
  otherwise missing ('X').
- `torch/lib/libtorch_cpu.dylib` (Mach-O arm64, read here with the standard
  library only):
  - which overloads are registered for the MPS key: every
    `TORCH_LIBRARY_IMPL(aten, MPS, m)` initializer (the generated
    RegisterMPS ones and the hand-written ones), read instruction by
    instruction: the op name string and the kernel functions each
    `Library::_impl` call registers. This covers kernels registered outside
    native_functions.yaml.
  - 'P' (always on the CPU): registered to `mps_fallback` (MPSFallback.mm's
    list of ops PyTorch always sends to the CPU). A kernel registered there
    that only rejects MPS tensors (`_slow_conv2d_forward`: "should not be
    called for both tensors on MPS device") is missing ('X').
  - MPSGraph or Metal: the call graph from each registered kernel's entry
    points: direct calls and tail calls (bl, b), function addresses taken
    with adrp/add/adr (Objective-C blocks handed to dispatch_sync, lambdas),
    data they reference (DispatchStub objects, vtables of std::function
    lambdas, global blocks) and what those hold (function pointers stored
    into a DispatchStub by the static initializers, rebased pointers in
    vtables). A kernel that reaches `runMPSGraph` or the graph cache
    (`LookUpOrCreateCachedGraph`, `MPSGraphCache::CreateCachedGraph`) runs
    MPSGraph; one that reaches a compute dispatch
    (`-[MTLComputeCommandEncoder dispatchThreads:...]`/`dispatchThreadgroups:`)
    runs a Metal kernel: 'G' for the first only, 'B' for both, 'M' otherwise
    (also for kernels that dispatch no compute at all: views, allocation,
    copies by blit, Metal Performance Shaders kernels).

Statuses per overload and release: M G B C X P and '-' (not defined in that
release); see LEGEND. Left out, as in shared/mps-coverage.md: quantized
(but not fake-quantize), sparse, mkldnn and test-only operators, and those
with kernels for nested tensors only (`excluded`).

When a torch release comes out: add it to RELEASES (and to
tools/torch_headers.py's bounds if it becomes supported), run
`python tools/mps_coverage.py`, review the diff of mps_ops/data/mps_coverage.json
and commit it; `python tools/mps_coverage.py --check` (and
test/test_mps_coverage_data.py) then keep the file and the tool in step.
"""

from __future__ import annotations

import argparse
import bisect
import glob
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zipfile
from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_headers import cached_wheel  # noqa: E402

RELEASES = ["2.9.1", "2.10.0", "2.11.0", "2.12.1", "2.13.0", "2.14.1", "2.15.0"]
SCHEMA = 1
LEGEND = {
    "M": "metal",
    "G": "mpsgraph",
    "B": "metal and mpsgraph paths",
    "C": "composite (no MPS kernel of its own: decomposes into other ops)",
    "X": "missing (raises on MPS, or falls back to the CPU with PYTORCH_ENABLE_MPS_FALLBACK=1)",
    "P": "registered for MPS but always runs on the CPU",
    "-": "not defined in this release",
}
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(REPO, "mps_ops", "data", "mps_coverage.json")

YAML_MEMBER = "torchgen/packaged/ATen/native/native_functions.yaml"
DYLIB_MEMBER = "torch/lib/libtorch_cpu.dylib"


# --------------------------------------------------------------------------
# The wheels


def read_wheel(wheel: str) -> tuple[str, bytes]:
    """native_functions.yaml's text and libtorch_cpu.dylib's bytes."""
    with zipfile.ZipFile(wheel) as archive:
        return archive.read(YAML_MEMBER).decode(), archive.read(DYLIB_MEMBER)


# --------------------------------------------------------------------------
# native_functions.yaml


@dataclass
class Overload:
    name: str                      # "add.Tensor", "relu"
    dispatch: dict[str, str]       # dispatch key -> kernel (keys split: "CPU, CUDA: f")
    structured_delegate: str | None


COMPOSITE_KEYS = ("CompositeImplicitAutograd", "CompositeExplicitAutograd",
                  "CompositeExplicitAutogradNonFunctional")


def overload_key(func: str) -> str:
    """'add.Tensor(Tensor self, ...) -> Tensor' -> 'add.Tensor'."""
    return func.split("(", 1)[0].strip()


def parse_native_functions(text: str) -> dict[str, Overload]:
    overloads = {}
    for entry in yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
        if "func" not in entry:
            continue
        dispatch = {}
        for keys, kernel in (entry.get("dispatch") or {}).items():
            for key in keys.split(","):
                dispatch[key.strip()] = kernel
        name = overload_key(entry["func"])
        overloads[name] = Overload(name, dispatch, entry.get("structured_delegate"))
        # Generated variants (out= forms of functional ops, functional forms
        # of in-place ones): codegen gives them a CompositeExplicitAutograd
        # kernel that calls the op they come from.
        for generated in str(entry.get("autogen") or "").split(","):
            if generated.strip():
                overloads[generated.strip()] = Overload(generated.strip(), {"CompositeExplicitAutograd": name}, None)
    return overloads


# Whole families left out of the data, as shared/mps-coverage.md does: their
# tensors never live on MPS (quantized, sparse, mkldnn layouts) or they exist
# only for PyTorch's own tests. Nested-tensor ops go by their kernels
# (EXCLUDED_KEY): some take dense tensors and run on a Mac, as
# nn.TransformerEncoder's _nested_tensor_from_mask_left_aligned does. The
# fake-quantize ops (KEPT_NAME) are kept although their names say "quantize":
# quantization-aware training runs them on float tensors, which do live on MPS.
KEPT_NAME = re.compile(r"fake_quant|^_fused_moving_avg_obs_fq_helper")
EXCLUDED_NAME = re.compile(
    r"quantiz|sparse|mkldnn|^_?test_|^q_|qscheme|^int_repr|_fake_quant|"
    r"^_?fbgemm|^_saturate_weight_to_fp16|^_choose_qparams|^choose_qparams|"
    r"^_make_per_(tensor|channel)|^_?to_dense|^_coalesce|^coalesce|^_values|^values|"
    r"^_indices|^indices|^crow_indices|^col_indices|^ccol_indices|^row_indices|"
    r"^_is_any_true|^_?has_compatible_shallow_copy_type")
EXCLUDED_KEY = re.compile(r"Sparse|Quantized|Nested|Mkldnn")


def excluded(op: Overload) -> bool:
    base = op.name.split(".")[0]
    if EXCLUDED_NAME.search(base) and not KEPT_NAME.search(base):
        return True
    # Kernels only for excluded layouts (e.g. SparseCPU and QuantizedCPU
    # ones). Not where a composite kernel serves dense tensors (clone,
    # detach), nor a structured op's functional and in-place forms, which list
    # only such extra kernels: their dense ones come from the out= form.
    if op.structured_delegate is not None or any(key in op.dispatch for key in COMPOSITE_KEYS):
        return False
    backends = [k for k in op.dispatch if k != "Meta"]
    return bool(backends) and all(EXCLUDED_KEY.search(k) for k in backends)


# --------------------------------------------------------------------------
# libtorch_cpu.dylib: a Mach-O arm64 image, read with struct alone

LC_SEGMENT_64 = 0x19
LC_SYMTAB = 0x2
MH_MAGIC_64 = 0xFEEDFACF
CPU_TYPE_ARM64 = 0x0100000C


@dataclass
class Section:
    segment: str
    name: str
    addr: int
    size: int

    def holds(self, addr: int) -> bool:
        return self.addr <= addr < self.addr + self.size


class MachO:
    """Sections, segments and the defined symbols (local ones included: the
    wheels keep them, and the analysis needs the static functions, lambdas
    and blocks of the MPS sources)."""

    def __init__(self, data: bytes):
        self.data = data
        magic, cputype, _, _, ncmds, _, _, _ = struct.unpack_from("<IiiIIIII", data, 0)
        if magic != MH_MAGIC_64 or cputype != CPU_TYPE_ARM64:
            raise ValueError("not a 64-bit arm64 Mach-O image")
        self.sections: list[Section] = []
        self.segments: list[tuple[int, int, int]] = []   # vmaddr, vmsize, fileoff
        symtab = None
        offset = 32
        for _ in range(ncmds):
            cmd, size = struct.unpack_from("<II", data, offset)
            if cmd == LC_SEGMENT_64:
                self._read_segment(offset)
            elif cmd == LC_SYMTAB:
                symtab = struct.unpack_from("<IIII", data, offset + 8)
            offset += size
        if symtab is None:
            raise ValueError("no symbol table")
        self.text = self.section("__TEXT", "__text")
        self.cstrings = self.section("__TEXT", "__cstring")
        self._read_symbols(*symtab)

    def _read_segment(self, offset: int) -> None:
        vmaddr, vmsize, fileoff, _, _, _, nsects, _ = struct.unpack_from("<QQQQiiII", self.data, offset + 24)
        self.segments.append((vmaddr, vmsize, fileoff))
        at = offset + 72
        for _ in range(nsects):
            name = self.data[at:at + 16].rstrip(b"\0").decode()
            segment = self.data[at + 16:at + 32].rstrip(b"\0").decode()
            addr, size = struct.unpack_from("<QQ", self.data, at + 32)
            self.sections.append(Section(segment, name, addr, size))
            at += 80

    def _read_symbols(self, symoff: int, nsyms: int, stroff: int, _strsize: int) -> None:
        data = self.data
        by_addr: dict[int, str] = {}
        for entry in struct.iter_unpack("<IBBHQ", data[symoff:symoff + 16 * nsyms]):
            strx, ntype, _, _, value = entry
            # Defined in a section (N_SECT), not a debugging (stab) entry.
            if ntype & 0xE0 or (ntype & 0x0E) != 0x0E:
                continue
            start = stroff + strx
            by_addr.setdefault(value, data[start:data.index(b"\0", start)].decode("latin-1"))
        self.addrs = sorted(by_addr)
        self.names = [by_addr[a] for a in self.addrs]
        self.address_of = {name: addr for addr, name in by_addr.items()}

    def section(self, segment: str, name: str) -> Section:
        for section in self.sections:
            if section.segment == segment and section.name == name:
                return section
        raise ValueError(f"no section {segment},{name}")

    def section_at(self, addr: int) -> Section | None:
        for section in self.sections:
            if section.holds(addr):
                return section
        return None

    def file_offset(self, addr: int) -> int:
        for vmaddr, vmsize, fileoff in self.segments:
            if vmaddr <= addr < vmaddr + vmsize:
                return addr - vmaddr + fileoff
        raise ValueError(f"address {addr:#x} is in no segment")

    def cstring(self, addr: int) -> str:
        start = self.file_offset(addr)
        return self.data[start:self.data.index(b"\0", start)].decode("latin-1")

    def symbol_index(self, addr: int) -> int:
        """The index of the symbol at or before addr (-1 if none)."""
        return bisect.bisect_right(self.addrs, addr) - 1

    def name_at(self, addr: int) -> str:
        index = self.symbol_index(addr)
        if index < 0:
            return f"{addr:#x}"
        start = self.addrs[index]
        return self.names[index] if start == addr else f"{self.names[index]}+{addr - start:#x}"

    def extent(self, addr: int) -> int:
        """Where the code or data starting at addr ends: the next symbol, or
        its section's end."""
        index = bisect.bisect_right(self.addrs, addr)
        section = self.section_at(addr)
        end = section.addr + section.size if section else addr
        if index < len(self.addrs):
            end = min(end, self.addrs[index])
        return end

    def words(self, start: int, end: int) -> tuple[int, ...]:
        offset = self.file_offset(start)
        return struct.unpack_from(f"<{(end - start) // 4}I", self.data, offset)

    def rebased_pointer(self, addr: int) -> int | None:
        """The target of the pointer slot at addr, decoded as a chained-fixup
        rebase (DYLD_CHAINED_PTR_64(_OFFSET): bit 63 clear, target in the low
        36 bits; the image's base address is 0), or None for a bind."""
        try:
            value, = struct.unpack_from("<Q", self.data, self.file_offset(addr))
        except (ValueError, struct.error):
            return None
        if value >> 63:
            return None
        return value & ((1 << 36) - 1)


# --------------------------------------------------------------------------
# arm64 code: the few instructions that say what a function calls and which
# addresses it takes

BL, B = 0x94000000, 0x14000000


def _signed(value: int, bits: int) -> int:
    return value - (1 << bits) if value & (1 << (bits - 1)) else value


@dataclass
class Scan:
    """What a stretch of code does that the analysis needs, in order:
    ("call", pc, target) for a bl or a b leaving the stretch, ("addr", pc,
    address) for an address built with adrp+add, adr or adrp+ldr (the slot
    loaded from), ("store", pc, (value, base)) for a 64-bit store of a known
    address into a known address."""
    events: list[tuple[str, int, object]] = field(default_factory=list)


def scan_code(image: MachO, start: int, end: int) -> Scan:
    regs: dict[int, int] = {}     # register -> the address it holds, where known
    scan = Scan()
    events = scan.events
    for index, word in enumerate(image.words(start, end)):
        pc = start + 4 * index
        top = word & 0xFC000000
        if top == BL or top == B:
            target = pc + 4 * _signed(word & 0x3FFFFFF, 26)
            if not start <= target < end:
                events.append(("call", pc, target))
            if top == BL:  # a call clobbers the caller-saved registers
                for reg in range(19):
                    regs.pop(reg, None)
        elif (word & 0x9F000000) == 0x90000000:            # adrp
            imm = _signed(((word >> 29) & 3) | (((word >> 5) & 0x7FFFF) << 2), 21)
            regs[word & 31] = (pc & ~0xFFF) + (imm << 12)
        elif (word & 0x9F000000) == 0x10000000:            # adr
            imm = _signed(((word >> 29) & 3) | (((word >> 5) & 0x7FFFF) << 2), 21)
            regs[word & 31] = pc + imm
            events.append(("addr", pc, pc + imm))
        elif (word & 0xFF800000) == 0x91000000:            # add xd, xn, #imm
            base = regs.get((word >> 5) & 31)
            if base is None:
                regs.pop(word & 31, None)
            else:
                value = base + (((word >> 10) & 0xFFF) << (12 * ((word >> 22) & 1)))
                regs[word & 31] = value
                events.append(("addr", pc, value))
        elif (word & 0xFFC00000) == 0xF9400000:            # ldr xt, [xn, #imm]
            base = regs.get((word >> 5) & 31)
            if base is not None:
                events.append(("addr", pc, base + ((word >> 10) & 0xFFF) * 8))
            regs.pop(word & 31, None)
        elif (word & 0xFFC00000) == 0xF9000000:            # str xt, [xn, #imm]
            value, base = regs.get(word & 31), regs.get((word >> 5) & 31)
            if value is not None and base is not None:
                events.append(("store", pc, (value, base + ((word >> 10) & 0xFFF) * 8)))
        elif (word & 0xFFFFFC1F) == 0xD63F0000:            # blr: a call, as bl
            for reg in range(19):
                regs.pop(reg, None)
        else:
            if (word & 0x3A400000) == 0x28400000:          # ldp: a second register
                regs.pop((word >> 10) & 31, None)
            # Most other instructions write their low five bits' register:
            # forgetting it can only lose an address, never invent one.
            regs.pop(word & 31, None)
    return scan


# --------------------------------------------------------------------------
# The MPS registrations: TORCH_LIBRARY_IMPL(aten, MPS, m) initializers

MPS_INIT = re.compile(r"TORCH_LIBRARY_IMPL_init_aten_MPS_\d+ERN5torch7LibraryE$")
LIBRARY_IMPL = re.compile(r"^__ZNR?5torch7Library5_implEPKc")
OP_NAME = re.compile(r"^(?:aten::)?([a-z_][a-z0-9_]*(?:\.[A-Za-z0-9_]+)?)$")
MPS_FALLBACK = "mps_fallback"    # MPSFallback.mm's boxed kernel: the op runs on the CPU
# MPSFallback.mm's mixed-device shim: registered for MPS, it raises for MPS tensors.
REJECTS_MPS = "should not be called for both tensors on MPS device"


@dataclass
class Registration:
    op: str
    kernels: list[int]          # code addresses the registration hands over
    handwritten: bool           # outside the generated RegisterMPS initializers


def mps_registrations(image: MachO) -> dict[str, Registration]:
    impl_calls = {a for a, n in zip(image.addrs, image.names) if LIBRARY_IMPL.search(n)}
    if not impl_calls:
        raise ValueError("no torch::Library::_impl in the image")
    registrations: dict[str, Registration] = {}
    for addr, name in zip(image.addrs, image.names):
        if MPS_INIT.search(name):
            # The generated initializers live in at::(anonymous namespace);
            # hand-written ones (MPSFallback.mm) in at:: itself.
            handwritten = "_GLOBAL__N_" not in name
            for registration in _registrations_in(image, addr, impl_calls, handwritten):
                registrations.setdefault(registration.op, registration)
    return registrations


def _registrations_in(image: MachO, start: int, impl_calls: set[int],
                      handwritten: bool) -> Iterable[Registration]:
    """One Registration per Library::_impl call: the op name string built
    since the previous call, and the code addresses built since then (or, where
    none was, the previous call's: the compiler keeps a kernel shared by
    several ops in a register)."""
    op, kernels, previous = None, [], []
    for kind, _, value in scan_code(image, start, image.extent(start)).events:
        if kind == "call" and value in impl_calls:
            if op is not None:
                previous = kernels or previous
                yield Registration(op, previous, handwritten)
            op, kernels = None, []
        elif kind == "addr":
            if image.cstrings.holds(value):
                match = OP_NAME.match(image.cstring(value))
                if match:
                    op = match.group(1)
            elif image.text.holds(value):
                kernels.append(value)


def static_initializers(image: MachO) -> list[int]:
    """The image's static initializers: __init_offsets (32-bit offsets from
    the image's base, newer linkers) or __mod_init_func (pointers)."""
    for section in image.sections:
        start = image.file_offset(section.addr) if section.size else 0
        if section.name == "__init_offsets":
            return list(struct.unpack_from(f"<{section.size // 4}I", image.data, start))
        if section.name == "__mod_init_func":
            slots = range(section.addr, section.addr + section.size, 8)
            return [p for p in map(image.rebased_pointer, slots) if p is not None]
    return []


# --------------------------------------------------------------------------
# What a registered kernel runs: its call graph

# Running a graph: the graph cache (every graph op looks its graph up there)
# and the call that encodes a graph into the command buffer.
GRAPH_SINK = re.compile(r"^__ZN2at6native3mps(11runMPSGraph|25LookUpOrCreateCachedGraph|"
                        r"13MPSGraphCache17CreateCachedGraph)")
# Running a Metal compute kernel: the compute encoder's two dispatch messages.
DISPATCH_SELECTORS = frozenset({"dispatchThreads:threadsPerThreadgroup:",
                                "dispatchThreadgroups:threadsPerThreadgroup:"})
# The code followed: ATen's functions, their lambdas and Objective-C blocks,
# and the std::function / c10::function_ref thunks that call ATen lambdas.
# The rest (c10, std, torch::jit, autograd, protobuf...) never encodes GPU
# work for an op, and following it would walk most of the library.
FOLLOWED = re.compile(r"^_*Z+NK?2at|^_*ZN(St3__110__function6__func|3c1012function_ref)I.*?Z+NK?2at")
NOT_FOLLOWED = re.compile(r"^_*Z+NK?2at(4_ops|17functionalization|6native7DEFAULT|8internal)")
# Operand movement that every MPS kernel does with Metal kernels, graph ops
# included: gathering strided inputs, scattering into strided outputs,
# copying. Followed, it would make every graph op look like both.
OPERAND_MOVEMENT = re.compile(r"3mps11PlaceholderC|16gatherViewTensor|17scatterViewTensor|3mps9mps_copy_E")
# Data that never leads to a kernel: type information and guard variables.
INERT_DATA = re.compile(r"^_*Z(TI|TS|GV)")
DATA_OBJECT_LIMIT = 1024   # bytes of one data object read for code pointers

GRAPH, METAL, REJECTS = "G", "M", "R"


class CallGraph:
    """Which of GRAPH, METAL and REJECTS the code reachable from some entry
    points reaches. Edges: calls and tail calls, code addresses taken (blocks,
    lambdas), and data referenced: code pointers in it (std::function vtables,
    global blocks, the GOT) and code pointers the MPS sources' static
    initializers store into it (DispatchStub's MPS slot)."""

    def __init__(self, image: MachO):
        self.image = image
        self.text = image.text
        names = {(s.segment, s.name): s for s in image.sections}
        self.objc_stubs = names.get(("__TEXT", "__objc_stubs"))
        self.selrefs = names.get(("__DATA", "__objc_selrefs"))
        self.got = names.get(("__DATA_CONST", "__got"))
        self.stores = self._mps_initializer_stores()
        self.stored_at = sorted(self.stores)
        self._code: dict[int, tuple[frozenset, frozenset]] = {}
        self._data: dict[int, frozenset] = {}
        self._selectors: dict[int, str | None] = {}

    def _mps_initializer_stores(self) -> dict[int, list[int]]:
        stores: dict[int, list[int]] = {}
        for init in static_initializers(self.image):
            # __GLOBAL__sub_I_<source file>: the MPS sources are the .mm ones.
            if not self.image.name_at(init).endswith(".mm"):
                continue
            for kind, _, value in scan_code(self.image, init, self.image.extent(init)).events:
                if kind == "store" and self.text.holds(value[0]):
                    stores.setdefault(value[1], []).append(value[0])
        return stores

    def followed(self, addr: int) -> bool:
        index = self.image.symbol_index(addr)
        if index < 0 or self.image.addrs[index] != addr:
            return False
        name = self.image.names[index]
        return bool(FOLLOWED.search(name)) and not NOT_FOLLOWED.search(name) and not OPERAND_MOVEMENT.search(name)

    def _selector(self, selref: int) -> str | None:
        target = self.image.rebased_pointer(selref)
        return self.image.cstring(target) if target is not None else None

    def _stub_selector(self, stub: int) -> str | None:
        """The selector an __objc_stubs entry sends (its adrp + ldr of x1)."""
        if stub not in self._selectors:
            self._selectors[stub] = None
            for kind, _, value in scan_code(self.image, stub, stub + 8).events:
                if kind == "addr" and self.selrefs and self.selrefs.holds(value):
                    self._selectors[stub] = self._selector(value)
        return self._selectors[stub]

    def _code_edges(self, start: int) -> tuple[frozenset, frozenset]:
        """(what the function at start leads to, the kinds it reaches itself)."""
        if start in self._code:
            return self._code[start]
        image = self.image
        kinds = {GRAPH} if GRAPH_SINK.search(image.name_at(start)) else set()
        leads: set = set()
        end = image.extent(start)
        for kind, _, value in scan_code(image, start, end).events:
            if kind == "call":
                if self.text.holds(value):
                    if self.followed(value):
                        leads.add(value)
                elif self.objc_stubs and self.objc_stubs.holds(value):
                    if self._stub_selector(value) in DISPATCH_SELECTORS:
                        kinds.add(METAL)
            elif kind == "addr" and not start <= value < end:
                if self.text.holds(value):
                    if self.followed(value):
                        leads.add(value)
                elif self.selrefs and self.selrefs.holds(value):
                    if self._selector(value) in DISPATCH_SELECTORS:
                        kinds.add(METAL)
                elif image.cstrings.holds(value):
                    if REJECTS_MPS in image.cstring(value):
                        kinds.add(REJECTS)
                elif self.got and self.got.holds(value):
                    # A GOT slot: code reached through it (a weak definition's
                    # address) is followed as code, data as data.
                    target = image.rebased_pointer(value)
                    if target is not None and self.text.holds(target):
                        if self.followed(target):
                            leads.add(target)
                    elif target is not None:
                        leads.add(("data", target))
                elif image.section_at(value) is not None:
                    leads.add(("data", value))
        self._code[start] = (frozenset(leads), frozenset(kinds))
        return self._code[start]

    def _data_edges(self, addr: int) -> frozenset:
        if addr in self._data:
            return self._data[addr]
        image = self.image
        leads: set = set()
        section = image.section_at(addr)
        index = image.symbol_index(addr)
        if section is not None and not section.holds(self.text.addr) and \
                not (index >= 0 and INERT_DATA.search(image.names[index])):
            start = image.addrs[index] if index >= 0 and section.holds(image.addrs[index]) else addr
            end = min(image.extent(addr), start + DATA_OBJECT_LIMIT)
            if section.name not in ("__bss", "__common", "__thread_bss"):
                for slot in range(start - start % 8, end, 8):
                    target = image.rebased_pointer(slot)
                    if target is not None and self.text.holds(target) and self.followed(target):
                        leads.add(target)
            at = bisect.bisect_left(self.stored_at, start)
            while at < len(self.stored_at) and self.stored_at[at] < end:
                leads.update(t for t in self.stores[self.stored_at[at]] if self.followed(t))
                at += 1
        self._data[addr] = frozenset(leads)
        return self._data[addr]

    def reaches(self, entries: Iterable[int]) -> set[str]:
        seen: set = set()
        todo = list(entries)
        kinds: set[str] = set()
        while todo:
            node = todo.pop()
            if node in seen:
                continue
            seen.add(node)
            if isinstance(node, tuple):
                todo.extend(self._data_edges(node[1]))
            else:
                leads, own = self._code_edges(node)
                kinds |= own
                todo.extend(leads)
        return kinds


# --------------------------------------------------------------------------
# One release's statuses


def kernel_status(image: MachO, graph: CallGraph, registration: Registration) -> str:
    if any(MPS_FALLBACK in image.name_at(k) for k in registration.kernels):
        return "P"
    kinds = graph.reaches(registration.kernels)
    if REJECTS in kinds:
        return "X"
    if GRAPH in kinds:
        return "B" if METAL in kinds else "G"
    return "M"


def has_composite(op: Overload) -> bool:
    if not op.dispatch:
        return op.structured_delegate is None   # no table: CompositeImplicitAutograd
    return any(key in op.dispatch for key in COMPOSITE_KEYS)


def release_statuses(yaml_text: str, dylib: bytes) -> dict[str, str]:
    """Every (non-excluded) overload's status in one release."""
    image = MachO(dylib)
    graph = CallGraph(image)
    registrations = mps_registrations(image)
    statuses = {}
    for name, op in parse_native_functions(yaml_text).items():
        if excluded(op):
            continue
        if name in registrations:
            statuses[name] = kernel_status(image, graph, registrations[name])
        else:
            statuses[name] = "C" if has_composite(op) else "X"
    return statuses


def _stderr(line: str) -> None:
    print(line, file=sys.stderr)


def derive(versions: Sequence[str], root: str | None = None, log=None) -> dict:
    """The data file's content for these releases."""
    per_release = {}
    for version in versions:
        began = time.time()
        per_release[version] = release_statuses(*read_wheel(cached_wheel(version, root)))
        (log or _stderr)(f"mps_coverage: {version}: {len(per_release[version])} overloads in {time.time() - began:.1f} s")
    names = sorted(set().union(*per_release.values()))
    return {
        "schema": SCHEMA,
        "releases": list(versions),
        "legend": LEGEND,
        "ops": {name: "".join(per_release[v].get(name, "-") for v in versions) for name in names},
    }


def load(path: str = DEFAULT_OUT) -> dict:
    with open(path) as f:
        return json.load(f)


def write(data: dict, path: str = DEFAULT_OUT) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        # One op a line: a reviewable diff when a release is added.
        f.write("{\n")
        for key in ("schema", "releases", "legend"):
            f.write(f"  {json.dumps(key)}: {json.dumps(data[key])},\n")
        f.write('  "ops": {\n')
        rows = [f"    {json.dumps(name)}: {json.dumps(s)}" for name, s in data["ops"].items()]
        f.write(",\n".join(rows))
        f.write("\n  }\n}\n")


def differences(committed: dict, derived: dict, versions: Sequence[str]) -> list[str]:
    """Lines naming every overload whose status differs in these releases."""
    lines = []
    for version in versions:
        if version not in committed["releases"]:
            lines.append(f"{version}: not in the committed data")
            continue
        i = committed["releases"].index(version)
        j = derived["releases"].index(version)
        names = set(committed["ops"]) | set(derived["ops"])
        for name in sorted(names):
            old = committed["ops"].get(name, "-" * len(committed["releases"]))[i]
            new = derived["ops"].get(name, "-" * len(derived["releases"]))[j]
            if old != new:
                lines.append(f"{version}: {name}: committed {old}, derived {new}")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--releases", nargs="+", help="derive these releases only and print them")
    parser.add_argument("--check", action="store_true",
                        help="derive and compare with the committed data file (exit 1 on a difference)")
    parser.add_argument("--out", default=DEFAULT_OUT, help="the data file (default: the package's)")
    args = parser.parse_args(argv)
    versions = args.releases or RELEASES
    derived = derive(versions)
    if args.check:
        diff = differences(load(args.out), derived, versions)
        for line in diff:
            print(line)
        print(f"mps_coverage: {'differs' if diff else 'matches'} ({len(diff)} differences)")
        return 1 if diff else 0
    if args.releases:
        for name, statuses in derived["ops"].items():
            print(f"{name:50s} {' '.join(statuses)}")
        return 0
    write(derived, args.out)
    print(f"mps_coverage: wrote {len(derived['ops'])} overloads x {len(versions)} releases to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
