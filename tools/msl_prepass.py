"""Turn a .metal file into a C++ translation unit for the CPU emulator.

What a header cannot do, this pass does over the preprocessed source (MSL
keywords and attributes kept, since the real <metal_stdlib> stand-in is only
included afterwards):

* find every kernel (``kernel void f(...)`` or ``[[kernel]] void f(...)``) and
  read each parameter's role from its attribute (``[[buffer(N)]]`` or a
  thread-position built-in);
* find every ``template [[host_name("...")]] ...;`` instantiation, strip the
  attribute (clang rejects it after ``template``) and register a launcher
  right behind it, in the same scope, whose parameter types the compiler takes
  from the kernel through decltype;
* keep line markers so that compiler errors point into the .metal source.

Usable as a module (setup.py) and as a command:
    python tools/msl_prepass.py KERNEL.metal OUT.cpp [--cxx clang++-16] [-I DIR]...
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
STUB_INCLUDE = os.path.join(HERE, "msl_stub_include")
KERNEL_INCLUDE = os.path.join(ROOT, "csrc", "kernels", "include")

BUILTIN_ROLES = {
    "thread_position_in_grid",
    "thread_position_in_threadgroup",
    "threadgroup_position_in_grid",
    "threads_per_grid",
    "threads_per_threadgroup",
    "threadgroups_per_grid",
    "thread_index_in_threadgroup",
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


@dataclass
class Instantiation:
    host_name: str
    entity: str  # e.g. "unary_dense<float, ndtri_functor>"
    base_name: str
    attr_span: tuple[int, int]
    end: int  # offset just past the closing ';'


@dataclass
class Scan:
    kernels: dict[str, Kernel] = field(default_factory=dict)
    instantiations: list[Instantiation] = field(default_factory=list)


def _matching(tokens: list[Token], i: int, open_: str, close: str) -> int:
    depth = 0
    for j in range(i, len(tokens)):
        if tokens[j].text == open_:
            depth += 1
        elif tokens[j].text == close:
            depth -= 1
            if depth == 0:
                return j
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
    if attr in BUILTIN_ROLES:
        return f"::mps_ops_emu::{attr}_role"
    raise PrepassError(
        f"kernel {kernel}: parameter attribute [[{attr}]] is not supported by the emulator yet"
    )


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
                        result.kernels.setdefault(name, Kernel(name, roles))
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
                    (tokens[i + 1].start, tokens[attr_end].end),
                    tokens[semi].end,
                )
            )
            i = semi
        i += 1
    return result


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


def generate(source: str, origin: str) -> str:
    """Preprocessed MSL -> emulator C++."""
    result = scan(source)
    if not result.instantiations:
        raise PrepassError(f"{origin}: no [[host_name]] instantiations found")
    pieces, last = [], 0
    for n, inst in enumerate(result.instantiations):
        kernel = result.kernels.get(inst.base_name)
        if kernel is None:
            raise PrepassError(
                f"{origin}: {inst.host_name} instantiates {inst.base_name}, which is not a kernel "
                "with attributed parameters"
            )
        start, end = inst.attr_span
        pieces.append(source[last:start])
        pieces.append(" " * (end - start))  # keep columns; line numbers stay intact
        pieces.append(source[end : inst.end])
        buffer_mask = 0
        for role in kernel.roles:
            m = re.match(r"::mps_ops_emu::buffer_role<(\d+)>", role)
            if m:
                buffer_mask |= 1 << int(m.group(1))
        fn = f"&{inst.entity}"
        pieces.append(
            f" static const ::mps_ops_emu::registrar mps_ops_emu_kernel_{n}("
            f"::mps_ops_emu::kernel_entry{{\"{inst.host_name}\", \"{origin}\", "
            f"&::mps_ops_emu::launch<decltype({fn}), {fn}, {', '.join(kernel.roles)}>, "
            f"{buffer_mask}u}});"
        )
        last = inst.end
    pieces.append(source[last:])
    body = "".join(pieces)
    return (
        "// Generated by tools/msl_prepass.py from " + origin + ". Do not edit.\n"
        "#include <mps_ops_emulator/metal_stdlib.h>\n"
        "#include <mps_ops_emulator/launch.h>\n"
        "namespace {\n" + body + "\n}  // namespace\n"
    )


def preprocess(path: str, cxx: str, include_dirs: list[str]) -> str:
    cmd = [cxx, "-E", "-x", "c++", "-std=c++14", "-D__MPS_OPS_EMULATOR__", "-I", STUB_INCLUDE]
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
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    return True


def translate(metal_path: str, out_path: str, cxx: str, include_dirs: list[str] = ()) -> bool:
    dirs = [KERNEL_INCLUDE, *include_dirs]
    text = generate(preprocess(metal_path, cxx, dirs), os.path.relpath(metal_path, ROOT))
    return write_if_changed(out_path, text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("metal")
    parser.add_argument("out")
    parser.add_argument("--cxx", default=os.environ.get("CXX", "clang++-16"))
    parser.add_argument("-I", dest="include", action="append", default=[])
    args = parser.parse_args(argv)
    try:
        translate(args.metal, args.out, args.cxx, args.include)
    except PrepassError as e:
        print(f"msl_prepass: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
