"""Category values spelled like the reserved tokens: merged into them with a warning as 3.1.1.0 does, `[mask]` refused.

The fixture `reserved-names` holds what 3.1.1.0 wrote for such data (see its README).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pv
import pyarrow.parquet as pq
import pytest

from sequifier.config.errors import UserError
from sequifier.config.preprocess import load_preprocess_config
from sequifier.data.metadata import read_metadata
from sequifier.preprocess import run_preprocess

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "reserved-names"


@pytest.fixture
def project(tmp_path: Path, monkeypatch) -> Path:
    root = tmp_path / "project"
    (root / "data").mkdir(parents=True)
    (root / "configs").mkdir()
    shutil.copy(FIXTURE / "data" / "events.csv", root / "data")
    shutil.copy(FIXTURE / "configs" / "preprocess.yaml", root / "configs")
    monkeypatch.chdir(root)
    return root


def test_reserved_spellings_get_the_reserved_ids_and_the_others_no_gaps_as_in_3x(project: Path, capsys):
    run_preprocess(load_preprocess_config(Path("configs/preprocess.yaml")))
    written = json.loads((project / "configs" / "metadata_configs" / "events.json").read_text())
    expected = json.loads((FIXTURE / "configs" / "metadata_configs" / "events.json").read_text())
    assert (written["id_maps"], written["n_classes"]) == (expected["id_maps"], expected["n_classes"])
    for split in range(3):
        name = f"events-split{split}.parquet"
        ours, theirs = pq.read_table(project / "data" / name), pq.read_table(FIXTURE / "data" / name)
        events = pc.equal(theirs.column("inputCol"), "event")
        assert ours.filter(events).equals(theirs.filter(events)), name  # ids exactly
        amounts = [ours.filter(pc.invert(events)), theirs.filter(pc.invert(events))]
        np.testing.assert_allclose(*(np.column_stack([t.column(c) for c in ("3", "2", "1", "0")]) for t in amounts))
    warnings = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert len(warnings) == 2 and all("event" in line for line in warnings)
    assert {"'[other]'", "'[unknown]'"} <= {word.rstrip(";") for line in warnings for word in line.split()}


def test_the_written_map_passes_the_consistency_check(project: Path):
    path = run_preprocess(load_preprocess_config(Path("configs/preprocess.yaml")))
    metadata = read_metadata(path)
    values = sorted(i for name, i in metadata.id_maps["event"].items() if not name.startswith("["))
    assert values == list(range(3, metadata.n_classes["event"]))


def test_mask_in_the_data_is_refused_naming_the_column(project: Path):
    table = pv.read_csv(project / "data" / "events.csv")
    events = table.column("event").to_pylist()
    events[4] = "[mask]"
    pv.write_csv(table.set_column(2, "event", pa.array(events)), project / "data" / "events.csv")
    with pytest.raises(UserError, match=r"\[mask\]") as error:
        run_preprocess(load_preprocess_config(Path("configs/preprocess.yaml")))
    assert error.value.where == "event"
    assert not (project / "configs" / "metadata_configs" / "events.json").exists()
