"""Write RESULTS_DIR/gpu_check.txt from what tools/gpu_check.sh left there:
the JUnit XML of the suite, the launch logs (MPS_OPS_LAUNCH_LOG, one host
name per first launch), the sanitizers' logs and gpu_launch_all's reports.
Host names are those of build/cuda/kernels.txt. The last line is a one-line
summary.

    python tools/gpu_check_report.py RESULTS_DIR --mode=--tests|--sanitize|--compare|--bench|--profile
"""

from __future__ import annotations

import argparse
import collections
import glob
import json
import os
import re
import sys
import xml.etree.ElementTree as ET

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOOLS = ("racecheck", "memcheck", "synccheck")


def host_names() -> list[str]:
    path = os.path.join(ROOT, "build", "cuda", "kernels.txt")
    with open(path) as f:
        return sorted(line.split()[0] for line in f if line.strip())


def launched(path: str) -> set[str]:
    if not os.path.exists(path):
        return set()
    with open(path) as f:
        return {line.strip() for line in f if line.strip()}


def name_list(names, limit=400) -> str:
    names = sorted(names)
    text = " ".join(names[:limit])
    return text + (f" ... ({len(names) - limit} more)" if len(names) > limit else "")


def tests_section(results: str, names: list[str], out: list[str]) -> str:
    """One JUnit XML per test file (gpu_check.sh runs each in its own process)
    and test_files.txt's exit statuses: files that crashed or never finished
    are listed, never counted as passes."""
    statuses = {}
    status_file = os.path.join(results, "test_files.txt")
    if os.path.exists(status_file):
        for line in open(status_file):
            name, _, code = line.strip().partition(" ")
            statuses[name] = int(code) if code.lstrip("-").isdigit() else code
    xmls = sorted(glob.glob(os.path.join(results, "tests", "*.xml")))
    if not xmls and not statuses:
        out.append("tests: no JUnit XML and no test file ran (see the logs)")
        return "tests: NOT RUN"
    counts = collections.Counter()
    skip_reasons = collections.Counter()
    failed = []
    for xml in xmls:
        try:
            root = ET.parse(xml).getroot()
        except ET.ParseError:
            continue
        for case in root.iter("testcase"):
            name = f"{case.get('classname')}::{case.get('name')}"
            kinds = [child.tag for child in case]
            if "failure" in kinds or "error" in kinds:
                counts["failed"] += 1
                child = case.find("failure") if case.find("failure") is not None else case.find("error")
                message = child.get("message") or ""
                failed.append(f"{name}: {message.splitlines()[0][:200] if message else ''}")
            elif "skipped" in kinds:
                counts["skipped"] += 1
                skip_reasons[(case.find("skipped").get("message") or "")[:160]] += 1
            else:
                counts["passed"] += 1
    crashed = sorted(n for n, code in statuses.items() if code in (139, -11, 134))
    cut = sorted(n for n, code in statuses.items() if code in (124, 130, 137))
    files = sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(ROOT, "test", "test_*.py")))
    # A file split into shards (gpu_check.sh's GPU_CHECK_SHARDS: test_x.shard0of3) ran if any shard did.
    started = {n.split(".shard")[0] for n in statuses}
    not_run = [f for f in files if f not in started]
    out.append(f"tests: {counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped "
               f"in {len(started)} of {len(files)} test files")
    out.append(f"  files that crashed ({len(crashed)}): {' '.join(crashed) or '-'}")
    out.append(f"  files cut short ({len(cut)}): {' '.join(cut) or '-'}")
    out.append(f"  files never started ({len(not_run)}): {' '.join(not_run) or '-'}")
    for reason, n in skip_reasons.most_common():
        out.append(f"  skipped {n}: {reason}")
    for line in failed[:200]:
        out.append(f"  FAILED {line}")
    ran = launched(os.path.join(results, "launched_tests.txt"))
    never = [n for n in names if n not in ran]
    out.append(f"host names launched by the suite on the GPU: {len(ran & set(names))}/{len(names)}")
    out.append(f"  never launched ({len(never)}): {name_list(never)}")
    return (f"tests: {counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped, "
            f"{len(crashed)} files crashed, {len(cut)} cut short, {len(not_run)} never started; "
            f"{len(ran & set(names))}/{len(names)} host names launched")


def sanitizer_errors(log: str, tool: str) -> str:
    if not os.path.exists(log):
        return "no log"
    text = open(log, errors="replace").read()
    if tool == "racecheck":
        m = re.findall(r"RACECHECK SUMMARY: (\d+) hazards? displayed \((\d+) errors?, (\d+) warnings?\)", text)
        if m:
            return f"{m[-1][0]} hazards ({m[-1][1]} errors, {m[-1][2]} warnings)"
    m = re.findall(r"ERROR SUMMARY: (\d+) errors?", text)
    return f"{m[-1]} errors" if m else "no summary (cut short?)"


def sanitize_section(results: str, names: list[str], out: list[str]) -> str:
    parts = []
    for tool in TOOLS:
        if not os.path.exists(os.path.join(results, f"{tool}.log")):
            continue  # not asked for in this run
        ran = launched(os.path.join(results, f"launched_{tool}.txt"))
        errors = sanitizer_errors(os.path.join(results, f"{tool}.log"), tool)
        report_path = os.path.join(results, f"launch_{tool}.json")
        report = json.load(open(report_path)) if os.path.exists(report_path) else {}
        never = [n for n in names if n not in ran]
        out.append(f"{tool}: {errors}; {len(ran & set(names))}/{len(names)} host names launched, "
                   f"{report.get('calls', '?')} calls, {len(report.get('failures', []))} raised, "
                   f"{len(report.get('unreached', []))} not reached before the deadline")
        out.append(f"  never launched ({len(never)}): {name_list(never)}")
        small = report.get("under_two_full_groups", [])
        out.append(f"  launched only with fewer than two full threadgroups ({len(small)}): {name_list(small)}")
        for line in report.get("failures", [])[:100]:
            out.append(f"  raised: {line}")
        for line in report.get("unreached", [])[:100]:
            out.append(f"  not reached: {line}")
        parts.append(f"{tool} {errors}, {len(ran & set(names))}/{len(names)} launched")
    return "sanitize: " + "; ".join(parts)


def compare_section(results: str, names: list[str], out: list[str]) -> str:
    """tools/gpu_compare.py's summaries: the GPU against the emulator, and
    the GPU against itself with the threadgroups reversed."""
    parts = []
    report_path = os.path.join(results, "launch_gpu.json")
    report = json.load(open(report_path)) if os.path.exists(report_path) else {}
    ran = set(report.get("launched", {}))
    out.append(f"host names launched for the comparison: {len(ran & set(names))}/{len(names)}, "
               f"{report.get('calls', '?')} calls, {len(report.get('failures', []))} raised")
    for line in report.get("failures", [])[:100]:
        out.append(f"  raised: {line}")
    for name, what in (("compare_emulator", "GPU vs emulator"), ("compare_reversed", "GPU vs GPU reversed")):
        path = os.path.join(results, f"{name}.txt")
        lines = [line.rstrip() for line in open(path)] if os.path.exists(path) else [f"{what}: not run"]
        out.append(f"{what}:")
        out += lines
        parts.append(f"{what}: {lines[-1].partition(': ')[2] if lines else '?'}")
    return "compare: " + "; ".join(parts)


# ncu's metrics a kernel's line shows, by their names in ncu's details page.
PROFILE_METRICS = {
    "Duration": "us", "DRAM Throughput": "dram%", "Compute (SM) Throughput": "sm%",
    "Registers Per Thread": "regs", "Achieved Occupancy": "occ%", "Executed Instructions": "instr",
    "Block Size": "block", "Memory Throughput": "mem%", "Warp Cycles Per Issued Instruction": "cpi",
}


def profile_section(results: str, out: list) -> str:
    """A line per kernel ncu profiled (ncu.csv): time, throughputs,
    registers, occupancy, instructions."""
    import csv

    path = os.path.join(results, "ncu.csv")
    rows = []
    if os.path.exists(path):
        lines = [line for line in open(path) if line.startswith('"')]
        rows = list(csv.DictReader(lines))
    kernels: dict = {}
    for row in rows:
        entry = kernels.setdefault(row["ID"], {"name": row["Kernel Name"][:60]})
        label = PROFILE_METRICS.get(row.get("Metric Name", ""))
        if label:
            entry[label] = row["Metric Value"]
    for entry in kernels.values():
        out.append(" ".join([entry.pop("name")] + [f"{k}={v}" for k, v in entry.items()]))
    return f"{len(kernels)} kernels profiled" if kernels else "nothing profiled (see ncu.log)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results")
    parser.add_argument("--mode", default="--tests")
    parser.add_argument("--build-failed", action="store_true")
    args = parser.parse_args(argv)
    out = [f"gpu_check {args.mode}"]
    for log in ("import.log",):
        path = os.path.join(args.results, log)
        if os.path.exists(path):
            out += [line.rstrip() for line in open(path) if line.strip()]
    if args.build_failed:
        summary = "build FAILED (see build.log)"
    else:
        names = host_names()
        if args.mode == "--tests":
            summary = tests_section(args.results, names, out)
        elif args.mode == "--sanitize":
            summary = sanitize_section(args.results, names, out)
        elif args.mode == "--compare":
            summary = compare_section(args.results, names, out)
        elif args.mode == "--profile":
            summary = profile_section(args.results, out)
        else:
            bench = os.path.join(args.results, "bench.log")
            lines = [line.rstrip() for line in open(bench)] if os.path.exists(bench) else ["no bench.log"]
            out += lines[-60:]
            done = [line for line in lines if line.startswith("bench_gpu: ")]
            summary = done[-1] if done else "bench: no summary (see bench.log)"
    out.append(f"SUMMARY {args.mode}: {summary}")
    with open(os.path.join(args.results, "gpu_check.txt"), "w") as f:
        f.write("\n".join(out) + "\n")
    print("\n".join(out[-3:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
