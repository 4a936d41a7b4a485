"""The training-config route of `sequifier infer`: a train YAML and dataset/part give the metadata and model name."""

from __future__ import annotations

import glob
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sequifier.config.errors import UserError, absent_file, did_you_mean
from sequifier.config.infer import InferConfig
from sequifier.config.schema import TrainConfig, dataset_model_name
from sequifier.export.names import onnx_name


@dataclass(frozen=True)
class TrainingRoute:
    """What infer takes from a training config.

    Where the part's metadata is, the artifact stem, and what the model should be.
    """

    source: str
    metadata_path: Path
    stem: str
    expected: dict[str, Any]  # keyed as checks.contract_values
    unset_exports: dict[str, tuple[str, ...]]  # per model type, the train config's export settings that are false

    def default_model_path(self, model_type: str) -> str:
        return f"models/{onnx_name(glob.escape(self.stem), model_type, 'best', '*')}"  # a name may hold ? * [

    def missing_model_fix(self, model_type: str) -> str:
        """What makes the default model path match, for a model of `model_type`."""
        unset = self.unset_exports.get(model_type)
        if not unset:
            return f"train with {self.source} first"
        settings = " and ".join(f"{name}: true" for name in unset)
        return f"{self.source} does not export an ONNX {model_type} model: set {settings} there and train"


def _pick(chosen: str | None, names: list[str], field: str, source: str) -> str:
    if chosen is None:
        if len(names) != 1:
            kind = "trains datasets" if field == "dataset" else "has parts"
            raise UserError(field, f"{source} {kind} {names}; choose one")
        return names[0]
    if chosen not in names:
        raise UserError(field, f"{chosen!r} is not in {source} ({', '.join(names)})" + did_you_mean(chosen, names))
    return chosen


def training_route(config: InferConfig, project_root: Path) -> TrainingRoute:
    """Read the train YAML as `sequifier train` composes it, and pick the dataset and part.

    The YAML's path, and the train config's own project_root, resolve against infer's project_root.
    """
    from sequifier.config.compose import canonical_config, compose_config

    path = project_root / config.training_config_path
    if not path.is_file():
        raise UserError("training_config_path", f"{path} {absent_file(path)}")
    try:
        train: TrainConfig = canonical_config(compose_config(path, []))
    except UserError as error:  # named by the train config's field, which infer's config does not have
        raise UserError("training_config_path", f"{path} cannot be read as a train config ({error})") from None
    dataset_name = _pick(config.dataset, list(train.dataset_training), "dataset", path.name)
    dataset = train.dataset_training[dataset_name]
    part = dataset.parts[_pick(config.part, list(dataset.parts), "part", f"{path.name} dataset {dataset_name!r}")]
    interface = train.model.interfaces[dataset.model_interface]
    training = train.global_training
    return TrainingRoute(
        source=path.name,
        metadata_path=(project_root / train.project_root / part.metadata_config_path).resolve(),
        stem=dataset_model_name(train.model_name, dataset_name, len(train.dataset_training)),
        expected={
            "input_columns": list(interface.input_columns),
            "target_columns": list(interface.target_columns),
            "context_length": training.context_length,
            "target_offset": training.target_offset,
            "prediction_length": interface.decoder.prediction_length,
            "training_objective": training.training_objective,
            "model_interface": dataset.model_interface,
        },
        unset_exports={
            kind: tuple(name for name in ("export_onnx", f"export_{kind}_model") if not getattr(train, name))
            for kind in ("generative", "embedding")
        },
    )
