"""Mutation testing: plant each mutant of tools/mutants.yaml in turn, rebuild
incrementally, run the tests named for it, and report which mutants survive.

    python tools/mutate.py                          # every mutant
    python tools/mutate.py --only pool-cell-end-floor 'testing-*' --json /tmp/m.json
    python tools/mutate.py --area testing           # Python only: no build

Outcomes: killed (the named tests failed or crashed), survived (they passed),
timed out (past the mutant's timeout), stillborn (the mutant did not build:
not a kill, the mutant should change), error (pytest could not run the named
tests). Score = killed / (killed + survived).

Before the mutants: the mutated files must be clean in git, the tree is built
(`python setup.py build_ext --inplace`, MAX_JOBS from the environment,
default 1) and the union of the named tests must pass on it (--no-baseline
skips that), so that a failure means the mutant. Each file is restored byte
for byte however a run ends (Ctrl-C and SIGTERM included) and checked clean
again; the build is redone at the end whenever it holds a mutant, so the
tree's build matches its source.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import fnmatch
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import mutant_list  # noqa: E402
from mutant_list import ROOT, Mutant  # noqa: E402

KILLED, SURVIVED, TIMED_OUT, STILLBORN, ERROR = "killed", "survived", "timed out", "stillborn", "error"
DEFAULT_TIMEOUT = 300.0
# A clean build takes about 4 minutes at one job; a kernel header recompiles
# every kernel file that includes it.
BUILD_TIMEOUT = 3600.0


class MutateError(Exception):
    """The run cannot go on: a dirty file, a tree that does not build, a failing baseline."""


@dataclasses.dataclass
class Finished:
    returncode: int | None  # None: timed out
    output: str
    seconds: float


def run_process(command: list[str], timeout: float, env: dict | None = None) -> Finished:
    """command in its own process group, so that a timeout or Ctrl-C ends all of
    it (pytest's children, ninja's compilers) and nothing else."""
    start = time.monotonic()
    proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, errors="replace", start_new_session=True)
    try:
        output, _ = proc.communicate(timeout=timeout)
        return Finished(proc.returncode, output, time.monotonic() - start)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        output, _ = proc.communicate()
        return Finished(None, output, time.monotonic() - start)
    except BaseException:
        _kill_group(proc)
        proc.wait()
        raise


def _kill_group(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


def build() -> Finished:
    env = dict(os.environ)
    env.setdefault("MAX_JOBS", "1")
    return run_process([sys.executable, "setup.py", "build_ext", "--inplace"], BUILD_TIMEOUT, env)


def _test_env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, env.get("PYTHONPATH")) if p)
    # A .pyc of a mutated module could outlive it: Python validates a .pyc by
    # its source's whole-second mtime and size, which a restore within the
    # same second, of the same size, leaves as they were.
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def run_tests(nodes: tuple, timeout: float) -> Finished:
    return run_process([sys.executable, "-m", "pytest", *nodes, "-q", "-x", "-p", "no:cacheprovider"],
                       timeout, _test_env())


def _git_clean(path: str) -> bool:
    tracked = subprocess.run(["git", "ls-files", "--error-unmatch", "--", path], cwd=ROOT,
                             capture_output=True).returncode == 0
    unchanged = subprocess.run(["git", "diff", "--quiet", "HEAD", "--", path], cwd=ROOT).returncode == 0
    return tracked and unchanged


@contextlib.contextmanager
def _signals_held():
    """No Ctrl-C or SIGTERM in the middle of writing a file back."""
    held = {signal.SIGINT, signal.SIGTERM}
    signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, held)


@contextlib.contextmanager
def planted(mutant: Mutant):
    """mutant.file mutated inside the block; restored byte for byte on the way
    out, however the block ends, and checked clean in git before and after."""
    path = os.path.join(ROOT, mutant.file)
    if not _git_clean(mutant.file):
        raise MutateError(f"{mutant.file} is untracked or has uncommitted changes: refusing to mutate it")
    with open(path, "rb") as f:
        saved = f.read()
    text = saved.decode("utf-8")
    count = text.count(mutant.original)
    if count != 1:
        raise MutateError(f"{mutant.id}: the original snippet occurs {count} times in {mutant.file}, not once")
    try:
        with _signals_held(), open(path, "wb") as f:
            f.write(text.replace(mutant.original, mutant.replacement, 1).encode("utf-8"))
        yield
    finally:
        with _signals_held(), open(path, "wb") as f:
            f.write(saved)
        if not _git_clean(mutant.file):
            raise MutateError(f"{mutant.file} differs from git after restoring it: check `git diff`")


@dataclasses.dataclass
class Result:
    mutant: Mutant
    outcome: str
    seconds: float
    detail: str


def _tail(output: str, lines: int = 15) -> str:
    return "\n".join(output.strip().splitlines()[-lines:])


def _first_failure(output: str) -> str:
    for line in output.splitlines():
        if line.startswith(("FAILED ", "ERROR ")):
            return line
    return _tail(output, 3)


def classify(tested: Finished) -> tuple[str, str]:
    """pytest's exit status as an outcome: 0 passed, 1 failed, 2 interrupted
    (collection errors: the mutant broke an import), 3 internal error, 4 usage
    error and 5 nothing collected (the named tests are wrong), < 0 a signal
    (the mutant crashed the process)."""
    rc = tested.returncode
    if rc is None:
        return TIMED_OUT, "the tests ran past the timeout"
    if rc == 0:
        return SURVIVED, "the named tests passed"
    if rc < 0:
        return KILLED, f"the tests crashed (signal {-rc})"
    if rc in (4, 5):
        return ERROR, _tail(tested.output, 5)
    return KILLED, _first_failure(tested.output)


class Runner:
    def __init__(self, default_timeout: float):
        self.default_timeout = default_timeout
        # The built _C holds a mutant (restored since) or a failed build.
        self.build_is_stale = False

    def ensure_build(self) -> None:
        if not self.build_is_stale:
            return
        built = build()
        if built.returncode != 0:
            raise MutateError("the unmutated tree does not build:\n" + _tail(built.output))
        self.build_is_stale = False

    def run(self, mutant: Mutant) -> Result:
        if not mutant.compiled:
            self.ensure_build()
        build_seconds = 0.0
        with planted(mutant):
            if mutant.compiled:
                self.build_is_stale = True
                built = build()
                build_seconds = built.seconds
                if built.returncode != 0:
                    why = "the build timed out" if built.returncode is None else _tail(built.output)
                    return Result(mutant, STILLBORN, built.seconds, why)
            tested = run_tests(mutant.tests, mutant.timeout or self.default_timeout)
        outcome, detail = classify(tested)
        return Result(mutant, outcome, build_seconds + tested.seconds, detail)


def union_of_tests(mutants: list[Mutant]) -> list[str]:
    """Every named node once; a node inside a file named whole is dropped."""
    whole_files = {n for m in mutants for n in m.tests if "::" not in n}
    nodes = []
    for m in mutants:
        for n in m.tests:
            if n not in nodes and (n in whole_files or mutant_list.file_of_node(n) not in whole_files):
                nodes.append(n)
    return nodes


def preflight(mutants: list[Mutant], runner: Runner, baseline: bool) -> None:
    for path in sorted({m.file for m in mutants}):
        if not _git_clean(path):
            raise MutateError(f"{path} is untracked or has uncommitted changes: commit or stash it first")
    print("building the unmutated tree", flush=True)
    runner.build_is_stale = True
    runner.ensure_build()
    found = run_process([sys.executable, "-c", "import mps_ops; print(mps_ops.__file__)"], 120, _test_env())
    if found.returncode != 0 or not found.output.strip().startswith(os.path.join(ROOT, "mps_ops")):
        raise MutateError(f"the tests would not import mps_ops from {ROOT}:\n{_tail(found.output)}")
    if baseline:
        nodes = union_of_tests(mutants)
        print(f"baseline: {len(nodes)} test nodes on the unmutated tree", flush=True)
        tested = run_tests(tuple(nodes), runner.default_timeout * len(nodes))
        if tested.returncode != 0:
            raise MutateError("the named tests fail without any mutant:\n" + _tail(tested.output))


def select(mutants: list[Mutant], only: list[str] | None, area: str | None) -> list[Mutant]:
    chosen = mutants
    if only:
        unmatched = [p for p in only if not any(fnmatch.fnmatchcase(m.id, p) for m in mutants)]
        if unmatched:
            raise MutateError(f"no mutant matches {', '.join(unmatched)}")
        chosen = [m for m in chosen if any(fnmatch.fnmatchcase(m.id, p) for p in only)]
    if area:
        chosen = [m for m in chosen if m.area.name == area]
    # Python-only mutants first: they run on the build of the clean tree.
    return sorted(chosen, key=lambda m: m.compiled)


def summary(results: list[Result]) -> dict:
    counts = {o: sum(r.outcome == o for r in results) for o in (KILLED, SURVIVED, TIMED_OUT, STILLBORN, ERROR)}
    scored = counts[KILLED] + counts[SURVIVED]
    return {"score": counts[KILLED] / scored if scored else None, "counts": counts}


def print_report(results: list[Result]) -> None:
    width = max([len(r.mutant.id) for r in results] + [2])
    print(f"\n{'id':<{width}}  {'area':<8}  {'outcome':<9}  {'seconds':>7}  detail")
    for r in results:
        detail = r.detail.splitlines()[-1] if r.detail else ""
        print(f"{r.mutant.id:<{width}}  {r.mutant.area.name:<8}  {r.outcome:<9}  {r.seconds:7.0f}  {detail[:100]}")
    s = summary(results)
    c = s["counts"]
    print(f"\nkilled {c[KILLED]}, survived {c[SURVIVED]}, timed out {c[TIMED_OUT]}, "
          f"stillborn {c[STILLBORN]} (did not build: not counted as kills), errors {c[ERROR]}")
    if s["score"] is None:
        print("score: none (no mutant was killed or survived)")
    else:
        print(f"score {100 * s['score']:.1f}% = killed / (killed + survived) = "
              f"{c[KILLED]} / {c[KILLED] + c[SURVIVED]}")
    for r in results:
        if r.outcome == SURVIVED:
            print(f"survived: {r.mutant.id}: {r.mutant.bug} (tests: {' '.join(r.mutant.tests)})")


def write_json(path: str, results: list[Result]) -> None:
    data = summary(results)
    data["mutants"] = [
        {"id": r.mutant.id, "area": r.mutant.area.name, "file": r.mutant.file, "bug": r.mutant.bug,
         "tests": list(r.mutant.tests), "outcome": r.outcome, "seconds": round(r.seconds, 1),
         "detail": r.detail}
        for r in results
    ]
    with open(path, "w") as f:
        json.dump(data, f, indent=2)


def _sigterm_as_interrupt(signum, frame):
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", default=mutant_list.DEFAULT_LIST, help="the mutant list (YAML)")
    parser.add_argument("--only", nargs="+", metavar="ID", help="mutant ids or shell patterns")
    parser.add_argument("--area", choices=[a.name for a in mutant_list.AREAS])
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                        help="seconds for one mutant's tests, unless the mutant sets its own")
    parser.add_argument("--no-baseline", action="store_true",
                        help="skip running the named tests on the unmutated tree first")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    parser.add_argument("--min-score", type=float, help="exit 1 when the score is below this (0..1)")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _sigterm_as_interrupt)

    mutants = mutant_list.load(args.list)
    problems = mutant_list.problems(mutants)
    if problems:
        print("the mutant list has problems:\n  " + "\n  ".join(problems), file=sys.stderr)
        return 2
    runner = Runner(args.timeout)
    results: list[Result] = []
    interrupted = False
    start = time.monotonic()
    try:
        chosen = select(mutants, args.only, args.area)
        preflight(chosen, runner, baseline=not args.no_baseline)
        for i, mutant in enumerate(chosen, 1):
            print(f"[{i}/{len(chosen)}] {mutant.area.name} {mutant.id}: {mutant.bug}", flush=True)
            result = runner.run(mutant)
            results.append(result)
            print(f"    {result.outcome} in {result.seconds:.0f} s: {result.detail.splitlines()[-1][:160]}",
                  flush=True)
    except MutateError as e:
        print(f"mutate: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        interrupted = True
        print("\ninterrupted: the mutated file is restored", file=sys.stderr)
    finally:
        if runner.build_is_stale:
            print("rebuilding the unmutated tree", flush=True)
            try:
                runner.ensure_build()
            except (MutateError, KeyboardInterrupt) as e:
                print(f"mutate: the build still holds a mutant ({e}); run "
                      "`python setup.py build_ext --inplace`", file=sys.stderr)
    if results:
        print_report(results)
        print(f"({time.monotonic() - start:.0f} s in all)")
    if args.json:
        write_json(args.json, results)
    if interrupted:
        return 130
    score = summary(results)["score"]
    if args.min_score is not None and (score is None or score < args.min_score):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
