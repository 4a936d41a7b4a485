"""Composable YAML: an entry file plus the disjoint fragments its additional_config_paths name."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from sequifier.config.errors import UserError
from sequifier.config.files import read_yaml_mapping

KEY = "additional_config_paths"


def compose_file(entry: Path) -> dict[str, Any]:
    """The entry file's data with every fragment merged in; fragments must not overlap.

    Fragment paths resolve against the entry file's project_root (itself relative to the
    working directory), like every other project path.
    """
    data = read_yaml_mapping(entry, resolve=False)
    paths = data.get(KEY)
    if paths is None:
        return data
    if isinstance(paths, str):
        paths = [paths]
    if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
        raise UserError(KEY, "must be a path or a list of paths")
    root = (Path.cwd() / str(data.get("project_root", "."))).resolve()
    merged = copy.deepcopy(data)
    merged[KEY] = list(paths)
    owners: dict[str, Path] = {}
    included: dict[Path, str] = {entry.resolve(): str(entry)}
    for raw in paths:
        fragment = (root / raw).resolve()
        if fragment in included:
            raise UserError(KEY, f"{raw!r} is listed twice or is the entry file itself ({included[fragment]})")
        included[fragment] = raw
        if not fragment.is_file():
            raise UserError(
                KEY, f"fragment {raw!r} does not exist at {fragment} (paths resolve against project_root {root})"
            )
        addition = read_yaml_mapping(fragment, resolve=False)
        if KEY in addition:
            raise UserError(str(fragment), f"a fragment cannot include further fragments ({KEY})")
        _merge_disjoint(merged, addition, "", owners, entry, fragment)
    return merged


def _merge_disjoint(
    target: dict, addition: dict, prefix: str, owners: dict[str, Path], entry: Path, source: Path
) -> None:
    for key, value in addition.items():
        path = f"{prefix}.{key}" if prefix else str(key)
        if key not in target:
            target[key] = value
            owners[path] = source
        elif isinstance(target[key], dict) and isinstance(value, dict):
            _merge_disjoint(target[key], value, path, owners, entry, source)
        else:
            raise UserError(
                path,
                f"is set by both {_owner(path, owners, entry)} and {source}; fragments must contribute disjoint fields",
            )


def _owner(path: str, owners: dict[str, Path], entry: Path) -> Path:
    parts = path.split(".")
    for end in range(len(parts), 0, -1):
        owner = owners.get(".".join(parts[:end]))
        if owner is not None:
            return owner
    return entry
