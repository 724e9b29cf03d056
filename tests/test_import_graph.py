"""The package's modules import one another without a circle, and its dictionaries repeat no key.

Import edges are read from the source (ast), imports inside functions included: the package
defers heavy imports into functions (so that `molp2s --help` does not load PyMC), and a
deferred import that points back up the layers is a circle all the same (the default data's
loader in defaults.py, which ingest imports, once imported ingest that way).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.support import ROOT

PACKAGE = ROOT / "molp2s_stats"


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports_of(name: str) -> set[str]:
    """The package's modules that ``name`` imports when it loads."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            # `from pkg import x`: x is a submodule when one exists, else a name defined in pkg
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        else:
            continue
        found |= {t for t in targets if t in MODULES and t != name}
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_cycle_finder_finds_a_circle_and_only_a_circle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_imports_resolve_to_the_modules_they_name_deferred_ones_included():
    assert "molp2s_stats.stats.metrics" in imports_of("molp2s_stats.report.context")
    assert "molp2s_stats.store" in imports_of("molp2s_stats.report.context")
    assert "molp2s_stats.bayes.provenance" in imports_of("molp2s_stats.report.context")  # inside a function


def test_no_import_circle_between_the_package_modules():
    graph = {name: imports_of(name) for name in MODULES}
    assert cycles(graph) == []


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_dictionary_literal_repeats_a_key(name):
    """A repeated key in a literal silently keeps the later value (the glossary once defined
    p_value twice, and the command reference showed the wrong meaning)."""
    tree = ast.parse(MODULES[name].read_text())
    repeated = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            keys = [k.value for k in node.keys if isinstance(k, ast.Constant)]
            repeated += sorted({k for k in keys if keys.count(k) > 1}, key=str)
    assert repeated == []
