"""The macOS workflow (.github/workflows/macos.yml) cannot run here: these
checks keep it from rotting unseen. It must run on an Apple silicon macOS 14+
runner with Xcode's Metal toolchain, build the metallib with Apple's compiler
(tools/macos_build.py, failing without a metallib), and then run .ci/run, the
same steps as Linux CI, which run the README's test command.
"""

from __future__ import annotations

import os
import re
import shlex
import sys

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKFLOW = os.path.join(ROOT, ".github", "workflows", "macos.yml")
CI_RUN = os.path.join(ROOT, ".ci", "run")
sys.path.insert(0, os.path.join(ROOT, "tools"))

import torch_headers  # noqa: E402


@pytest.fixture(scope="module")
def workflow():
    with open(WORKFLOW) as f:
        return yaml.safe_load(f)


@pytest.fixture(scope="module")
def job(workflow):
    (only,) = workflow["jobs"].values()
    return only


def run_steps(job):
    return [(i, step) for i, step in enumerate(job["steps"]) if "run" in step]


def commands(step) -> list[list[str]]:
    """The shell commands of a run step, one per line, as words."""
    words = []
    for line in step["run"].splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            words.append(shlex.split(line, comments=True))
    return words


def index_of(job, predicate, what):
    found = [i for i, step in run_steps(job) if any(predicate(c) for c in commands(step))]
    assert found, f"no step {what}"
    return found[0]


def test_runs_on_apple_silicon_macos_14_or_newer(workflow, job):
    # YAML 1.1 reads the key `on` as True.
    triggers = workflow.get("on", workflow.get(True))
    assert {"push", "pull_request", "workflow_dispatch"} <= set(triggers)
    labels = re.findall(r"macos-(\d+)", str(job["runs-on"]))
    assert labels and all(int(v) >= 14 for v in labels), job["runs-on"]
    default = triggers["workflow_dispatch"]["inputs"]["runner"]["default"]
    assert re.fullmatch(r"macos-(\d+)", default) and int(default.split("-")[1]) >= 14
    assert job.get("timeout-minutes", 0) > 0


def test_python_and_the_supported_torch_range(job):
    (setup,) = [s for s in job["steps"] if s.get("uses", "").startswith("actions/setup-python@")]
    assert str(setup["with"]["python-version"]) == "3.11"
    assert job["strategy"]["matrix"]["torch"] == [torch_headers.OLDEST_SUPPORTED,
                                                   torch_headers.NEWEST_SUPPORTED]
    installs = index_of(job, lambda c: c[:4] == ["python", "-m", "pip", "install"]
                        and "torch==${{ matrix.torch }}" in c, "installing the matrix's torch")
    ci = index_of(job, lambda c: c == ["bash", ".ci/run"], "running .ci/run")
    assert installs < ci, "bootstrap keeps an installed torch: install it first"


def test_builds_the_metallib_with_apples_compiler_before_the_ci_steps(job):
    toolchain = index_of(job, lambda c: c[:4] == ["xcrun", "-sdk", "macosx", "metal"],
                         "checking Xcode's Metal toolchain")
    metal = index_of(job, lambda c: c[:2] == ["python", "tools/macos_build.py"]
                     and "--require-metallib" in c, "building the metallib")
    ci = index_of(job, lambda c: c == ["bash", ".ci/run"], "running .ci/run")
    assert toolchain < metal < ci


def test_runs_ci_run_unconditionally_with_the_device_probe(job):
    steps = [s for _, s in run_steps(job) if ["bash", ".ci/run"] in commands(s)]
    assert len(steps) == 1
    (ci,) = steps
    assert "if" not in ci, ".ci/run runs on every runner, device or not"
    probe = [s for s in job["steps"] if s.get("id") == "mps"]
    assert probe and "device='mps'" in probe[0]["run"], "the probe runs an op on mps"
    assert ci["env"]["MPS_OPS_CI_NO_DEVICE"] == "${{ steps.mps.outputs.no_device }}"
    with open(CI_RUN) as f:
        assert "MPS_OPS_CI_NO_DEVICE" in f.read()


def test_the_clang_the_checks_call_is_provided(job):
    with open(CI_RUN) as f:
        ci_run = f.read()
    assert "tools/check_objc.sh" in ci_run and "tools/check_msl.py" in ci_run
    step = next(s for _, s in run_steps(job) if "clang++" in s["run"])
    assert "clang16/bin" in step["run"] and "GITHUB_PATH" in step["run"]
    assert "$tool-16" in step["run"], "linked under the names the scripts call"


def test_ci_run_runs_the_readmes_test_command():
    with open(os.path.join(ROOT, "README.md")) as f:
        readme = f.read()
    match = re.search(r"^\s+(bash tools/bootstrap\.sh) && (python -m pytest test -q)\s", readme, re.M)
    assert match, "the README's test command"
    with open(CI_RUN) as f:
        lines = [l.strip() for l in f.read().splitlines()]
    install, suite = match.groups()
    assert install in lines
    assert any(l.startswith(suite) for l in lines)
    assert lines.index(install) < next(i for i, l in enumerate(lines) if l.startswith(suite))


def test_device_free_tests_exist_and_need_no_device():
    with open(CI_RUN) as f:
        text = f.read()
    listed = re.search(r"device_free_tests=\(([^)]*)\)", text).group(1).split()
    assert listed
    for path in listed:
        assert os.path.exists(os.path.join(ROOT, path)), path
        with open(os.path.join(ROOT, path)) as f:
            source = f.read()
        assert "emulate(" not in source and "device()" not in source, path
