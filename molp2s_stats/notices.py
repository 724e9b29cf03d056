"""Third-party notices known to be harmless here, silenced at the entry points (the CLI and
the report pages) and nowhere else, each by its own message so that any other warning shows.

- PyTensor cannot link a BLAS when installed from PyPI; the models here are sampled on a
  JAX-compiled gradient (nutpie) and do not use PyTensor's C BLAS path.
- ArviZ announces, once a day, its coming 1.0 refactor; PyMC and nutpie pin ArviZ < 1.0.
- pingouin calls a pandas API that pandas 3 deprecates.
"""

from __future__ import annotations

import warnings

KNOWN = (
    ("PyTensor could not link to a BLAS installation", UserWarning),
    (r"\s*ArviZ is undergoing a major refactor", FutureWarning),
    ("The inplace keyword in DataFrame.dropna is deprecated", Warning),
)


def silence_known_notices() -> None:
    """Ignore exactly the notices in ``KNOWN``."""
    for message, category in KNOWN:
        warnings.filterwarnings("ignore", message=message, category=category)
