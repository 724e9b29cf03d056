"""Files written whole or not at all: a result, a fit, a folder of pages.

An interrupted or failed write (Ctrl-C, a full disk) leaves the previous file or folder as
it was. The library writes through these (prompts, the report's renderer) and so does the
command line; how results are shown (tables, CSV, JSON) is the command line's (``cli/output.py``).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


@contextlib.contextmanager
def replacing(path: Path | str):
    """A temporary file beside ``path`` to write to, put in ``path``'s place only once it is whole.

    An interrupted or failed write (Ctrl-C, a full disk) leaves ``path`` as it was, not half
    a file: the temporary one is removed and the error goes on. The rename is atomic on one
    file system (os.replace), which is why the temporary file sits in the same folder.
    """
    path = Path(path)
    partial = path.with_name(f".{path.name}.partial-{os.getpid()}")
    try:
        yield partial
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def replacing_folder(path: Path | str):
    """A temporary folder beside ``path`` to fill, put in ``path``'s place only once it is complete.

    For outputs that are many files (the report site): an interrupted or failed render leaves
    the previous folder as it was. Two renames swap the folders (a folder cannot replace a
    non-empty one in one step): the old one steps aside, the new one takes its name, and only
    then is the old one removed; an interrupt between the two renames leaves the old folder,
    whole, under ``.<name>.previous-<pid>`` beside it, which the error message names.
    """
    import shutil

    path = Path(path)
    partial = path.with_name(f".{path.name}.partial-{os.getpid()}")
    previous = path.with_name(f".{path.name}.previous-{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    try:
        yield partial
        if path.exists():
            os.replace(path, previous)
        try:
            os.replace(partial, path)
        except BaseException:
            if previous.exists() and not path.exists():
                os.replace(previous, path)
            raise
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    shutil.rmtree(previous, ignore_errors=True)
