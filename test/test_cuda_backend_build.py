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
    # test_opinfo in two shards, one cut short.
    (tmp_path / "test_files.txt").write_text(
        "test_api 1\ntest_put 139\ntest_opinfo.shard0of2 0\ntest_opinfo.shard1of2 130\n")
    (tmp_path / "launched_tests.txt").write_text(names[0] + "\n")
    done = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "gpu_check_report.py"),
                           str(tmp_path), "--mode=--tests"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    report = (tmp_path / "gpu_check.txt").read_text().splitlines()
    files = len(glob.glob(os.path.join(ROOT, "test", "test_*.py")))
    assert report[-1] == (f"SUMMARY --tests: tests: 1 passed, 1 failed, 1 skipped, 1 files crashed, "
                          f"1 cut short, {files - 3} never started; 1/{len(names)} host names launched")
    assert f"tests: 1 passed, 1 failed, 1 skipped in 3 of {files} test files" in report
    assert any(line == "  files that crashed (1): test_put" for line in report)
    assert any(line == "  files cut short (1): test_opinfo.shard1of2" for line in report)
    assert any("skipped 1: emulator-only behaviour" in line for line in report)
    assert any(line.startswith("  FAILED t::b") for line in report)


def test_launcher_reaches_every_kernel_and_the_comparison_sees_an_ulp(tmp_path):
    """gpu_check.sh --sanitize and --compare launch every host name through
    tools/gpu_launch_all.py (here on the emulator, the same code path); two
    recordings of one backend compare identical, and one result moved by an
    ulp is reported with its distance."""
    import json

    import torch

    import mps_ops

    report, record = tmp_path / "launch.json", tmp_path / "calls.pt"
    done = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "gpu_launch_all.py"),
                           "--report", str(report), "--record", str(record)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    launched = json.loads(report.read_text())
    # Every one, those of ops the running torch lacks included (through
    # torch.ops.mps_ops_compat: _upsample_lanczos2d_aa before 2.12).
    assert launched["never_launched"] == []
    assert set(launched["launched"]) | set(launched["never_launched"]) == set(mps_ops._C.kernel_names())
    # A split reduction's merge pass is one small group per few slices by
    # design, as are nonzero_static's scan (one threadgroup over the blocks)
    # and _assert_async's check (one thread, one value); everything else ran
    # at least two full ones (whole-tensor reductions too: their large calls
    # split).
    one_group = ("_merge_", "nonzero_static_scan_", "assert_nonzero_")
    assert [n for n in launched["under_two_full_groups"] if not any(m in n for m in one_group)] == []

    recording = torch.load(record)
    # Each call's results are its own, although the later variants of a
    # sample write into the same out= tensor (on CPU tensors .cpu() aliases).
    from mps_ops.samples import SAMPLES_BY_OVERLOAD
    from mps_ops.testing import emulate

    from helpers import to_device

    std = SAMPLES_BY_OVERLOAD["std.correction_out"]
    call = to_device(std.call(torch.float32))
    with emulate():
        fresh = std.op(**call).cpu()
    assert torch.equal(recording["calls"]["std.correction_out torch.float32 sample"]["results"][0], fresh)
    label = next(k for k, v in recording["calls"].items()
                 if v["results"] and v["results"][0].dtype == torch.float32 and v["results"][0].numel())
    moved = recording["calls"][label]["results"][0].reshape(-1)
    moved[0] = torch.nextafter(moved[0], torch.tensor(float("inf")))
    torch.save(recording, tmp_path / "moved.pt")
    compare = [sys.executable, os.path.join(ROOT, "tools", "gpu_compare.py")]
    same = subprocess.run(compare + [str(record), str(record)], capture_output=True, text=True)
    assert same.returncode == 0 and ", 0 differ (0 ops)" in same.stdout, same.stdout + same.stderr
    differ = subprocess.run(compare + [str(record), str(tmp_path / "moved.pt")], capture_output=True, text=True)
    assert ", 1 differ (1 ops)" in differ.stdout and "up to 1 ulps" in differ.stdout, differ.stdout


def test_shards_split_a_file_into_disjoint_parts():
    """MPS_OPS_TEST_SHARD=i/n (test/conftest.py; gpu_check.sh's GPU_CHECK_SHARDS):
    the shards of a file collect every test once between them."""
    def collected(shard):
        env = {k: v for k, v in os.environ.items() if k != "MPS_OPS_TEST_SHARD"}
        if shard:
            env["MPS_OPS_TEST_SHARD"] = shard
        done = subprocess.run([sys.executable, "-m", "pytest", "test/test_api.py", "--collect-only", "-q",
                               "-p", "no:cacheprovider"], cwd=ROOT, env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr
        return [line for line in done.stdout.splitlines() if "::" in line]
    whole = collected(None)
    parts = [collected(f"{i}/3") for i in range(3)]
    assert len(whole) >= 3 and all(parts)
    assert sorted(sum(parts, [])) == sorted(whole)
