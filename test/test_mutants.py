"""The mutation tool (tools/mutate.py) and its list (tools/mutants.yaml),
without building anything: the list is well formed, and the tool, run on a
tiny repository of its own, sorts mutants into killed, survived, timed out
and stillborn, and leaves the tree and its build as it found them."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))

import mutant_list  # noqa: E402


def test_mutant_list_is_well_formed():
    mutants = mutant_list.load()
    assert mutant_list.problems(mutants) == []
    assert len(mutants) >= 25
    assert {m.area.name for m in mutants} == {a.name for a in mutant_list.AREAS}


# A repository with the tool's layout: a "kernel" that setup.py "builds" into
# build/built.txt (refusing the word BROKEN), and the testing-mode module.
FAKE_FILES = {
    "setup.py": """
        import os, sys
        source = open("csrc/kernels/k.metal").read()
        if "BROKEN" in source:
            sys.exit("does not compile")
        os.makedirs("build", exist_ok=True)
        open("build/built.txt", "w").write(source)
    """,
    "csrc/kernels/k.metal": "VALUE 3\n",
    "mps_ops/__init__.py": "",
    "mps_ops/testing.py": """
        def double(x): return 2 * x
        def half(x): return x / 2
        def wait(): return 0
    """,
    "test/test_fake.py": """
        from mps_ops.testing import double, wait
        def test_double(): assert double(2) == 4
        def test_built(): assert open("build/built.txt").read() == "VALUE 3\\n"
        def test_wait(): assert wait() == 0
    """,
    "tools/mutants.yaml": """
        mutants:
          - {id: double-wrong, file: mps_ops/testing.py, original: "2 * x", replacement: "3 * x",
             bug: doubles wrongly, tests: ["test/test_fake.py::test_double"]}
          - {id: half-untested, file: mps_ops/testing.py, original: "x / 2", replacement: "x / 3",
             bug: halves wrongly, tests: [test/test_fake.py]}
          - {id: wait-hangs, file: mps_ops/testing.py, original: "return 0",
             replacement: "return __import__('time').sleep(60)", bug: hangs, timeout: 2,
             tests: ["test/test_fake.py::test_wait"]}
          - {id: kernel-value, file: csrc/kernels/k.metal, original: "VALUE 3", replacement: "VALUE 4",
             bug: a wrong constant, tests: ["test/test_fake.py::test_built"]}
          - {id: kernel-broken, file: csrc/kernels/k.metal, original: "VALUE 3", replacement: "BROKEN",
             bug: does not build, tests: [test/test_fake.py]}
    """,
    ".gitignore": "build/\n",
}


def _fake_repository(path) -> str:
    root = str(path)
    for name, text in FAKE_FILES.items():
        os.makedirs(os.path.dirname(os.path.join(root, name)), exist_ok=True)
        with open(os.path.join(root, name), "w") as f:
            f.write(textwrap.dedent(text).lstrip("\n"))
    for tool in ("mutate.py", "mutant_list.py"):
        shutil.copy(os.path.join(ROOT, "tools", tool), os.path.join(root, "tools", tool))
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "fake"]):
        subprocess.run(git + command, cwd=root, check=True)
    return root


def _tree_is_clean(root) -> bool:
    status = subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True)
    return status.stdout == ""


def test_tool_sorts_mutants_and_restores_tree_and_build(tmp_path):
    root = _fake_repository(tmp_path / "repo")
    report = tmp_path / "report.json"
    proc = subprocess.run([sys.executable, "tools/mutate.py", "--json", str(report)], cwd=root,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(report.read_text())
    outcomes = {m["id"]: m["outcome"] for m in data["mutants"]}
    assert outcomes == {"double-wrong": "killed", "half-untested": "survived", "wait-hangs": "timed out",
                        "kernel-value": "killed", "kernel-broken": "stillborn"}
    assert data["score"] == 2 / 3
    assert "score 66.7% = killed / (killed + survived) = 2 / 3" in proc.stdout
    assert _tree_is_clean(root)
    with open(os.path.join(root, "build", "built.txt")) as f:
        assert f.read() == "VALUE 3\n", "the final rebuild must leave the unmutated build"


def test_tool_refuses_a_file_with_uncommitted_changes(tmp_path):
    root = _fake_repository(tmp_path / "repo")
    with open(os.path.join(root, "mps_ops", "testing.py"), "a") as f:
        f.write("# local edit\n")
    proc = subprocess.run([sys.executable, "tools/mutate.py", "--only", "double-*"], cwd=root,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "uncommitted changes" in proc.stderr


def test_sigterm_mid_mutant_restores_the_file(tmp_path):
    root = _fake_repository(tmp_path / "repo")
    testing = os.path.join(root, "mps_ops", "testing.py")
    hanging = tmp_path / "hanging.yaml"  # no timeout of its own: it hangs until the signal
    hanging.write_text(textwrap.dedent("""
        mutants:
          - {id: hangs, file: mps_ops/testing.py, original: "return 0", bug: hangs,
             replacement: "return __import__('time').sleep(60)", tests: ["test/test_fake.py::test_wait"]}
    """))
    proc = subprocess.Popen([sys.executable, "tools/mutate.py", "--list", str(hanging), "--timeout", "120"],
                            cwd=root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 60
        while "sleep(60)" not in open(testing).read():
            assert time.monotonic() < deadline and proc.poll() is None, "the mutant was never planted"
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        output, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, output
    assert _tree_is_clean(root)
