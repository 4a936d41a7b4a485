"""Builds frozen config dataclasses from plain YAML data, collecting every problem with its path."""

from __future__ import annotations

import dataclasses
import math
import re
import types
import typing
from pathlib import PurePath
from typing import Any, Mapping, Union

from sequifier.config.errors import UserError, did_you_mean

REQUIRED = dataclasses.MISSING


LARGEST_INTEGER = 2**63 - 1  # what numpy, torch and Arrow hold in int64
LARGEST_UNSIGNED = 2**64 - 1  # torch's seeds


def option(
    default: Any = REQUIRED,
    doc: str = "",
    choices: tuple = (),
    aliases: Mapping[str, str | None] | None = None,
    largest: int = LARGEST_INTEGER,
) -> Any:
    """A config field with its one-line doc, allowed values and accepted aliases.

    Aliases map a spelling that established releases use onto the canonical one.
    A mapping default is copied for every instance. An integer field holds a 64-bit integer, at most `largest`.
    """
    metadata = {"doc": doc, "choices": tuple(choices), "aliases": dict(aliases or {}), "largest": largest}
    if isinstance(default, list):
        raise TypeError("use a tuple as a list default")
    if default is REQUIRED:
        return dataclasses.field(metadata=metadata)
    if isinstance(default, dict):
        return dataclasses.field(default_factory=lambda: dict(default), metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def nested(cls: type, doc: str = "") -> Any:
    """A field holding a nested config section built from its own defaults."""
    return dataclasses.field(default_factory=cls, metadata={"doc": doc, "choices": (), "aliases": {}})


class ProblemList:
    """Collects problems so that one run reports all of them together."""

    def __init__(self) -> None:
        self.problems: list[UserError] = []

    def add(self, where: str, problem: str) -> None:
        self.problems.append(UserError(where, problem))

    def raise_if_any(self) -> None:
        if len(self.problems) == 1:
            raise self.problems[0]
        if self.problems:
            raise ConfigProblems(self.problems)


class ConfigProblems(UserError):
    """Several config problems reported at once, one per line."""

    def __init__(self, problems: list[UserError]):
        self.problems = problems
        first = problems[0]
        super().__init__(first.where, first.problem)
        self.args = ("\n".join(str(p) for p in problems),)

    def __str__(self) -> str:
        return "\n".join(str(p) for p in self.problems)

    def __reduce__(self):
        return ConfigProblems, (self.problems,)


def build(cls: type, data: Any, path: str, problems: ProblemList) -> Any:
    """Build dataclass `cls` from `data`; None when `data` is unusable (problems recorded)."""
    if not isinstance(data, Mapping):
        chosen = [f.name for f in dataclasses.fields(cls) if data in f.metadata.get("choices", ())]
        meant = f" (did you mean {path}.{chosen[0]}: {data}?)" if chosen and path else ""
        problems.add(path or "<top level>", f"expected a mapping of fields, got {yaml_shown(data)}{meant}")
        return None
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    for key in data:
        if key not in fields:
            problems.add(_join(path, str(key)), "unknown field" + did_you_mean(str(key), fields))
    values: dict[str, Any] = {}
    for name, f in fields.items():
        where = _join(path, name)
        if name not in data:
            if f.default is REQUIRED and f.default_factory is REQUIRED:  # type: ignore[misc]
                problems.add(where, "required field is missing")
            continue
        value = _convert(hints[name], data[name], where, problems, f.metadata)
        if value is not _INVALID:
            values[name] = value
    try:
        return cls(**values)
    except TypeError:
        return None


_INVALID = object()


def _convert(hint: Any, value: Any, where: str, problems: ProblemList, metadata: Mapping) -> Any:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        non_null = [a for a in args if a is not type(None)]
        if len(non_null) == 1:
            return _convert(non_null[0], value, where, problems, {**metadata, "nullable": True})
        for candidate in non_null:
            trial = ProblemList()
            converted = _convert(candidate, value, where, trial, metadata)
            if not trial.problems:
                return converted
        problems.add(where, f"expected {_describe(hint)}, got {yaml_shown(value)}")
        return _INVALID
    if hint is Any:
        return value
    if dataclasses.is_dataclass(hint):
        built = build(hint, value, where, problems)
        return _INVALID if built is None else built
    if origin is tuple:
        if not isinstance(value, (list, tuple)):
            problems.add(where, f"expected a list, got {yaml_shown(value)}")
            return _INVALID
        items = [_convert(args[0], v, f"{where}[{i}]", problems, {}) for i, v in enumerate(value)]
        return _INVALID if any(i is _INVALID for i in items) else tuple(items)
    if origin is dict:
        if not isinstance(value, Mapping):
            problems.add(where, f"expected a mapping, got {yaml_shown(value)}")
            return _INVALID
        out = {}
        for key, item in value.items():
            converted = _convert(args[1], item, _join(where, str(key)), problems, {})
            if converted is not _INVALID:
                out[str(key)] = converted
        return out
    return _convert_scalar(hint, value, where, problems, metadata)


def _text_hint(hint: Any, value: Any) -> str:
    """For a number or boolean written as text, as an interpolation such as ${oc.env:X} gives it."""
    if hint not in (int, float, bool) or not isinstance(value, str):
        return ""
    if hint is bool:
        readable = value.lower() in ("true", "false")
    else:
        readable = re.fullmatch(r"\s*[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?\s*", value) is not None
    if not readable:
        return ""
    return (
        " (text: write it without quotes; a value an interpolation such as ${oc.env:...} gives is text too: wrap it "
        "in ${oc.decode:...} to read its value)"
    )


def _convert_scalar(hint: Any, value: Any, where: str, problems: ProblemList, metadata: Mapping) -> Any:
    ok = False
    if hint is bool:
        ok = isinstance(value, bool)
    elif hint is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
        largest = metadata.get("largest", LARGEST_INTEGER)
        if ok and not -(2**63) <= value <= largest:
            shown = "2**63-1" if largest == LARGEST_INTEGER else "2**64-1"
            problems.add(where, f"must be a 64-bit integer, from -2**63 to {shown}, got {value}")
            return _INVALID
    elif hint is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        value = float(value) if ok else value
    elif hint is str:
        ok = isinstance(value, str)
    choices = metadata.get("choices", ())
    if not ok:
        offered = f"; choose one of {_allowed(metadata)}" if choices else ""
        problems.add(where, f"expected {_describe(hint)}, got {yaml_shown(value)}{offered}{_text_hint(hint, value)}")
        return _INVALID
    aliases = metadata.get("aliases", {})
    value = aliases.get(value, value)
    if value is None:  # a spelling of null
        return None
    if choices and value not in choices:
        spellings = [*map(str, choices), *map(str, aliases)]
        problems.add(
            where,
            f"{yaml_shown(value)} is not allowed; choose one of {_allowed(metadata)}"
            + did_you_mean(str(value), spellings),
        )
        return _INVALID
    return value


def _allowed(metadata: Mapping) -> str:
    """The choices of a field, null where it may be null, and the other spellings it accepts for them."""
    allowed = ", ".join(repr(c) for c in metadata["choices"]) + (" or null" if metadata.get("nullable") else "")
    aliases = metadata.get("aliases", {})
    if aliases:
        spelled = ", ".join(f"{a!r} for {'null' if c is None else repr(c)}" for a, c in aliases.items())
        allowed += f" (also accepted: {spelled})"
    return allowed


def _describe(hint: Any) -> str:
    """The YAML words for a field's type: paths are strings, tuples lists, dicts mappings."""
    names = {bool: "true or false", int: "an integer", float: "a number", str: "a string", PurePath: "a string"}
    if isinstance(hint, type) and issubclass(hint, PurePath):
        hint = PurePath
    if hint in names:
        return names[hint]
    origin = typing.get_origin(hint) or hint
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if args and origin in (Union, types.UnionType):
        return " or ".join(dict.fromkeys(_describe(a) for a in args))
    if origin in (tuple, list):
        return "a list"
    if origin is dict:
        return "a mapping"
    return getattr(hint, "__name__", str(hint))


def yaml_shown(value: Any) -> str:
    """`value` as YAML would spell it in a message: null, true, a list, a mapping; others by their repr."""
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, (list, tuple)):
        return "a list"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value)


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name
