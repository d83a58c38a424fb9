"""The torch releases mps_ops supports, and what the registry says about them.

Nothing here needs the built extension.
"""

from __future__ import annotations

import os
import re
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))

import codegen  # noqa: E402

# shared/ sits beside the repository (the main checkout, a worktree and CI's
# fresh clone alike).
COVERAGE = os.path.join(os.path.dirname(ROOT), "shared", "mps-coverage.md")


def coverage_table() -> tuple[list[str], dict[str, list[str]]]:
    """(releases, overload -> one cell per release) of the first table."""
    with open(COVERAGE) as f:
        lines = f.read().splitlines()
    header = next(i for i, l in enumerate(lines) if l.startswith("| operator |"))
    releases = [c.strip() for c in lines[header].strip("|").split("|")[1:]]
    rows = {}
    for line in lines[header + 2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0]] = cells[1:]
    return releases, rows


@pytest.mark.skipif(not os.path.exists(COVERAGE), reason=f"no {COVERAGE} beside this checkout")
def test_registry_mps_missing_follows_the_coverage_table():
    """An op lists exactly the releases whose MPS backend lacks every one of its
    overloads; a release that lacks some but not all would be a registry bug."""
    releases, rows = coverage_table()
    for entry in codegen.load_registry():
        cells = [rows[overload] for overload in entry.impl]
        expected = []
        for i, release in enumerate(releases):
            states = {row[i] for row in cells} - {"n/a"}
            assert states in ({"missing"}, {"."}, set()), (entry.name, release, states)
            if states == {"missing"}:
                expected.append(release)
        assert list(entry.mps_missing) == expected, entry.name
