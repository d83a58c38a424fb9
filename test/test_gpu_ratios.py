"""tools/gpu_ratios.py: an override's gpu_ratio written from a bench run, in
place or after its policy line, nothing else of the registry touched."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))

import gpu_ratios  # noqa: E402

REGISTRY = """ops:
  # a comment
  - name: a
    policy: override
    gpu_ratio: 0.50-0.60 H100 at 1234567
    opinfo: []

  - name: b
    policy: override
    opinfo: []

  - name: c
    policy: fill
"""


def test_ratios_are_the_lowest_and_highest_of_the_ops_rows():
    run = {"rows": [{"kernel": "a", "ratio": 0.9}, {"kernel": "a", "ratio": 1.2}, {"kernel": "b", "ratio": None},
                    {"kernel": "b", "ratio": 0.7}]}
    assert gpu_ratios.ratios_by_op(run) == {"a": (0.9, 1.2), "b": (0.7, 0.7)}


def test_rewrite_sets_the_field_in_place_or_after_policy():
    text, done = gpu_ratios.rewrite(REGISTRY, {"a": "0.90-1.20 H200 at abcdef0", "b": "0.70-0.70 H200 at abcdef0"})
    assert done == ["a", "b"]
    assert text == REGISTRY.replace("gpu_ratio: 0.50-0.60 H100 at 1234567", "gpu_ratio: 0.90-1.20 H200 at abcdef0") \
        .replace("  - name: b\n    policy: override\n",
                 "  - name: b\n    policy: override\n    gpu_ratio: 0.70-0.70 H200 at abcdef0\n")


def test_the_gpu_comes_from_the_runs_device():
    assert gpu_ratios.gpu_of("NVIDIA H200") == "H200"
    assert gpu_ratios.gpu_of("NVIDIA H100 80GB HBM3") == "H100"
