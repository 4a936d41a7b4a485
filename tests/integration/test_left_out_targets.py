"""Target values that the decoder does not predict (special tokens it does not list) are named before training,
with how many there are and how to predict them; listing them makes the note go."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
from conftest import REFERENCE_DIR, run_sequifier, tiny_train_config, write_yaml


def _project_with_missing_events(root, every: int):
    """The reference events with every `every`-th event missing, preprocessed; the missing values in the input."""
    (root / "data").mkdir(parents=True)
    table = pq.read_table(REFERENCE_DIR / "data" / "events.parquet")
    events = [None if i % every == 5 else v for i, v in enumerate(table.column("event").to_pylist())]
    table = table.set_column(table.schema.get_field_index("event"), "event", pa.array(events))
    pq.write_table(table, root / "data" / "gaps.parquet")
    write_yaml(
        root / "configs" / "preprocess.yaml",
        {
            "project_root": ".",
            "preprocessing_data_path": "data/gaps.parquet",
            "selected_columns": ["event", "channel", "amount", "delay"],
            "window_length": 17,
        },
    )
    assert run_sequifier(["preprocess", "--quiet"], root).returncode == 0
    return sum(v is None for v in events)


def _train(root, special_tokens):
    config = tiny_train_config()
    config["dataset"]["part"]["metadata_config_path"] = "configs/metadata_configs/gaps.json"
    config["model"]["interface"]["categorical_decoder_special_tokens"] = special_tokens
    write_yaml(root / "configs" / "train.yaml", config)
    result = run_sequifier(["train"], root)
    assert result.returncode == 0, result.stderr
    return [line for line in (result.stdout + result.stderr).splitlines() if "does not predict" in line]


def test_missing_target_values_the_decoder_does_not_predict_are_named_and_listing_them_ends_the_note(tmp_path):
    missing = _project_with_missing_events(tmp_path, every=37)
    notes = _train(tmp_path, None)
    assert len(notes) == 2 and missing > 0
    train, validation = notes
    assert "dataset_training.default.parts.default: the windows of its train split hold " in train
    assert "; an item in several windows counts in each) that its decoder does not predict" in train
    assert "[unknown] (missing values); the loss leaves them out; to predict them, list unknown in " in train
    assert train.endswith("model.interfaces.default.categorical_decoder_special_tokens.event")
    assert "the windows of its validation split hold" in validation
    assert _train(tmp_path, {"event": ["unknown", "other"]}) == []
