"""Every rule of named depth layouts (spec depth-layouts.md) is enforced with a UserError naming its field, and the
layout's options (position_base, allow_gaps, statistics, shard size) behave as 3.x defines them."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from sequifier.config.errors import UserError
from sequifier.config.preprocess import load_preprocess_config
from sequifier.data.stored import load_split
from sequifier.preprocess import run_preprocess

LAYOUT = {"position_column": "subItemPosition", "columns": ["subitemType", "subitemAmount"], "context_length": 4}
SELECTED = ["accountType", "subitemType", "subitemAmount", "nextAction"]


def raw_rows(n_sequences: int = 3, n_items: int = 8, first_sequence: int = 0) -> list[dict]:
    """Items with 1-3 children each; accountType per sequence and nextAction per item are item-level."""
    rows = []
    for sequence in range(first_sequence, first_sequence + n_sequences):
        for item in range(n_items):
            for child in range(1 + (sequence + item) % 3):
                rows.append(
                    {
                        "sequenceId": sequence,
                        "itemPosition": item,
                        "subItemPosition": child,
                        "accountType": f"acc{sequence % 2}",
                        "subitemType": f"t{(item + child) % 3}",
                        "subitemAmount": float(10 * sequence + item + child / 10),
                        "nextAction": f"a{item % 2}",
                    }
                )
    return rows


def table(rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(rows)


def config(**changes) -> dict:
    base = {
        "project_root": ".",
        "preprocessing_data_path": "data/items.parquet",
        "read_format": "parquet",
        "write_format": "pt",
        "merge_output": False,
        "selected_columns": SELECTED,
        "depth_layouts": {"subitems": dict(LAYOUT)},
        "window_length": 5,
    }
    base.update(changes)
    return base


def run(root: Path, monkeypatch, settings: dict, files: dict[str, pa.Table]) -> Path:
    (root / "configs").mkdir(parents=True, exist_ok=True)
    for relative, content in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(content, root / relative)
    path = root / "configs" / "preprocess.yaml"
    path.write_text(yaml.safe_dump(settings, sort_keys=False))
    monkeypatch.chdir(root)
    return run_preprocess(load_preprocess_config(path))


def changed(rows: list[dict], index: int, **values) -> list[dict]:
    rows = [dict(r) for r in rows]
    rows[index].update(values)
    return rows


def layout(**changes) -> dict:
    return {"subitems": {**LAYOUT, **changes}}


ROWS = raw_rows()  # item (0, 0): one child (row 0), item (0, 1): two (rows 1-2), item (0, 2): three (rows 3-5)
FIRST_CHILD_OF_0_1 = 1
OUT_OF_ORDER = ROWS[:2] + [ROWS[3], ROWS[2]] + ROWS[4:]  # item (0, 1) comes back after (0, 2)

# id, config changes, input files, expected where, message part
CASES = [
    ("two layouts", {"depth_layouts": {**layout(), "other": dict(LAYOUT)}}, None, "depth_layouts", "at most one"),
    ("parquet output", {"write_format": "parquet"}, None, "depth_layouts", "pt shards only"),
    ("merged output", {"merge_output": True}, None, "merge_output", "merge_output: false"),
    ("max_rows", {"max_rows": 10}, None, "max_rows", "depth_layouts"),
    (
        "position column selected",
        {"selected_columns": SELECTED + ["subItemPosition"]},
        None,
        "depth_layouts.subitems.position_column",
        "cannot be a feature",
    ),
    (
        "position column is a deep column",
        {"depth_layouts": layout(position_column="subitemType")},
        None,
        "depth_layouts.subitems.position_column",
        "a deep column",
    ),
    (
        "split column is a deep column",
        {"split_method": "value_cutoff", "split_column": "subitemAmount", "split_values": [1.0, 2.0]},
        None,
        "split_column",
        "'subitemAmount' is a deep column of depth layout 'subitems'",
    ),
    (
        "deep column not selected",
        {"selected_columns": ["accountType", "subitemType", "nextAction"]},
        None,
        "depth_layouts.subitems.columns",
        "'subitemAmount' is not a selected column",
    ),
    (
        "no capacity",
        {"depth_layouts": layout(context_length=0)},
        None,
        "depth_layouts.subitems.context_length",
        "least 1",
    ),
    (
        "string positions",
        {},
        {"data/items.parquet": table([{**r, "subItemPosition": str(r["subItemPosition"])} for r in ROWS])},
        "subItemPosition",
        "must hold integers",
    ),
    (
        "position column missing in a file",
        {"preprocessing_data_path": "data/parts", "read_format": None},
        {
            "data/parts/a.parquet": table(raw_rows(1)),
            "data/parts/b.parquet": table(raw_rows(1, first_sequence=5)).drop_columns(["subItemPosition"]),
        },
        "subItemPosition",
        "missing from",
    ),
    ("items out of order", {}, {"data/items.parquet": table(OUT_OF_ORDER)}, "itemPosition", "comes after (0, 2)"),
    (
        "item in two files",
        {"preprocessing_data_path": "data/parts", "read_format": None},
        {
            "data/parts/a.parquet": table([r for r in ROWS if not (r["sequenceId"] == 0 and r["subItemPosition"])]),
            "data/parts/b.parquet": table([r for r in ROWS if r["sequenceId"] == 0 and r["subItemPosition"]]),
        },
        "itemPosition",
        "spread over several input files",
    ),
    (
        "shallow value differs between children",
        {},
        {"data/items.parquet": table(changed(ROWS, FIRST_CHILD_OF_0_1 + 1, nextAction="a9"))},
        "nextAction",
        "item-level column",
    ),
    (
        "child beyond the capacity",
        {},
        {"data/items.parquet": table(changed(ROWS, FIRST_CHILD_OF_0_1 + 1, subItemPosition=4))},
        "subItemPosition",
        "outside the capacity [0, 4)",
    ),
    (
        "two children at one position",
        {},
        {"data/items.parquet": table(changed(ROWS, FIRST_CHILD_OF_0_1 + 1, subItemPosition=0))},
        "subItemPosition",
        "two children at position 0",
    ),
    (
        "gap without allow_gaps",
        {},
        {"data/items.parquet": table(changed(ROWS, FIRST_CHILD_OF_0_1 + 1, subItemPosition=2))},
        "subItemPosition",
        "prefix from 0",
    ),
    (
        "position column of floats",
        {},
        {"data/items.parquet": table([r | {"subItemPosition": float(r["subItemPosition"])} for r in ROWS])},
        "subItemPosition",
        "the depth position column must hold integers, found double in ",
    ),
    (
        "outer positions not continuous",
        {},
        {"data/items.parquet": table([r for r in ROWS if not (r["sequenceId"] == 1 and r["itemPosition"] == 4)])},
        "itemPosition",
        "jumps from 3 to 5",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[case[0] for case in CASES])
def test_a_broken_rule_is_a_user_error(case, tmp_path, monkeypatch):
    _, changes, files, where, message = case
    with pytest.raises(UserError) as error:
        run(tmp_path, monkeypatch, config(**changes), files or {"data/items.parquet": table(ROWS)})
    assert error.value.where == where
    assert message in error.value.problem
    if message.endswith(" in "):  # the file follows
        assert error.value.problem.endswith(str(tmp_path / "data" / "items.parquet"))
    assert not (tmp_path / "configs" / "metadata_configs").exists()


def test_reused_metadata_needs_the_identical_layout(tmp_path, monkeypatch):
    files = {"data/items.parquet": table(ROWS)}
    first = run(tmp_path, monkeypatch, config(), files)
    other = config(
        preprocessing_data_path="data/more.parquet",
        metadata_config_path=str(first.relative_to(tmp_path)),
        depth_layouts=layout(context_length=6),
    )
    with pytest.raises(UserError) as error:
        run(tmp_path, monkeypatch, other, {"data/more.parquet": table(ROWS)})
    assert error.value.where == "depth_layouts" and "identical layout definition" in error.value.problem
    unset = config(preprocessing_data_path="data/more.parquet", metadata_config_path=str(first.relative_to(tmp_path)))
    del unset["depth_layouts"]
    with pytest.raises(UserError) as error:
        run(tmp_path, monkeypatch, unset, {"data/more.parquet": table(ROWS)})
    assert error.value.problem.startswith(f"are not set, but {first} was written with the depth layouts {{")


def test_reused_depth_metadata_needs_the_identical_normalization_policy(tmp_path, monkeypatch):
    """As 3.x requires (the depth layouts' rules): a policy the config gives otherwise is refused, not replaced."""
    first = run(tmp_path, monkeypatch, config(), {"data/items.parquet": table(ROWS)})
    other = config(
        preprocessing_data_path="data/more.parquet",
        metadata_config_path=str(first.relative_to(tmp_path)),
        normalize_real_columns=False,
    )
    with pytest.raises(UserError) as error:
        run(tmp_path, monkeypatch, other, {"data/more.parquet": table(ROWS)})
    assert error.value.where == "normalize_real_columns"
    assert "needs the identical normalization policy" in error.value.problem
    assert error.value.problem.endswith("set normalize_real_columns: true")


def stored(root: Path, split: int = 0):
    return load_split(root / "data" / f"items-split{split}", SELECTED, ["accountType", "subitemType", "nextAction"])


def item_slots(windows, sequence: int, item: int) -> tuple[np.ndarray, np.ndarray]:
    """The amounts and mask of one item in its first window."""
    row = int(np.flatnonzero(windows.sequence_ids == sequence)[0])
    slot = item - windows.start_item_positions[row]
    return windows.columns["subitemAmount"][row, slot], windows.depth_masks["subitems"][row, slot]


def test_allow_gaps_keeps_the_physical_slots(tmp_path, monkeypatch):
    rows = changed(ROWS, FIRST_CHILD_OF_0_1 + 1, subItemPosition=3)  # item (0, 1): children at 0 and 3
    settings = config(depth_layouts=layout(allow_gaps=True), normalize_real_columns=False, split_ratios=[1.0])
    run(tmp_path, monkeypatch, settings, {"data/items.parquet": table(rows)})
    amounts, mask = item_slots(stored(tmp_path), 0, 1)
    assert mask.tolist() == [True, False, False, True]
    assert amounts.tolist() == [1.0, 0.0, 0.0, 1.1]


def test_position_base_is_subtracted(tmp_path, monkeypatch):
    rows = [{**r, "subItemPosition": r["subItemPosition"] + 1} for r in ROWS]
    settings = config(depth_layouts=layout(position_base=1), normalize_real_columns=False, split_ratios=[1.0])
    run(tmp_path, monkeypatch, settings, {"data/items.parquet": table(rows)})
    amounts, mask = item_slots(stored(tmp_path), 0, 1)
    assert mask.tolist() == [True, True, False, False]
    assert amounts.tolist() == [1.0, 1.1, 0.0, 0.0]


def test_shallow_statistics_count_items_and_deep_statistics_count_slots(tmp_path, monkeypatch):
    rows = [{**r, "itemAmount": float(r["itemPosition"] ** 2 + r["sequenceId"])} for r in ROWS]
    settings = config(selected_columns=SELECTED + ["itemAmount"], split_ratios=[1.0])
    metadata = json.loads(run(tmp_path, monkeypatch, settings, {"data/items.parquet": table(rows)}).read_text())
    statistics = metadata["selected_columns_statistics"]
    per_item = {(r["sequenceId"], r["itemPosition"]): r["itemAmount"] for r in rows}
    per_slot = [r["subitemAmount"] for r in rows]
    assert statistics["itemAmount"]["mean"] == pytest.approx(np.mean(list(per_item.values())))
    assert statistics["itemAmount"]["std"] == pytest.approx(np.std(list(per_item.values()), ddof=1))
    assert statistics["subitemAmount"]["mean"] == pytest.approx(np.mean(per_slot))
    assert statistics["subitemAmount"]["std"] == pytest.approx(np.std(per_slot, ddof=1))


def test_the_position_column_is_read_but_never_selected_or_typed(tmp_path, monkeypatch):
    settings = config()
    del settings["selected_columns"]
    metadata = json.loads(run(tmp_path, monkeypatch, settings, {"data/items.parquet": table(ROWS)}).read_text())
    assert list(metadata["column_data_types"]) == SELECTED
    assert "subItemPosition" not in metadata["selected_columns_statistics"]


def test_batches_per_file_counts_windows_per_shard(tmp_path, monkeypatch):
    run(tmp_path, monkeypatch, config(batches_per_file=1), {"data/items.parquet": table(ROWS)})
    folder = json.loads((tmp_path / "data" / "items-split0" / "metadata.json").read_text())
    names = [entry["path"] for entry in folder["batch_files"]]
    assert names == [f"items-split0-0-{i:08d}.pt" for i in range(6)]  # 3 sequences, 2 windows each
    assert [entry["samples"] for entry in folder["batch_files"]] == [1] * 6
    assert len(stored(tmp_path)) == 6
