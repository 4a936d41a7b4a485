"""export_models: which files a run writes for best/last and their names; export options are supported by the engine."""

from __future__ import annotations

from pathlib import Path

import pytest
from export_test_helpers import tiny_network, tiny_spec

from sequifier.export.artifacts import export_models
from sequifier.training.capabilities import check_supported

CASES = {
    "defaults": ({}, ["tiny-best-2.onnx"]),
    "everything": (
        {"export_embedding_model": True, "export_pt": True, "export_with_dropout": True},
        ["tiny-best-2.onnx", "tiny-embedding-best-2.onnx", "tiny-best-2.pt"],
    ),
    "embedding only": (
        {"export_generative_model": False, "export_embedding_model": True},
        ["tiny-embedding-best-2.onnx"],
    ),
    "pt only": ({"export_onnx": False, "export_pt": True}, ["tiny-best-2.pt"]),
    "nothing": ({"export_onnx": False}, []),
}


@pytest.mark.parametrize("case", list(CASES))
def test_exported_files(tmp_path: Path, case: str):
    options, expected = CASES[case]
    spec = tiny_spec(tmp_path, **options)
    check_supported(spec.config)
    written = export_models(tiny_network(spec), spec, "best", 2)
    assert [p.name for p in written] == expected
    assert (
        sorted(p.name for p in (tmp_path / "models").glob("*")) == sorted(expected)
        if expected
        else not (tmp_path / "models").exists()
    )
