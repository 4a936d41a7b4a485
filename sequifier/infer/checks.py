"""Checks of an infer run against its artifacts' contracts: every disagreement names the field and both values."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from sequifier.config.errors import UserError
from sequifier.config.infer import CONTRACT_FIELDS, InferConfig
from sequifier.data.column_names import ROW_IDENTIFIERS
from sequifier.data.fingerprint import (
    column_meaning,
    id_map_meanings,
    split_column_kinds,
    split_column_meanings,
    values_of,
)
from sequifier.data.metadata import DatasetMetadata
from sequifier.data.stored_windows import StoredWindows
from sequifier.infer.codec import class_column_names
from sequifier.machine_memory import GIB, physical_memory

INPUT_SIGNATURE = ("input_columns", "context_length", "depth_layouts")  # depth_layouts: absent in older contracts


def contract_values(contract: dict[str, Any]) -> dict[str, Any]:
    """The contract fields an infer or train config may state, in the config's spelling."""
    used = dict.fromkeys(contract["input_columns"] + contract["target_columns"])
    kinds = {c: contract["columns"][c] for c in used}  # in the order a config lists them
    return {
        "input_columns": list(contract["input_columns"]),
        "target_columns": list(contract["target_columns"]),
        "categorical_columns": [c for c in kinds if kinds[c]["kind"] == "categorical"],
        "real_columns": [c for c in kinds if kinds[c]["kind"] == "real"],
        "context_length": contract["context_length"],
        "target_offset": contract["target_offset"],
        "prediction_length": contract["prediction_length"],
        "training_objective": contract["objective"],
        "model_interface": contract["interface"],
        "target_column_types": {t: kinds[t]["kind"] for t in contract["target_columns"]},
        # version-1 contracts record no data types
        "column_data_types": {c: kinds[c]["data_type"] for c in kinds if "data_type" in kinds[c]},
    }


def _same(a: Any, b: Any) -> bool:
    """Column lists compare as sets: their order in a config carries no meaning."""
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return sorted(a) == sorted(b)
    return a == b


def _shown(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def disagree(where: str, stated: Any, model_value: Any, model_file: Path, source: str = "config") -> UserError:
    return UserError(
        where, f"{source} says {_shown(stated)!r}, but {model_file.name} was exported with {_shown(model_value)!r}"
    )


def check_stated(config: InferConfig, contract: dict[str, Any], model_file: Path) -> None:
    """Explicit contract fields of the infer config must match the artifact.

    Column kinds and data types may name data columns the model does not use, and column kinds
    may leave some of the model's columns out.
    """
    actual = contract_values(contract)
    for field in CONTRACT_FIELDS:
        stated = getattr(config, field)
        if stated is None:
            continue
        if field in ("categorical_columns", "real_columns"):
            used = [c for c in stated if c in contract["columns"]]
            agrees = set(used) <= set(actual[field])
        elif field == "column_data_types":
            agrees = {c: t for c, t in stated.items() if c in actual[field]} == actual[field]
        else:
            agrees = _same(stated, actual[field])
        if not agrees:
            raise disagree(field, stated, actual[field], model_file)


def check_train_values(values: dict[str, Any], contract: dict[str, Any], model_file: Path, source: str) -> None:
    """The training config's window, columns and objective must match the artifact.

    `values` are keyed as contract_values.
    """
    actual = contract_values(contract)
    for field, stated in values.items():
        if not _same(stated, actual[field]):
            raise disagree(f"training_config_path: {field}", stated, actual[field], model_file, source)


def check_metadata(metadata: DatasetMetadata, metadata_path: Path, contract: dict[str, Any], model_file: Path) -> None:
    """The data's categories, normalization and depth layouts must be the ones the model was trained with."""
    for layout, definition in contract.get("depth_layouts", {}).items():
        if metadata.depth_layouts.get(layout) != definition:
            raise disagree(
                f"depth_layouts.{layout}",
                metadata.depth_layouts.get(layout),
                definition,
                model_file,
                str(metadata_path),
            )
    for name, column in contract["columns"].items():
        if name not in metadata.column_data_types:
            raise UserError(
                "metadata_config_path",
                f"{str(metadata_path)} has no column {name!r}, which {model_file.name} reads or predicts",
            )
        kind = "categorical" if name in metadata.id_maps else "real"
        if kind != column["kind"]:
            raise UserError(
                f"column_data_types.{name}",
                f"{str(metadata_path)} makes {name!r} a {kind} column ({metadata.column_data_types[name]}), but "
                f"{model_file.name} was trained on it as a {column['kind']} one",
            )
        if column["kind"] == "categorical":
            theirs, ours = values_of(metadata.id_maps.get(name, {})), values_of(column["id_map"])
            if theirs != ours:
                raise UserError(
                    f"id_maps.{name}",
                    f"{str(metadata_path)} maps {len(theirs)} values, {model_file.name} was trained on a different "
                    f"map of {len(ours)} values",
                )
        else:
            stated = metadata.selected_columns_statistics.get(name) if metadata.normalize_real_columns else None
            if stated != column["statistics"]:
                raise disagree(
                    f"selected_columns_statistics.{name}", stated, column["statistics"], model_file, str(metadata_path)
                )


def check_model_type(model_type: str, contract: dict[str, Any], model_file: Path) -> None:
    artifact = contract["artifact"]
    if artifact not in ("network", model_type):
        raise UserError(
            "model_type", f"is {model_type!r}, but {model_file.name} was exported with model type {artifact!r}"
        )


def check_dropout(infer_with_dropout: bool, contract: dict[str, Any], model_file: Path) -> None:
    """ONNX graphs fix dropout at export (export_with_dropout); PT bundles can do both."""
    mode = contract["dropout"]
    if mode == "inactive" and infer_with_dropout:
        raise UserError(
            "infer_with_dropout",
            f"is true, but {model_file.name} was exported with export_with_dropout: false; "
            "use a model exported with export_with_dropout: true, or a PT bundle",
        )
    if mode == "active" and not infer_with_dropout:
        raise UserError(
            "infer_with_dropout",
            f"is false, but {model_file.name} was exported with export_with_dropout: true; "
            "set infer_with_dropout: true, or use a model exported without dropout",
        )


def check_probability_columns(config: InferConfig, contract: dict[str, Any], model_file: Path) -> None:
    """Decoded predictions and probability columns name each class by its raw value: no two classes may share a
    name, and in probability files no class the name of a row identifier."""
    if not (config.decode_categories and config.model_type == "generative"):
        return
    for target in contract["target_columns"]:
        column = contract["columns"][target]
        if column["kind"] != "categorical":
            continue
        names = class_column_names(column, contract["special_token_ids"], np.asarray(contract["class_ids"][target]))
        clashes = sorted(set(names) & set(ROW_IDENTIFIERS))
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise UserError(
                "decode_categories",
                f"target {target!r} of {model_file.name} names two classes {repeated[0]!r} (a value spelled like the "
                "name of an unused id), so decoded predictions could not tell them apart (and one probabilities "
                "column would overwrite the other); set decode_categories: false (classes named by id)",
            )
        if clashes and config.output_probabilities:
            raise UserError(
                "output_probabilities",
                f"target {target!r} of {model_file.name} has the class value {clashes[0]!r}, which would overwrite "
                f"the identifier column of that name in its probabilities file; set decode_categories: false "
                "(columns named by class id) or output_probabilities: false",
            )


def check_generation(config: InferConfig, contract: dict[str, Any], model_file: Path) -> None:
    """Sampled columns are categorical targets.

    Autoregression needs a causal next-item model whose inputs are its targets.
    """
    targets = contract["target_columns"]
    for column in config.sample_from_distribution_columns or ():
        if column not in targets or contract["columns"][column]["kind"] != "categorical":
            categorical = [t for t in targets if contract["columns"][t]["kind"] == "categorical"]
            raise UserError(
                "sample_from_distribution_columns",
                f"{column!r} is not a categorical target of {model_file.name} (those are {categorical})",
            )
    if not config.autoregressive:
        return
    if contract.get("depth_layouts"):
        raise UserError(
            "autoregressive",
            f"{model_file.name} reads depth layouts ({', '.join(contract['depth_layouts'])}); deep autoregressive "
            "inference is not supported: deep columns cannot be targets, so a generated item has no child "
            "collection to feed back",
        )
    requirements = {
        "training_objective": (contract["objective"], "causal"),
        "prediction_length": (contract["prediction_length"], 1),
        "target_offset": (contract["target_offset"], 1),
    }
    for field, (actual, needed) in requirements.items():
        if actual != needed:
            raise UserError("autoregressive", f"needs {field} {needed!r}, but {model_file.name} has {actual!r}")
    if sorted(contract["input_columns"]) != sorted(targets):
        raise UserError(
            "autoregressive",
            f"needs the input columns to be the targets, but {model_file.name} reads "
            f"{contract['input_columns']} and predicts {targets}",
        )


def check_compatible(contracts: list[tuple[Path, dict[str, Any]]]) -> None:
    """Several models read the same data: their inputs, encodings and context must agree."""
    first_file, first = contracts[0]
    for other_file, other in contracts[1:]:
        for field in INPUT_SIGNATURE:
            if first.get(field, {}) != other.get(field, {}):
                raise UserError(
                    "model_path",
                    (
                        f"{first_file.name} and {other_file.name} are not compatible: "
                        f"{field} {first.get(field, {})!r} vs {other.get(field, {})!r}"
                    ),
                )
        for column in first["input_columns"]:
            if first["columns"][column] != other["columns"][column]:
                raise UserError(
                    "model_path",
                    (
                        f"{first_file.name} and {other_file.name} are not compatible: "
                        f"column {column!r} is encoded differently"
                    ),
                )


def check_split_meanings(data_path: Path, contract: dict[str, Any], model_file: Path) -> None:
    """A merged Parquet split that records its columns' meanings must give the model's columns the model's meanings."""
    kinds = split_column_kinds(data_path) or {}
    for name, column in contract["columns"].items():
        if kinds.get(name, column["kind"]) != column["kind"]:
            listing = "categorical_columns" if column["kind"] == "categorical" else "real_columns"
            raise UserError(
                str(data_path),
                f"holds {name!r} as a {kinds[name]} column, but {model_file.name} was trained on it as a "
                f"{column['kind']} one; preprocess the data with {name!r} in {listing}, as the training data was",
            )
    recorded = split_column_meanings(data_path)
    if recorded is None:
        return
    for name, column in contract["columns"].items():
        categorical = column["kind"] == "categorical"
        digests = id_map_meanings(column["id_map"]) if categorical else {column_meaning(None, column.get("statistics"))}
        if name in recorded and recorded[name] not in digests:
            what = "categories" if categorical else "normalization statistics"
            raise UserError(
                str(data_path),
                f"was written by a preprocess run whose {what} of {name!r} differ from those {model_file.name} was "
                "trained with, so the model would read other values; preprocess the data with metadata_config_path "
                "set to the training data's metadata, or use a split of the training run",
            )


FLOAT32_LARGEST = float(np.finfo(np.float32).max)


def check_stored_values(stored: StoredWindows, data_path: Path, contract: dict[str, Any], model_file: Path) -> None:
    """Every stored id is one of the model's classes, every stored real is finite and within float32."""
    for name in contract["input_columns"]:
        values = stored.columns[name]
        column = contract["columns"][name]
        if column["kind"] == "categorical":
            largest = column["n_classes"] - 1
            outside = (values < 0) | (values > largest)
            if outside.any():
                raise UserError(
                    name,
                    f"{data_path} holds the id {int(values[outside][0])}, outside the classes of {model_file.name} "
                    f"(the largest allowed id is {largest})",
                )
        elif not np.isfinite(values).all():
            raise UserError(name, f"{data_path} holds NaN or infinite values, which {model_file.name} cannot read")
        elif values.size and (beyond := values[np.abs(values) > FLOAT32_LARGEST]).size:
            raise UserError(
                name,
                f"{data_path} holds the value {beyond[0]:g} (as stored), beyond the float32 range {model_file.name} "
                f"computes in (±{FLOAT32_LARGEST:g})",
            )


GENERATED_ROW_BYTES = 64  # a generated row as generated, decoded and tabled: identifiers, values, copies


def check_generation_fits(config: InferConfig, windows: int, part_windows: int, contract: dict[str, Any]) -> None:
    """The items generated for one part of windows are held together until the part is written: refuse a
    generation_steps whose part would take more than half of the machine's memory."""
    memory = physical_memory()
    if not config.autoregressive or memory is None:
        return
    per_row = GENERATED_ROW_BYTES * len(contract["target_columns"])
    if config.output_probabilities:
        per_row += 8 * sum(len(ids) for ids in contract["class_ids"].values())
    held = min(windows, part_windows) * config.generation_steps * per_row
    if held > memory // 2:
        raise UserError(
            "generation_steps",
            f"{config.generation_steps} items after each of {min(windows, part_windows):,} windows (a part of the "
            f"split, generated and written together) would hold about {held / GIB:,.1f} GiB, more than half of "
            f"this machine's {memory / GIB:,.1f} GiB of memory (the rest holds the split, the model and the tables "
            "being written); generate fewer items",
        )


def check_generated_positions(stored: StoredWindows, steps: int) -> None:
    """Refuse generation_steps whose items would be labelled beyond the largest itemPosition (int64)."""
    if len(stored) == 0:
        return
    last_stored = int(stored.start_item_positions.max()) + stored.width - 1
    largest = int(np.iinfo(np.int64).max)
    if last_stored + steps > largest:
        raise UserError(
            "generation_steps",
            f"{steps} items after a window ending at itemPosition {last_stored} would be labelled beyond the "
            f"largest itemPosition ({largest}); at most {largest - last_stored} fit this split",
        )
