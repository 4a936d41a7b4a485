"""The override a resume note or refusal advises parses, as a shell passes it, to the checkpoint's path."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from hydra.core.override_parser.overrides_parser import OverridesParser

from sequifier.training.checkpoint import checkpoint_path_override


@pytest.mark.parametrize("path", ["checkpoints/m/epoch-1.pt", "checkpoints/m-seed=1/epoch-1.pt", "c/m-lr=0.1,x/b.pt"])
def test_the_advised_override_gives_the_path_back(path):
    (argument,) = shlex.split(checkpoint_path_override(Path(path)))
    (override,) = OverridesParser.create().parse_overrides([argument])
    assert override.key_or_group == "global_training.resume.checkpoint_path" and override.value() == path
