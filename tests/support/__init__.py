"""What the tests share: paths, small benchmarks written on the fly, and the stand-in for Quarto."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "data"  # the embedded default data
TOY = Path(__file__).resolve().parent / "fixtures" / "toy"  # a small all-channel benchmark (build/toy.py)
BENCHMARKS = ROOT / "benchmarks"
QUARTO_DOUBLE = Path(__file__).resolve().parent / "quarto_double" / "quarto.py"
