# Two entry points, each self-contained on a machine with only Python 3.11:
#   make demo   set up .venv, build the demo database from data/benchmark and data/responses, print the PGR leaderboard
#   make test   set up .venv, run the whole test suite (doctests included)
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo test bench data clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip uv
	$(BIN)/uv pip install --quiet --python $(BIN)/python -e '.[test]'
	touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	$(BIN)/molp2s demo

# pytest exits 5 when it collects no test; that must fail CI, not pass it silently.
test: $(STAMP)
	$(BIN)/python -m pytest

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_load_and_metrics.py
	$(BIN)/python benchmarks/bench_stability.py

# Rebuild data/ from scratch: QM9 families, GFN2-xTB properties (about 30 min on 2 cores;
# results are cached per molecule in build/xtb-cache), then the simulated responses.
data: $(STAMP)
	$(BIN)/uv pip install --quiet --python $(BIN)/python -e '.[build]'
	$(BIN)/python -m molp2s_stats.build.benchmark --out data/benchmark
	$(BIN)/molp2s simulate --benchmark data/benchmark --out data/responses

clean:
	rm -rf $(VENV) molp2s-demo.duckdb
