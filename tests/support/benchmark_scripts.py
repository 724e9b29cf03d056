"""The benchmark scripts' smallest sizes, which the suite runs them at (tests/benchmarks/)."""

# each script's smallest arguments ({tmp}: the test's folder; {default_database}: the suite's) and a line its summary prints
TINY = {
    "bench_load_and_metrics.py": (["--rows", "20000", "--jsonl-rows", "200"], "Summary"),
    "bench_stability.py": (["--repeats", "1"], "rank intervals"),
    "bench_prompts.py": (["--repeats", "1"], "render every task"),
    "bench_parse.py": ([], "misses by answer style"),
    "bench_startup.py": (["--repeats", "1", "--db", "{default_database}"], "molp2s --help"),
    # `make clean` on the fresh clone: the clone, the timing and the summary, without a 3-minute install
    "bench_report.py": (["--repeats", "1", "--target", "clean"], "median"),
    "bench_bayes_frontier.py": (
        ["--seeds", "1", "--families", "30", "--budget", "0", "--out", "{tmp}/frontier.csv"],
        "ceiling pair called certain",
    ),
    "bench_bayes.py": (
        [
            "--families",
            "10",
            "--models",
            "2",
            "--chains",
            "2",
            "--tune",
            "30",
            "--draws",
            "30",
            "--samplers",
            "nutpie",
            "--process",
            "1",
            "--budget",
            "0",
        ],
        "whole process",
    ),
    "bench_audit.py": (["--seeds", "1", "--families", "40"], "top-20 precision"),
    "bench_crash.py": (["--trials", "2"], "faults survived"),
    "bench_fit_cost.py": (
        ["--models", "2,3", "--channels", "2", "--families", "20", "--budget", "0", "--out", "{tmp}/cost.csv"],
        "seconds per effective draw grow as cells^",
    ),
    "bench_warm_start.py": (["--sizes", "3x2x20", "--budget", "0"], "the warm start saved"),
    "bench_fit_geometry.py": (["--sizes", "2x2x20", "--draws", "50", "--tune", "50"], "leapfrog steps a draw"),
    "bench_fit_shapes.py": (
        ["--seeds", "1", "--shapes", "small-study", "--budget", "0", "--out", "{tmp}/shapes.csv"],
        "all shapes",
    ),
    "bench_adaptive.py": (
        [
            "--seeds",
            "1",
            "--data",
            "disagree,agree",
            "--budgets",
            "0.15",
            "--models",
            "1",
            "--out",
            "{tmp}/adaptive.csv",
        ],
        "regression bound (agree)",
    ),
    "bench_estimate_metrics.py": (
        [
            "--seeds",
            "1",
            "--data",
            "disagree",
            "--budgets",
            "0.15",
            "--models",
            "ceiling",
            "--out",
            "{tmp}/metrics.csv",
        ],
        "of a bound",
    ),
    "bench_intervals.py": (["--quick"], "Mid-range (truth 50%)"),
    "bench_loo.py": (["--observations", "300", "--repeats", "1"], "largest difference"),
    "bench_sbc.py": (
        ["--replicates", "2", "--draws", "60", "--out", "{tmp}/ranks.csv", "--figure", "{tmp}/ranks.svg"],
        "family_channel_sd",
    ),
}
# the scripts that fit the model (they import PyMC and JAX): one test file, so one worker's imports
FITTING = {
    "bench_bayes.py",
    "bench_bayes_frontier.py",
    "bench_fit_cost.py",
    "bench_fit_geometry.py",
    "bench_fit_shapes.py",
    "bench_loo.py",
    "bench_sbc.py",
    "bench_warm_start.py",
}
