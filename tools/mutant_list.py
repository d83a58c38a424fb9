"""The mutant list (tools/mutants.yaml): its schema, the areas of the code it
covers, and the checks that keep it usable. Read by tools/mutate.py, which
plants the mutants, and by test/test_mutants.py, which checks the list
without building anything.

One mutant: a small realistic bug, written as an exact snippet of one file
(it must occur exactly once there) and its replacement, with the test files
(or pytest node ids) that should catch it.
"""

from __future__ import annotations

import dataclasses
import os

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_LIST = os.path.join(ROOT, "tools", "mutants.yaml")


@dataclasses.dataclass(frozen=True)
class Area:
    name: str
    prefix: str     # a directory ("csrc/kernels/") or one file ("mps_ops/testing.py")
    compiled: bool  # a mutant here needs a rebuild of mps_ops._C


# Where a mutant's file lies decides its area and whether it needs a build.
AREAS = (
    Area("kernels", "csrc/kernels/", True),
    Area("stubs", "csrc/operations/", True),
    Area("runtime", "csrc/runtime/", True),
    Area("emulator", "csrc/emulator/", True),
    Area("testing", "mps_ops/testing.py", False),
)


def area_of(path: str) -> Area | None:
    for area in AREAS:
        if path == area.prefix or (area.prefix.endswith("/") and path.startswith(area.prefix)):
            return area
    return None


@dataclasses.dataclass(frozen=True)
class Mutant:
    id: str
    file: str          # relative to the repository root
    original: str      # occurs exactly once in file
    replacement: str
    bug: str           # one line: the developer's mistake this models
    tests: tuple       # pytest node ids: "test/test_x.py" or "test/test_x.py::test_y[...]"
    timeout: float | None = None  # seconds for the tests; None: the tool's default

    @property
    def area(self) -> Area | None:
        return area_of(self.file)

    @property
    def compiled(self) -> bool:
        area = self.area
        return area is not None and area.compiled


_FIELDS = {f.name for f in dataclasses.fields(Mutant)}


def load(path: str = DEFAULT_LIST) -> list[Mutant]:
    with open(path) as f:
        data = yaml.safe_load(f)
    mutants = []
    for entry in data["mutants"]:
        unknown = set(entry) - _FIELDS
        if unknown:
            raise ValueError(f"mutant {entry.get('id')}: unknown fields {sorted(unknown)}")
        mutants.append(Mutant(**{**entry, "tests": tuple(entry.get("tests") or ())}))
    return mutants


def file_of_node(node_id: str) -> str:
    return node_id.split("::", 1)[0]


def problems(mutants: list[Mutant], root: str = ROOT) -> list[str]:
    """Everything that would make a mutant unusable, one line each."""
    found = []
    seen = set()
    for m in mutants:
        where = f"{m.id}:"
        if m.id in seen:
            found.append(f"{where} id used twice")
        seen.add(m.id)
        if m.area is None:
            found.append(f"{where} {m.file} lies in no area ({', '.join(a.prefix for a in AREAS)})")
        path = os.path.join(root, m.file)
        if not os.path.isfile(path):
            found.append(f"{where} no file {m.file}")
        else:
            with open(path, encoding="utf-8") as f:
                count = f.read().count(m.original)
            if count != 1:
                found.append(f"{where} the original snippet occurs {count} times in {m.file}, not once")
        if not m.original or m.original == m.replacement:
            found.append(f"{where} the replacement must change a non-empty snippet")
        if not m.bug or "\n" in m.bug.strip():
            found.append(f"{where} bug must be one line")
        if not m.tests:
            found.append(f"{where} names no tests")
        for node in m.tests:
            found.extend(f"{where} {p}" for p in _node_problems(node, root))
    return found


def _node_problems(node: str, root: str) -> list[str]:
    path = os.path.join(root, file_of_node(node))
    if not (file_of_node(node).startswith("test/") and os.path.isfile(path)):
        return [f"no test file {file_of_node(node)}"]
    if "::" not in node:
        return []
    function = node.split("::", 1)[1].split("[", 1)[0]
    with open(path, encoding="utf-8") as f:
        if f"def {function}(" not in f.read():
            return [f"no test function {function} in {file_of_node(node)}"]
    return []
