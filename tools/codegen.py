"""Generate everything that follows from csrc/native_functions.yaml.

    python tools/codegen.py --out build/generated   # C++ registration + op table
    python tools/codegen.py --docs docs/ops.md      # the ops table for users
    python tools/codegen.py --check-docs docs/ops.md

Generated C++ (build/generated/):
  ops_group<k>.cpp includes a group of csrc/operations/<file>.mm and, beside
                   their stubs, one registration function per aten overload;
                   the stub's signature is written once, in the .mm, and
                   TORCH_FN takes it from there. Stubs compile in OPS_GROUPS
                   groups: torch's headers cost about 9 s a translation unit
                   and a stub file's own code under half a second, so one
                   unit per file spent most of the build parsing the same
                   headers (see docs/design.md).
  registry.cpp     the op table (name, overloads, dtypes, policy, OpInfo
                   names) that mps_ops.ops() and the policy logic read.
  Shaped entries' records carry their shape and their inputs' sample
  domains, which mps_ops.samples turns into the op's samples, layout and
  work cases (see docs/design.md).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from dataclasses import dataclass, field

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
REGISTRY = os.path.join(ROOT, "csrc", "native_functions.yaml")

DTYPE_SETS_HEADER = os.path.join(ROOT, "csrc", "kernels", "include", "mps_ops", "dtype_sets.h")

# torch dtype name -> Metal type name, in the order the registry lists dtypes
# (csrc/runtime/host_name.cpp maps c10 dtypes to the same Metal names).
METAL_TYPE = {
    "bool": "bool", "uint8": "uchar", "int8": "char", "int16": "short", "int32": "int",
    "int64": "long", "uint16": "ushort", "uint32": "uint", "uint64": "ulong",
    "float16": "half", "bfloat16": "bfloat", "float32": "float",
}
TORCH_DTYPES = set(METAL_TYPE)
POLICIES = {"fill", "override", "repair"}
FIELDS = {"name", "impl", "dtypes", "policy", "opinfo"}
# Optional: which OpInfo call forms reach our overloads (default: all three).
# std, for one, is ours only with out=: its functional form has an MPS kernel.
# differs: where our results differ from the CPU's, for docs/ops.md.
# mps_missing: default from the file's `defaults`.
# kernels: the kernel ops (host-name prefixes) the stubs run, each needed for
# every dtype the entry lists (test/test_registry_kernels.py checks it).
# file / shape: one of them. file: csrc/operations/<file>.mm holds the
# stubs; shape: a standard element-wise shape (SHAPES), whose shared stub
# templates the generated code instantiates for the entry's one kernel.
# domain: a shaped entry's sample domain (default in `defaults`), see
# expand_domain.
# schemas: overload -> its aten schema, for an operator that releases we
# support lack: there its kernels are reached as torch.ops.mps_ops_compat.<op>
# (csrc/python/registration.h), so they are tested on every release.
# mpsgraph: an override's torch releases (major.minor, quoted: YAML reads
# 2.10 as 2.1) whose stock MPS kernel runs MPSGraph: the only releases in
# which it may replace the stock kernel (shared/mps-coverage.md).
# repairs: a repair's torch releases (major.minor, quoted) whose stock MPS
# kernel fails for inputs ours takes (adaptive_avg_pool2d's sizes that do not
# divide): registered by default in those, for every input; a release the
# registry does not know gets none.
# grad_opinfo: OpInfos whose input gradients reach the op (a backward op:
# relu's for threshold_backward), tested forward and backward
# (test/test_overrides.py).
# computes_in: dtypes whose kernels are another dtype's, {float16: float32}:
# the stub converts (_addmm_activation's half product, multiplied in float
# and rounded once, as the CPU's) or reinterprets (hash_tensor reads half as
# its int16 bits) and runs that dtype's kernels.
# gpu_ratio: an override's measured speed against torch's CUDA kernels for
# the same op (benchmarks/bench_gpu.py on an NVIDIA GPU): "lowest-highest
# GPU at commit", the ratio over its rows, the GPU and the commit measured
# (tools/gpu_ratios.py writes it from a whole run); never a Mac figure.
OPTIONAL_FIELDS = {"forms", "differs", "mps_missing", "kernels", "file", "shape", "domain", "schemas", "mpsgraph",
                   "repairs", "grad_opinfo", "gpu_ratio", "computes_in", "calls"}
DEFAULTABLE_FIELDS = {"mps_missing", "domain"}
FORMS = ("functional", "out", "inplace")

# Standard shapes: per call form, the stub template of
# csrc/runtime/elementwise_stubs.h that serves it.
SHAPES = {
    "unary_float": {"functional": "unary_float_stub", "out": "unary_float_out_stub"},
    "unary_same": {"functional": "unary_same_stub", "out": "unary_same_out_stub",
                   "inplace": "unary_same_inplace_stub"},
    "unary_bool": {"functional": "unary_bool_stub", "out": "unary_bool_out_stub"},
    "binary_float": {"functional": "binary_float_stub", "out": "binary_float_out_stub"},
    "binary_same": {"functional": "binary_same_stub", "out": "binary_same_out_stub",
                    "inplace": "binary_same_inplace_stub"},
}
SHAPE_STUBS_HEADER = os.path.join(ROOT, "csrc", "runtime", "elementwise_stubs.h")


def form_of(overload: str) -> str:
    """special_ndtri -> functional, special_ndtri.out -> out, heaviside_ -> inplace."""
    base, _, suffix = overload.partition(".")
    if suffix == "out":
        return "out"
    return "inplace" if base.endswith("_") else "functional"


def dtype_sets(path: str = DTYPE_SETS_HEADER) -> dict[str, tuple]:
    """The named dtype sets of the kernels' dtype_sets.h, as torch dtype names:
    the one statement of each set, read here so the registry can name it."""
    with open(path) as f:
        text = re.sub(r"\\\n", " ", f.read())
    torch_name = {metal: torch for torch, metal in METAL_TYPE.items()}
    sets: dict[str, tuple] = {}
    for m in re.finditer(r"^#define MPS_OPS_FOR_(\w+)\(M, \.\.\.\)(.*)$", text, re.MULTILINE):
        members: list[str] = []
        for part in re.finditer(r"\bM\(__VA_ARGS__, (\w+)\)|\bMPS_OPS_FOR_(\w+)\(M, __VA_ARGS__\)",
                                m.group(2)):
            if part.group(1):
                members.append(torch_name[part.group(1)])
            else:
                members += sets[part.group(2).lower()]
        sets[m.group(1).lower()] = tuple(members)
    if not sets:
        raise RegistryError(f"{path}: no MPS_OPS_FOR_<SET> definitions found")
    return sets


def expand_dtypes(spec, sets: dict[str, tuple], where: str) -> tuple:
    """`floating` or a list of set and dtype names -> dtype names, in order."""
    out: list[str] = []
    for name in [spec] if isinstance(spec, str) else spec:
        members = (name,) if name in TORCH_DTYPES else sets.get(name)
        if members is None:
            raise RegistryError(f"{where}: {name!r} is neither a Metal dtype nor a set of "
                                f"dtype_sets.h ({', '.join(sorted(sets))})")
        out += [d for d in members if d not in out]
    return tuple(out)


def default_stub(overload: str) -> str:
    """The host stub an overload binds unless the registry names another:
    special_ndtri.out -> special_ndtri_out."""
    return overload.replace(".", "_")


def expand_impl(spec, where: str) -> dict:
    """impl: a list of overloads, each a name (its stub is default_stub) or a
    one-entry mapping overload: stub where the stub's name differs."""
    if isinstance(spec, dict):
        raise RegistryError(f"{where}: impl is a list (`- overload` or `- overload: stub`)")
    impl = {}
    for item in spec:
        if isinstance(item, str):
            impl[item] = default_stub(item)
        elif isinstance(item, dict) and len(item) == 1:
            ((overload, stub),) = item.items()
            if stub == default_stub(overload):
                raise RegistryError(f"{where}: {overload}: {stub} is the default stub; list the overload alone")
            impl[overload] = stub
        else:
            raise RegistryError(f"{where}: bad impl item {item!r}")
    return impl


@dataclass(frozen=True)
class Range:
    """Where a shaped op's samples draw one input from: uniformly from
    [lo, hi], or (integers) from the whole numbers lo..hi."""

    lo: float
    hi: float
    integers: bool = False


def _range(spec, where: str) -> Range:
    integers = isinstance(spec, dict) and set(spec) == {"integers"}
    bounds = spec["integers"] if integers else spec
    if not (isinstance(bounds, list) and len(bounds) == 2
            and all(isinstance(v, (int, float)) for v in bounds) and bounds[0] < bounds[1]):
        raise RegistryError(f"{where}: a domain range is [lo, hi] or {{integers: [lo, hi]}} with lo < hi")
    return Range(float(bounds[0]), float(bounds[1]), integers)


def expand_domain(spec, where: str) -> tuple:
    """domain: a range (`[lo, hi]` or `{integers: [lo, hi]}`) for every input,
    or a mapping from the op's argument names to ranges;
    -> ((argument or "*", Range), ...), "*" for every input."""
    if isinstance(spec, dict) and set(spec) != {"integers"}:
        return tuple((str(arg), _range(r, f"{where}: domain of {arg}")) for arg, r in spec.items())
    return (("*", _range(spec, f"{where}: domain")),)


@dataclass(frozen=True)
class OpEntry:
    name: str
    file: str | None  # None for a shaped entry
    impl: dict  # overload -> stub (a shaped entry's: the stub template's instantiation)
    dtypes: tuple
    policy: str
    opinfo: tuple
    mps_missing: tuple
    forms: tuple = FORMS
    differs: str = ""
    kernels: tuple = ()  # kernel ops needed for every dtype
    shape: str = ""
    domain: tuple = ()  # a shaped entry's: ((argument or "*", Range), ...)
    schemas: dict = field(default_factory=dict)  # overload -> schema, for releases that lack it
    mpsgraph: tuple = ()  # an override's releases ("2.9", ...) whose stock kernel is MPSGraph
    repairs: tuple = ()  # a repair's releases whose stock kernel fails for inputs ours takes
    grad_opinfo: tuple = ()  # OpInfos whose input gradients reach the op
    gpu_ratio: str = ""  # an override's ratio against torch's CUDA kernel on an NVIDIA GPU, "" if unmeasured
    computes_in: dict = field(default_factory=dict)  # dtype -> the dtype whose kernels it runs
    calls: tuple = ()  # stub files whose host stubs this entry's call directly (their kernels run too)

    def kernel_dtype(self, dtype: str) -> str:
        """The dtype whose kernels a call in `dtype` runs."""
        return self.computes_in.get(dtype, dtype)

    @property
    def qualified_name(self) -> str:
        return f"aten::{self.name}"

    def stub_sources(self) -> str:
        """The text of the entry's stub file and of those it `calls`."""
        texts = []
        for name in (self.file, *self.calls):
            with open(os.path.join(ROOT, "csrc", "operations", f"{name}.mm")) as f:
                texts.append(f.read())
        return "\n".join(texts)

    def stub_kernels(self) -> set:
        """The kernel ops the entry's stub file, and those it `calls`, look up
        (`KernelCache name("op")`): `kernels` and any the stub picks for some
        inputs only (softmax's paired rows, upsample_aa_backward's float32).
        Empty for a shaped entry, whose stubs take the kernel from the
        registry itself."""
        if self.shape:
            return set()
        return set(re.findall(r'KernelCache\s+\w+\("(\w+)"\)', self.stub_sources()))


class RegistryError(Exception):
    pass


def load_registry(path: str = REGISTRY) -> list[OpEntry]:
    with open(path) as f:
        raw = yaml.safe_load(f)
    if set(raw) != {"defaults", "ops"}:
        raise RegistryError(f"{os.path.basename(path)}: expected `defaults` and `ops` at the top")
    defaults = raw["defaults"]
    if set(defaults) - DEFAULTABLE_FIELDS:
        raise RegistryError(f"{os.path.basename(path)}: defaults may set only {sorted(DEFAULTABLE_FIELDS)}")
    sets = dtype_sets()
    entries, seen = [], set()
    for item in raw["ops"]:
        where = f"{os.path.basename(path)}: {item.get('name', '?')}"
        unknown = set(item) - FIELDS - OPTIONAL_FIELDS
        missing = FIELDS - set(item)
        if unknown or missing:
            raise RegistryError(f"{where}: unknown fields {sorted(unknown)}, missing {sorted(missing)}")
        if item["name"] in seen:
            raise RegistryError(f"{where}: listed twice")
        seen.add(item["name"])
        if "domain" in item and "shape" not in item:
            raise RegistryError(f"{where}: only a shaped entry has a sample domain (an op with its own "
                                "stubs has its samples in mps_ops/samples/<file>.py)")
        for key in DEFAULTABLE_FIELDS:
            if key in item and item[key] == defaults.get(key):
                raise RegistryError(f"{where}: {key} repeats the default; leave it out")
            if key == "domain" and "shape" not in item:
                continue
            item = {key: defaults[key], **item} if key in defaults else item
        if set(item.get("forms", FORMS)) - set(FORMS):
            raise RegistryError(f"{where}: forms must be among {FORMS}")
        if item["policy"] not in POLICIES:
            raise RegistryError(f"{where}: policy must be one of {sorted(POLICIES)}")
        if "gpu_ratio" in item and item["policy"] != "override":
            raise RegistryError(f"{where}: only an override has a GPU ratio (gpu_ratio)")
        if (item["policy"] == "override") != ("mpsgraph" in item):
            raise RegistryError(f"{where}: an override, and only an override, lists the releases whose stock "
                                "kernel is MPSGraph (mpsgraph)")
        if (item["policy"] == "repair") != ("repairs" in item):
            raise RegistryError(f"{where}: a repair, and only a repair, lists the releases whose stock kernel "
                                "it repairs (repairs)")
        impl = expand_impl(item["impl"], where)
        if ("file" in item) == ("shape" in item):
            raise RegistryError(f"{where}: give a stub file or a standard shape ({sorted(SHAPES)}), not both")
        stub_files = ([item["file"]] if "file" in item else []) + list(item.get("calls", []))
        for stub_file in stub_files:
            if not os.path.exists(os.path.join(ROOT, "csrc", "operations", stub_file + ".mm")):
                raise RegistryError(f"{where}: csrc/operations/{stub_file}.mm does not exist")
        if "shape" in item:
            impl = shaped_impl(item, impl, where)
        dtypes = expand_dtypes(item["dtypes"], sets, where)
        entries.append(
            OpEntry(
                name=item["name"],
                file=item.get("file"),
                impl=impl,
                dtypes=dtypes,
                policy=item["policy"],
                opinfo=tuple(item["opinfo"]),
                mps_missing=tuple(str(v) for v in item["mps_missing"]),
                forms=tuple(item.get("forms", FORMS)),
                differs=" ".join(str(item.get("differs", "")).split()),
                kernels=tuple(item.get("kernels", ())),
                shape=item.get("shape", ""),
                domain=expand_domain(item["domain"], where) if "shape" in item else (),
                schemas=expand_schemas(item.get("schemas", {}), impl, where),
                mpsgraph=expand_releases(item.get("mpsgraph", []), where),
                repairs=expand_releases(item.get("repairs", []), where),
                grad_opinfo=tuple(item.get("grad_opinfo", ())),
                gpu_ratio=" ".join(str(item.get("gpu_ratio", "")).split()),
                computes_in=expand_computes_in(item.get("computes_in", {}), dtypes, where),
                calls=tuple(item.get("calls", ())),
            )
        )
    return entries


def expand_computes_in(spec, dtypes: tuple, where: str) -> dict:
    """computes_in: {dtype: dtype}, both among the entry's (expanded) dtypes."""
    if not isinstance(spec, dict) or not all(k in dtypes and v in dtypes and k != v for k, v in spec.items()):
        raise RegistryError(f"{where}: computes_in maps dtypes of the entry to other dtypes of the entry")
    return dict(spec)


def expand_releases(spec, where: str) -> tuple:
    """mpsgraph, repairs: quoted major.minor releases, e.g. ["2.9", "2.10"]."""
    if not isinstance(spec, list) or not all(isinstance(v, str) and re.fullmatch(r"\d+\.\d+", v) for v in spec):
        raise RegistryError(f"{where}: mpsgraph and repairs list quoted major.minor releases, e.g. [\"2.9\", \"2.10\"]")
    return tuple(spec)


def expand_schemas(spec, impl: dict, where: str) -> dict:
    """schemas: overload -> "name.overload(arguments) -> returns", for
    overloads of this entry only, each named as its key."""
    if not isinstance(spec, dict):
        raise RegistryError(f"{where}: schemas is a mapping overload: schema")
    for overload, schema in spec.items():
        if overload not in impl:
            raise RegistryError(f"{where}: schemas: {overload} is not one of the entry's overloads")
        base, _, overload_name = overload.partition(".")
        if not str(schema).startswith(f"{base}{'.' + overload_name if overload_name else ''}("):
            raise RegistryError(f"{where}: schemas: the schema of {overload} must begin with its name")
    return {str(k): str(v) for k, v in spec.items()}


def _shape_names(name: str) -> tuple[str, str]:
    """The char arrays a shaped entry's generated code defines: its aten name
    and its kernel op, the stub templates' arguments."""
    return f"{name}_op_name", f"{name}_kernel_name"


def shaped_impl(item: dict, impl: dict, where: str) -> dict:
    """A shaped entry's overloads, each bound to its form's stub template."""
    stubs = SHAPES.get(item["shape"])
    if stubs is None:
        raise RegistryError(f"{where}: shape must be one of {sorted(SHAPES)}")
    if len(item.get("kernels", ())) != 1:
        raise RegistryError(f"{where}: a shaped entry names its one kernel (kernels: [<op>])")
    if any(overload != default_stub(overload) and stub != default_stub(overload)
           for overload, stub in impl.items()):
        raise RegistryError(f"{where}: a shaped entry's stubs come from its shape; list overloads only")
    op_name, kernel_name = _shape_names(item["name"])
    out = {}
    for overload in impl:
        form = form_of(overload)
        if form not in stubs:
            raise RegistryError(f"{where}: shape {item['shape']} has no {form} stub for {overload}")
        out[overload] = f"{stubs[form]}<generated::{op_name}, generated::{kernel_name}>"
    return out


def _c_string(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _registrar_name(overload: str) -> str:
    return "register_" + overload.replace(".", "__")


HEADER = "// Generated by tools/codegen.py from csrc/native_functions.yaml. Do not edit.\n"


# One per core of the 2-core machines the project builds on.
OPS_GROUPS = 2


def ops_group_source(files: list[str], entries: list[OpEntry]) -> str:
    lines = [HEADER]
    lines += [f'#include "{os.path.join(ROOT, "csrc", "operations", file + ".mm")}"' for file in files]
    shaped = [e for e in entries if e.shape]
    if shaped:
        lines.append(f'#include "{SHAPE_STUBS_HEADER}"')
    lines += [
        "",
        "#include <torch/library.h>",
        "",
        "namespace mps_ops::generated {",
    ]
    for entry in shaped:
        op_name, kernel_name = _shape_names(entry.name)
        lines += [
            f"constexpr char {op_name}[] = {_c_string(entry.name)};",
            f"constexpr char {kernel_name}[] = {_c_string(entry.kernels[0])};",
        ]
    for entry in entries:
        for overload, stub in entry.impl.items():
            lines.append(f"void {_registrar_name(overload)}(torch::Library& library) {{")
            if entry.shape:
                # A named pointer: TORCH_FN is a macro, and the stub
                # template's argument list has a comma.
                lines += [f"  static constexpr auto* stub = &::mps_ops::{stub};",
                          f"  library.impl({_c_string(overload)}, TORCH_FN(stub));"]
            else:
                lines.append(f"  library.impl({_c_string(overload)}, TORCH_FN(::mps_ops::{stub}));")
            lines.append("}")
    lines += ["}  // namespace mps_ops::generated", ""]
    return "\n".join(lines)


def registry_source(entries: list[OpEntry]) -> str:
    lines = [
        HEADER,
        '#include "registry.h"',
        "",
        "namespace mps_ops::generated {",
    ]
    for entry in entries:
        for overload in entry.impl:
            lines.append(f"void {_registrar_name(overload)}(torch::Library& library);")
    lines.append("")
    for i, entry in enumerate(entries):
        overloads = ", ".join(
            f"{{{_c_string(o)}, &{_registrar_name(o)}, {_c_string(entry.schemas.get(o, ''))}}}" for o in entry.impl
        )
        lines.append(f"const OverloadRecord overloads_{i}[] = {{{overloads}}};")
    lines.append("")
    lines.append("const OpRecord op_records[] = {")
    for i, entry in enumerate(entries):
        lines.append(
            f"  {{{_c_string(entry.qualified_name)}, {_c_string(entry.policy)}, "
            f"{_c_string(','.join(entry.dtypes))}, {_c_string(','.join(entry.opinfo))}, "
            f"{_c_string(','.join(entry.forms))}, {_c_string(entry.shape or '')}, "
            f"{_c_string(domain_literal(entry))}, {_c_string(','.join(entry.mpsgraph))}, "
            f"{_c_string(','.join(entry.repairs))}, "
            f"{_c_string(','.join(entry.grad_opinfo))}, {_c_string(entry.gpu_ratio)}, "
            f"overloads_{i}, {len(entry.impl)}}},"
        )
    lines += [
        "};",
        f"const int op_record_count = {len(entries)};",
        "}  // namespace mps_ops::generated",
        "",
    ]
    return "\n".join(lines)


def domain_literal(entry: OpEntry) -> str:
    """A shaped entry's sample domain as the Python literal mps_ops.ops() reads:
    ((argument or "*" for every input, (lo, hi, integers)), ...)."""
    ranges = "".join(f"({arg!r}, ({r.lo!r}, {r.hi!r}, {r.integers!r})), " for arg, r in entry.domain)
    return f"({ranges})"


def docs_source(entries: list[OpEntry]) -> str:
    lines = [
        "# Operators",
        "",
        "Generated by `tools/codegen.py --docs docs/ops.md` from `csrc/native_functions.yaml`;",
        "a test fails when this file and the registry disagree.",
        "",
        "Policy `fill`: registered for the MPS device only when the running torch has no MPS",
        "kernel for the overload. `override`: replaces a stock kernel that runs MPSGraph, only in",
        "the releases listed (a release the registry does not know gets none), and only once",
        "enabled: `mps_ops.enable_overrides()` (all), `enable_overrides([\"threshold\", ...])`,",
        "`disable_overrides(...)`, or `MPS_OPS_OVERRIDES=1` (or a comma-separated list of names) at",
        "import. `mps_ops.ops()` says which are active and why not. An override's NVIDIA GPU column:",
        "its speed against torch's CUDA kernel for the same op on the GPU named there (benchmarks/",
        "bench_gpu.py, lowest-highest over its float32/float16/bfloat16 rows, at the commit named): a",
        "stand-in for an Apple GPU, never a Mac figure. `repair`: replaces a stock kernel that fails for some",
        "inputs (it raises where ours computes), by default and for every input, in the releases",
        "listed under MPS lacks it.",
        "",
        "Every kernel listed here is tested through the CPU emulator against torch on the CPU;",
        "none has been run on Apple hardware yet.",
        "",
        "| operator | overloads | dtypes | policy | OpInfo | MPS lacks it in torch | MPSGraph in torch | NVIDIA GPU |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for e in entries:
        lines.append(
            f"| `{e.qualified_name}` | {', '.join(f'`{o}`' for o in e.impl)} | "
            f"{', '.join(e.dtypes)} | {e.policy} | {', '.join((*e.opinfo, *(f'{g} (gradient)' for g in e.grad_opinfo)))} | "
            f"{', '.join(e.mps_missing) or (', '.join(e.repairs) + ': some inputs' if e.repairs else '-')} | "
            f"{', '.join(e.mpsgraph) or '-'} | "
            f"{e.gpu_ratio or ('unmeasured' if e.policy == 'override' else '-')} |"
        )
    differing = [e for e in entries if e.differs]
    if differing:
        lines += ["", "## Where results differ from the CPU's", ""]
        lines += [f"- `{e.qualified_name}`: {e.differs}" for e in differing]
    return "\n".join(lines) + "\n"


def write_if_changed(path: str, text: str) -> None:
    if os.path.exists(path):
        with open(path) as f:
            if f.read() == text:
                return
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def generate_cpp(out_dir: str, entries: list[OpEntry]) -> list[str]:
    """Writes the generated C++ and returns the paths to compile."""
    paths = []
    files = sorted({e.file for e in entries if e.file})
    per_group = -(-len(files) // OPS_GROUPS)
    for k in range(OPS_GROUPS):
        group = files[k * per_group:(k + 1) * per_group]
        # Shaped entries (no stub file) join the last group, the smaller one.
        members = [e for e in entries if e.file in group or (not e.file and k == OPS_GROUPS - 1)]
        path = os.path.join(out_dir, f"ops_group{k}.cpp")
        write_if_changed(path, ops_group_source(group, members))
        paths.append(path)
    path = os.path.join(out_dir, "registry.cpp")
    write_if_changed(path, registry_source(entries))
    paths.append(path)
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="directory for generated C++")
    parser.add_argument("--docs", help="write the ops table here")
    parser.add_argument("--check-docs", help="fail if this ops table is stale")
    args = parser.parse_args(argv)
    entries = load_registry()
    if args.out:
        generate_cpp(args.out, entries)
    if args.docs:
        write_if_changed(args.docs, docs_source(entries))
    if args.check_docs:
        with open(args.check_docs) as f:
            if f.read() != docs_source(entries):
                print(f"{args.check_docs} is stale: run python tools/codegen.py --docs {args.check_docs}",
                      file=sys.stderr)
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
