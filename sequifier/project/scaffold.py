"""`sequifier make NAME [--demo]`: writes a project folder with starter configs (and demo data)."""

from __future__ import annotations

import glob
import json
from pathlib import Path

from sequifier.atomic import remove_path, remove_stale_temps, replace_durably, temp_path_for
from sequifier.config.errors import UserError, os_problem
from sequifier.config.validate import model_name_problem
from sequifier.project.demo_data import write_demo_data

DEMO_FACTS = "data/demo-generator.json"

PREPROCESS = """\
# sequifier preprocess --config-path configs/preprocess.yaml
project_root: .
preprocessing_data_path: data/{data_file}
read_format: parquet
write_format: parquet
merge_output: true
selected_columns: [event, amount]   # the feature columns of your table
split_ratios: [0.8, 0.1, 0.1]       # training, validation, test
split_method: within_sequence
window_length: 33                   # context_length + max_target_offset
window_stride: 32
max_target_offset: 1
seed: 1010
"""

TRAIN = """\
# sequifier train --config-path configs/train.yaml
# Override any field on the command line: sequifier train global_training.batch_size=32
project_root: .
model_name: {model_name_text}
device: cpu
seed: 1010

global_training:
  read_format: parquet
  training_objective: causal
  context_length: 32
  inference_batch_size: 512
  batch_size: 128
  learning_rate: 0.003

model:
  backbone:
    architecture:
      dim_model: 64
      max_context_length: 32
      num_layers: 2
      attention: {{type: mha, n_heads: 4, n_kv_heads: 4, output_projection: true}}
      feed_forward: {{dim: 128, activation: swiglu}}
      normalization: {{type: rmsnorm, norm_first: true}}
      position_encoding: {{type: rope, theta: 10000}}
      dropout: 0.1
      shared_layer_groups: []
  interface:
    input_columns: [event, amount]
    target_columns: [event, amount]
    ingestion: {{type: embedding, output_dim: 64, feature_embedding_dims: {{event: 48, amount: 16}}}}
    decoder: {{type: linear, prediction_length: 1, support: 1}}

dataset:
  part: {{metadata_config_path: configs/metadata_configs/{data_stem}.json}}
  criterion: {{event: CrossEntropyLoss, amount: MSELoss}}

training_plan:
  epochs: {epochs}

evaluation: true
"""

INFER = """\
# sequifier infer --config-path configs/infer.yaml
project_root: .
model_path: {model_path_text}    # a glob picks the newest match
metadata_config_path: configs/metadata_configs/{data_stem}.json   # data_path defaults to its last split
model_type: generative
inference_batch_size: 512
write_format: csv
"""


def make_project(folder: Path, demo: bool) -> None:
    """Write the project into a hidden folder beside `folder`, then rename it into place: all of it or nothing."""
    target = folder.resolve()
    if target.is_file():
        raise UserError(str(folder), "is a file; choose a new project name")
    if target.is_dir() and any(target.iterdir()):
        raise UserError(str(folder), "already exists and is not empty; choose a new project name")
    blocking = next((parent for parent in target.parents if parent.exists() and not parent.is_dir()), None)
    if blocking is not None:
        raise UserError(str(folder), f"cannot be made: {blocking} is a file, not a folder")
    if "${" in str(target):
        raise UserError(
            str(folder),
            f"its path {target} holds '${{', which Hydra reads as an interpolation in the train command's record "
            "folder there; choose a folder whose path has none",
        )
    model_name = f"{target.name}-model"
    problem = model_name_problem(model_name)
    if problem:
        raise UserError(str(folder), f"cannot name a project: its model's name {problem}; choose another project name")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_temps(target)
        staged = temp_path_for(target)
        try:
            facts = _write_project(staged, model_name, demo)
            replace_durably(staged, target)
        finally:
            remove_path(staged)
    except OSError as error:
        raise UserError(
            str(folder), f"cannot create the project there ({os_problem(error)}); nothing was created"
        ) from None
    print(f"created project {folder} with configs/preprocess.yaml, configs/train.yaml, configs/infer.yaml")
    if facts:
        print(f"wrote {folder / 'data' / 'demo.parquet'}: a Markov chain over {facts['n_events']} events")
        floor = facts["entropy_rate_nats"]
        print(f"achievable loss floor for the next event (the chain's entropy rate): {floor:.4f} nats")
    else:
        print(f"put your table at {folder / 'data' / 'data.parquet'} and edit the column names in configs/")


def _write_project(folder: Path, model_name: str, demo: bool) -> dict | None:
    """The configs, the data folder and, for a demo, its data and facts; the demo's facts."""
    data_stem = "demo" if demo else "data"
    files = {
        "configs/preprocess.yaml": PREPROCESS.format(data_file=f"{data_stem}.parquet"),
        "configs/train.yaml": TRAIN.format(
            model_name_text=_yaml_text(model_name), data_stem=data_stem, epochs=3 if demo else 10
        ),
        "configs/infer.yaml": INFER.format(
            model_path_text=_yaml_text(f"models/{glob.escape(model_name)}-best-*.onnx"), data_stem=data_stem
        ),
    }
    for relative, text in files.items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (folder / "data").mkdir()
    if not demo:
        return None
    chain = write_demo_data(folder / "data" / "demo.parquet")
    facts = {"entropy_rate_nats": chain.entropy_rate, "n_events": len(chain.transitions)}
    (folder / DEMO_FACTS).write_text(json.dumps(facts, indent=2))
    return facts


def _yaml_text(value: str) -> str:
    """`value` as a YAML string that reads back as itself, also where OmegaConf would see an interpolation."""
    return json.dumps(value.replace("${", "\\${"), ensure_ascii=False)
