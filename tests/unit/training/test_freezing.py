"""Dataset freezing keeps selected parameters exactly as they were, following the scope tree."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from conftest import tiny_train_config

from sequifier.config.compose import canonical_config
from sequifier.config.errors import UserError
from sequifier.config.resolve import resolve
from sequifier.model.parameters import parameter_groups
from sequifier.training.engine import Trainer

COMPOSITE_INGESTION = {
    "type": "composite",
    "output_dim": 16,
    "merge": {"type": "concat"},
    "branches": {
        "cat": {"columns": ["event", "channel"], "output_dim": 8},
        "num": {"columns": ["amount"], "output_dim": 6},
    },
}


def train_with_freeze(
    freeze: dict, project: Path, run_dir: Path, ingestion: dict | None = None
) -> tuple[dict, dict, dict]:
    config = tiny_train_config(evaluation=False)
    if ingestion:
        config["model"]["interface"]["ingestion"] = ingestion
    config["dataset"]["freeze"] = freeze
    spec = resolve(canonical_config(config), run_dir=run_dir, cwd=project)
    trainer = Trainer(spec)
    before = {k: v.detach().clone() for k, v in trainer.network.named_parameters()}
    trainer.run()
    after = dict(trainer.network.named_parameters())
    return before, after, parameter_groups(trainer.network)


def test_frozen_groups_do_not_move_and_the_rest_trains(reference_project: Path, tmp_path: Path):
    before, after, groups = train_with_freeze(
        {"backbone": {"freeze": ["attention.qkv"]}, "decoder": {"freezing_except": []}}, reference_project, tmp_path
    )
    for name, group in groups.items():
        unchanged = torch.equal(before[name], after[name])
        if name.startswith("backbone.") and group == "attention.qkv" or group == "decoder":
            assert unchanged, name
        elif name.startswith("backbone.") and group in ("attention.output", "feed_forward.up"):
            assert not unchanged, name


def test_branch_selectors_replace_the_inherited_decision(reference_project: Path, tmp_path: Path):
    freeze = {"ingestion": {"freezing_except": [], "branches": {"num": {"freeze": []}}}}
    before, after, _ = train_with_freeze(freeze, reference_project, tmp_path, COMPOSITE_INGESTION)
    prefix = "interfaces.default.ingestion"
    assert torch.equal(
        before[f"{prefix}.branches.cat.embeddings.event.weight"],
        after[f"{prefix}.branches.cat.embeddings.event.weight"],
    )
    assert torch.equal(before[f"{prefix}.merge.weight"], after[f"{prefix}.merge.weight"])
    assert not torch.equal(
        before[f"{prefix}.branches.num.embeddings.amount.weight"],
        after[f"{prefix}.branches.num.embeddings.amount.weight"],
    )


def test_a_dataset_that_freezes_every_parameter_it_trains_is_refused(reference_project: Path, tmp_path: Path):
    everything = {scope: {"freezing_except": []} for scope in ("backbone", "ingestion", "adapter", "decoder")}
    with pytest.raises(UserError, match="freezes every parameter this dataset trains") as refused:
        train_with_freeze(everything, reference_project, tmp_path)
    assert refused.value.where == "dataset_training.default.freeze"
    before, after, _ = train_with_freeze({**everything, "decoder": {"freeze": []}}, reference_project, tmp_path)
    assert any(not torch.equal(before[name], after[name]) for name in before if name.startswith("interfaces."))


@pytest.mark.parametrize(
    "freeze, where, selector",
    [
        ({"backbone": {"freeze": ["attention.qkv", "decoder.output"]}}, "backbone.freeze", "decoder.output"),
        ({"adapter": {"freezing_except": ["attention"]}}, "adapter.freezing_except", "attention"),
        (
            {"ingestion": {"branches": {"num": {"freeze": ["decoder"]}}}},
            "ingestion.branches.num.freeze",
            "decoder",
        ),
    ],
    ids=["backbone-freeze", "adapter-freezing-except", "branch"],
)
def test_a_selector_of_another_scope_is_refused_naming_its_place(
    freeze: dict, where: str, selector: str, reference_project: Path, tmp_path: Path
):
    """It would freeze nothing (freeze) or the whole scope (freezing_except) without a word."""
    with pytest.raises(UserError, match=f"'{selector}' selects no parameter of this scope, whose groups are") as error:
        train_with_freeze(freeze, reference_project, tmp_path, COMPOSITE_INGESTION)
    assert error.value.where == f"dataset_training.default.freeze.{where}"
