"""The layers stay layered: sequifier/config imports neither torch nor the packages built on top of it."""

from __future__ import annotations

import ast
from pathlib import Path

import sequifier

PACKAGE = Path(sequifier.__file__).parent
ABOVE_CONFIG = (
    "torch",
    "sequifier.training",
    "sequifier.distributed",
    "sequifier.model",
    "sequifier.export",
    "sequifier.infer",
    "sequifier.commands",
    "sequifier.preprocess",
)


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports, at the top or inside functions, as absolute names."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def module_file(name: str) -> Path | None:
    relative = Path(*name.split(".")[1:])
    for candidate in (PACKAGE / relative.with_suffix(".py"), PACKAGE / relative / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def reachable_from(start: list[Path]) -> dict[str, Path]:
    """Modules imported directly or through other sequifier modules, with the file that imports each."""
    seen: dict[str, Path] = {}
    queue = list(start)
    visited: set[Path] = set()
    while queue:
        path = queue.pop()
        if path in visited:
            continue
        visited.add(path)
        for name in imported_modules(path):
            seen.setdefault(name, path)
            if name.startswith("sequifier.") and (found := module_file(name)) is not None:
                queue.append(found)
    return seen


def test_config_imports_nothing_above_it_and_not_torch():
    imported = reachable_from(sorted((PACKAGE / "config").glob("*.py")))
    offending = {
        name: str(path.relative_to(PACKAGE))
        for name, path in imported.items()
        if any(name == layer or name.startswith(layer + ".") for layer in ABOVE_CONFIG)
    }
    assert offending == {}


def test_the_check_sees_a_forbidden_import(tmp_path: Path):
    module = tmp_path / "module.py"
    module.write_text("def f():\n    from sequifier.training.engine import train\n    import torch\n")
    assert {"sequifier.training.engine", "torch"} <= imported_modules(module)
