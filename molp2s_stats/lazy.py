"""Modules imported on first use, so that `molp2s --help` and the light commands start fast.

The statistics stack (scipy, pingouin, PyMC, JAX) takes seconds to import; a command
that never touches it should not pay for it. ``importlib.util.LazyLoader`` defers a
module's execution until one of its attributes is read.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType


def lazy_import(name: str) -> ModuleType:
    """``name`` as a module object that imports itself when first used."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ImportError(f"no module named {name!r}")
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module
