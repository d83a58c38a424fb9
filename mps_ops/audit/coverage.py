"""The per-release MPS data (mps_ops/data/mps_coverage.json, derived from the
released macOS wheels by tools/mps_coverage.py): what each aten overload
runs on a Mac, release by release."""

from __future__ import annotations

import functools
import json
import os

import torch

from .._registry import torch_release

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "mps_coverage.json")

# The data's letters, in words (its "legend" says the same at length).
STATUS_WORDS = {
    "M": "metal",
    "G": "mpsgraph",
    "B": "metal+mpsgraph",
    "C": "composite",
    "X": "missing",
    "P": "cpu",
    "-": "undefined",
    "?": "unknown",
}


@functools.lru_cache(maxsize=1)
def data() -> dict:
    with open(DATA) as f:
        return json.load(f)


def releases() -> list:
    return data()["releases"]


def release_of(version: str | None) -> str:
    """The data's release ("2.13.0") for a torch version ("2.13", "2.13.0",
    "2.13.0+cpu"; None: the running torch). ValueError for one it lacks."""
    wanted = torch_release(version)
    for release in releases():
        if torch_release(release) == wanted:
            return release
    raise ValueError(f"mps_ops.audit: no MPS data for torch {wanted}; the data covers "
                     f"{', '.join(releases())} (tools/mps_coverage.py adds a release)")


def running_release() -> str | None:
    """The data's release for the running torch, or None where it has none."""
    try:
        return release_of(None)
    except ValueError:
        return None


def status(overload: str, release: str) -> str:
    """The letter for an overload ("add.Tensor", "relu") in a release; "?"
    where the data has no row (quantized, sparse, mkldnn and nested-only ops
    are left out)."""
    row = data()["ops"].get(overload)
    return row[releases().index(release)] if row else "?"


@functools.lru_cache(maxsize=None)
def mps_kernel_over_composite(release: str) -> tuple:
    """Overloads the running torch implements as CompositeImplicitAutograd
    although the release's MPS build registers a kernel of its own: autograd
    keeps them whole on a Mac (linear, max_pool2d...). Asked once per
    release: it queries the dispatcher for every overload of the data."""
    column = releases().index(release)
    found = []
    for overload, row in data()["ops"].items():
        if row[column] not in "MGB":
            continue
        name = "aten::" + overload
        try:
            if torch._C._dispatch_has_kernel_for_dispatch_key(name, "CompositeImplicitAutograd"):
                found.append(overload)
        except RuntimeError:  # not defined in the running torch
            continue
    return tuple(found)
