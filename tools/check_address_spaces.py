"""Strict address-space check of every kernel source.

    python tools/check_address_spaces.py [--clang clang++-16] [--timing] [FILE.metal ...]

With no files it checks every csrc/kernels/*.metal (and the headers they
include). Exit status 1 on any problem.

The emulator compiles kernels as C++ with `device`, `thread`, `threadgroup`
as empty macros and `constant` as `const`, so address-space mistakes that
Apple's Metal compiler rejects pass there. This check compiles each file a
second time, as C++ for OpenCL 2021 (clang -x clcpp -cl-std=clc++2021
-fsyntax-only), where address spaces are part of the type system:

1. the file is preprocessed as the emulator prepass does it
   (msl_prepass.preprocess: MSL keywords and attributes kept);
2. what OpenCL C++ cannot parse or types differently from MSL is adjusted,
   keeping line markers (and columns, except on rewritten lines) so that
   errors point into the .metal/.h sources:
   * MSL attributes (`[[buffer(0)]]`, `[[thread_position_in_grid]]`,
     `[[host_name("...")]]`, `[[kernel]]`) are blanked;
   * vector constructors `float4(a, b)` become calls of a declared helper
     (OpenCL C++ only has `(float4)(a, b)` literals);
   * `threadgroup T x[N];` in a function body becomes a reference to
     threadgroup storage (OpenCL allows __local variables only in kernel
     functions, and kernels are compiled as ordinary functions here: an
     OpenCL kernel cannot be a template);
   * each struct/class defined in the sources gets defaulted copy
     constructors and assignments between all address spaces, on lines of
     their own behind a line marker (clang's implicit ones are for thread
     objects only, and MSL copies structs in and out of device, constant and
     threadgroup memory);
3. tools/addrspace_stub/metal_stdlib_cl.h is included first: it maps
   device -> __global, constant -> __constant, threadgroup -> __local,
   thread -> __private, renames identifiers OpenCL reserves (local, global,
   generic, pipe, read_write, atomic_int, ...), and declares the metal::
   library with MSL's address spaces in its signatures;
4. clang runs with the generic address space and program-scope global
   variables switched off (-cl-ext=-__opencl_c_generic_address_space,...).
   MSL has no generic address space: a pointer or reference written with no
   address space is a thread one, so passing a device pointer where `float*`
   is expected fails, as does calling a member function that is not
   `device`-qualified on a device object; and a program-scope variable must
   be `constant`, as in MSL;
5. kernel parameters are checked here (clang sees kernels as ordinary
   functions): a pointer or reference argument must be device, constant or
   threadgroup, `[[buffer(n)]]` needs a device/constant pointer or reference,
   `[[threadgroup(n)]]` a threadgroup one, built-ins are values.
6. clang gives temporaries (a function's result, a value bound to a const
   reference) no address space, so they cannot bind a thread reference or
   call a thread member function; in MSL they are thread objects. Errors
   whose only cause is that are dropped (see _is_temporary_quirk); so are
   those of by-value parameters of templates, which clang leaves without an
   address space too.
Diagnostics are printed with MSL's spellings (device, constant,
threadgroup, thread) and repository-relative paths.

Known false positives (valid MSL that fails here; write around them):
* copying across address spaces an object of a class that declares its own
  constructor or assignment (those classes get no defaulted copies).
* boolN from vector comparisons (`bool4 m = a < b;`): clang has no bool
  vectors; OpenCL comparisons give intN. `vec<T, N>(...)` constructors.
* textures, samplers, matrices and anything else the stand-in header does
  not declare yet: extend the header.
Known misses:
* template code is checked where it does not depend on the template
  parameters and in each explicit instantiation; a template that is never
  instantiated is not checked in its dependent parts;
* rules of vertex/fragment/tile functions, textures, argument buffers;
* code under `#ifdef __MPS_OPS_EMULATOR__` (defined while preprocessing) is
  what gets checked, not its Metal alternative.
"""

from __future__ import annotations

import argparse
import bisect
import glob
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
KERNEL_DIR = os.path.join(ROOT, "csrc", "kernels")
KERNEL_INCLUDE = os.path.join(KERNEL_DIR, "include")
STUB_HEADER = os.path.join(HERE, "addrspace_stub", "metal_stdlib_cl.h")
sys.path.insert(0, HERE)

import msl_prepass  # noqa: E402

CLANG_CANDIDATES = ("clang++-16", "clang++-17", "clang++-18", "clang++-19", "clang++")

# OpenCL 3.0 features that the check switches off. Device enqueue and pipes
# depend on the first two, so they go too.
CL_EXT = ("-__opencl_c_generic_address_space,-__opencl_c_program_scope_global_variables,"
          "-__opencl_c_device_enqueue,-__opencl_c_pipes")

CLANG_FLAGS = [
    "-x", "clcpp", "-cl-std=clc++2021",
    "-cl-no-stdinc",              # no OpenCL builtins: the stand-in declares what MSL has
    "-Xclang", "-cl-ext=" + CL_EXT,
    "-fsyntax-only",
    "-w",                          # errors only
    "-Wno-c++11-narrowing",
    "-fno-color-diagnostics",
    "-ferror-limit=50",
]

ADDRESS_SPACES = {"device", "constant", "threadgroup", "thread"}
KERNEL_ARGUMENT_SPACES = {"device", "constant", "threadgroup"}
# Standard attributes stay; everything else in [[...]] is MSL's and is blanked.
STANDARD_ATTRIBUTES = {
    "noreturn", "carries_dependency", "deprecated", "fallthrough", "nodiscard",
    "maybe_unused", "likely", "unlikely", "no_unique_address", "clang", "gnu",
}
VECTOR_TYPES = {
    f"{t}{n}"
    for t in ("bool", "char", "uchar", "short", "ushort", "int", "uint", "long", "ulong",
              "half", "bfloat", "float")
    for n in (2, 3, 4)
}
# Keywords and qualifiers that may sit between a function's ')' and its body.
AFTER_PARAMS = {"const", "volatile", "noexcept", "override", "final", *ADDRESS_SPACES}

TOKEN_RE = re.compile(
    r"""
    (?P<marker>^[ \t]*\#[^\n]*)
  | (?P<ws>\s+)
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<char>'(?:[^'\\\n]|\\.)*')
  | (?P<number>\.?\d(?:[\w.]|[eEpP][+-])*)
  | (?P<ident>[A-Za-z_]\w*)
  | (?P<punct>::|->|[^\s\w])
    """,
    re.VERBOSE | re.MULTILINE,
)
LINE_MARKER_RE = re.compile(r'^[ \t]*#(?:line)?[ \t]+(\d+)[ \t]+"((?:[^"\\]|\\.)*)"')


Token = msl_prepass.Token


def tokenize(source: str) -> list[Token]:
    return [
        Token(m.lastgroup, m.group(), m.start(), m.end())
        for m in TOKEN_RE.finditer(source)
        if m.lastgroup not in ("ws", "marker")
    ]


class SourceMap:
    """Offset in the preprocessed text -> (file, line) through its line markers."""

    def __init__(self, text: str):
        self.starts, self.places = [], []
        file, line, offset = "<unknown>", 1, 0
        for raw in text.splitlines(keepends=True):
            m = LINE_MARKER_RE.match(raw)
            self.starts.append(offset)
            self.places.append((file, line))
            if m:
                line, file = int(m.group(1)), m.group(2).encode().decode("unicode_escape")
            else:
                line += 1
            offset += len(raw)

    def place(self, offset: int) -> tuple[str, int, int]:
        """(file, line, column) of an offset, column counted from 1."""
        i = max(bisect.bisect_right(self.starts, offset) - 1, 0)
        file, line = self.places[i]
        return file, line, offset - self.starts[i] + 1

    def __call__(self, offset: int) -> str:
        file, line, _ = self.place(offset)
        return f"{display_path(file)}:{line}"


def display_path(path: str) -> str:
    if os.path.isabs(path):
        rel = os.path.relpath(path, ROOT)
        if not rel.startswith(".."):
            return rel
    return path


def _matching(tokens: list[Token], i: int, open_: str, close: str) -> int:
    return msl_prepass.matching(tokens, i, open_, close, strict=False)


def _is_attribute_start(tokens: list[Token], i: int) -> bool:
    return (tokens[i].text == "[" and i + 1 < len(tokens) and tokens[i + 1].text == "["
            and tokens[i + 1].start == tokens[i].end)


def _split_top_level(tokens: list[Token], sep: str = ",") -> list[list[Token]]:
    parts, current, depth = [], [], 0
    for t in tokens:
        if t.text in ("(", "[", "{", "<"):
            depth += 1
        elif t.text in (")", "]", "}", ">"):
            depth -= 1
        if t.text == sep and depth == 0:
            parts.append(current)
            current = []
        else:
            current.append(t)
    if current:
        parts.append(current)
    return parts


def _top_level_texts(tokens: list[Token]) -> list[str]:
    """Token texts outside any (), [], <> nesting."""
    out, depth = [], 0
    for t in tokens:
        if t.text in ("(", "[", "<"):
            depth += 1
        elif t.text in (")", "]", ">"):
            depth -= 1
        elif depth == 0:
            out.append(t.text)
    return out


def check_kernel_parameters(tokens: list[Token], where: SourceMap) -> list[str]:
    """MSL's rules for kernel arguments, which clang cannot see here."""
    problems = []
    for i, tok in enumerate(tokens):
        if tok.text == "kernel" and tok.kind == "ident":
            j = i + 1
        elif _is_attribute_start(tokens, i) and i + 3 < len(tokens) and \
                tokens[i + 2].text == "kernel" and tokens[i + 3].text == "]":
            j = _matching(tokens, i, "[", "]") + 1
        else:
            continue
        if not (j + 2 < len(tokens) and tokens[j].text == "void"
                and tokens[j + 1].kind == "ident" and tokens[j + 2].text == "("):
            continue
        name = tokens[j + 1].text
        close = _matching(tokens, j + 2, "(", ")")
        for param in _split_top_level(tokens[j + 3 : close]):
            attr, decl = None, param
            for k in range(len(param)):
                if _is_attribute_start(param, k):
                    attr = param[k + 2].text if k + 2 < len(param) else None
                    decl = param[:k]
                    break
            texts = _top_level_texts(decl)
            pname = next((t.text for t in reversed(decl) if t.kind == "ident"), "?")
            spaces = ADDRESS_SPACES.intersection(texts)
            indirect = "*" in texts or "&" in texts
            space = next(iter(spaces), None)
            what = f"kernel {name}, parameter {pname}"
            here = where(param[0].start) if param else where(tok.start)
            if indirect and not spaces.intersection(KERNEL_ARGUMENT_SPACES):
                problems.append(
                    f"{here}: error: {what}: a pointer or reference argument of a kernel must be "
                    f"in the device, constant or threadgroup address space, not "
                    f"{space or 'unqualified (thread)'}")
            elif attr == "buffer" and not (indirect and space in ("device", "constant")):
                problems.append(
                    f"{here}: error: {what}: a [[buffer(n)]] argument must be a device or "
                    f"constant pointer or reference")
            elif attr == "threadgroup" and not (indirect and space == "threadgroup"):
                problems.append(
                    f"{here}: error: {what}: a [[threadgroup(n)]] argument must be a "
                    f"threadgroup pointer or reference")
            elif attr not in (None, "buffer", "threadgroup") and indirect:
                problems.append(
                    f"{here}: error: {what}: the built-in [[{attr}]] is passed by value")
    return problems


def _code_braces(tokens: list[Token]) -> set[int]:
    """Indices of '{' tokens that open a function body or a block inside one."""
    code, stack = set(), []
    for i, tok in enumerate(tokens):
        if tok.text == "{":
            inside = bool(stack) and stack[-1]
            if not inside:
                k = i - 1
                while k >= 0 and (tokens[k].text in AFTER_PARAMS or tokens[k].text == "]"):
                    if tokens[k].text == "]":  # trailing attribute
                        depth = 0
                        while k >= 0:
                            depth += tokens[k].text == "]"
                            depth -= tokens[k].text == "["
                            if depth == 0:
                                break
                            k -= 1
                    k -= 1
                inside = k >= 0 and tokens[k].text == ")"
            stack.append(inside)
            if inside:
                code.add(i)
        elif tok.text == "}" and stack:
            stack.pop()
    return code


def _struct_copy_edits(tokens: list[Token], where: SourceMap) -> list[tuple[int, int, str]]:
    """Give each struct/class defined in the kernel sources copy constructors
    and copy assignments for every pair of address spaces, all defaulted.

    MSL copies a struct out of device, constant or threadgroup memory and
    assigns one there (`Params p = *params;`, `out[i] = s;`); clang's
    implicit special members are for thread objects only. Defaulted on their
    first declaration they keep an aggregate an aggregate (C++17) and are
    deleted where the members cannot be copied. Classes that declare a
    constructor or an assignment of their own are left alone, so nothing is
    redeclared; the defaulted default constructor would be wrong for them.
    """
    edits = []
    for i, tok in enumerate(tokens):
        if tok.kind != "ident" or tok.text not in ("struct", "class"):
            continue
        if i > 0 and tokens[i - 1].text in ("enum", "<", ",", "template"):
            continue
        j = i + 1
        while j < len(tokens):  # alignas(...) and attributes before the name
            if tokens[j].text == "alignas" and j + 1 < len(tokens) and tokens[j + 1].text == "(":
                j = _matching(tokens, j + 1, "(", ")") + 1
            elif _is_attribute_start(tokens, j):
                j = _matching(tokens, j, "[", "]") + 1
            else:
                break
        if j >= len(tokens) or tokens[j].kind != "ident":
            continue
        name = tokens[j].text
        k, depth, bases = j + 1, 0, False
        while k < len(tokens):
            t = tokens[k].text
            if t == "<":
                depth += 1
            elif t == ">":
                depth -= 1
            elif depth == 0:
                if t == "{":
                    break
                if t == ":":
                    bases = True
                elif t in (";", "(", ")", "=") or (t == "," and not bases):
                    k = len(tokens)
                    break
            k += 1
        if k >= len(tokens):
            continue  # a declaration or use, not a definition
        close = _matching(tokens, k, "{", "}")
        body = tokens[k + 1 : close]
        declares_own = any(
            (b.text == name and n + 1 < len(body) and body[n + 1].text == "("
             and (n == 0 or body[n - 1].text not in (".", "->", "~")))
            or (b.text == "operator" and n + 1 < len(body) and body[n + 1].text == "=")
            for n, b in enumerate(body))
        if declares_own:
            continue
        members = [f"{name}() = default;"]
        members += [f"{name}(const {src}{name}&) = default;" for src in _SPACES_FROM]
        for this in ("", "__global ", "__local "):
            for src in _SPACES_FROM:
                members.append(f"{this}{name}& operator=(const {src}{name}&) {this}= default;")
        # On lines of their own, then a line marker and padding that put the
        # '}' back where it was: diagnostics after it keep their columns.
        file, line, column = where.place(tokens[close].start)
        quoted = file.replace("\\", "\\\\").replace('"', '\\"')
        edits.append((tokens[close].start, tokens[close].start,
                      f'\n# 1 "<{name}: copies between address spaces, added by the check>"\n'
                      f"public: {' '.join(members)}\n"
                      f'# {line} "{quoted}"\n' + " " * (column - 1)))
    return edits


_SPACES_FROM = ("", "__global ", "__constant ", "__local ")


def rewrite(source: str) -> tuple[str, list[str]]:
    """Preprocessed MSL -> text for clang -x clcpp, and the kernel-parameter problems."""
    where = SourceMap(source)
    tokens = tokenize(source)
    problems = check_kernel_parameters(tokens, where)
    edits: list[tuple[int, int, str]] = []

    # 1. MSL attributes: blanked, keeping lines and columns.
    i = 0
    while i < len(tokens):
        if _is_attribute_start(tokens, i):
            end = _matching(tokens, i, "[", "]")
            name = tokens[i + 2].text if i + 2 < len(tokens) else ""
            if name not in STANDARD_ATTRIBUTES:
                start, stop = tokens[i].start, tokens[end].end
                edits.append((start, stop, re.sub(r"[^\n]", " ", source[start:stop])))
            i = end + 1
        else:
            i += 1

    # 2. threadgroup storage declared in a function body.
    code = _code_braces(tokens)
    stack = []
    for i, tok in enumerate(tokens):
        if tok.text == "{":
            stack.append(i in code)
        elif tok.text == "}" and stack:
            stack.pop()
        if not (tok.text == "threadgroup" and stack and stack[-1]
                and tokens[i - 1].text in ("{", ";", "}")):
            continue
        j = i + 1
        while j < len(tokens) and tokens[j].text != ";":
            j += 1
        decl = tokens[i + 1 : j]
        texts = [t.text for t in decl]
        first_dim = texts.index("[") if "[" in texts else len(texts)
        # (A `*` inside the dims is a product: the array is still storage.)
        if not decl or any(t in texts[:first_dim] for t in ("*", "&")) or \
                any(t in texts for t in ("(", "=", ",", "{")):
            continue  # a pointer/reference, or a form MSL rejects anyway: left to clang
        if first_dim == 0 or decl[first_dim - 1].kind != "ident":
            continue
        name = decl[first_dim - 1]
        type_text = source[decl[0].start : name.start] + (
            source[decl[first_dim].start : decl[-1].end] if first_dim < len(decl) else "")
        type_text = " ".join(type_text.split())
        storage = f"::metal::cl_detail::threadgroup_storage<{type_text}>()"
        edits.append((tok.start, tokens[j].end, f"auto& {name.text} = {storage};"))

    # 3. Vector constructors: OpenCL C++ has only (float4)(...) literals.
    for i, tok in enumerate(tokens):
        if not (tok.text in VECTOR_TYPES and i + 1 < len(tokens) and tokens[i + 1].text == "("):
            continue
        start = tok.start
        if i >= 2 and tokens[i - 1].text == "::" and tokens[i - 2].text == "metal":
            start = tokens[i - 2].start  # metal::float4(...)
            if i >= 3 and tokens[i - 3].text == "::":
                start = tokens[i - 3].start
        elif i > 0 and tokens[i - 1].text in ("operator", "::", ".", "->"):
            continue
        edits.append((start, tok.end, f"::metal::cl_detail::make_vector<{tok.text}>"))

    # 3b. The same for the template spelling `metal::vec<T, N>(...)`, which
    # also converts one vector to another element type (MSL's conversion;
    # clang would take a functional cast between ext vectors for a bitcast).
    for i, tok in enumerate(tokens):
        if tok.text != "vec" or i + 1 >= len(tokens) or tokens[i + 1].text != "<":
            continue
        depth, j = 0, i + 1
        while j < len(tokens):
            depth += {"<": 1, ">": -1}.get(tokens[j].text, 0)
            if depth == 0:
                break
            j += 1
        if j + 1 >= len(tokens) or tokens[j + 1].text != "(":
            continue
        start = tok.start
        if i >= 2 and tokens[i - 1].text == "::" and tokens[i - 2].text == "metal":
            start = tokens[i - 2].start
        type_text = " ".join(source[tok.start : tokens[j].end].split())
        edits.append((start, tokens[j].end, f"::metal::cl_detail::make_vector<::metal::{type_text}>"))

    # 4. Copies of the kernels' own structs between address spaces.
    edits += _struct_copy_edits(tokens, where)

    pieces, last = [], 0
    for start, end, text in sorted(edits):
        if start < last:
            continue  # nested in an earlier edit (an attribute's argument)
        pieces.append(source[last:start])
        pieces.append(text)
        last = end
    pieces.append(source[last:])
    return "".join(pieces), problems


_DIAGNOSTIC_RE = re.compile(r"^(.*?):(\d+):(\d+): (error|warning|note|fatal error): ")
_SPELLINGS = [
    (re.compile(r"\b__global\b"), "device"),
    (re.compile(r"\b__constant\b"), "constant"),
    (re.compile(r"\b__local\b"), "threadgroup"),
    (re.compile(r"\b__private\b"), "thread"),
    (re.compile(r"\bmsl_identifier_(\w+)"), r"\1"),
]


_NAMED_SPACE_RE = re.compile(r"__(?:global|constant|local|private)\b")
_OBJECT_PARAMETER_RE = re.compile(
    r"cannot initialize object parameter of type '([^']*)' with an expression of type '([^']*)'")
_BIND_VALUE_RE = re.compile(
    r"binding reference of type '([^']*)' to value of type '([^']*)' changes address space")
_DEFAULT_TO_PRIVATE = (
    "'this' object is in default address space, but method expects object in address space "
    "'__private'",
    "cannot bind reference in default address space to object in address space '__private'",
    # A by-value parameter of a template gets no address space either; MSL
    # copies into it from any address space.
    "cannot be used to construct an object in address space unqualified",
)


def _is_temporary_quirk(line: str) -> bool:
    """clang gives temporaries (prvalues materialized from a function's result
    or bound to a const reference) no address space at all, so they cannot be
    bound to a thread reference or be the object of a thread member function.
    In MSL they are thread objects: such a diagnostic is not a Metal error."""
    if any(text in line for text in _DEFAULT_TO_PRIVATE):
        return True
    for pattern in (_OBJECT_PARAMETER_RE, _BIND_VALUE_RE):
        m = pattern.search(line)
        if m and "__private" in m.group(1) and not _NAMED_SPACE_RE.search(m.group(2)):
            return True
    return False


_REASONLESS_SUBSTITUTION_RE = re.compile(r"note: candidate template ignored: substitution failure \[[^\]]*\]$")


def _is_quirk_cascade(block: list[str]) -> bool:
    """A call whose only candidates failed substitution without a reason:
    clang gives none where the same specialization failed to instantiate
    before, which the temporary quirk makes happen (its first failure is left
    out above); a real substitution failure names its reason."""
    candidates = [line for line in block if "note: candidate" in line]
    return (any("no matching function for call" in line for line in block) and bool(candidates)
            and all(_REASONLESS_SUBSTITUTION_RE.search(line) for line in candidates))


def error_blocks(stderr: str) -> tuple[list[str], int]:
    """clang's output, one entry per error with its notes and include stack,
    leaving out the errors that only come from the temporary quirk; and how
    many errors there were in all."""
    blocks, prefix = [], []
    for line in stderr.splitlines():
        m = _DIAGNOSTIC_RE.match(line)
        if m and m.group(4) in ("error", "fatal error"):
            blocks.append(prefix + [line])
            prefix = []
        elif line.startswith("In file included from ") or line.startswith("                 from "):
            prefix.append(line)
        elif re.match(r"^\d+ errors? generated\.$", line):
            continue
        elif blocks:
            blocks[-1].append(line)
        else:
            prefix.append(line)
    kept = [b for b in blocks if not any(_is_temporary_quirk(line) for line in b) and not _is_quirk_cascade(b)]
    if all("too many errors emitted" in "".join(b) for b in kept):
        kept = []
    return ["\n".join(b) for b in kept], len(blocks)


def translate_diagnostics(stderr: str) -> str:
    """clang's OpenCL spellings -> MSL's, and repository-relative paths."""
    out = []
    for line in stderr.splitlines():
        m = _DIAGNOSTIC_RE.match(line)
        if m:
            rest = line[m.end():]
            for pattern, repl in _SPELLINGS:
                rest = pattern.sub(repl, rest)
            line = f"{display_path(m.group(1))}:{m.group(2)}:{m.group(3)}: {m.group(4)}: {rest}"
        elif line.startswith("In file included from "):
            line = re.sub(r"from (.*?):(\d+)",
                          lambda x: f"from {display_path(x.group(1))}:{x.group(2)}", line)
        out.append(line)
    return "\n".join(out)


def find_clang(requested: str | None = None) -> str:
    for name in ([requested] if requested else
                 [os.environ.get("MPS_OPS_CLCPP_CLANG"), *CLANG_CANDIDATES]):
        if name and shutil.which(name):
            return name
    raise FileNotFoundError(
        f"no clang for the address-space check (tried {requested or ', '.join(CLANG_CANDIDATES)}); "
        "clang >= 14 is needed for -cl-std=clc++2021")


def check_file(path: str, clang: str, include_dirs: list[str] | None = None) -> list[str]:
    """Problems of one .metal file, each a printable diagnostic (possibly multi-line)."""
    dirs = [*(include_dirs or []), KERNEL_INCLUDE]  # extra directories first: they may override
    try:
        source = msl_prepass.preprocess(path, clang, dirs)
    except msl_prepass.PrepassError as e:
        return [f"{display_path(path)}: preprocessing failed:\n{e}"]
    text, problems = rewrite(source)
    proc = subprocess.run(
        [clang, *CLANG_FLAGS, "-include", STUB_HEADER, "-"],
        input=text, capture_output=True, text=True,
    )
    if proc.returncode != 0:
        kept, total = error_blocks(proc.stderr)
        problems += [translate_diagnostics(b).rstrip() for b in kept]
        if total == 0:  # no diagnostics to show: clang itself failed
            problems.append(f"{display_path(path)}: clang failed with status "
                            f"{proc.returncode}:\n{proc.stderr}")
    return problems


def kernel_files() -> list[str]:
    return sorted(glob.glob(os.path.join(KERNEL_DIR, "*.metal")))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", help=".metal files (default: csrc/kernels/*.metal)")
    parser.add_argument("--clang", help="clang++ to use (default: clang++-16, then newer)")
    parser.add_argument("-I", dest="include", action="append", default=[],
                        help="extra include directory")
    parser.add_argument("--timing", action="store_true", help="print the time per file")
    parser.add_argument("--dump", metavar="DIR",
                        help="write each file's clcpp translation unit to DIR (debugging)")
    args = parser.parse_args(argv)
    try:
        clang = find_clang(args.clang)
    except FileNotFoundError as e:
        print(f"check_address_spaces: {e}", file=sys.stderr)
        return 2
    files = args.files or kernel_files()
    if not files:
        print("check_address_spaces: no .metal files", file=sys.stderr)
        return 1
    problems = 0
    for path in files:
        if args.dump:
            os.makedirs(args.dump, exist_ok=True)
            text, _ = rewrite(msl_prepass.preprocess(path, clang, [*args.include, KERNEL_INCLUDE]))
            out = os.path.join(args.dump, os.path.basename(path) + ".clcpp")
            with open(out, "w") as f:
                f.write(text)
        start = time.perf_counter()
        found = check_file(path, clang, args.include)
        if args.timing:
            print(f"{display_path(path)}: {time.perf_counter() - start:.2f} s", file=sys.stderr)
        for p in found:
            print(p, file=sys.stderr)
        problems += len(found)
    print(f"check_address_spaces: {len(files)} .metal files, {problems} problems ({clang})")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
