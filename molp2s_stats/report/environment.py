"""The report's settings from the environment, read by the pages (``context``) and by the step
that prepares their files (``prepare``): the seed, and the paths of the database and the fit.

A relative ``MOLP2S_DB`` or ``MOLP2S_FIT`` means the folder the user typed it in, which is
not where Quarto runs a page (``context`` says why); ``given_path`` looks there through
``$PWD``.
"""

from __future__ import annotations

import os
from pathlib import Path


def seed() -> int:
    return int(os.environ.get("MOLP2S_SEED", "0"))


def given_path(variable: str, what: str, make_it: str) -> Path | None:
    """``$variable`` as an absolute path that exists (relative ones read as the user meant them), or
    None when the variable is unset."""
    if not os.environ.get(variable):
        return None
    given = Path(os.environ[variable]).expanduser()
    if given.is_absolute():
        if not given.exists():
            raise FileNotFoundError(f"{variable}={given}: no such {what} ({make_it})")
        return given
    here = Path.cwd()
    shell = Path(os.environ["PWD"]) if os.environ.get("PWD") else None
    for folder in (here, shell):
        if folder is not None and (folder / given).exists():
            return (folder / given).resolve()
    looked = ", ".join(dict.fromkeys(str(f) for f in (here, shell) if f is not None))
    raise FileNotFoundError(
        f"{variable}={given}: no such {what} in {looked}. Quarto runs each page in the page's own folder, "
        f"so give the path from the folder you ran it in as an absolute one, e.g. "
        f'{variable}="$PWD/{given}" quarto render reports/ (or use `molp2s report`); {make_it}'
    )
