"""The import graph of ``src/sentcl`` read with ``ast``: its cycles and the imports that go up the floors.

An import inside a function counts (it runs when the function does); one under ``if TYPE_CHECKING:`` does not.
Run it to print the counts: ``python tests/helpers/import_graph.py [src/sentcl]``.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "sentcl"

#: The floors of docs/architecture.md, bottom first: a module may import its own floor and the ones below.
#: A key is a module or a package (a package holds every module under it); ``*`` stands for any one name (each
#: method's torch-free ``options`` module: ``sentcl.methods.*.options``); the longest matching key wins.
FLOORS: tuple[tuple[str, ...], ...] = (
    (
        "sentcl.types",
        "sentcl.defaults",
        "sentcl.rng",
        "sentcl.registry",
        "sentcl.version",
        "sentcl.similarity",
        "sentcl.distributed",
        "sentcl.extras",
        "sentcl.config",
        "sentcl.files",
        # each method's options and record, in the method's own folder: the recipe reads them without torch
        "sentcl.methods.*.options",
    ),
    ("sentcl.data",),
    # the encoder, and the engines that run it over a corpus (they import only the encoder, data and files)
    ("sentcl.modeling", "sentcl.engines"),
    ("sentcl.objectives",),
    ("sentcl.methods",),
    ("sentcl.training", "sentcl.evaluation", "sentcl.postprocess"),
    (
        "sentcl.interop",
        "sentcl.index",
        "sentcl.serve",
        "sentcl.report",
        "sentcl.experiments",
        "sentcl.shrink",
        "sentcl.evaluation.labelfree.index_recall",
    ),
    ("sentcl.cli", "sentcl"),
)


def module_names(src: Path = SRC) -> dict[str, Path]:
    """Every module of the package by its dotted name (a package by its own name, for its __init__.py)."""
    names = {}
    for path in sorted(src.rglob("*.py")):
        parts = ("sentcl", *path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names[".".join(parts)] = path
    return names


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imported(node: ast.AST, here: str, is_package: bool) -> list[str]:
    """The dotted names one import statement asks for (a from-import yields module.name candidates too)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    assert isinstance(node, ast.ImportFrom)
    base = node.module or ""
    if node.level:
        package = here.split(".") if is_package else here.split(".")[:-1]
        package = package[: len(package) - (node.level - 1)]
        base = ".".join([*package, base] if base else package)
    return [base] + [f"{base}.{alias.name}" for alias in node.names]


def _walk_imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement, skipping the bodies of ``if TYPE_CHECKING:``."""
    found: list[ast.Import | ast.ImportFrom] = []
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return found


def import_graph(src: Path = SRC) -> dict[str, set[str]]:
    """module -> the sentcl modules it imports (``from pkg import mod`` points at ``pkg.mod``)."""
    modules = module_names(src)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        edges: set[str] = set()
        for node in _walk_imports(tree):
            candidates = _imported(node, name, path.name == "__init__.py")
            if isinstance(node, ast.ImportFrom):
                base, members = candidates[0], candidates[1:]
                submodules = [m for m in members if m in modules]
                if len(submodules) < len(members) and base in modules:
                    edges.add(base)
                edges.update(submodules)
            else:
                edges.update(c for c in candidates if c in modules)
        edges.discard(name)
        graph[name] = edges
    return graph


def key_matches(key: str, module: str) -> bool:
    """``key`` is ``module`` or one of its packages; a ``*`` part of the key matches any one name."""
    key_parts, parts = key.split("."), module.split(".")
    return len(parts) >= len(key_parts) and all(k in ("*", p) for k, p in zip(key_parts, parts, strict=False))


def floor_of(module: str) -> int:
    """The floor of a module: the index of its longest matching key in FLOORS."""
    best, best_len = None, -1
    for index, keys in enumerate(FLOORS):
        for key in keys:
            if key_matches(key, module) and len(key) > best_len:
                best, best_len = index, len(key)
    if best is None:
        raise KeyError(f"{module} is on no floor: add it to FLOORS in tests/helpers/import_graph.py")
    return best


def upward_imports(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Every (importer, imported) pair whose imported module sits on a higher floor."""
    return sorted((a, b) for a, targets in graph.items() for b in targets if floor_of(b) > floor_of(a))


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted; one is a cycle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(start: str) -> None:  # iterative, so a deep graph cannot hit the recursion limit
        nonlocal counter
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
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

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def cycle_path(graph: dict[str, set[str]], component: list[str]) -> list[str]:
    """One closed path through a cycle's modules (a -> b -> ... -> a), for the error message."""
    members = set(component)
    start = component[0]
    parents: dict[str, str] = {}
    frontier = [start]
    while frontier:  # breadth-first back to start inside the component: the shortest loop through it
        following = []
        for node in frontier:
            for child in sorted(graph[node] & members):
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(parents[path[-1]])
                    return [start, *reversed(path[:-1]), start] if node != start else [start, start]
                if child not in parents:
                    parents[child] = node
                    following.append(child)
        frontier = following
    return component


def report(src: Path = SRC) -> str:
    graph = import_graph(src)
    found = cycles(graph)
    upward = upward_imports(graph)
    lines = [f"{len(graph)} modules, {sum(map(len, graph.values()))} imports"]
    lines.append(f"{len(found)} cycles")
    for component in found:
        lines.append(f"  {len(component)} modules: " + " -> ".join(cycle_path(graph, component)))
    lines.append(f"{len(upward)} upward imports")
    lines.extend(f"  {a} -> {b}" for a, b in upward)
    return "\n".join(lines)


if __name__ == "__main__":
    print(report(Path(sys.argv[1]) if len(sys.argv) > 1 else SRC))
