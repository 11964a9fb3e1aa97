"""Imports point one way: arena <- judging <- storage <- curation <- neurons; the SDK stays in neurons/chain/.

There are no cycles. Inside neurons/ the two roles stay apart: the validator package never imports
the miner package and the miner never imports the validator; what both need lives at the top
(protocol, errors, metrics, logs, settings) or in neurons/chain/. Every import counts, including
those inside functions and under ``TYPE_CHECKING``: a cycle hidden from the interpreter is still a
cycle.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("arena", "judging", "storage", "curation", "neurons")
# Which of our packages each package may import.
ALLOWED = {
    "arena": set(),
    "judging": {"arena"},
    "storage": {"arena", "judging"},
    "curation": {"arena", "judging", "storage"},
    "neurons": {"arena", "judging", "storage", "curation"},
}
# Role packages inside neurons/ that must not import each other.
APART = (("neurons.validator", "neurons.miner"), ("neurons.miner", "neurons.validator"))


def imported_names(path: Path) -> set[str]:
    """Every dotted name an import statement in ``path`` names (``from a import b`` gives a and a.b)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: Path, packages: Iterable[str]) -> dict[str, set[str]]:
    """Module -> the modules of ours it imports (``from a import b``: to ``a.b`` where that is a module)."""
    files = {module_name(p, root): p for package in packages for p in sorted((root / package).rglob("*.py"))}
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                edges.update(alias.name for alias in node.names if alias.name in files)
            elif isinstance(node, ast.ImportFrom) and node.module in files and node.level == 0:
                for alias in node.names:
                    edges.add(
                        f"{node.module}.{alias.name}"
                        if f"{node.module}.{alias.name}" in files
                        else node.module
                    )
        graph[module] = edges - {module}
    return graph


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(node: str) -> None:
        nonlocal counter
        index[node] = low[node] = counter
        counter += 1
        stack.append(node)
        on_stack.add(node)
        for succ in sorted(graph.get(node, ())):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
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


def python_files(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def test_every_package_exists() -> None:
    for package in PACKAGES:
        assert (ROOT / package / "__init__.py").is_file(), package


def test_no_reverse_imports() -> None:
    bad: list[str] = []
    for package in PACKAGES:
        for path in python_files(package):
            for name in imported_names(path):
                top = name.split(".")[0]
                if top in PACKAGES and top != package and top not in ALLOWED[package]:
                    bad.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not bad, "reverse imports:\n" + "\n".join(sorted(set(bad)))


def test_only_the_chain_package_imports_bittensor() -> None:
    offenders = [
        str(path.relative_to(ROOT))
        for package in PACKAGES
        for path in python_files(package)
        if not path.relative_to(ROOT).as_posix().startswith("neurons/chain/")
        and any(n.split(".")[0] == "bittensor" for n in imported_names(path))
    ]
    assert not offenders, f"only neurons/chain/ may import bittensor: {offenders}"


def test_the_validator_and_the_miner_never_import_each_other() -> None:
    graph = import_graph(ROOT, PACKAGES)
    bad = [
        f"{module} imports {target}"
        for module, targets in graph.items()
        for source, forbidden in APART
        if module == source or module.startswith(source + ".")
        for target in targets
        if target == forbidden or target.startswith(forbidden + ".")
    ]
    assert not bad, "\n".join(sorted(bad))


def test_no_import_cycles() -> None:
    found = cycles(import_graph(ROOT, PACKAGES))
    assert not found, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_the_cycle_detector_catches_a_cycle(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from pkg.b import thing\n")
    (package / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.a import x\n"
    )
    (package / "c.py").write_text("from pkg import a\n")
    graph = import_graph(tmp_path, ["pkg"])
    assert graph["pkg.c"] == {"pkg.a"}
    assert cycles(graph) == [["pkg.a", "pkg.b"]]


def test_the_detector_sees_a_reverse_edge(tmp_path: Path) -> None:
    # The checker itself must catch an edge, or the tests above prove nothing.
    bad = tmp_path / "bad.py"
    bad.write_text("from storage.db import make_engine\nimport judging.types\n")
    assert {"storage.db", "judging.types"} <= imported_names(bad)
