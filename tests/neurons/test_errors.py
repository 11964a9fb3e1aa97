"""One exception root in neurons/: every public exception derives from NeuronError and is in the tree."""

from __future__ import annotations

import ast
import builtins
from pathlib import Path

import neurons.errors

ROOT = Path(__file__).resolve().parents[2]
BUILTIN_ERRORS = {
    name
    for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, BaseException)
}


def exception_classes(package: Path) -> dict[str, tuple[str, list[str]]]:
    """Every class in the package whose bases lead to a built-in exception: name -> (file, bases)."""
    classes: dict[str, tuple[str, list[str]]] = {}
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                bases = [b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases]
                classes[node.name] = (str(path.relative_to(ROOT)), bases)

    def is_exception(name: str, seen: frozenset[str] = frozenset()) -> bool:
        if name in BUILTIN_ERRORS:
            return True
        if name not in classes or name in seen:
            return False
        return any(is_exception(base, seen | {name}) for base in classes[name][1])

    return {
        name: found for name, found in classes.items() if is_exception(name) and name not in BUILTIN_ERRORS
    }


def rooted(name: str, classes: dict[str, tuple[str, list[str]]]) -> bool:
    return name == "NeuronError" or any(rooted(base, classes) for base in classes.get(name, ("", []))[1])


def test_every_public_exception_in_neurons_derives_from_neuron_error() -> None:
    classes = exception_classes(ROOT / "neurons")
    public = {name: where for name, where in classes.items() if not name.startswith("_")}
    assert len(public) >= 15
    outside = sorted(f"{name} ({where[0]})" for name, where in public.items() if not rooted(name, classes))
    assert outside == []


def test_the_tree_in_the_errors_docstring_names_every_one() -> None:
    public = {name for name in exception_classes(ROOT / "neurons") if not name.startswith("_")}
    doc = neurons.errors.__doc__ or ""
    assert sorted(name for name in public if f"── {name} " not in doc and name != "NeuronError") == []


def test_the_check_catches_an_exception_outside_the_root() -> None:
    classes = exception_classes(ROOT / "neurons")
    classes["Stray"] = ("neurons/stray.py", ["ValueError"])
    classes["Fine"] = ("neurons/fine.py", ["ChainUnavailable"])
    assert not rooted("Stray", classes) and rooted("Fine", classes)
