"""sequifier infer on one tiny model exported as ONNX and PT: the two agree, generation, the dropout matrix."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from infer_helpers import BUNDLE, DROPOUT, EMBEDDING, GENERATIVE, SPLIT, export_all, infer, outputs

from sequifier.config.errors import UserError
from sequifier.data.stored import load_split
from sequifier.data.stored_tables import write_split_parquet
from sequifier.data.stored_windows import StoredWindows
from sequifier.infer.codec import encode_values

IDENTIFIERS = ["sequenceId", "subsequenceId", "windowStartOffset", "itemPosition"]


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("infer")
    export_all(folder)
    return folder


def _columns(table) -> dict[str, np.ndarray]:
    return {name: table.column(name).to_numpy(zero_copy_only=False) for name in table.column_names}


def test_onnx_and_pt_give_the_same_predictions_probabilities_and_embeddings(project: Path):
    results = {}
    for model in (GENERATIVE, BUNDLE):
        infer(project, model, output_probabilities=True)
        results[model] = (
            _columns(outputs(project, "predictions", model)),
            _columns(outputs(project, "probabilities", model, "event")),
        )
    (onnx_predictions, onnx_probabilities), (pt_predictions, pt_probabilities) = results[GENERATIVE], results[BUNDLE]
    assert list(onnx_predictions) == IDENTIFIERS + ["event", "amount"]
    assert len(onnx_predictions["event"]) == len(load_split(SPLIT, ["event"], {"event"}))
    for name in IDENTIFIERS + ["event"]:
        np.testing.assert_array_equal(onnx_predictions[name], pt_predictions[name])
    np.testing.assert_allclose(onnx_predictions["amount"], pt_predictions["amount"], atol=1e-4, rtol=0)
    assert list(onnx_probabilities) == IDENTIFIERS + ["[other]"] + [f"e{i:02d}" for i in range(12)]
    for name in onnx_probabilities:
        np.testing.assert_allclose(onnx_probabilities[name], pt_probabilities[name], atol=1e-5, rtol=0)
    classes = [name for name in onnx_probabilities if name not in IDENTIFIERS]
    np.testing.assert_allclose(sum(onnx_probabilities[name] for name in classes), 1.0, atol=1e-9)

    infer(project, EMBEDDING, model_type="embedding")
    infer(project, BUNDLE, model_type="embedding")
    onnx_embeddings, pt_embeddings = (
        _columns(outputs(project, "embeddings", EMBEDDING)),
        _columns(outputs(project, "embeddings", BUNDLE)),
    )
    assert list(onnx_embeddings) == IDENTIFIERS + [str(i) for i in range(16)]
    np.testing.assert_array_equal(
        onnx_embeddings["itemPosition"] + 1, onnx_predictions["itemPosition"]
    )  # the state of the last input item
    for name in onnx_embeddings:
        np.testing.assert_allclose(onnx_embeddings[name], pt_embeddings[name], atol=1e-4, rtol=0)


def test_predictions_decode_to_values_of_the_id_map_and_plausible_reals(project: Path):
    infer(project, GENERATIVE, write_format="parquet")
    predictions = _columns(outputs(project, "predictions", GENERATIVE))
    assert set(predictions["event"]) <= {"[other]"} | {f"e{i:02d}" for i in range(12)}
    stored = load_split(SPLIT, ["event"], {"event"})
    np.testing.assert_array_equal(
        predictions["itemPosition"], stored.start_item_positions + 16
    )  # the window's last item
    infer(project, GENERATIVE, decode_categories=False)
    ids = _columns(outputs(project, "predictions", GENERATIVE))["event"]
    assert ids.dtype.kind == "i" and set(ids) <= {1} | set(range(3, 15))


def _extended(stored: StoredWindows, newest: dict[str, np.ndarray]) -> StoredWindows:
    """The windows one item later: `newest` ([windows] model values per column) as their last item, inside the split."""
    columns = {c: np.concatenate([v[:, 1:], newest[c][:, None]], axis=1) for c, v in stored.columns.items()}
    return StoredWindows(
        columns,
        stored.sequence_ids,
        stored.subsequence_ids,
        stored.start_item_positions + 1,
        np.maximum(stored.left_pad_lengths - 1, 0),
        stored.split_start_item_positions,
        stored.split_end_item_positions + 1,
    )


def test_autoregressive_generation_of_k_steps_equals_k_manual_single_steps(tmp_path: Path):
    """Generation reads each window's newest items and labels its steps as the items after the window.

    A single-step run predicts a window's last item from the items before it, so step s equals a single step over the
    window extended by hand with the s-1 generated items and a placeholder for the item predicted.
    """
    spec = export_all(
        tmp_path,
        interface={
            "input_columns": ["event", "amount"],
            "target_columns": ["event", "amount"],
            "ingestion": {"type": "embedding", "output_dim": 16, "feature_embedding_dims": {"event": 8, "amount": 8}},
        },
    )
    with pytest.raises(UserError) as refused:
        infer(tmp_path, GENERATIVE, autoregressive=True, generation_steps=10**12)
    assert refused.value.where == "generation_steps" and "more than half of this machine's" in refused.value.problem
    assert not (tmp_path / "outputs" / "predictions").exists()
    steps = 3
    infer(tmp_path, GENERATIVE, autoregressive=True, generation_steps=steps)
    generated = _columns(outputs(tmp_path, "predictions", GENERATIVE))
    stored = load_split(SPLIT, ["event", "amount"], {"event"})
    assert len(generated["event"]) == steps * len(stored)
    width = stored.columns["event"].shape[1]
    np.testing.assert_array_equal(generated["itemPosition"][::steps], stored.start_item_positions + width)
    np.testing.assert_array_equal(generated["windowStartOffset"], width - 8)
    contract_columns = {
        "event": {"kind": "categorical", "id_map": spec.metadata.id_maps["event"]},
        "amount": {"kind": "real", "statistics": spec.metadata.selected_columns_statistics["amount"]},
    }
    placeholder = {"event": np.zeros(len(stored), dtype=np.int64), "amount": np.zeros(len(stored))}
    for step in range(steps):
        extended = _extended(stored, placeholder)
        data = tmp_path / "data" / f"step{step}.parquet"
        write_split_parquet(data, extended, ["event", "amount"])
        infer(tmp_path, GENERATIVE, data_path=data)
        single = _columns(outputs(tmp_path, "predictions", GENERATIVE))
        rows = slice(step, None, steps)
        for name in ("sequenceId", "subsequenceId", "itemPosition", "event"):
            np.testing.assert_array_equal(generated[name][rows], single[name], err_msg=f"step {step + 1}: {name}")
        np.testing.assert_allclose(generated["amount"][rows], single["amount"], atol=1e-4, rtol=0)
        chosen = {
            c: encode_values(single[c], contract_columns[c], spec.metadata.special_token_ids)
            for c in ("event", "amount")
        }
        stored = _extended(stored, chosen)


def _amounts(project: Path, model: str, **fields) -> np.ndarray:
    infer(project, model, **fields)
    return _columns(outputs(project, "predictions", model))["amount"]


def test_dropout_matrix(project: Path):
    with pytest.raises(UserError) as caught:
        infer(project, GENERATIVE, infer_with_dropout=True)
    assert "infer_with_dropout: is true" in str(caught.value) and "export_with_dropout: false" in str(caught.value)
    with pytest.raises(UserError) as caught:
        infer(project, DROPOUT, infer_with_dropout=False)
    assert "infer_with_dropout: is false" in str(caught.value) and "export_with_dropout: true" in str(caught.value)

    deterministic = _amounts(project, GENERATIVE)
    np.testing.assert_allclose(_amounts(project, BUNDLE, infer_with_dropout=False), deterministic, atol=1e-4, rtol=0)
    for model in (DROPOUT, BUNDLE):
        first = _amounts(project, model, infer_with_dropout=True, seed=3)
        np.testing.assert_array_equal(first, _amounts(project, model, infer_with_dropout=True, seed=3))
        assert not np.allclose(first, _amounts(project, model, infer_with_dropout=True, seed=4), atol=1e-4), model
        assert not np.allclose(first, deterministic, atol=1e-4), model
