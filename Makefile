# Two entry points, each self-contained on a machine with only Python 3.11:
#   make report  set up .venv, build the default database from data/, fit the model, render the report site
#   make test    set up .venv (and Chromium for the browser test), run the whole test suite (doctests included)
# make demo prints the PGR leaderboard of the default data in the terminal (seconds).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo report test chromium bench docs screenshot data clean

# --compile-bytecode writes every installed module's .pyc once, at install (about 20 s on 2 cores):
# where PYTHONDONTWRITEBYTECODE is set (CI images often set it) Python would otherwise compile
# arviz, jax, pymc … from source in every process, about 5 s each for `molp2s fit`.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip uv
	$(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python -e '.[test]'
	touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	$(BIN)/molp2s demo

# With Quarto on PATH, `molp2s report` renders through it and names this venv's Python in
# QUARTO_PYTHON (Quarto would otherwise take python3 from PATH, not the venv, which is not activated).
report: $(STAMP)
	$(BIN)/molp2s report

# The report test opens a rendered page in headless Chromium (Debian's package).
# Installed once where this user may; otherwise that one test is skipped, and says so.
chromium:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
	  { [ "$$(id -u)" = 0 ] && apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } || \
	  echo "note: could not install chromium (needs root and apt-get); the browser test will be skipped"

# pytest exits 5 when it collects no test; that must fail CI, not pass it silently.
# One worker a core (at most 4), each taking whole test files (tests/conftest.py groups them), so
# that a module's fixture (a fit, a loaded database) is built once; the docs pages, which share
# nothing, go one by one to whichever worker is free.
# No test compares wall times (those are benchmarks/ scripts), so nothing runs apart. The 20 slowest
# steps (a fixture's setup, a test's call) are printed after the summary: where the next minute is.
# ruff first (lint, then the formatter's check; settings in pyproject.toml): seconds, and a
# formatting slip fails before the 10-minute run rather than after it.
test: $(STAMP) chromium
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python -m pytest -n auto --maxprocesses 4 --dist loadscope --durations=20

# Each script's printout is saved in benchmarks/results/ with the command, date and machine beside it
# (<file>.meta.json), for the documentation's Performance page. A script exits 1 when it misses a target.
BENCH_SCRIPTS := bench_load_and_metrics bench_stability bench_prompts bench_startup
bench: SHELL := bash
bench: $(STAMP)
	@set -o pipefail; for script in $(BENCH_SCRIPTS); do \
	  $(BIN)/python benchmarks/$$script.py | tee benchmarks/results/$$script.txt.partial || status=1; \
	  mv benchmarks/results/$$script.txt.partial benchmarks/results/$$script.txt; \
	  $(BIN)/python -m molp2s_stats.performance benchmarks/results/$$script.txt $$script.py; \
	done; exit $${status:-0}

# The documentation site (docs/), rendered like the report: with Quarto where it is installed,
# else page by page on a Jupyter kernel. Its pages read the default data and benchmarks/results/.
docs: $(STAMP)
	$(BIN)/python -m molp2s_stats.report.render docs docs/_site

# Each report page's first screen (1400 × 900, as a reader first sees it), from `make report`'s site,
# in headless Chromium: docs/images/<page>.png, shown on the docs' report page (the Leaderboard's also
# in the README). SITE=folder takes another rendered site.
SITE ?= reports/_site
PAGES := index leaderboard reliance comparisons stability posterior health data
screenshot: chromium
	@[ -f "$(SITE)/leaderboard.html" ] || $(MAKE) report
	@for page in $(PAGES); do \
	  chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1400,900 \
	    --screenshot="$(CURDIR)/docs/images/$$page.png" "file://$(abspath $(SITE))/$$page.html" 2>/dev/null \
	    && echo "docs/images/$$page.png" || exit 1; \
	done

# Rebuild data/ from scratch: QM9 families, GFN2-xTB properties (about 30 min on 2 cores;
# cached per molecule in build/xtb-cache), the PySCF NMR and UV-Vis values (hours on 2 cores;
# cached per molecule in data/qm-cache, which git tracks, and resumed where it stopped),
# then the benchmark with every channel, then the simulated responses.
data: $(STAMP)
	$(BIN)/uv pip install --quiet --python $(BIN)/python -e '.[build]'
	$(BIN)/python -m molp2s_stats.build.benchmark --out data/benchmark
	$(BIN)/python -m molp2s_stats.build.qm --benchmark data/benchmark --families 155
	$(BIN)/python -m molp2s_stats.build.benchmark --qm-only --out data/benchmark
	$(BIN)/molp2s simulate --benchmark data/benchmark --out data/responses

clean:
	rm -rf $(VENV) molp2s-demo.duckdb reports/_build reports/_site docs/_site
