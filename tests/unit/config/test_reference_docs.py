"""docs/configuration.md carries the generated field reference unchanged, and the reference covers the whole schema."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
import types
import typing
from pathlib import Path
from typing import Any, Union

from sequifier.config.reference import END_MARKER, START_MARKER, read_block, render_reference, replace_block
from sequifier.config.schema import TrainConfig

DOCS = Path(__file__).resolve().parents[3] / "docs" / "configuration.md"
REFRESH = "python -m sequifier.config.reference --write docs/configuration.md"


def _table_rows(markdown: str) -> dict[str, list[str]]:
    """Path of every reference table row -> its cells."""
    rows = {}
    for line in markdown.splitlines():
        match = re.match(r"^\| `([^`]+)` \|(.*)\|$", line)
        if match:
            rows[match.group(1)] = [cell.strip() for cell in re.split(r"(?<!\\)\|", match.group(2))]
    return rows


def _normalized(path: str) -> str:
    """`dataset_training.<name>.parts.<part>.file_order` -> `dataset_training.parts.file_order`."""
    path = path.replace("[*]", "")
    return ".".join(part for part in path.split(".") if not part.startswith("<"))


def _nested_class(hint: Any) -> type | None:
    if typing.get_origin(hint) in (Union, types.UnionType):
        hint = next(a for a in typing.get_args(hint) if a is not type(None))
    for candidate in (hint, *typing.get_args(hint)):
        if dataclasses.is_dataclass(candidate):
            return candidate
    return None


def _schema_leaves(
    cls: type = TrainConfig, prefix: str = "", seen: tuple[type, ...] = ()
) -> list[tuple[str, dataclasses.Field]]:
    """Every field that holds a value rather than sub-fields; a recursive section is followed one level deep."""
    leaves = []
    hints = typing.get_type_hints(cls)
    for field in dataclasses.fields(cls):
        path = f"{prefix}{field.name}"
        nested = _nested_class(hints[field.name])
        if nested is None:
            leaves.append((path, field))
        elif (seen + (cls,)).count(nested) < 2:
            leaves += _schema_leaves(nested, path + ".", seen + (cls,))
    return leaves


def test_the_reference_block_in_the_docs_is_the_generators_output():
    document = DOCS.read_text()
    assert document.count(START_MARKER) == 1 and document.count(END_MARKER) == 1
    assert read_block(document) == render_reference(), f"docs/configuration.md is out of date; run {REFRESH}"
    assert replace_block(document, render_reference()) == document


def test_every_leaf_field_of_the_schema_has_a_row():
    rows = {_normalized(path) for path in _table_rows(read_block(DOCS.read_text()))}
    missing = [path for path, _ in _schema_leaves() if path not in rows]
    assert not missing
    assert "model.interfaces.ingestion.branches.layout" in rows  # recursive branches: shown one level deep
    assert "model.interfaces.ingestion.branches.branches.layout" not in rows


def test_rows_carry_the_schema_docs_defaults_and_choices():
    rows = {_normalized(path): cells for path, cells in _table_rows(render_reference()).items()}
    for path, field in _schema_leaves():
        _type, default, allowed, doc = rows[path]
        assert doc.startswith(field.metadata["doc"].replace("|", "\\|")), path
        assert default, path
        for choice in field.metadata["choices"]:
            assert f"`{choice}`" in allowed, path
    assert rows["global_training.batch_size"][:2] == ["int", "`64`"]
    assert rows["model_name"][1] == "_required_"
    assert rows["dataset_training.parts.metadata_config_path"][1] == "_required_"


def test_placeholders_and_list_items_are_spelled_as_in_error_messages():
    paths = set(_table_rows(render_reference()))
    for expected in (
        "model.interfaces.<name>.decoder.type",
        "dataset_training.<name>.parts.<part>.metadata_config_path",
        "training_plan.phases[*].sources[*].source",
        "evaluation.monitor.mode",
        "dataset_training.<name>.freeze.ingestion.branches.<branch>.freeze",
    ):
        assert expected in paths


def test_the_module_prints_the_reference():
    result = subprocess.run(
        [sys.executable, "-m", "sequifier.config.reference"], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == render_reference()
