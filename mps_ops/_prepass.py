"""Turn a .metal file into a C++ translation unit for the CPU emulator (or,
with target "cuda", into CUDA C++ for an NVIDIA GPU: generate_cuda).

What a header cannot do, this pass does over the preprocessed source (MSL
keywords and attributes kept, since the real <metal_stdlib> stand-in is only
included afterwards):

* find every kernel (``kernel void f(...)`` or ``[[kernel]] void f(...)``) and
  read each parameter's role from its attribute (``[[buffer(N)]]`` or a
  thread-position built-in), and the group limit it may declare before it
  (``[[max_total_threads_per_threadgroup(N)]]``: the emulator's entry records
  N, the CUDA entry is launch-bounded to N);
* find every ``template [[host_name("...")]] ...;`` instantiation, strip the
  attribute (clang rejects it after ``template``) and register a launcher
  right behind it, in the same scope, whose parameter types the compiler takes
  from the kernel through decltype;
* keep line markers so that compiler errors point into the .metal source.

Used by setup.py (the extension's kernels), by mps_ops.compile_shader (run
time) and as a command:
    python tools/msl_prepass.py KERNEL.metal OUT.cpp [--cxx clang++-16] [-I DIR]...
        [--target emulator|cuda]
This module imports nothing from mps_ops or torch, so setup.py can load it
before the extension exists.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
STUB_INCLUDE = os.path.join(ROOT, "tools", "msl_stub_include")
KERNEL_INCLUDE = os.path.join(ROOT, "csrc", "kernels", "include")
# The <metal_stdlib> stand-in every C++ target shares (types, traits, math)
# and the emulator's own part (launchers, fibers, SIMD-group functions,
# atomics, bounded pointers, <mps_ops_target/metal_target.h>).
MSL_INCLUDE = os.path.join(ROOT, "csrc", "msl", "include")
EMULATOR_INCLUDE = os.path.join(ROOT, "csrc", "emulator", "include")
# What a generated emulator translation unit compiles with.
EMULATOR_INCLUDES = (MSL_INCLUDE, EMULATOR_INCLUDE)

# The CUDA target's part (launch machinery, SIMD-group functions, atomics,
# math through libdevice, <mps_ops_target/...>): what a CUDA compile includes.
CUDA_INCLUDE = os.path.join(ROOT, "csrc", "cuda", "include")
CUDA_INCLUDE_DIRS = (MSL_INCLUDE, CUDA_INCLUDE)

# What generate() writes: C++ for the CPU emulator, or CUDA C++ (clang,
# device code) for an NVIDIA GPU.
TARGETS = ("emulator", "cuda")
# compile_shader sources the CUDA backend can run: the GPU machine has no
# clang-19, so tools/cuda_build.py compiles these ahead, each under its
# shader_key, into <PTX directory>/shaders/ (the tests' kernels).
PREBUILT_SHADERS = os.path.join(ROOT, "test", "kernels")


def shader_key(source: str) -> str:
    """The name a compile_shader source is built ahead under for the CUDA
    backend: a hash of its text, so an edited source is never run stale."""
    return hashlib.sha256(source.encode()).hexdigest()[:32]

BUILTIN_ROLES = {
    "thread_position_in_grid",
    "thread_position_in_threadgroup",
    "threadgroup_position_in_grid",
    "threads_per_grid",
    "threads_per_threadgroup",
    "threadgroups_per_grid",
    "thread_index_in_threadgroup",
    "thread_index_in_simdgroup",
    "simdgroup_index_in_threadgroup",
    "simdgroups_per_threadgroup",
    "threads_per_simdgroup",
    "thread_execution_width",
}

# Names whose use makes a kernel collective (fibers instead of the plain loop).
COLLECTIVE_NAMES = {"threadgroup_barrier", "simdgroup_barrier"}
COLLECTIVE_PREFIXES = ("simd_", "quad_")
NOT_FUNCTIONS = {
    "if", "for", "while", "switch", "catch", "return", "sizeof", "decltype", "alignof",
    "alignas", "static_assert", "defined",
}

TOKEN_RE = re.compile(
    r"""
    (?P<line>^\#[^\n]*)                              # line marker / pragma
  | (?P<ws>\s+)
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<char>'(?:[^'\\\n]|\\.)*')
  | (?P<number>\.?\d(?:[\w.]|[eEpP][+-])*)
  | (?P<ident>[A-Za-z_]\w*)
  | (?P<punct>\[\[|\]\]|::|->|<<=|>>=|[-+*/%&|^!=<>]=|&&|\|\||\+\+|--|<<|>>|[^\s\w])
    """,
    re.VERBOSE | re.MULTILINE,
)


@dataclass
class Token:
    kind: str
    text: str
    start: int
    end: int


def tokenize(source: str) -> list[Token]:
    tokens = []
    for m in TOKEN_RE.finditer(source):
        kind = m.lastgroup
        if kind in ("ws", "line"):
            continue
        tokens.append(Token(kind, m.group(), m.start(), m.end()))
    return tokens


class PrepassError(Exception):
    pass


@dataclass
class Kernel:
    name: str
    roles: list[str]
    body_names: set = field(default_factory=set)
    params: list = field(default_factory=list)  # each parameter's tokens
    # [[max_total_threads_per_threadgroup(N)]]'s N where the kernel declares
    # it, else None (Metal's limit, 1024, and the registers')
    max_threads: int | None = None


@dataclass
class Instantiation:
    host_name: str
    entity: str  # e.g. "unary_dense<float, ndtri_functor>"
    base_name: str
    entity_names: set
    attr_span: tuple[int, int] | None  # attributes to strip, None for plain kernels
    end: int  # offset just past the closing ';'


@dataclass
class Scan:
    kernels: dict[str, Kernel] = field(default_factory=dict)
    instantiations: list[Instantiation] = field(default_factory=list)
    # function or struct name -> identifiers its body uses (overloads merged)
    bodies: dict = field(default_factory=dict)
    # (start, end, replacement) edits for threadgroup variable declarations
    threadgroup_edits: list = field(default_factory=list)
    # (start, end) of the `threadgroup` keyword of each of those declarations
    threadgroup_keywords: list = field(default_factory=list)
    # function or struct name -> ids of the threadgroup variables its body declares
    threadgroup_ids: dict = field(default_factory=dict)
    # kernel parameter attributes, blanked in the output
    attribute_spans: list = field(default_factory=list)
    # function or struct name -> names it calls unqualified (`f(`, not `a::f(`)
    unqualified_calls: dict = field(default_factory=dict)

    def reachable(self, names: set) -> set:
        """`names` and every name the bodies of those names use, transitively."""
        seen, todo = set(), list(names)
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            todo.extend(self.bodies.get(name, ()))
        return seen

    def is_collective(self, names: set) -> bool:
        return any(name in COLLECTIVE_NAMES or name.startswith(COLLECTIVE_PREFIXES)
                   for name in self.reachable(names))

    def threadgroup_declarations(self, names: set) -> list[int]:
        """Ids of the threadgroup variables a kernel using `names` may declare
        (by name: a template's every instantiation counts)."""
        return sorted({i for name in self.reachable(names) for i in self.threadgroup_ids.get(name, ())})


def _matching(tokens: list[Token], i: int, open_: str, close: str, strict: bool = True) -> int:
    """Index of the `close` matching the `open_` at tokens[i]. Unbalanced:
    PrepassError, or with strict=False the last index (a checker that lets
    the compiler report the broken source)."""
    depth = 0
    for j in range(i, len(tokens)):
        if tokens[j].text == open_:
            depth += 1
        elif tokens[j].text == close:
            depth -= 1
            if depth == 0:
                return j
    if not strict:
        return len(tokens) - 1
    raise PrepassError(f"unbalanced {open_!r}")


def _split_params(tokens: list[Token]) -> list[list[Token]]:
    params, current, depth = [], [], 0
    for tok in tokens:
        if tok.text in ("(", "[", "<", "[["):
            depth += 1
        elif tok.text in (")", "]", ">", "]]"):
            depth -= 1
        if tok.text == "," and depth == 0:
            params.append(current)
            current = []
        else:
            current.append(tok)
    if current:
        params.append(current)
    return params


def _param_role(param: list[Token], kernel: str) -> str | None:
    texts = [t.text for t in param]
    if "[[" not in texts:
        return None
    i = texts.index("[[")
    attr = texts[i + 1]
    if attr == "buffer":
        return f"::mps_ops_emu::buffer_role<{texts[i + 3]}>"
    if attr == "threadgroup":
        return f"::mps_ops_emu::threadgroup_role<{texts[i + 3]}>"
    if attr in BUILTIN_ROLES:
        return f"::mps_ops_emu::{attr}_role"
    raise PrepassError(
        f"kernel {kernel}: parameter attribute [[{attr}]] is not supported by the emulator yet"
    )


def _max_threads_attribute(tokens: list[Token], kernel_index: int, kernel: str, result: Scan) -> int | None:
    """N of a `[[max_total_threads_per_threadgroup(N)]]` just before the
    kernel at tokens[kernel_index] (its `kernel` keyword or `[[kernel]]`),
    whose span goes to result.attribute_spans: C++ knows no such attribute."""
    end = kernel_index - 1
    if end < 0 or tokens[end].text != "]]":
        return None
    start = _matching_backward(tokens, end, "[[", "]]")
    texts = [t.text for t in tokens[start + 1 : end]]
    if not texts or texts[0] != "max_total_threads_per_threadgroup":
        return None
    if len(texts) != 4 or texts[1] != "(" or texts[3] != ")" or not re.fullmatch(r"\d+u?", texts[2]):
        raise PrepassError(f"kernel {kernel}: [[max_total_threads_per_threadgroup]] needs one integer literal")
    n = int(texts[2].rstrip("u"))
    if not 1 <= n <= 1024 or n % 32 != 0:
        raise PrepassError(f"kernel {kernel}: max_total_threads_per_threadgroup({n}) must be a multiple "
                           "of 32 up to 1024 (whole SIMD groups within Metal's limit)")
    result.attribute_spans.append((tokens[start].start, tokens[end].end))
    return n


def scan(source: str) -> Scan:
    tokens = tokenize(source)
    result = Scan()
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        # Kernel declarations: `kernel void NAME(` or `[[kernel]] void NAME(`.
        is_kernel_kw = tok.text == "kernel" and tok.kind == "ident"
        is_kernel_attr = (
            tok.text == "[["
            and i + 2 < len(tokens)
            and tokens[i + 1].text == "kernel"
            and tokens[i + 2].text == "]]"
        )
        if is_kernel_kw or is_kernel_attr:
            j = i + (1 if is_kernel_kw else 3)
            if j + 2 < len(tokens) and tokens[j].text == "void" and tokens[j + 1].kind == "ident":
                name = tokens[j + 1].text
                if tokens[j + 2].text == "(":
                    close = _matching(tokens, j + 2, "(", ")")
                    params = _split_params(tokens[j + 3 : close])
                    roles = [_param_role(p, name) for p in params]
                    if roles and all(r is not None for r in roles):
                        max_threads = _max_threads_attribute(tokens, i, name, result)
                        result.kernels.setdefault(name, Kernel(name, roles, params=params, max_threads=max_threads))
                        # Parameter attributes mean nothing to C++ (and
                        # [[threadgroup(N)]] would meet the `threadgroup` macro).
                        for k in range(j + 3, close):
                            if tokens[k].text == "[[":
                                attr_end = _matching(tokens, k, "[[", "]]")
                                result.attribute_spans.append((tokens[k].start, tokens[attr_end].end))
                        if close + 1 < len(tokens) and tokens[close + 1].text == "{":
                            end = _matching(tokens, close + 1, "{", "}")
                            result.kernels[name].body_names |= {
                                t.text for t in tokens[close + 2 : end] if t.kind == "ident"}
                            if not _is_template(tokens, i):
                                # A plain kernel is its own instantiation, named as written.
                                result.instantiations.append(Instantiation(
                                    name, name, name, set(), None, tokens[end].end))
                    elif any(r is not None for r in roles):
                        raise PrepassError(f"kernel {name}: every parameter needs an attribute")
        # Explicit instantiations with a host name.
        if (
            tok.text == "template"
            and i + 6 < len(tokens)
            and tokens[i + 1].text == "[["
            and tokens[i + 2].text == "host_name"
        ):
            attr_end = _matching(tokens, i + 1, "[[", "]]")
            host_attr_end = attr_end
            # Any further attribute lists ([[kernel]]) go too: C++ rejects them there.
            while attr_end + 1 < len(tokens) and tokens[attr_end + 1].text == "[[":
                attr_end = _matching(tokens, attr_end + 1, "[[", "]]")
            if tokens[i + 4].kind != "string":
                raise PrepassError("host_name needs a string literal")
            host_name = "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', " ".join(
                t.text for t in tokens[i + 4 : host_attr_end - 1])))
            semi = attr_end
            while tokens[semi].text != ";":
                semi += 1
            body = tokens[attr_end + 1 : semi]
            entity = _instantiated_entity(body)
            base_name = entity[0].text
            for t in entity:
                if t.text == "<":
                    break
                if t.kind == "ident":
                    base_name = t.text
            result.instantiations.append(
                Instantiation(
                    host_name,
                    _join(entity),
                    base_name,
                    {t.text for t in entity if t.kind == "ident"},
                    (tokens[i + 1].start, tokens[attr_end].end),
                    tokens[semi].end,
                )
            )
            i = semi
        i += 1
    _scan_bodies(tokens, result)
    return result


def _scan_bodies(tokens: list[Token], result: Scan) -> None:
    """Record which names each function and struct body uses, and rewrite
    threadgroup storage declared in function bodies."""
    tg_id = 0
    spans = []  # (start, end, owner) of every function and struct body
    for i, tok in enumerate(tokens):
        if tok.text != "{":
            continue
        owner = _body_owner(tokens, i)
        if owner is None:
            continue
        end = _matching(tokens, i, "{", "}")
        spans.append((i, end, owner))
        names = {t.text for t in tokens[i + 1 : end] if t.kind == "ident"}
        result.bodies.setdefault(owner, set()).update(names)
        calls = {tokens[k].text for k in range(i + 1, end - 1)
                 if tokens[k].kind == "ident" and tokens[k + 1].text == "("
                 and tokens[k - 1].text not in ("::", ".", "->")
                 and not _is_definition(tokens, k + 1)}
        result.unqualified_calls.setdefault(owner, set()).update(calls)
    # threadgroup storage: `threadgroup T name[dims];` at statement level.
    for i, tok in enumerate(tokens):
        if tok.text != "threadgroup" or i == 0 or tokens[i - 1].text not in ("{", ";", "}"):
            continue
        j = i + 1
        while j < len(tokens) and tokens[j].text != ";":
            j += 1
        decl = tokens[i + 1 : j]
        texts = [t.text for t in decl]
        first_dim = texts.index("[") if "[" in texts else len(texts)
        # A pointer or reference into threadgroup memory is not storage; a `*`
        # inside the dims (`x[A * B]`) is a product, and the array is storage.
        if "*" in texts[:first_dim] or "&" in texts[:first_dim]:
            continue
        if "(" in texts or "=" in texts or "," in texts:
            raise PrepassError(
                "threadgroup variables are declared one per statement, without initializer")
        name = texts[first_dim - 1]
        type_text = _join(decl[: first_dim - 1]) + "".join(texts[first_dim:])
        tg_id += 1
        owners = [(start, owner) for start, end, owner in spans if start < i < end]
        if owners:
            result.threadgroup_ids.setdefault(max(owners)[1], set()).add(tg_id)
        result.threadgroup_keywords.append((tok.start, tok.end))
        result.threadgroup_edits.append((
            tok.start, tokens[j].end,
            f"auto&& {name} = ::mps_ops_emu::threadgroup_variable<{type_text}, {tg_id}, "
            f"threadgroup_sizes>(\"{name}\");"))


ADDRESS_SPACES = {"device", "constant", "threadgroup"}
POINTER_CASTS = {"reinterpret_cast", "static_cast", "const_cast"}
QUALIFIERS = {"const", "volatile"}


def _type_end(tokens: list[Token], j: int) -> int:
    """Index just past the type name starting at tokens[j] (`typename`,
    `a::b<c>::d`), or j when none starts there."""
    k = j
    if k < len(tokens) and tokens[k].text == "typename":
        k += 1
    if k < len(tokens) and tokens[k].text == "::":
        k += 1
    while k < len(tokens) and tokens[k].kind == "ident":
        k += 1
        if k < len(tokens) and tokens[k].text == "<":
            depth = 0
            while k < len(tokens):
                text = tokens[k].text
                depth += text.count("<") if text in ("<", "<<") else 0
                depth -= text.count(">") if text in (">", ">>") else 0
                k += 1
                if depth <= 0:
                    break
        if k < len(tokens) and tokens[k].text == "::":
            k += 1
            if k < len(tokens) and tokens[k].text == "template":
                k += 1
            continue
        break
    return k if k > j and tokens[k - 1].text != "typename" else j


def pointer_edits(tokens: list[Token]) -> list:
    """`device T*`, `constant T*` (and `const`/`volatile` anywhere in front)
    -> `::mps_ops_emu::bounded_ptr<T>` (bounded_ptr.h): every access through
    a pointer into device, constant or threadgroup memory is bounds-checked.
    A cast to such a pointer type becomes `::mps_ops_emu::pointer_cast<...>`,
    which keeps the source pointer's range. References, declared storage and
    `thread` pointers stay as they are."""
    edits = []
    for i, tok in enumerate(tokens):
        if tok.kind != "ident" or tok.text not in ADDRESS_SPACES:
            continue
        if i > 0 and tokens[i - 1].text == "[[":
            continue  # [[threadgroup(N)]]
        first = i
        quals = set()
        while first > 0 and tokens[first - 1].text in QUALIFIERS:
            first -= 1
            quals.add(tokens[first].text)
        j = i + 1
        while j < len(tokens) and tokens[j].text in QUALIFIERS:
            quals.add(tokens[j].text)
            j += 1
        end = _type_end(tokens, j)
        if end == j:
            continue
        type_text = _join(tokens[j:end])
        while end < len(tokens) and tokens[end].text in QUALIFIERS:
            quals.add(tokens[end].text)
            end += 1
        if end >= len(tokens) or tokens[end].text != "*":
            continue
        if tok.text == "constant":
            quals.add("const")
        prefix = "".join(q + " " for q in ("const", "volatile") if q in quals)
        edits.append((tokens[first].start, tokens[end].end,
                      f"::mps_ops_emu::bounded_ptr<{prefix}{type_text}>"))
        if first >= 2 and tokens[first - 1].text == "<" and tokens[first - 2].text in POINTER_CASTS:
            cast = tokens[first - 2]
            edits.append((cast.start, cast.end, "::mps_ops_emu::pointer_cast"))
    return edits


SWIZZLE_RE = re.compile(r"^(?:[xyzw]{2,4}|[rgba]{2,4})$")
SWIZZLE_INDEX = {c: i for i, c in enumerate("xyzw")} | {c: i for i, c in enumerate("rgba")}


def swizzle_edits(tokens: list[Token]) -> list:
    """`v.xy` -> `v.template swz<0, 1>()` (emulator/vector.h): C++ has no swizzles."""
    edits = []
    for i in range(1, len(tokens)):
        if tokens[i - 1].text == "." and tokens[i].kind == "ident" and SWIZZLE_RE.match(tokens[i].text):
            indices = ", ".join(str(SWIZZLE_INDEX[c]) for c in tokens[i].text)
            edits.append((tokens[i].start, tokens[i].end, f"template swz<{indices}>()"))
    return edits


def _body_owner(tokens: list[Token], brace: int) -> str | None:
    """The function or struct whose body opens at tokens[brace], if any."""
    k = brace - 1
    # A trailing return type `-> T` sits between the parameters and the body.
    j = k
    while j >= 0 and tokens[j].text not in (")", "->", ";", "{", "}"):
        j -= 1
    if j >= 0 and tokens[j].text == "->":
        k = j - 1
    while k >= 0 and tokens[k].text in ("const", "noexcept", "thread", "device", "constant"):
        k -= 1
    while k >= 0 and tokens[k].text == "]]":  # trailing attributes
        k = _matching_backward(tokens, k, "[[", "]]") - 1
    if k < 0:
        return None
    if tokens[k].text == ")":
        k = _matching_backward(tokens, k, "(", ")") - 1
        if k >= 1 and tokens[k].text == ")" and tokens[k - 1].text == "(" and tokens[k - 2].text == "operator":
            return _enclosing_struct(tokens, k - 2)
        if k >= 0 and tokens[k].kind == "ident" and tokens[k].text not in NOT_FUNCTIONS:
            return tokens[k].text
        return None
    # struct NAME [: bases] {
    j = k
    while j >= 0 and tokens[j].text not in (";", "{", "}"):
        if tokens[j].text in ("struct", "class") and j + 1 < len(tokens) and tokens[j + 1].kind == "ident":
            return tokens[j + 1].text
        j -= 1
    return None


def _enclosing_struct(tokens: list[Token], k: int) -> str | None:
    depth = 0
    while k >= 0:
        if tokens[k].text == "}":
            depth += 1
        elif tokens[k].text == "{":
            if depth == 0:
                return _body_owner(tokens, k)
            depth -= 1
        k -= 1
    return None


def _is_definition(tokens: list[Token], paren: int) -> bool:
    """`name(...)` starting a declaration (after `{`, `;`, `}`, an access
    specifier or `explicit`/`inline`) and followed by `{` or `:` (a
    constructor's initializers) defines a function, it does not call one."""
    if paren < 2 or tokens[paren - 2].text not in ("{", ";", "}", ":", "explicit", "inline"):
        return False
    close = _matching(tokens, paren, "(", ")")
    k = close + 1
    while k < len(tokens) and tokens[k].text in ("const", "noexcept"):
        k += 1
    return k < len(tokens) and tokens[k].text in ("{", ":")


def _matching_backward(tokens: list[Token], i: int, open_: str, close: str) -> int:
    """Index of the `open_` matching the `close` at tokens[i] (-1 if none)."""
    depth = 0
    for j in range(i, -1, -1):
        if tokens[j].text == close:
            depth += 1
        elif tokens[j].text == open_:
            depth -= 1
            if depth == 0:
                return j
    return -1


def _is_template(tokens: list[Token], kernel_index: int) -> bool:
    k = kernel_index - 1
    while k >= 0 and tokens[k].text == "]]":  # attributes before the kernel
        k = _matching_backward(tokens, k, "[[", "]]") - 1
    if k < 0 or tokens[k].text != ">":
        return False
    k = _matching_backward(tokens, k, "<", ">")
    return k > 0 and tokens[k - 1].text == "template"


def _instantiated_entity(body: list[Token]) -> list[Token]:
    texts = [t.text for t in body]
    if "decltype" in texts:
        k = texts.index("decltype")
        close = _matching(body, k + 1, "(", ")")
        return body[close + 1 :]
    # `kernel void NAME<ARGS>(PARAMS)` form: the entity ends at the parameter list.
    if "void" not in texts:
        raise PrepassError("cannot find the instantiated kernel")
    k = texts.index("void") + 1
    depth = 0
    for j in range(k, len(body)):
        if body[j].text == "<":
            depth += 1
        elif body[j].text == ">":
            depth -= 1
        elif body[j].text == "(" and depth == 0:
            return body[k:j]
    raise PrepassError("cannot find the instantiated kernel")


def _join(tokens: list[Token]) -> str:
    out = ""
    for t in tokens:
        if out and (t.kind in ("ident", "number") and out[-1].isalnum() or out[-1] == "_"):
            out += " "
        out += t.text
    return out


def slot_masks(kernel: Kernel) -> tuple[int, int]:
    """(buffers, threadgroups): bit N set where the kernel declares [[buffer(N)]]
    or [[threadgroup(N)]]. Both backends require each to be set at dispatch:
    the emulator from the registrar below, Metal from the table
    tools/macos_build.py embeds."""
    masks = {"buffer": 0, "threadgroup": 0}
    for role in kernel.roles:
        m = re.match(r"::mps_ops_emu::(buffer|threadgroup)_role<(\d+)>", role)
        if m:
            masks[m.group(1)] |= 1 << int(m.group(2))
    return masks["buffer"], masks["threadgroup"]


def buffer_params(kernel: Kernel, fn: str) -> list[str]:
    """C++ initializers of the kernel's [[buffer(N)]] parameters
    (kernel_abi.h buffer_param), for test/test_bindings.py's check that each
    host stub binds what the kernel declares: the kind from the MSL text
    (`device`/`constant`, pointer or reference), the bytes from the
    instantiated signature (the referenced type, or the pointee)."""
    entries = []
    for index, (param, role) in enumerate(zip(kernel.params, kernel.roles)):
        m = re.match(r"::mps_ops_emu::buffer_role<(\d+)>", role)
        if not m:
            continue
        texts = [t.text for t in param[: [t.text for t in param].index("[[")]]
        is_reference = "&" in texts
        kind = "v" if is_reference else "d" if "device" in texts else "c"
        param_type = f"::mps_ops_emu::kernel_signature<decltype({fn})>::param<{index}>"
        # A pointer parameter is a bounded_ptr here (or a raw pointer).
        size = f"sizeof({param_type})" if is_reference else f"::mps_ops_emu::pointee_size<{param_type}>::value"
        entries.append(f"{{{m.group(1)}u, '{kind}', static_cast<unsigned>({size})}}")
    return entries


def instantiated_kernels(result: Scan, origin: str) -> list[tuple[Instantiation, Kernel]]:
    """Each host-named instantiation with the kernel it instantiates, in source order."""
    if not result.instantiations:
        raise PrepassError(f"{origin}: no [[host_name]] instantiations found")
    pairs = []
    for inst in result.instantiations:
        kernel = result.kernels.get(inst.base_name)
        if kernel is None:
            raise PrepassError(
                f"{origin}: {inst.host_name} instantiates {inst.base_name}, which is not a kernel "
                "with attributed parameters"
            )
        pairs.append((inst, kernel))
    return pairs


def generate(source: str, origin: str, target: str = "emulator") -> str:
    """Preprocessed MSL -> emulator C++, or CUDA C++ with target="cuda"
    (generate_cuda)."""
    if target not in TARGETS:
        raise ValueError(f"unknown prepass target {target!r} (one of {', '.join(TARGETS)})")
    if target == "cuda":
        return generate_cuda(source, origin)
    result = scan(source)
    pairs = instantiated_kernels(result, origin)
    tokens = tokenize(source)
    edits = list(result.threadgroup_edits) + swizzle_edits(tokens) + pointer_edits(tokens)
    edits += [(start, end, " " * (end - start)) for start, end in set(result.attribute_spans)]
    for n, (inst, kernel) in enumerate(pairs):
        if inst.attr_span is not None:
            start, end = inst.attr_span
            edits.append((start, end, " " * (end - start)))  # keep columns and lines
        buffer_mask, threadgroup_mask = slot_masks(kernel)
        names = kernel.body_names | inst.entity_names - {inst.base_name}
        collective = result.is_collective(names)
        declared = "".join(f", {i}" for i in result.threadgroup_declarations(names | {inst.base_name}))
        static_bytes = f"&::mps_ops_emu::declared_threadgroup_bytes<threadgroup_sizes{declared}>"
        launcher = "launch_collective" if collective else "launch"
        fn = f"&{inst.entity}"
        params = buffer_params(kernel, fn)
        params_decl = (f" static const ::mps_ops_emu::buffer_param mps_ops_emu_params_{n}[] = "
                       f"{{{', '.join(params)}}};" if params else "")
        params_ref = f"mps_ops_emu_params_{n}, {len(params)}u" if params else "nullptr, 0u"
        edits.append((inst.end, inst.end,
            f"{params_decl} static const ::mps_ops_emu::registrar mps_ops_emu_kernel_{n}("
            f"::mps_ops_emu::kernel_entry{{\"{inst.host_name}\", \"{origin}\", "
            f"&::mps_ops_emu::{launcher}<decltype({fn}), {fn}, {', '.join(kernel.roles)}>, "
            f"{buffer_mask}u, {threadgroup_mask}u, {'true' if collective else 'false'}, {params_ref}, "
            f"{static_bytes}, {kernel.max_threads or 0}u}});"
        ))
    body = apply_edits(source, edits)
    return (
        "// Generated by tools/msl_prepass.py from " + origin + ". Do not edit.\n"
        "#include <mps_ops_msl/metal_stdlib.h>\n"
        "#include <mps_ops_emulator/launch.h>\n"
        "namespace {\n"
        "// Declared threadgroup variables' sizes, per declaration (threadgroup_memory.h).\n"
        "struct threadgroup_sizes;\n" + body + "\n}  // namespace\n"
    )


def apply_edits(source: str, edits: list) -> str:
    """source with each (start, end, text) edit applied (none overlap)."""
    pieces, last = [], 0
    for start, end, text in sorted(edits):
        pieces.append(source[last:start])
        pieces.append(text)
        last = end
    pieces.append(source[last:])
    return "".join(pieces)


def cuda_roles(kernel: Kernel) -> list[str]:
    """The kernel's roles as launch.h of the CUDA target names them (the same
    role names, in namespace mps_ops_cuda)."""
    return [role.replace("::mps_ops_emu::", "::mps_ops_cuda::", 1) for role in kernel.roles]


def generate_cuda(source: str, origin: str) -> str:
    """Preprocessed MSL -> CUDA C++ for clang (csrc/cuda/include/mps_ops_cuda/).

    The same scan and the same source edits as the emulator's where C++ needs
    them (swizzles, attributes), and none of its bounds checking: pointers
    stay pointers. A `threadgroup T x[N];` declaration becomes function-static
    `__shared__` storage, and behind each [[host_name]] instantiation comes
    an `extern "C" __global__` entry point of that name, which runs the
    kernel with its roles (launch.h). The whole unit is host+device code
    (force_cuda_host_device), so MSL needs no CUDA attributes.
    """
    result = scan(source)
    pairs = instantiated_kernels(result, origin)
    tokens = tokenize(source)
    edits = swizzle_edits(tokens)
    edits += [(start, end, " " * (end - start)) for start, end in set(result.attribute_spans)]
    edits += [(start, end, "static __attribute__((__shared__))")
              for start, end in result.threadgroup_keywords]
    for inst, kernel in pairs:
        if not re.fullmatch(r"[A-Za-z_]\w*", inst.host_name):
            raise PrepassError(f"{origin}: host name {inst.host_name!r} cannot name a CUDA entry point")
        if inst.attr_span is not None:
            start, end = inst.attr_span
            edits.append((start, end, " " * (end - start)))  # keep columns and lines
        fn = f"&{inst.entity}"
        entry = (f"MPS_OPS_CUDA_ENTRY_WITHIN({kernel.max_threads})" if kernel.max_threads
                 else "MPS_OPS_CUDA_ENTRY")
        edits.append((inst.end, inst.end,
            f" {entry} void {inst.host_name}(const ::mps_ops_cuda::dispatch_params args) "
            f"{{ ::mps_ops_cuda::run<decltype({fn}), {fn}, {', '.join(cuda_roles(kernel))}>(args); }}"))
    return (
        "// Generated by tools/msl_prepass.py (target cuda) from " + origin + ". Do not edit.\n"
        "#include <mps_ops_cuda/launch.h>\n"
        "#pragma clang force_cuda_host_device begin\n"
        "namespace {\n" + apply_edits(source, edits) + "\n}  // namespace\n"
        "#pragma clang force_cuda_host_device end\n"
    )


def preprocess(path: str, cxx: str, include_dirs: list[str], *, for_emulator: bool = True) -> str:
    """The .metal file through the C preprocessor with an empty <metal_stdlib>.
    for_emulator=False leaves __MPS_OPS_EMULATOR__ undefined: the source as
    Apple's compiler sees it (tools/macos_build.py's kernel table)."""
    cmd = [cxx, "-E", "-x", "c++", "-std=c++14", "-I", STUB_INCLUDE]
    if for_emulator:
        cmd.append("-D__MPS_OPS_EMULATOR__")
    for d in include_dirs:
        cmd += ["-I", d]
    cmd.append(path)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise PrepassError(proc.stderr)
    return proc.stdout


def write_if_changed(path: str, text: str) -> bool:
    if os.path.exists(path):
        with open(path) as f:
            if f.read() == text:
                return False
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    return True


def translate(metal_path: str, out_path: str, cxx: str, include_dirs: list[str] = (),
              origin: str | None = None, target: str = "emulator") -> bool:
    """Both targets preprocess as the emulator does (__MPS_OPS_EMULATOR__: the
    C++ route, with its workarounds for what C++ deduces differently from
    MSL), so the CUDA entry points are the emulator's kernels."""
    dirs = [KERNEL_INCLUDE, *include_dirs]
    origin = origin or os.path.relpath(metal_path, ROOT)
    text = generate(preprocess(metal_path, cxx, dirs), origin, target)
    return write_if_changed(out_path, text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("metal")
    parser.add_argument("out")
    parser.add_argument("--cxx", default=os.environ.get("CXX", "clang++-16"))
    parser.add_argument("-I", dest="include", action="append", default=[])
    parser.add_argument("--target", choices=TARGETS, default="emulator")
    args = parser.parse_args(argv)
    try:
        translate(args.metal, args.out, args.cxx, args.include, target=args.target)
    except PrepassError as e:
        print(f"msl_prepass: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
