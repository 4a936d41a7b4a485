"""The likely cause a diverged run names: non-finite inputs, float16 parameters, or the learning rate."""

from __future__ import annotations

import pytest
import torch

from sequifier.training.divergence import TrainingDiverged, check_loss

NAN_LOSS = {"event": (torch.tensor(float("nan")), torch.tensor(4))}


@pytest.mark.parametrize(
    "inputs, float16, before_any_update, cause",
    [
        (
            {"amount": torch.tensor([1.0, float("inf")])}, True, True,
            "non-finite values in the real input column(s) amount",
        ),
        ({"amount": torch.ones(2)}, True, False, "float16 parameters (global_training.layer_type_dtypes)"),
        (
            {"amount": torch.ones(2)}, False, True,
            "values too large for the float32 arithmetic of the model and loss, since no update has happened yet",
        ),
        (
            {"amount": torch.ones(2)}, False, False,
            "a learning rate too high for this model (global_training.learning_rate",
        ),
    ],
    ids=["inputs", "float16-parameters", "scale-before-any-update", "learning-rate"],
)  # fmt: skip
def test_the_cause_named_is_the_most_likely_one(inputs, float16, before_any_update, cause):
    with pytest.raises(TrainingDiverged) as caught:
        check_loss(NAN_LOSS, inputs, "epoch 1, batch 1, step 0", 2.5, 1e-3, float16, before_any_update)
    assert cause in caught.value.problem and "last finite loss 2.5" in caught.value.problem
