"""What an audit found, per op, and how it is shown: a terminal table,
markdown, JSON (docs/audit.md gives the schema) and a one-line verdict."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass, field

from . import coverage

SCHEMA = 1

# What a Mac does with an op of each status, in a few words.
OUTCOMES = {
    "M": "native Metal",
    "B": "native Metal (MPSGraph on some paths)",
    "G": "MPSGraph",
    "C": "composite: runs as other ops",
    "X": "raises NotImplementedError (CPU fallback with PYTORCH_ENABLE_MPS_FALLBACK=1)",
    "P": "always runs on the CPU",
    "-": "not defined in this release",
    "?": "not in the data (quantized, sparse and nested-only ops are left out)",
}


def _ops(count: int) -> str:
    return f"{count} op" if count == 1 else f"{count} ops"


@dataclass
class OpUse:
    op: str                 # "aten::addmm"
    calls: int
    forward: int
    backward: int
    mps: str                # coverage.STATUS_WORDS' words
    outcome: str            # what a Mac does with it, mps_ops included
    mps_ops: str | None     # "fill", "override" or "repair" where mps_ops has the op
    mps_ops_active: bool | None   # registered in this process (the running release only)
    stand_in: bool = False  # no meta kernel: the trace made its result up

    @property
    def needs_attention(self) -> bool:
        """It would raise on a Mac: no MPS kernel and no mps_ops fill."""
        return self.mps in ("missing", "undefined") and self.mps_ops != "fill"


@dataclass
class Report:
    release: str            # the torch release the answers are for ("2.13.0")
    running_torch: str      # the torch that traced the callable
    traced_on: str          # "fake mps" or "mps"
    backward: bool
    ops: list = field(default_factory=list)

    # ------------------------------------------------------------------
    @property
    def counts(self) -> Counter:
        return Counter(use.mps for use in self.ops)

    @property
    def failing(self) -> list:
        return [use for use in self.ops if use.needs_attention]

    @property
    def on_cpu(self) -> list:
        """Ops PyTorch always runs on the CPU for MPS tensors (a copy there and back)."""
        return [use for use in self.ops if use.mps == "cpu" and use.mps_ops != "fill"]

    @property
    def filled(self) -> list:
        return [use for use in self.ops if use.mps_ops == "fill" and use.mps in ("missing", "cpu")]

    @property
    def on_mpsgraph(self) -> list:
        return [use for use in self.ops if use.mps in ("mpsgraph", "metal+mpsgraph")]

    @property
    def overridable(self) -> list:
        return [use for use in self.on_mpsgraph if use.mps_ops == "override"]

    @property
    def verdict(self) -> str:
        release = ".".join(self.release.split(".")[:2])
        graph = f"{_ops(len(self.on_mpsgraph))} on MPSGraph, overrides available for {len(self.overridable)}"
        if self.failing:
            names = ", ".join(use.op.split("::", 1)[-1] for use in self.failing[:5])
            more = f" and {len(self.failing) - 5} more" if len(self.failing) > 5 else ""
            return (f"does not run on MPS with torch {release} + mps_ops: {_ops(len(self.failing))} without an MPS "
                    f"kernel ({names}{more}); {graph}")
        helped = f" + mps_ops ({_ops(len(self.filled))} filled)" if self.filled else " + mps_ops"
        cpu = f"; {_ops(len(self.on_cpu))} always on the CPU" if self.on_cpu else ""
        return f"runs on MPS with torch {release}{helped}; {graph}{cpu}"

    # ------------------------------------------------------------------
    COLUMNS = ("op", "calls", "fwd", "bwd", "mps", "mps_ops", "on a Mac")

    def _rows(self) -> list:
        def mps_ops_cell(use):
            if use.mps_ops is None:
                return ""
            if use.mps_ops_active is None:
                return use.mps_ops
            return f"{use.mps_ops} ({'on' if use.mps_ops_active else 'off'})"

        return [(use.op, str(use.calls), str(use.forward), str(use.backward), use.mps, mps_ops_cell(use),
                 use.outcome) for use in self.ops]

    def _header(self) -> str:
        return (f"mps_ops.audit: torch {self.release} on a Mac (traced with torch {self.running_torch} "
                f"on {self.traced_on} tensors{', forward and backward' if self.backward else ', forward'})")

    def table(self) -> str:
        rows = [self.COLUMNS] + self._rows()
        widths = [max(len(r[i]) for r in rows) for i in range(len(self.COLUMNS))]
        lines = [self._header(), ""]
        for n, row in enumerate(rows):
            lines.append("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
            if n == 0:
                lines.append("  ".join("-" * w for w in widths))
        lines += ["", self.verdict]
        return "\n".join(lines)

    def markdown(self) -> str:
        lines = [f"**{self._header()}**", "", "| " + " | ".join(self.COLUMNS) + " |",
                 "|" + "---|" * len(self.COLUMNS)]
        lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in self._rows()]
        lines += ["", f"Verdict: {self.verdict}"]
        return "\n".join(lines)

    def to_dict(self) -> dict:
        return {
            "schema": SCHEMA,
            "torch_release": self.release,
            "running_torch": self.running_torch,
            "traced_on": self.traced_on,
            "backward": self.backward,
            "verdict": self.verdict,
            "counts": dict(sorted(self.counts.items())),
            "ops": [asdict(use) for use in self.ops],
        }

    def json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def __str__(self) -> str:
        return self.table()


def _mps_ops_entry(overload: str, records) -> object | None:
    for record in records:
        if overload in record.overloads:
            return record
    return None


def build(trace, release: str, running_release: str, records, running_torch: str, backward: bool) -> Report:
    """One row per aten op the trace met, most called first."""
    forward, backward_calls, stand_ins = Counter(), Counter(), set()
    for call in trace.calls:
        (forward if call.phase == "forward" else backward_calls)[call.op] += 1
        if call.stand_in:
            stand_ins.add(call.op)
    ops = []
    for op in sorted(set(forward) | set(backward_calls), key=lambda o: (-(forward[o] + backward_calls[o]), o)):
        overload = op.split("::", 1)[-1]
        letter = coverage.status(overload, release)
        record = _mps_ops_entry(overload, records)
        policy, active, outcome = None, None, OUTCOMES[letter]
        if record is not None:
            release_minor = ".".join(release.split(".")[:2])
            if record.policy == "fill" and letter in "XP":
                policy, outcome = "fill", "mps_ops's Metal kernel (fill)"
            elif record.policy == "override" and release_minor in record.mpsgraph:
                policy = "override"
                outcome = "MPSGraph; mps_ops's Metal kernel once enable_overrides()"
            elif record.policy == "repair" and release_minor in record.repairs:
                policy, outcome = "repair", "mps_ops's Metal kernel (repair: the stock one raises for some inputs)"
            if policy is not None and release == running_release:
                active = record.active
                if policy == "override" and active:
                    outcome = "mps_ops's Metal kernel (override on)"
        ops.append(OpUse(op=op, calls=forward[op] + backward_calls[op], forward=forward[op],
                         backward=backward_calls[op], mps=coverage.STATUS_WORDS[letter], outcome=outcome,
                         mps_ops=policy, mps_ops_active=active, stand_in=op in stand_ins))
    return Report(release=release, running_torch=running_torch, traced_on="mps" if trace.real_mps else "fake mps",
                  backward=backward, ops=ops)
