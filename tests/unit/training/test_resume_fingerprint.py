"""A checkpoint's fingerprint against the current run's: the splits' contents are compared where recorded."""

from __future__ import annotations

from pathlib import Path

import pytest

from sequifier.config.errors import UserError
from sequifier.training.resume import check_fingerprint

PART = "default.parts.default"


def fingerprint(train_digest: str) -> dict:
    return {
        "config": {"seed": 1},
        "data": {PART: "metadata"},
        "splits": {PART: {"train": train_digest, "validation": "v"}},
    }


def test_a_train_split_of_other_bytes_is_refused_naming_the_part_and_the_split():
    with pytest.raises(UserError) as refused:
        check_fingerprint(fingerprint("a"), fingerprint("b"), Path("latest.pt"))
    assert refused.value.where == f"dataset_training.{PART}.metadata_config_path"
    assert "its train split holds other windows" in refused.value.problem


def test_the_same_splits_pass_and_a_checkpoint_that_recorded_no_splits_is_compared_by_metadata_alone():
    check_fingerprint(fingerprint("a"), fingerprint("a"), Path("latest.pt"))
    older = {key: value for key, value in fingerprint("a").items() if key != "splits"}
    check_fingerprint(older, fingerprint("b"), Path("latest.pt"))


def test_a_section_turned_off_since_is_compared_with_the_fields_it_was_written_with():
    written = fingerprint("a") | {
        "config": {"seed": 1, "evaluation.sources[0].source": "default", "evaluation.monitor": None}
    }
    now = fingerprint("a") | {"config": {"seed": 1, "evaluation": None}}
    with pytest.raises(UserError) as refused:
        check_fingerprint(written, now, Path("latest.pt"))
    assert refused.value.where == "evaluation"
    assert refused.value.problem.startswith(
        'is null but latest.pt was written with {"sources[0].source": "default", "monitor": null}'
    )
