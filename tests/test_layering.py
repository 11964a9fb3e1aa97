"""Imports point one way: arena <- judging <- storage <- neurons; only neurons/chain.py imports bittensor."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("arena", "judging", "storage", "neurons")
# Which of our packages each package may import.
ALLOWED = {
    "arena": set(),
    "judging": {"arena"},
    "storage": {"arena", "judging"},
    "neurons": {"arena", "judging", "storage"},
}


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def python_files(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def test_every_package_exists() -> None:
    for package in PACKAGES:
        assert (ROOT / package / "__init__.py").is_file(), package


def test_no_reverse_imports() -> None:
    bad: list[str] = []
    for package in PACKAGES:
        for path in python_files(package):
            for name in imported_modules(path):
                top = name.split(".")[0]
                if top in PACKAGES and top != package and top not in ALLOWED[package]:
                    bad.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not bad, "reverse imports:\n" + "\n".join(bad)


def test_only_chain_module_imports_bittensor() -> None:
    offenders = [
        str(path.relative_to(ROOT))
        for package in PACKAGES
        for path in python_files(package)
        if path.relative_to(ROOT).as_posix() != "neurons/chain.py"
        and any(n.split(".")[0] == "bittensor" for n in imported_modules(path))
    ]
    assert not offenders, f"only neurons/chain.py may import bittensor: {offenders}"


def test_detector_sees_a_reverse_edge(tmp_path: Path) -> None:
    # The checker itself must catch an edge, or the two tests above prove nothing.
    bad = tmp_path / "bad.py"
    bad.write_text("from storage.db import make_engine\nimport judging.types\n")
    assert {"storage.db", "judging.types"} <= imported_modules(bad)
