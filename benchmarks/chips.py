"""Apple chips: the nominal memory bandwidth the timing report compares
achieved GB/s with, and which chip this is."""

from __future__ import annotations

import platform
import subprocess

# Apple's published unified-memory bandwidth, GB/s, by chip (and GPU cores where
# Apple's figure depends on the bin). Looked up for this script from coverage
# of Apple's spec pages and announcements, not read off apple.com here: check
# against Apple's tech specs before quoting. Apple published no figure for the
# base M1; 68.25 is the LPDDR4X-4266 x 128-bit arithmetic, not Apple's number.
NOMINAL_BANDWIDTH_GBPS = {
    "M1": [(0, 68.25, "not published by Apple; LPDDR4X-4266 x 128-bit")],
    "M1 Pro": [(0, 200, "")],
    "M1 Max": [(0, 400, "")],
    "M1 Ultra": [(0, 800, "")],
    "M2": [(0, 100, "")],
    "M2 Pro": [(0, 200, "")],
    "M2 Max": [(0, 400, "")],
    "M2 Ultra": [(0, 800, "")],
    "M3": [(0, 100, "")],
    "M3 Pro": [(0, 150, "")],
    "M3 Max": [(0, 300, "30-core GPU"), (40, 400, "40-core GPU")],
    "M3 Ultra": [(0, 819, "")],
    "M4": [(0, 120, "")],
    "M4 Pro": [(0, 273, "")],
    "M4 Max": [(0, 410, "32-core GPU"), (40, 546, "40-core GPU")],
}


def bandwidth_table_markdown() -> str:
    lines = ["| chip | nominal GB/s | note |", "|---|---|---|"]
    for chip, bins in NOMINAL_BANDWIDTH_GBPS.items():
        for _, gbps, note in bins:
            lines.append(f"| {chip} | {gbps:g} | {note} |")
    return "\n".join(lines)


def detect_chip() -> tuple:
    """(chip name like "M2 Pro" or None, GPU core count or None)."""
    if platform.system() != "Darwin":
        return None, None
    try:
        brand = subprocess.run(["sysctl", "-n", "machdep.cpu.brand_string"], capture_output=True,
                               text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None, None
    chip = brand.replace("Apple ", "").strip() or None
    cores = None
    try:
        info = subprocess.run(["system_profiler", "SPDisplaysDataType"], capture_output=True,
                              text=True, timeout=30).stdout
        for line in info.splitlines():
            if "Total Number of Cores" in line:
                cores = int(line.split(":")[1])
                break
    except (OSError, subprocess.SubprocessError, ValueError):
        pass
    return chip, cores


def nominal_bandwidth(chip, gpu_cores):
    bins = NOMINAL_BANDWIDTH_GBPS.get(chip or "")
    if not bins:
        return None
    chosen = bins[0]
    for entry in bins:
        if gpu_cores is not None and gpu_cores >= entry[0]:
            chosen = entry
    if gpu_cores is None and len(bins) > 1:
        chosen = bins[-1]  # unknown bin: the higher figure, so the percentage is not flattering
    return chosen[1]
