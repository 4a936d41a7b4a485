"""Choosing target values (argmax or seeded sampling) and autoregressive generation, with a fake model; the
positions generated items are labelled with."""

from __future__ import annotations

import numpy as np
import pytest

from sequifier.config.errors import UserError
from sequifier.data.stored_windows import StoredWindows
from sequifier.infer.checks import check_generated_positions
from sequifier.infer.generation import Chooser, generate, run_batched, shift_in

CONTRACT = {
    "target_columns": ["event", "amount"],
    "columns": {"event": {"kind": "categorical"}, "amount": {"kind": "real"}},
    "class_ids": {"event": [3, 4, 5]},
    "prediction_length": 1,
}


class CountingModel:
    """Predicts event = 3 + (sum of the window's events) % 3 with a sharp softmax, and amount = the last amount + 1."""

    contract = CONTRACT
    concurrency = 2

    def __call__(self, inputs: dict[str, np.ndarray], left_pad_lengths: np.ndarray) -> dict[str, np.ndarray]:
        choice = inputs["event"].sum(axis=1) % 3
        logits = np.full((len(choice), 1, 3), -20.0, dtype=np.float32)
        logits[np.arange(len(choice)), 0, choice] = 20.0
        return {"event": logits, "amount": (inputs["amount"][:, -1:] + 1).astype(np.float32)}

    def reseed(self, seed: int) -> None:
        pass


def _inputs(n: int = 5) -> tuple[dict[str, np.ndarray], np.ndarray]:
    rng = np.random.default_rng(0)
    return {"event": rng.integers(3, 6, (n, 4)), "amount": rng.normal(size=(n, 4)).astype(np.float32)}, np.array(
        [0, 2, 0, 4, 1][:n]
    )


def test_argmax_maps_output_index_to_class_id_and_batches_do_not_matter():
    inputs, padding = _inputs()
    chooser = Chooser(CONTRACT, (), np.random.default_rng(0), keep_probabilities=True)
    values, probabilities = chooser(run_batched(CountingModel(), inputs, padding, 2))
    expected = np.asarray([3, 4, 5])[inputs["event"].sum(axis=1) % 3]
    np.testing.assert_array_equal(values["event"][:, 0], expected)
    np.testing.assert_allclose(probabilities["event"].sum(axis=-1), 1.0)
    np.testing.assert_allclose(values["amount"], inputs["amount"][:, -1:] + 1)
    assert chooser(CountingModel()(inputs, padding))[0]["event"].tolist() == values["event"].tolist()


def test_sampling_follows_the_softmax_and_is_seeded():
    logits = np.log(np.array([[[0.2, 0.5, 0.3]]] * 20000))
    outputs = {"event": logits, "amount": np.zeros((20000, 1))}

    def draw(seed: int) -> np.ndarray:
        return Chooser(CONTRACT, ("event",), np.random.default_rng(seed), keep_probabilities=False)(outputs)[0][
            "event"
        ].reshape(-1)

    first = draw(7)
    np.testing.assert_array_equal(first, draw(7))
    assert not np.array_equal(first, draw(8))
    shares = np.bincount(first, minlength=6)[3:] / len(first)
    np.testing.assert_allclose(shares, [0.2, 0.5, 0.3], atol=0.02)


def test_shift_in_drops_the_oldest_slot_and_pads_less():
    inputs, padding = _inputs()
    shifted, new_padding = shift_in(inputs, padding, {"event": np.full((5, 1), 9), "amount": np.full((5, 1), 0.5)})
    np.testing.assert_array_equal(shifted["event"][:, :-1], inputs["event"][:, 1:])
    assert (shifted["event"][:, -1] == 9).all() and shifted["event"].dtype == inputs["event"].dtype
    np.testing.assert_array_equal(new_padding, [0, 1, 0, 3, 0])


def test_generating_k_steps_equals_k_single_steps():
    inputs, padding = _inputs()
    chooser = Chooser(CONTRACT, (), np.random.default_rng(0), keep_probabilities=True)
    values, probabilities = generate(CountingModel(), inputs, padding, 4, 3, chooser)
    assert values["event"].shape == (5, 4) and probabilities["event"].shape == (5, 4, 3)
    for step in range(4):
        single, _ = chooser(CountingModel()(inputs, padding))
        np.testing.assert_array_equal(values["event"][:, step], single["event"][:, 0])
        np.testing.assert_allclose(values["amount"][:, step], single["amount"][:, 0])
        inputs, padding = shift_in(inputs, padding, single)


def _windows_starting_at(starts: list[int], width: int = 5) -> StoredWindows:
    n = len(starts)
    first = np.array(starts, dtype=np.int64)
    return StoredWindows(
        {"event": np.full((n, width), 3.0)}, np.arange(n), np.zeros(n, np.int64), first,
        np.zeros(n, np.int64), first, first + width,
    )  # fmt: skip


def test_generated_items_must_have_positions_int64_can_label():
    largest = int(np.iinfo(np.int64).max)
    stored = _windows_starting_at([0, largest - 14])  # the second window ends at largest - 10
    check_generated_positions(stored, 10)
    with pytest.raises(UserError) as refused:
        check_generated_positions(stored, 11)
    assert refused.value.where == "generation_steps"
    assert f"ending at itemPosition {largest - 10} would be labelled beyond the largest itemPosition" in str(
        refused.value
    )
    assert "at most 10 fit this split" in refused.value.problem
