"""What C++ accepts and Apple's Metal compiler rejects, found in MSL source
text: one lint for the kernel files (tools/check_msl.py) and for every
compile_shader source, so the emulator never runs what a Mac would refuse.

Pure Python with no import of the extension: tools load it by path.
"""

from __future__ import annotations

import re

FORBIDDEN = [
    (re.compile(r"\bdouble\b"), "double (Metal has no double)"),
    (re.compile(r"\bstd\s*::"), "std:: (no C++ standard library in MSL)"),
    (re.compile(r"\b(throw|try|catch)\b"), "exceptions"),
    (re.compile(r"\b(new|delete)\b"), "new/delete"),
    (re.compile(r"\bvirtual\b"), "virtual functions"),
    (re.compile(r"\bgoto\b"), "goto"),
    (re.compile(r"\b(dynamic_cast|typeid)\b"), "RTTI"),
    (re.compile(r"\b(asm|__asm__|__asm)\b"), "inline assembly"),
    (re.compile(r"\bif\s+constexpr\b"), "if constexpr (C++17; MSL 3 is C++14)"),
    (re.compile(r"#\s*include\s*<(?!metal_)[^>]*>(?<!\.h>)"), "standard library headers"),
    # static member functions are fine: a declaration whose "(" comes before
    # any "=" or ";" declares a function, not storage.
    (re.compile(r"\bstatic\b(?!\s*(_assert|_cast|constexpr\s+\w+\s*\w*\s*\())(?![^;=(]*\()"),
     "static variables (no static storage in MSL)"),
    (re.compile(r"\b(texture[123]d\w*|depth2d\w*|sampler)\b"), "textures/samplers (not emulated)"),
]

# Statements at namespace scope that declare no storage.
_DECLARATIONS = re.compile(r"^(constant|constexpr|typedef|using|template|namespace|struct|class|union|enum|"
                           r"static_assert)\b")


def strip_comments_and_strings(text: str) -> str:
    """Comments and string literals blanked, line structure kept."""
    def blank(m):
        return re.sub(r"[^\n]", " ", m.group())

    return re.sub(r'//[^\n]*|/\*.*?\*/|"(?:[^"\\\n]|\\.)*"', blank, text, flags=re.S)


def _namespace_scope_variables(text: str) -> list:
    """(line, what) for variables at namespace scope outside the constant
    address space: MSL has no such storage, and in the emulator their
    constructors would run when the library loads."""
    text = re.sub(r"^[ \t]*#[^\n]*", lambda m: " " * len(m.group()), text, flags=re.M)
    found, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                start = i + 1
        elif ch == ";" and depth == 0:
            statement = text[start:i].strip()
            if statement and "(" not in statement and not _DECLARATIONS.match(statement) and \
                    not statement.startswith("namespace"):
                line = text.count("\n", 0, start + len(text[start:i]) - len(text[start:i].lstrip())) + 1
                found.append((line, "a variable at namespace scope (MSL allows only constant ones)"))
            start = i + 1
    return found


def problems(text: str) -> list:
    """(line, what) for every construct of `text` that MSL forbids."""
    clean = strip_comments_and_strings(text)
    found = [(lineno, what) for lineno, line in enumerate(clean.splitlines(), 1)
             for pattern, what in FORBIDDEN if pattern.search(line)]
    return sorted(found + _namespace_scope_variables(clean))


def self_calls(unqualified_calls: dict) -> list:
    """Function names that call themselves directly (MSL forbids recursion),
    from the prepass's scan."""
    return sorted(name for name, names in unqualified_calls.items() if name in names)
