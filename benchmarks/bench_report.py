#!/usr/bin/env python
"""Benchmark: `make report` on a fresh clone, install included (target ≤ 240 s), median of N.

Each run clones the repository's committed HEAD into a new temporary folder and runs
`make report` there, as a new user would: the virtual environment, the default database,
the fit with its LOO comparison, the seven pages. Prints each run's wall time with the
fit's own time (read from the saved fit) and the pages' time (from the command's log),
then the median. Uncommitted changes are not measured.

    .venv/bin/python benchmarks/bench_report.py [--repeats 3] [--target report]

``--target setup`` times the clone and the install alone (the test suite runs that).
``--overlap-pairs N`` then times, in the last clone, N pairs of `molp2s report`'s work with the
fit removed first: the pages that read no fit rendered while the fit is made (what `molp2s report`
does), against the fit first and every page after it (as Quarto does), in turn, on Jupyter.
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


# one report of the clone's default database, its fit removed first (run on the clone's Python)
_ONE_REPORT = """
import sys, time
from pathlib import Path
from molp2s_stats.report import prepare, site
clone, overlap = Path(sys.argv[1]), sys.argv[2] == "overlap"
database = clone / "reports" / "_build" / "default.duckdb"
prepare.default_fit_path(database).unlink(missing_ok=True)
started = time.perf_counter()
site.render_report(clone / "reports", clone / "overlap-site", {}, database=database, fit=None,
                   engine="jupyter", overlap=overlap, log=lambda line: None)
print(time.perf_counter() - started)
"""


def overlap_pairs(clone: Path, pairs: int) -> None:
    """Pairs of reports with the fit made anew: overlapped, then fit first, in turn."""
    seconds: dict[str, list[float]] = {"overlap": [], "fit first": []}
    for pair in range(1, pairs + 1):
        for way in seconds:
            done = subprocess.run(
                [str(clone / ".venv" / "bin" / "python"), "-c", _ONE_REPORT, str(clone), way.split()[0]],
                cwd=clone,
                capture_output=True,
                text=True,
                check=True,
            )
            seconds[way].append(float(done.stdout.strip().splitlines()[-1]))
        print(f"  pair {pair}: overlapped {seconds['overlap'][-1]:.1f} s, fit first {seconds['fit first'][-1]:.1f} s")
    ratios = [a / b for a, b in zip(seconds["overlap"], seconds["fit first"], strict=True)]
    print(
        f"  overlapped: median {statistics.median(seconds['overlap']):.1f} s, fit first "
        f"{statistics.median(seconds['fit first']):.1f} s, ratio (pair by pair) median {statistics.median(ratios):.2f}",
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--target", default="report", help="the make target (default: report)")
    parser.add_argument("--overlap-pairs", type=int, default=0)
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
            if run == args.repeats and args.overlap_pairs:
                overlap_pairs(clone, args.overlap_pairs)
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
