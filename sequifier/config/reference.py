"""Owns the generated field reference of the train config: Markdown tables rendered from `sequifier.config.schema`.

`render_reference()` walks the frozen dataclasses of the schema and writes one table per
section (path, type, default, allowed values, doc). docs/configuration.md holds its output
between the markers below; `python -m sequifier.config.reference` prints it and
`python -m sequifier.config.reference --write docs/configuration.md` refreshes that block.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Union

from sequifier.atomic import write_text_atomic
from sequifier.config.schema import TrainConfig
from sequifier.config.typed import REQUIRED

START_MARKER = "<!-- reference:start -->"
END_MARKER = "<!-- reference:end -->"

# The placeholder written for the user-chosen key of a `dict[str, <dataclass>]` field.
PLACEHOLDERS = {"parts": "<part>", "branches": "<branch>", "initialization": "<group>"}
DEFAULT_PLACEHOLDER = "<name>"
LIST_ITEM = "[*]"
# How often one dataclass may appear on the path of a row: 2 shows a recursive field
# (IngestionConfig.branches, FreezeNode.branches) one level deep and then stops.
MAX_REPEATS = 2

TOP_LEVEL = "top level"
INTRO = (
    "_Generated from `sequifier/config/schema.py` by `python -m sequifier.config.reference`; "
    "edit the schema, not this block._\n\n"
    "Paths are canonical. `<name>`, `<part>`, `<branch>` and `<group>` stand for keys you choose; "
    "`[*]` stands for every item of a list. The singleton spellings map onto these paths: "
    "`model.interface` is `model.interfaces.<name>`, `dataset` is `dataset_training.<name>`, "
    "`dataset.part` is `dataset_training.<name>.parts.<part>`, `training_plan.epochs` is one phase "
    "of `training_plan.phases[*]`, `evaluation: true` is `evaluation.sources[*]`. "
    "A default of _required_ means the field must be given; _section_ means a group of the fields below it."
)


@dataclass(frozen=True)
class Row:
    """One line of a reference table."""

    path: str
    type: str
    default: str
    allowed: str
    doc: str
    section: bool = False


def render_reference() -> str:
    """The whole reference: an introduction and one Markdown table per section of TrainConfig."""
    blocks = [INTRO]
    for title, rows in sections():
        blocks.append(f"### {title}\n\n" + _table(rows))
    return "\n\n".join(blocks) + "\n"


def sections() -> list[tuple[str, list[Row]]]:
    """(title, rows) per section: the top-level scalar fields first, then each top-level section in schema order."""
    hints = typing.get_type_hints(TrainConfig)
    top: list[Row] = []
    nested: list[tuple[str, list[Row]]] = []
    for field in dataclasses.fields(TrainConfig):
        hint = hints[field.name]
        if _section_class(hint) is None:
            top.append(_row(field.name, hint, field))
        else:
            nested.append((field.name, list(_rows(field.name, hint, field, (TrainConfig,)))))
    return [(TOP_LEVEL, top)] + nested


def _rows(path: str, hint: Any, field: dataclasses.Field, stack: tuple[type, ...]) -> Iterator[Row]:
    """The row of `field` at `path`, then the rows of the fields nested in it."""
    row = _row(path, hint, field)
    cls = _section_class(hint)
    if cls is None:
        yield row
        return
    child_path = _child_path(path, field.name, hint)
    if stack.count(cls) >= MAX_REPEATS:
        ancestor = _ancestor_example(child_path)
        note = f"nested deeper the same way: `{child_path}.…` takes the fields listed under `{ancestor}`"
        yield dataclasses.replace(row, doc=_join_doc(row.doc, note))
        return
    yield row
    child_hints = typing.get_type_hints(cls)
    for child in dataclasses.fields(cls):
        yield from _rows(f"{child_path}.{child.name}", child_hints[child.name], child, stack + (cls,))


def _ancestor_example(child_path: str) -> str:
    """For `a.branches.<branch>.branches.<branch>` the first level: `a.branches.<branch>`."""
    parts = child_path.split(".")
    last_two = parts[-2:]
    for end in range(len(parts) - 2, 1, -1):
        if parts[end - 2 : end] == last_two:
            return ".".join(parts[:end])
    return child_path


def _child_path(path: str, name: str, hint: Any) -> str:
    """Where the fields of a section live: directly below, below a named key, or below each list item."""
    hint = _strip_optional(hint)
    origin = typing.get_origin(hint)
    if origin is dict:
        return f"{path}.{PLACEHOLDERS.get(name, DEFAULT_PLACEHOLDER)}"
    if origin is tuple:
        return f"{path}{LIST_ITEM}"
    return path


def _row(path: str, hint: Any, field: dataclasses.Field) -> Row:
    metadata = field.metadata
    return Row(
        path=path,
        type=_type_name(hint),
        default=_default(field, hint),
        allowed=_allowed(metadata.get("choices", ()), metadata.get("aliases", {})),
        doc=str(metadata.get("doc", "")),
        section=_section_class(hint) is not None,
    )


def _section_class(hint: Any) -> type | None:
    """The dataclass a field's value is built of (directly, per named key, or per list item), else None."""
    hint = _strip_optional(hint)
    if dataclasses.is_dataclass(hint):
        return hint
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is dict and len(args) == 2 and dataclasses.is_dataclass(args[1]):
        return args[1]
    if origin is tuple and args and dataclasses.is_dataclass(args[0]):
        return args[0]
    return None


def _strip_optional(hint: Any) -> Any:
    if typing.get_origin(hint) in (Union, types.UnionType):
        rest = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(rest) == 1:
            return rest[0]
    return hint


def _type_name(hint: Any) -> str:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (Union, types.UnionType):
        names = [_type_name(a) for a in args if a is not type(None)]
        nullable = type(None) in args
        return " or ".join(names) + (" or null" if nullable else "")
    if dataclasses.is_dataclass(hint):
        return "section"
    if hint is Any:
        return "any"
    if origin is tuple:
        item = args[0] if args else Any
        if dataclasses.is_dataclass(item):
            return "list of sections"
        return "list" if item is Any else f"list of {_type_name(item)}"
    if origin is dict:
        value = args[1] if len(args) == 2 else Any
        if dataclasses.is_dataclass(value):
            return "named sections"
        return "mapping" if value is Any else f"mapping to {_type_name(value)}"
    return {bool: "bool", int: "int", float: "float", str: "str"}.get(hint, getattr(hint, "__name__", str(hint)))


def _default(field: dataclasses.Field, hint: Any) -> str:
    if field.default is not REQUIRED:
        return _value(field.default)
    factory = field.default_factory  # type: ignore[misc]
    if factory is REQUIRED:
        return "_required_"
    if isinstance(factory, type) and dataclasses.is_dataclass(factory):
        return "_section_"
    return _value(factory())


def _value(value: Any) -> str:
    """A default as the YAML a user would write, in backticks."""
    return f"`{_yaml(value)}`"


def _yaml(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_yaml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_yaml(v)}" for k, v in value.items()) + "}"
    return str(value)


def _allowed(choices: tuple, aliases: dict) -> str:
    if not choices:
        return ""
    text = ", ".join(f"`{c}`" for c in choices)
    if aliases:
        text += " (also " + ", ".join(f"`{a}` for `{_yaml(c)}`" for a, c in aliases.items()) + ")"
    return text


def _join_doc(doc: str, note: str) -> str:
    return f"{doc}; {note}" if doc else note


def _table(rows: list[Row]) -> str:
    lines = ["| path | type | default | allowed values | doc |", "|---|---|---|---|---|"]
    for row in rows:
        cells = [f"`{row.path}`", row.type, row.default, row.allowed, row.doc]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def replace_block(document: str, reference: str) -> str:
    """`document` with the text between the reference markers replaced by `reference`."""
    start = document.index(START_MARKER) + len(START_MARKER)
    end = document.index(END_MARKER, start)
    return document[:start] + "\n" + reference + document[end:]


def read_block(document: str) -> str:
    """The text between the reference markers of `document`, without the newline after the start marker."""
    start = document.index(START_MARKER) + len(START_MARKER)
    end = document.index(END_MARKER, start)
    return document[start:end].removeprefix("\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m sequifier.config.reference", description="Print the train config field reference as Markdown."
    )
    parser.add_argument(
        "--write",
        type=Path,
        metavar="FILE",
        help="replace the block between the reference markers of FILE instead of printing",
    )
    args = parser.parse_args(argv)
    reference = render_reference()
    if args.write is None:
        sys.stdout.write(reference)
        return 0
    document = args.write.read_text()
    if START_MARKER not in document or END_MARKER not in document:
        print(f"error: {args.write}: needs the markers {START_MARKER} and {END_MARKER}", file=sys.stderr)
        return 2
    write_text_atomic(args.write, replace_block(document, reference))
    return 0


if __name__ == "__main__":
    sys.exit(main())
