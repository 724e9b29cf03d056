"""Where and when a results file under benchmarks/results/ was measured.

A script that writes results calls ``record(out)`` once per run: it appends the command, the
date and the machine to ``<results file>.meta.json`` beside it (results files are appended
to and resumed, so one file may hold several runs). ``describe(out)`` is the line the
documentation's performance page prints under each table; for a file measured before the
scripts recorded this, it gives the date git has for the file and says the machine was not
recorded.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
import sys
from pathlib import Path


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_gib() -> float | None:
    try:
        return round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        return None


def machine() -> dict:
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {"cpu": _cpu_model(), "cores": usable, "memory_gib": _memory_gib(), "system": platform.platform(),
            "python": platform.python_version()}


def meta_path(out: Path) -> Path:
    return out.with_name(out.name + ".meta.json")


def record(out: Path | None, script: str, arguments: list[str] | None = None) -> None:
    """Append this run of ``script`` (its arguments, default the command line's; the UTC date; the
    machine) to ``out``'s meta file; nothing when ``out`` is None."""
    if out is None:
        return
    out = Path(out)
    path = meta_path(out)
    runs = json.loads(path.read_text())["runs"] if path.exists() else []
    arguments = sys.argv[1:] if arguments is None else list(arguments)
    runs.append({"command": " ".join(["python", f"benchmarks/{Path(script).name}", *arguments]),
                 "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                 "machine": machine()})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"file": out.name, "runs": runs}, indent=1) + "\n")


def _git_date(path: Path) -> str | None:
    try:
        done = subprocess.run(["git", "log", "-1", "--format=%cs", "--", path.name], cwd=path.parent,
                              capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() or None


def describe(out: Path) -> str:
    """One line: which command measured ``out``, when, on what machine."""
    out = Path(out)
    path = meta_path(out)
    if path.exists():
        runs = json.loads(path.read_text())["runs"]
        dates = sorted({run["date"][:10] for run in runs})
        machines = {(run["machine"]["cpu"], run["machine"]["cores"], run["machine"]["memory_gib"]) for run in runs}
        on = "; ".join(f"{cores} cores of {cpu}, {memory} GiB" for cpu, cores, memory in sorted(machines))
        when = dates[0] if len(dates) == 1 else f"{dates[0]} to {dates[-1]}"
        return f"`{runs[-1]['command']}` ({len(runs)} run{'s' * (len(runs) > 1)}), {when}, on {on}"
    date = _git_date(out)
    return (f"committed {date}" if date else "date unknown") + (
        "; measured before the scripts recorded their machine (the project's 2-core development machines)")


if __name__ == "__main__":
    # python benchmarks/_provenance.py RESULTS SCRIPT [ARGUMENTS…]: record a run whose output was
    # saved by the caller (`make bench` saves each script's printout)
    record(Path(sys.argv[1]), sys.argv[2], sys.argv[3:])
