"""The timing report written to --out: a Compare table, JSON, Markdown
(with achieved GB/s against the chip's nominal bandwidth) and a chart."""

from __future__ import annotations

import json
import platform
import sys
from pathlib import Path

import torch

import mps_ops
from chips import bandwidth_table_markdown, detect_chip, nominal_bandwidth
from work_report import WORK_LEGEND, format_work

def write_outputs(opts, results, rows, work_table) -> None:
    from torch.utils import benchmark

    out = Path(opts.out)
    out.mkdir(parents=True, exist_ok=True)
    chip, cores = detect_chip()
    nominal = opts.bandwidth or nominal_bandwidth(chip, cores)
    for r in rows:
        if nominal and "ours_gbps" in r:
            r["pct_of_nominal"] = 100 * r["ours_gbps"] / nominal
    compare = benchmark.Compare(results)
    compare.trim_significant_figures()
    (out / "bench_ops.txt").write_text(str(compare))
    if sys.stdout.isatty():
        compare.colorize(rowwise=True)
    print(compare)
    env = {"chip": chip, "gpu_cores": cores, "nominal_bandwidth_gbps": nominal,
           "nominal_source": "--bandwidth" if opts.bandwidth else "Apple's published figure (table)",
           "torch": torch.__version__, "mps_ops_backend": mps_ops.backend, "error_checks": mps_ops.error_checks(),
           "macos": platform.mac_ver()[0]}
    (out / "bench_ops.json").write_text(json.dumps({"environment": env, "results": rows,
                                                    "work": work_table}, indent=2))
    md = [f"# mps_ops benchmarks on {chip or 'an unknown chip'}", "",
          f"torch {torch.__version__}, macOS {env['macos'] or '?'}, GPU cores {cores or '?'}, "
          f"nominal bandwidth {nominal or 'unknown'} GB/s ({env['nominal_source']}).", "",
          "Median time per call, torch.mps.synchronize() included. Stock: the CPU-fallback "
          "round trip (fill ops) or torch's MPS kernel (override ops). GB/s: bytes the call must "
          "move (inputs once, outputs once) over our time.", "",
          "| op | layout | dtype | n | ours µs | stock µs | stock | speedup | ours GB/s | % nominal |",
          "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "ours_us" not in r:
            md.append(f"| {r['op']} | {r['layout']} | {r['dtype']} | {r['numel']:.0e} | "
                      f"| | | | | {r.get('note', '')} |")
            continue
        pct = f"{r['pct_of_nominal']:.0f}%" if "pct_of_nominal" in r else "-"
        md.append(f"| {r['op']} | {r['layout']} | {r['dtype']} | {r['numel']:.0e} | "
                  f"{r['ours_us']:.1f} | {r['stock_us']:.1f} | {r['stock']} | {r['speedup']:.2f}x | "
                  f"{r['ours_gbps']:.1f} | {pct} |")
    md += ["", "## Nominal memory bandwidth (Apple's published figures)", "",
           "Looked up from coverage of Apple's spec pages, not read off apple.com by this "
           "script; check before quoting.", "", bandwidth_table_markdown(), "",
           "## Work figures", "", format_work(work_table, markdown=True), "",
           "```", WORK_LEGEND, "```", ""]
    (out / "bench_ops.md").write_text("\n".join(md))
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no chart (pip install matplotlib)")
        return
    fig, ax = plt.subplots(figsize=(9, 5.5))
    series: dict = {}
    for r in rows:
        if "speedup" in r and r["dtype"] == "float32":
            series.setdefault(f"{r['op']} {r['layout']}", []).append((r["numel"], r["speedup"]))
    for label, points in series.items():
        points.sort()
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    from matplotlib.ticker import FuncFormatter

    times = FuncFormatter(lambda v, _: f"{v:g}x")
    ax.yaxis.set_major_formatter(times)
    ax.yaxis.set_minor_formatter(times)
    ax.axhline(1.0, color="gray", linewidth=0.8)
    ax.set_xlabel("elements")
    ax.set_ylabel("speedup over the stock path (x)")
    ax.set_title(f"mps_ops vs stock, float32, {chip or 'unknown chip'}")
    ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    fig.savefig(out / "bench_ops_speedup.png", dpi=150)
    print(f"wrote {out}/bench_ops.{{txt,json,md}} and bench_ops_speedup.png")
