"""No two production modules import each other, directly or round a longer loop.

The apps' layers contract (pyproject.toml, `make lint`) catches a circle between apps; this
catches one inside an app or package (an adapter's provider and its auth module, a service and
its reader), including through imports written inside functions, which grimp sees too.
"""

from __future__ import annotations

import grimp

PACKAGES = ("lab", "accounts", "live", "runs", "auth_flows", "seeding", "broadcast", "push", "providers")
KNOWN: set[frozenset[str]] = set()  # none: a circle found here is a defect to remove, not to list


def _production(module: str) -> bool:
    parts = module.split(".")
    return "tests" not in parts and "migrations" not in parts


def import_circles(graph: grimp.ImportGraph) -> list[frozenset[str]]:
    """Strongly connected groups of two or more modules (Tarjan), over production modules."""
    modules = sorted(m for m in graph.modules if _production(m))
    inside = set(modules)
    edges = {m: sorted(graph.find_modules_directly_imported_by(m) & inside) for m in modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[frozenset[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, []):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.add(w)
                if w == v:
                    break
            if len(group) > 1:
                circles.append(frozenset(group))

    for m in modules:
        if m not in index:
            visit(m)
    return circles


def test_no_module_imports_itself_round_a_circle():
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    circles = [sorted(c) for c in import_circles(graph) if c not in KNOWN]
    assert not circles, f"import circles: {circles}"
