#!/usr/bin/env python
"""Benchmark: `make report` on a fresh clone, install included (target ≤ 240 s), median of N.

Each run clones the repository's committed HEAD into a new temporary folder and runs
`make report` there, as a new user would: the virtual environment, the default database,
the fit with its LOO comparison, the seven pages. Prints each run's wall time with the
fit's own time (read from the saved fit) and the pages' time (from the command's log),
then the median. Uncommitted changes are not measured.

    .venv/bin/python benchmarks/bench_report.py [--repeats 3] [--target report]

``--target setup`` times the clone and the install alone (the test suite runs that).
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_SECONDS = 240


def fit_seconds(clone: Path) -> float | None:
    """The main fit's wall time as the saved fit records it (without the LOO refit)."""
    path = clone / "reports" / "_build" / "default.fit.nc"
    if not path.exists():
        return None
    import arviz as az

    return float(az.from_netcdf(path).posterior.attrs["seconds"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--target", default="report", help="the make target (default: report)")
    args = parser.parse_args(argv)
    print(
        f"make {args.target} on a fresh clone of {ROOT} (HEAD), {args.repeats} run(s), {time.strftime('%Y-%m-%d')}",
        flush=True,
    )
    walls = []
    for run in range(1, args.repeats + 1):
        with tempfile.TemporaryDirectory(prefix="molp2s-clone-") as tmp:
            clone = Path(tmp) / "clone"
            subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
            started = time.perf_counter()
            done = subprocess.run(["make", args.target], cwd=clone, capture_output=True, text=True)
            walls.append(time.perf_counter() - started)
            if done.returncode:
                print(done.stdout[-4000:], done.stderr[-4000:], sep="\n", file=sys.stderr)
                raise SystemExit(f"make {args.target} failed (exit {done.returncode}) in run {run}")
            pages = re.search(r"with \w+ in (\d+) s", done.stdout)
            fit = fit_seconds(clone)
            detail = "".join(
                [
                    f"  fit {fit:.0f} s" if fit is not None else "",
                    f"  report command {pages.group(1)} s" if pages else "",
                ]
            )
            print(f"  run {run}: {walls[-1]:6.1f} s{detail}", flush=True)
    median = statistics.median(walls)
    verdict = (
        f"  target <= {TARGET_SECONDS} s: {'pass' if median <= TARGET_SECONDS else 'FAIL'}"
        if args.target == "report"
        else ""
    )
    print(f"  median {median:.1f} s{verdict}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
