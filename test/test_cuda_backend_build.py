"""The CUDA backend (csrc/cuda/) cannot run here, but it must keep compiling:
tools/check_cuda_backend.py type-checks it against the installed torch (and
driver_api.h against the CUDA toolkit's cuda.h where one is installed)."""

from __future__ import annotations

import glob
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_cuda_backend_type_checks():
    done = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "check_cuda_backend.py")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ok csrc/cuda/cuda_backend.cpp" in done.stdout
    assert "ok csrc/python/module.cpp" in done.stdout


def test_gpu_check_report_counts_junit_crashes_and_launches(tmp_path):
    """gpu_check.sh --tests runs each test file in its own pytest: the report
    adds up their JUnit files and lists files that crashed or never started."""
    kernels = os.path.join(ROOT, "build", "cuda", "kernels.txt")
    if not os.path.exists(kernels):
        pytest.skip("no build/cuda/kernels.txt: run python tools/cuda_build.py")
    names = [line.split()[0] for line in open(kernels)]
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_api.xml").write_text(
        '<testsuites><testsuite><testcase classname="t" name="a"/>'
        '<testcase classname="t" name="b"><failure message="boom"/></testcase>'
        '<testcase classname="t" name="c"><skipped message="emulator-only behaviour"/></testcase>'
        "</testsuite></testsuites>")
    (tmp_path / "test_files.txt").write_text("test_api 1\ntest_put 139\n")
    (tmp_path / "launched_tests.txt").write_text(names[0] + "\n")
    done = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "gpu_check_report.py"),
                           str(tmp_path), "--mode=--tests"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    report = (tmp_path / "gpu_check.txt").read_text().splitlines()
    files = len(glob.glob(os.path.join(ROOT, "test", "test_*.py")))
    assert report[-1] == (f"SUMMARY --tests: tests: 1 passed, 1 failed, 1 skipped, 1 files crashed, "
                          f"0 cut short, {files - 2} never started; 1/{len(names)} host names launched")
    assert any(line == "  files that crashed (1): test_put" for line in report)
    assert any("skipped 1: emulator-only behaviour" in line for line in report)
    assert any(line.startswith("  FAILED t::b") for line in report)
