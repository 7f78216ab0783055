"""The package's modules import each other without a cycle.

The graph is read from the source with :mod:`ast`: every import of a dgenv
module, at the top of a file or inside a function (an import moved into a
function to dodge a cycle is still the cycle), except those under ``if
TYPE_CHECKING:``, which never run. ``python tests/test_imports.py [DIR]``
prints the cycles of the package at DIR (default: this checkout's).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import Optional

PACKAGE = "dgenv"
SRC = Path(__file__).resolve().parents[1] / "src" / PACKAGE


def _type_checking_only(tree: ast.AST) -> set[int]:
    """ids of the import nodes under ``if TYPE_CHECKING:``."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            t = node.test
            name = t.id if isinstance(t, ast.Name) else t.attr if isinstance(t, ast.Attribute) else None
            if name == "TYPE_CHECKING":
                for stmt in node.body:
                    out.update(id(n) for n in ast.walk(stmt))
    return out


def import_graph(pkg: Path, name: str = PACKAGE) -> dict[str, set[str]]:
    """Module -> the package's modules it imports (``__init__`` for the package itself)."""
    mods = {p.stem for p in pkg.glob("*.py")}
    graph: dict[str, set[str]] = {}
    for path in sorted(pkg.glob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        skip = _type_checking_only(tree)
        deps: set[str] = set()

        def target(dotted: str, names: list[str]) -> None:
            # dotted: the module path below the package ("" for the package itself)
            head = dotted.split(".")[0]
            if head:
                deps.add(head if head in mods else "__init__")
                return
            for n in names:  # from . import x, y: submodules, or names of __init__
                deps.add(n if n in mods else "__init__")

        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            if isinstance(node, ast.ImportFrom):
                names = [a.name for a in node.names]
                if node.level == 1:
                    target(node.module or "", names)
                elif node.level == 0 and node.module and (node.module == name or node.module.startswith(name + ".")):
                    target(node.module[len(name) + 1 :], names)
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name == name or a.name.startswith(name + "."):
                        target(a.name[len(name) + 1 :], ["__init__"])
        deps.discard(path.stem)
        graph[path.stem] = deps
    return graph


def find_cycle(graph: dict[str, set[str]]) -> Optional[list[str]]:
    """One cycle of ``graph`` as ``[a, b, ..., a]``, or None."""
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(m: str) -> Optional[list[str]]:
        state[m] = 1
        path.append(m)
        for d in sorted(graph.get(m, ())):
            if state.get(d) == 1:
                return path[path.index(d) :] + [d]
            if d not in state:
                c = visit(d)
                if c:
                    return c
        path.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state:
            c = visit(m)
            if c:
                return c
    return None


def all_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Cycles found by removing one edge of each cycle found until none is left (a witness list, not every cycle)."""
    g = {k: set(v) for k, v in graph.items()}
    out = []
    while (c := find_cycle(g)) is not None:
        out.append(c)
        g[c[-2]].discard(c[-1])
    return out


def test_the_package_has_no_import_cycle() -> None:
    graph = import_graph(SRC)
    assert {"client", "inproc", "train", "imitate", "_clients", "base"} <= set(graph)  # the right directory
    cycles = all_cycles(graph)
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


def test_the_check_sees_a_cycle_through_a_function_level_import(tmp_path: Path) -> None:
    pkg = tmp_path / PACKAGE
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from .a import f\n")
    (pkg / "a.py").write_text("from . import b\n\ndef f():\n    return b.g()\n")
    (pkg / "b.py").write_text("def g():\n    from .a import f  # dodges the cycle at import time\n    return f\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .d import X\n")
    (pkg / "d.py").write_text("import dgenv.c\nfrom dgenv import f\n")
    graph = import_graph(pkg)
    assert graph["b"] == {"a"} and graph["a"] == {"b"}
    assert graph["c"] == set()  # TYPE_CHECKING imports never run
    assert graph["d"] == {"c", "__init__"}
    assert find_cycle(graph) in (["a", "b", "a"], ["b", "a", "b"])
    (pkg / "b.py").write_text("def g():\n    return 1\n")
    assert find_cycle(import_graph(pkg)) is None


if __name__ == "__main__":
    d = Path(sys.argv[1]) if len(sys.argv) > 1 else SRC
    for c in all_cycles(import_graph(d)):
        print(" -> ".join(c))
