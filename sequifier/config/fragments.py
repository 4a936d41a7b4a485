"""Composable YAML: an entry file plus the disjoint fragments its additional_config_paths name.

No file may hold what makes Hydra run code or read further files: the `hydra` and `defaults` keys
(Hydra settings, callbacks, launchers, defaults lists) and the keys of Hydra's `instantiate`
(`_target_`, `_partial_`, ...), anywhere in the tree, are refused with the file and key named.
Launchers and presets are chosen on the command line (`hydra/launcher=...`, `group=option`).
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from sequifier.config.errors import UserError, absent_file
from sequifier.config.files import read_yaml_mapping

KEY = "additional_config_paths"
HYDRA_TOP_LEVEL = {
    "hydra": "Hydra settings (callbacks, launchers, ...) can run code, so no config file holds them; a training's "
    "launcher and run folder go on the `sequifier train` command line (hydra/launcher=..., hydra.run.dir=...)",
    "defaults": "a defaults list makes Hydra read further files; `sequifier train` selects presets on its command "
    f"line (group=option), and a config of any command merges further files listed in {KEY}",
}
INSTANTIATE_KEYS = ("_target_", "_partial_", "_args_", "_recursive_", "_convert_")


def refuse_code(data: dict[str, Any], source: Path) -> None:
    """UserError naming `source` and the key when `data` holds a Hydra key that could run code or read files."""
    for key, reason in HYDRA_TOP_LEVEL.items():
        if key in data:
            raise UserError(str(source), f"the key {key!r} is not accepted in a config file: {reason}")
    pending: list[tuple[str, Any]] = [("", data)]
    while pending:
        prefix, node = pending.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, value in items:
            path = f"{prefix}.{key}" if prefix else str(key)
            if key in INSTANTIATE_KEYS:
                raise UserError(
                    str(source), f"{path}: {key} is not accepted in a config file (it makes Hydra call code)"
                )
            pending.append((path, value))


def compose_file(entry: Path) -> dict[str, Any]:
    """The entry file's data with every fragment merged in; fragments must not overlap.

    Fragment paths resolve against the entry file's project_root (itself relative to the
    working directory), like every other project path.
    """
    return _composed_with_owners(entry)[0]


def resolved_file(entry: Path) -> dict[str, Any]:
    """The entry file composed with its fragments, interpolations resolved, the fragment list removed."""
    data = compose_file(entry)
    try:
        data = OmegaConf.to_container(OmegaConf.create(data), resolve=True)
    except OmegaConfBaseException as error:
        problem, _, key = " ".join(str(error).split()).partition(" full_key: ")
        raise unresolvable(entry, key.split(" ")[0], problem) from None
    data.pop(KEY, None)
    return data


def unresolvable(entry: Path, key: str, problem: str) -> UserError:
    """An interpolation at `key` that cannot be resolved, named by the file (entry or fragment) that set it."""
    if not key:
        return UserError(str(entry), f"cannot resolve an interpolation: {problem}")
    return UserError(f"{source_of(entry, key)}: {key}", f"cannot resolve the interpolation: {problem}")


def source_of(entry: Path, key: str) -> Path:
    """The file, `entry` or one of its fragments, that sets the dotted `key` (a list's item, `a.b[1]`, by its list)."""
    return _owner(re.sub(r"\[\d+\]", "", key), _composed_with_owners(entry)[1], entry)


def _composed_with_owners(entry: Path) -> tuple[dict[str, Any], dict[str, Path]]:
    data = read_yaml_mapping(entry, resolve=False)
    refuse_code(data, entry)
    owners: dict[str, Path] = {}
    paths = data.get(KEY)
    if paths is None:
        return data, owners
    if isinstance(paths, str):
        paths = [paths]
    if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
        raise UserError(KEY, "must be a path or a list of paths")
    root = (Path.cwd() / str(data.get("project_root", "."))).resolve()
    merged = copy.deepcopy(data)
    merged[KEY] = list(paths)
    included: dict[Path, str] = {entry.resolve(): str(entry)}
    for raw in paths:
        fragment = (root / raw).resolve()
        if fragment in included:
            raise UserError(KEY, f"{raw!r} is listed twice or is the entry file itself ({included[fragment]})")
        included[fragment] = raw
        if not fragment.is_file():
            raise UserError(
                KEY,
                f"fragment {raw!r} {absent_file(fragment)} at {fragment} (paths resolve against project_root {root}; "
                "a fragment is a YAML file)",
            )
        addition = read_yaml_mapping(fragment, resolve=False)
        refuse_code(addition, fragment)
        if KEY in addition:
            raise UserError(str(fragment), f"a fragment cannot include further fragments ({KEY})")
        _merge_disjoint(merged, addition, "", owners, entry, fragment)
    return merged, owners


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
