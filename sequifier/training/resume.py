"""Whether a run continues from a checkpoint, and whether it may: the config and data the checkpoint was written for.

A checkpoint records a fingerprint: the canonical config (every field the saved state depends on:
model, data, plan, optimization, batch size, threads, world size, seed), a digest of each
part's metadata and one of the bytes of each split it reads (new data under the same meanings has the same
metadata). Resuming with a different one is refused, naming the first differing path and
both values. RESUMABLE_FIELDS may change between the two runs.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from pathlib import Path
from typing import Any

from sequifier.config.errors import UserError, absent_file
from sequifier.config.resolve import RunSpec
from sequifier.export.names import exported_names
from sequifier.training.checkpoint import LATEST, checkpoint_dir, checkpoint_path_override, read_checkpoint

RESUMABLE_FIELDS = (
    "model_name",
    "project_root",
    "skip_metadata",
    "global_training.resume",
    "global_training.save_interval_minutes",
    "global_training.save_latest_interval_minutes",
    "global_training.num_workers",
    "global_training.tensorboard",
    "export_onnx",
    "export_pt",
    "export_generative_model",
    "export_embedding_model",
    "export_with_dropout",
)


def checkpoint_to_resume(spec: RunSpec, announce: bool = True) -> Path | None:
    """The checkpoint the run continues from, by `global_training.resume`; None to start fresh. `announce`: note a
    snapshot that a fresh start leaves behind."""
    resume = spec.config.global_training.resume
    if resume.policy == "never":
        return None
    explicit = resume.checkpoint_path
    path = spec.project_root / explicit if explicit else checkpoint_dir(spec.project_root, spec.model_name) / LATEST
    if path.is_file():
        return path
    if resume.policy == "required" or path.is_dir():
        raise UserError("global_training.resume.checkpoint_path", f"{path} {absent_file(path)}")
    if announce and explicit:
        print(
            f"note: global_training.resume.checkpoint_path {path} {absent_file(path)}: this run starts fresh "
            "(policy if_exists; policy=required refuses a checkpoint that is not there)"
        )
        return None
    snapshots = sorted(path.parent.glob("*-*.pt"), key=lambda snapshot: snapshot.stat().st_mtime)
    if announce and not explicit and snapshots:
        print(
            f"note: {path.parent} holds no {LATEST} (its write may have failed) but holds {snapshots[-1].name}: "
            f"this run starts fresh; to continue from that snapshot, set "
            f"{checkpoint_path_override(snapshots[-1].relative_to(spec.project_root))}"
        )
    return None


def set_aside_checkpoints_of_another_config(spec: RunSpec, current: dict[str, Any]) -> None:
    """Before a run writes into checkpoints/<model>/ and models/ (fresh, or resumed from another folder): if the
    checkpoints hold a run of another config or data, move that run's checkpoints into a subfolder, and the exported
    models this run's files would replace into `models/earlier-<run id>/`, so that this run neither overwrites them
    nor mixes its files with theirs.

    The newest checkpoint that can be read tells the run (latest.pt, else the newest snapshot); when none can be
    read, nothing tells whether the files are this config's, so they are set aside too."""
    folder = checkpoint_dir(spec.project_root, spec.model_name)
    checkpoints = sorted(folder.glob("*.pt"))
    if not checkpoints:
        _set_aside_models_of_an_unknown_run(spec, folder)
        return
    readable = _newest_readable(folder, checkpoints)
    if readable is None:
        reason, run_id = "that this release cannot read", f"unreadable-{_newest_time(checkpoints)}"
    else:
        path, saved = readable
        try:
            check_fingerprint(saved["fingerprint"], current, path)
            return
        except UserError as difference:
            reason, run_id = (
                f"of a run of another config or data (first difference: {difference.where})",
                saved["run_id"],
            )
    aside = folder / f"earlier-{run_id}"
    aside.mkdir(exist_ok=True)
    for checkpoint in checkpoints:
        checkpoint.replace(aside / checkpoint.name)
    models = _models_this_run_would_replace(spec)
    if models:
        models_aside = spec.models_dir / f"earlier-{run_id}"
        models_aside.mkdir(exist_ok=True)
        for model in models:
            model.replace(models_aside / model.name)
    moved_models = f", and its exported models that this run's would replace are in {models_aside}" if models else ""
    print(
        f"note: {folder} held checkpoints {reason}; they are now in {aside}{moved_models}; this run's checkpoints "
        "start an empty folder"
    )


def _set_aside_models_of_an_unknown_run(spec: RunSpec, folder: Path) -> None:
    """Exported models this run's would replace, whose run left no checkpoint to tell its config: set aside too."""
    models = _models_this_run_would_replace(spec)
    if not models:
        return
    aside = spec.models_dir / f"earlier-unknown-{_newest_time(models)}"
    aside.mkdir(exist_ok=True)
    for model in models:
        model.replace(aside / model.name)
    print(
        f"note: {spec.models_dir} held exported models of {spec.model_name} whose run left no checkpoint in {folder} "
        f"to tell its config; they are now in {aside}"
    )


def _newest_time(paths: list[Path]) -> str:
    return time.strftime("%Y%m%d-%H%M%S", time.localtime(max(path.stat().st_mtime for path in paths)))


def other_ways_on(spec: RunSpec, unreadable: Path) -> str:
    """What a run whose checkpoint `unreadable` cannot be read can do: continue from the newest readable
    checkpoint of its folder, or start anew."""
    fresh = "start anew with global_training.resume.policy=never"
    others = [path for path in unreadable.parent.glob("*.pt") if path != unreadable]
    readable = _newest_readable(unreadable.parent, others) if unreadable.parent.is_dir() else None
    if readable is None or readable[0] == unreadable:
        return f"; {fresh}"
    shown = readable[0].relative_to(spec.project_root) if readable[0].is_relative_to(spec.project_root) else readable[0]
    return f"; continue from the newest readable one with {checkpoint_path_override(shown)}, or {fresh}"


def _newest_readable(folder: Path, checkpoints: list[Path]) -> tuple[Path, dict[str, Any]] | None:
    latest = folder / LATEST
    snapshots = sorted((path for path in checkpoints if path != latest), key=lambda path: path.stat().st_mtime)
    for path in [latest, *reversed(snapshots)]:
        if path.is_file():
            try:
                return path, read_checkpoint(path)
            except UserError:
                continue  # a damaged or foreign file: the next one may tell
    return None


def _models_this_run_would_replace(spec: RunSpec) -> list[Path]:
    config = spec.config
    artifacts = [
        a
        for a, wanted in (("generative", config.export_generative_model), ("embedding", config.export_embedding_model))
        if wanted
    ]
    stems = [spec.dataset_view(dataset).model_name for dataset in config.dataset_training]
    onnx = [(stem, artifact) for stem in stems for artifact in artifacts] if config.export_onnx else []
    names = exported_names(onnx, spec.model_name if config.export_pt and artifacts else None)
    if not spec.models_dir.is_dir():
        return []
    return sorted(path for path in spec.models_dir.iterdir() if path.is_file() and names.fullmatch(path.name))


def fingerprint(spec: RunSpec) -> dict[str, Any]:
    return {
        "config": _flat(dataclasses.asdict(spec.config)),
        "data": _data_digests(spec),
        "splits": _split_digests(spec),
    }


def check_fingerprint(saved: dict[str, Any], current: dict[str, Any], checkpoint: Path) -> None:
    """Raise naming the first config path (or data part) whose value differs from the checkpoint's."""
    for path in sorted(set(saved["config"]) | set(current["config"]), key=_order(current["config"])):
        if any(path == field or path.startswith(field + ".") for field in RESUMABLE_FIELDS):
            continue
        before, now = saved["config"].get(path, _UNSET), current["config"].get(path, _UNSET)
        if before != now:
            before, now = _value_at(saved["config"], path), _value_at(current["config"], path)
            raise UserError(
                path,
                f"is {_spelled(now)} but {checkpoint} was written with {_spelled(before)}; an exact resume needs "
                "the same value (or start fresh: global_training.resume.policy=never)",
            )
    for part, digest in current["data"].items():
        if saved["data"].get(part) != digest:
            raise UserError(
                f"dataset_training.{part}.metadata_config_path",
                f"the preprocessed data differs from the data {checkpoint} was trained on; resume needs the same data",
            )
    recorded = saved.get("splits")  # absent from checkpoints written before the splits' contents were recorded
    for part, splits in current["splits"].items() if recorded is not None else ():
        for split, digest in splits.items():
            if recorded.get(part, {}).get(split) != digest:
                raise UserError(
                    f"dataset_training.{part}.metadata_config_path",
                    f"its {split} split holds other windows than the data {checkpoint} was trained on (same "
                    "metadata, other data); resume needs the same data (or start fresh: "
                    "global_training.resume.policy=never)",
                )


_UNSET = object()


def _value_at(flat: dict[str, Any], path: str) -> Any:
    """The value at `path` of a flattened config: a section (a mapping null on the other side) as its fields."""
    if path in flat:
        return flat[path]
    fields = {key[len(path) + 1 :]: value for key, value in flat.items() if key.startswith(path + ".")}
    return fields or _UNSET


def _spelled(value: Any) -> str:
    """A config value as YAML and the command line write it (null, true, [1, 2]); `unset` for no value."""
    return "unset" if value is _UNSET else json.dumps(value, default=str)


def _order(current: dict[str, Any]):
    positions = {path: index for index, path in enumerate(current)}
    return lambda path: (positions.get(path, len(positions)), path)


def _flat(node: Any, prefix: str = "") -> dict[str, Any]:
    """Config paths (`training_plan.phases[0].epochs`) to their values, as plain data."""
    if isinstance(node, dict) and node:
        flat: dict[str, Any] = {}
        for key, value in node.items():
            flat.update(_flat(value, f"{prefix}.{key}" if prefix else str(key)))
        return flat
    if isinstance(node, (list, tuple)) and node and any(isinstance(item, dict) for item in node):
        flat = {}
        for index, item in enumerate(node):
            flat.update(_flat(item, f"{prefix}[{index}]"))
        return flat
    return {prefix: json.loads(json.dumps(node))}


def _data_digests(spec: RunSpec) -> dict[str, str]:
    """Per `dataset.parts.part`: a digest of its metadata (split files, id maps, statistics, window layout)."""
    digests = {}
    for part in spec.parts:
        content = json.dumps(dataclasses.asdict(part.metadata), sort_keys=True, default=str)
        digests[f"{part.dataset}.parts.{part.part}"] = hashlib.sha256(content.encode()).hexdigest()
    return digests


def _split_digests(spec: RunSpec) -> dict[str, dict[str, str]]:
    """Per `dataset.parts.part`, per split (train, validation): a digest of the split's bytes, since new data of the
    same meanings has the same metadata."""
    return {
        f"{part.dataset}.parts.{part.part}": {
            split: _split_digest(path)
            for split, path in (("train", part.train_path), ("validation", part.validation_path))
            if path is not None
        }
        for part in spec.parts
    }


def _split_digest(path: Path) -> str:
    """SHA-256 of a split file's bytes, or of a shard folder's file names and bytes."""
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    digest = hashlib.sha256()
    for file in files:
        digest.update(str(file.relative_to(path) if path.is_dir() else "").encode("utf-8", "surrogateescape"))
        try:
            with open(file, "rb") as stream:
                digest.update(hashlib.file_digest(stream, "sha256").digest())
        except OSError:
            digest.update(b"unreadable")  # reading the split itself names the problem
    return digest.hexdigest()
