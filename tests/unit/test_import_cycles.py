"""No module of kgroups imports itself back through others.

Every import counts, also those under TYPE_CHECKING and those inside
functions: an import circle there is a circle in the design, even when
Python happens to load it.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import kgroups

_ROOT = Path(kgroups.__file__).parent


def _module_name(path: Path) -> str:
    parts = path.relative_to(_ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, name: str, modules: set[str]) -> set[str]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            # `from package import module` names a module, else a name in `base`.
            targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
        else:
            continue
        for target in targets:
            if target in modules:
                found.add(target)
    # A package's own __init__ is not an edge from its submodules' point of view
    # unless named; a plain `from pkg.mod import x` also names `pkg.mod` only.
    found.discard(name)
    return found


def import_graph() -> dict[str, set[str]]:
    """Module -> the kgroups modules it imports (a fresh copy: callers may change it)."""
    return {name: set(imported) for name, imported in _parsed_graph().items()}


@functools.cache
def _parsed_graph() -> dict[str, frozenset[str]]:
    paths = {_module_name(p): p for p in _ROOT.rglob("*.py")}
    modules = set(paths)
    return {name: frozenset(_imports(path, name, modules)) for name, path in paths.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_graph_sees_type_checking_imports() -> None:
    graph = import_graph()
    assert "kgroups.runtime.context" in graph["kgroups.handlers.groups"]


def test_no_import_cycles() -> None:
    assert cycles(import_graph()) == []
