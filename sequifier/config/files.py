"""Reading YAML config files into plain data, with one-line errors naming the file."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import yaml
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import GrammarParseError, OmegaConfBaseException

from sequifier.config.errors import UserError

MAX_NESTING = 32  # levels of mappings and lists: far more than any config needs, far fewer than OmegaConf's limit
MAX_VALUES = 100_000  # mappings, lists and scalars once YAML aliases (*name) are expanded


class RecursiveAlias(ValueError):
    """A mapping or list that holds itself through a YAML alias."""


def shape(value: Any) -> tuple[int, int]:
    """(levels of mappings and lists, values counted as if YAML's shared aliases were copies) of `value`; the
    walk stops past MAX_NESTING levels or MAX_VALUES values. RecursiveAlias for a value that holds itself."""
    known: dict[int, tuple[int, int]] = {}
    open_ids: set[int] = set()

    def walk(node: Any) -> tuple[int, int]:
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else None
        if children is None:
            return 0, 1
        if id(node) in known:
            return known[id(node)]
        if id(node) in open_ids:
            raise RecursiveAlias()
        if len(open_ids) > MAX_NESTING:
            return 1, 1
        open_ids.add(id(node))
        levels, values = 0, 1
        for child in children:
            child_levels, child_values = walk(child)
            levels, values = max(levels, child_levels), values + child_values
            if values > MAX_VALUES:
                break
        open_ids.discard(id(node))
        known[id(node)] = (levels + 1, values)
        return known[id(node)]

    return walk(value)


def nesting(value: Any) -> int:
    """How many levels of mappings and lists `value` holds (0 for a scalar)."""
    return shape(value)[0]


def read_yaml_mapping(path: Path, resolve: bool = True) -> dict[str, Any]:
    """The top-level mapping of a YAML file, with interpolations resolved unless `resolve` is false.

    Train configs keep theirs for Hydra, which resolves them after composition.

    UserError naming the file for a missing file, bad YAML, a non-mapping or an unresolvable interpolation.
    """
    path = Path(path)
    if path.is_dir():
        raise UserError(str(path), "is a folder, not a config file")
    if not path.is_file():
        raise UserError(
            str(path), "is not a regular file, so not a config file" if path.exists() else "config file not found"
        )
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise UserError(str(path), "cannot read the config file: " + " ".join(str(error).split())) from None
    try:
        top = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise UserError(str(path), _yaml_syntax_problem(error)) from None
    if top is not None and not isinstance(top, dict):  # an empty file is an empty mapping
        raise UserError(str(path), f"must contain a mapping of fields at the top level, not a {type(top).__name__}")
    try:
        levels, values = shape(top)
    except RecursiveAlias:
        raise UserError(
            str(path), "a YAML alias (*name) stands inside the mapping or list it names, so it never ends"
        ) from None
    if levels > MAX_NESTING:
        raise UserError(
            str(path), f"nests mappings and lists more than {MAX_NESTING} levels deep; a config needs fewer"
        )
    if values > MAX_VALUES:
        raise UserError(
            str(path), f"its YAML aliases (*name) expand to more than {MAX_VALUES:,} values; a config needs far fewer"
        )
    try:
        data = OmegaConf.load(io.StringIO(text))
    except yaml.YAMLError as error:
        raise UserError(str(path), _yaml_syntax_problem(error)) from None
    except OSError:  # OmegaConf's answer to a top-level scalar
        data = None
    except GrammarParseError as error:
        key = getattr(error, "full_key", None)
        raise UserError(
            f"{path}: {key}" if key else str(path),
            f"holds an interpolation that cannot be parsed ({str(error).splitlines()[0]}); an interpolation is "
            "written ${path.to.field}, and a '${' meant as text is written \\${",
        ) from None
    except OmegaConfBaseException as error:
        unusable = _unusable_key(text)
        if unusable is not None:
            raise UserError(str(path), unusable) from None
        raise UserError(str(path), "is not valid YAML: " + " ".join(str(error).split())) from None
    if not isinstance(data, DictConfig):
        raise UserError(str(path), "must contain a mapping of fields at the top level")
    try:
        return OmegaConf.to_container(data, resolve=resolve)
    except OmegaConfBaseException as error:
        raise UserError(str(path), "cannot resolve interpolation: " + " ".join(str(error).split())) from None


def _unusable_key(text: str) -> str | None:
    """Where a mapping's key is null (an unquoted `~` or `null`, or nothing before the colon): no config field can be
    named so. (A list or mapping as a key is refused by YAML's own loader before.)"""
    nodes = [yaml.compose(text, Loader=yaml.SafeLoader)]
    while nodes:
        node = nodes.pop()
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if key.tag == "tag:yaml.org,2002:null":
                    return (
                        f"YAML error at line {key.start_mark.line + 1}, column {key.start_mark.column + 1}: a key is "
                        "null, which names no field; write the field's name (quote a key meant as text: '~')"
                    )
                nodes.append(value)
        elif isinstance(node, yaml.SequenceNode):
            nodes.extend(node.value)
    return None


def _yaml_syntax_problem(error: yaml.YAMLError) -> str:
    """'YAML syntax error at line L, column C: problem', counting from 1 as editors do."""
    mark = getattr(error, "problem_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "an unknown line"
    problem = getattr(error, "problem", None) or " ".join(str(error).split())
    context = getattr(error, "context", None)  # what the problem is about, e.g. 'found duplicate anchor'
    return f"YAML syntax error at {where}: {f'{context}; ' if context else ''}{problem}"
