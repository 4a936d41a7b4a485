"""Inputs and streaming: folders of CSV/Parquet files, max_rows, row order, batch and group sizes, worker counts."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.csv as pv
import pyarrow.parquet as pq
import pytest
from reference_helpers import (
    REFERENCE_DIR,
    assert_same_windows,
    load_sorted_split,
    make_project,
    read_json,
    reference_config,
)

import sequifier.preprocess.groups as groups_module
import sequifier.preprocess.run as run_module
import sequifier.preprocess.sources as sources_module
from sequifier.config.preprocess import load_preprocess_config
from sequifier.data.stored import load_split
from sequifier.preprocess import run_preprocess
from sequifier.preprocess.parallel import usable_cpus

REFERENCE_PARQUET = REFERENCE_DIR / "data" / "events.parquet"


def raw_table() -> pa.Table:
    return pq.read_table(REFERENCE_PARQUET)


def preprocess(root, monkeypatch, data_path: str, **changes) -> dict:
    config = reference_config(preprocessing_data_path=data_path, **changes)
    config.pop("read_format", None)
    config.update({k: v for k, v in changes.items() if k == "read_format"})
    config_path = make_project(root, root / "missing", config)
    monkeypatch.chdir(root)
    return read_json(run_preprocess(load_preprocess_config(config_path)))


def write_parts(folder, table: pa.Table, cuts: list[int], suffix: str = "parquet") -> None:
    """Rows of `table` in files part-0.., cut at the given row indices."""
    folder.mkdir(parents=True, exist_ok=True)
    bounds = [0, *cuts, table.num_rows]
    for index, (start, end) in enumerate(zip(bounds, bounds[1:])):
        part = table.slice(start, end - start)
        (pv.write_csv if suffix == "csv" else pq.write_table)(part, folder / f"part-{index}.{suffix}")


@pytest.fixture(scope="module")
def reference_splits():
    return [load_sorted_split(REFERENCE_DIR / "data" / f"events-split{i}.parquet") for i in range(3)]


def assert_matches_reference(root, metadata, reference_splits):
    assert metadata["id_maps"] == read_json(REFERENCE_DIR / "configs" / "metadata_configs" / "events.json")["id_maps"]
    for path, expected in zip(metadata["split_paths"], reference_splits):
        assert_same_windows(load_sorted_split(root / path), expected)


@pytest.mark.parametrize("suffix", ["parquet", "csv"])
def test_folder_input_matches_the_single_file(suffix, tmp_path, monkeypatch, reference_splits):
    # cuts fall inside sequences, and the second file's rows come first in sequence order
    table = raw_table()
    table = pa.concat_tables([table.slice(2000), table.slice(0, 2000)])
    write_parts(tmp_path / "data" / "events", table, [1500, 3001], suffix)
    metadata = preprocess(tmp_path, monkeypatch, "data/events")
    assert metadata["split_paths"][0] == "./data/events-split0.parquet"
    assert_matches_reference(tmp_path, metadata, reference_splits)


def test_shuffled_rows_small_batches_and_groups_change_nothing(tmp_path, monkeypatch, reference_splits):
    monkeypatch.setattr(sources_module, "BATCH_ROWS", 333)
    monkeypatch.setattr(groups_module, "GROUP_SLOTS", 400)
    table = raw_table()
    shuffled = table.take(pa.array(np.random.default_rng(5).permutation(table.num_rows)))
    pq.write_table(shuffled, tmp_path / "events.parquet", row_group_size=1000)
    (tmp_path / "data").mkdir()
    (tmp_path / "events.parquet").rename(tmp_path / "data" / "events.parquet")
    metadata = preprocess(tmp_path, monkeypatch, "data/events.parquet", n_cores=2)
    assert len(list((tmp_path / "data").iterdir())) == 4  # the input and three splits, nothing else
    assert_matches_reference(tmp_path, metadata, reference_splits)


def reference_slots() -> np.ndarray:
    """Window slots per sequence of the reference data (window_length 17, the stride defaulting to it)."""
    _, lengths = np.unique(raw_table().column("sequenceId").to_numpy(), return_counts=True)
    return groups_module.window_slots(lengths, 17, 17)


def test_groups_bound_the_window_slots_held_at_once(tmp_path, monkeypatch):
    seen = []
    real_load = groups_module.load_sorted

    def recording_load(group, columns=None):
        loaded = real_load(group, columns)
        seen.append(int(groups_module.window_slots(loaded.lengths, 17, 17).sum()))
        return loaded

    monkeypatch.setattr("sequifier.preprocess.tasks.load_sorted", recording_load)
    monkeypatch.setattr(groups_module, "GROUP_SLOTS", 500)
    (tmp_path / "data").mkdir()
    pq.write_table(raw_table(), tmp_path / "data" / "events.parquet")
    preprocess(tmp_path, monkeypatch, "data/events.parquet")
    groups = -(-int(reference_slots().sum()) // 500)
    assert len(seen) == 2 * groups and max(seen) <= 500 + 4 * 17  # each read by fit and write; <= 60 items a sequence


def test_short_sequences_under_a_long_window_make_more_groups_than_their_rows_would():
    """Each sequence is padded to a whole window: its slots, not its rows, are what a group holds in memory."""
    lengths = np.full(1000, 2)
    by_rows = groups_module.plan_groups(lengths, min_groups=1, group_size=500)
    by_slots = groups_module.plan_groups(groups_module.window_slots(lengths, 16, 16), min_groups=1, group_size=500)
    assert len(by_rows) - 1 == 4 and len(by_slots) - 1 == 32
    assert groups_module.window_slots(np.array([1, 16, 17, 33, 40]), 16, 8).tolist() == [16, 16, 32, 64, 64]


def test_plan_groups_cuts_by_weight_and_keeps_every_core_busy():
    lengths = np.array([10, 10, 10, 10, 100, 10])
    assert groups_module.plan_groups(lengths, min_groups=1, group_size=1000).tolist() == [0, 6]
    assert groups_module.plan_groups(lengths, min_groups=2, group_size=1000).tolist() == [0, 4, 6]
    assert groups_module.plan_groups(lengths, min_groups=1, group_size=50).tolist() == [0, 4, 5, 6]
    assert groups_module.plan_groups(np.array([5]), min_groups=4).tolist() == [0, 1]


def test_max_rows_reads_the_first_rows_across_files(tmp_path, monkeypatch, capsys):
    table = raw_table()
    write_parts(tmp_path / "data" / "events", table, [100, 200])
    metadata = preprocess(tmp_path, monkeypatch, "data/events", max_rows=250, split_ratios=[1.0])
    assert "read 250 rows" in capsys.readouterr().err
    windows = load_sorted_split(tmp_path / metadata["split_paths"][0])
    last_id = table.column("sequenceId")[249].as_py()
    assert windows.sequence_ids.max() == last_id


def test_types_are_unified_across_files(tmp_path, monkeypatch):
    first = pa.table(
        {"sequenceId": [1] * 4, "itemPosition": [0, 1, 2, 3], "amount": [1, 2, 3, 4], "kind": ["a", "b", "a", "b"]}
    )
    second = pa.table(
        {
            "sequenceId": [2] * 4,
            "itemPosition": [0, 1, 2, 3],
            "amount": [0.5, 1.5, 2.5, 3.5],
            "kind": pa.array(["b", "c", "b", "c"]).dictionary_encode(),
        }
    )
    folder = tmp_path / "data" / "mixed"
    folder.mkdir(parents=True)
    pq.write_table(first, folder / "a.parquet")
    pq.write_table(second, folder / "b.parquet")
    metadata = preprocess(
        tmp_path, monkeypatch, "data/mixed", selected_columns=None, window_length=2, split_ratios=[1.0]
    )
    assert metadata["column_data_types"] == {"amount": "Float64", "kind": "Int64"}
    assert metadata["id_maps"]["kind"] == {"a": 3, "b": 4, "c": 5, "[unknown]": 0, "[other]": 1}


def one_column_csv(root, monkeypatch, values: list[str], name="codes", per_sequence=4, **changes) -> dict:
    """The metadata of a csv `data/<name>.csv` whose one column `code` holds `values`."""
    (root / "data").mkdir(exist_ok=True)
    lines = ["sequenceId,itemPosition,code"] + [
        f"{i // per_sequence},{i % per_sequence},{v}" for i, v in enumerate(values)
    ]
    (root / "data" / f"{name}.csv").write_text("\n".join(lines) + "\n")
    settings = {"window_length": 2, **changes}
    return preprocess(
        root,
        monkeypatch,
        f"data/{name}.csv",
        read_format="csv",
        selected_columns=["code"],
        split_ratios=[1.0],
        **settings,
    )


def csv_code_values(root, monkeypatch, values: list[str], **typing) -> set[str]:
    """The id map's raw values of a csv column `code` holding `values`."""
    return set(one_column_csv(root, monkeypatch, values, **typing)["id_maps"]["code"])


def test_a_declared_categorical_csv_column_keeps_values_that_would_parse_as_one_number(tmp_path, monkeypatch):
    values = ["007", "7", "1.0", "1", "01", "true", "TRUE", "7"]
    typing = {"categorical_columns": ["code"], "real_columns": []}
    assert csv_code_values(tmp_path, monkeypatch, values, **typing) == {*values, "[unknown]", "[other]"}


def test_a_declared_real_csv_column_reads_a_fraction_below_a_head_of_integers(tmp_path, monkeypatch):
    """The file's head shows integers only; the column is declared real, so the 1.5 further down is read."""
    monkeypatch.setattr(sources_module, "CSV_INFER_BYTES", 256)
    values = [str(i % 7) for i in range(199)] + ["1.5"]
    metadata = one_column_csv(tmp_path, monkeypatch, values, categorical_columns=[], real_columns=["code"])
    assert metadata["column_data_types"]["code"] == "Float64"
    mean = metadata["selected_columns_statistics"]["code"]["mean"]
    assert mean == pytest.approx(np.mean([float(v) for v in values]), abs=1e-12)


@pytest.mark.parametrize(
    "positions, split, warned",
    [
        (
            [0, 10, 20, 30, 40, 50],
            {},
            "in 1 of 2 sequences the items of a split are not at consecutive positions (sequenceId 1: 0, then 10)",
        ),
        ([5, 6, 7, 8, 9, 10], {}, None),
        (
            [0, 1, 2, 3, 4, 5],
            {"split_method": "value_cutoff", "split_column": "day", "split_values": [1.5]},
            "(sequenceId 1: 0, then 2)",
        ),
    ],
    ids=["gaps", "consecutive-from-5", "value-cutoff-interleaves"],
)
def test_positions_a_split_does_not_hold_consecutively_are_warned_about(
    positions, split, warned, tmp_path, monkeypatch, capsys
):
    table = pa.table(
        {
            "sequenceId": [1] * 6 + [2] * 6,
            "itemPosition": positions + list(range(6)),
            "event": ["a", "b"] * 6,
            "day": [0.0, 3.0] * 3 + [0.0] * 3 + [3.0] * 3,
        }
    )
    (tmp_path / "data").mkdir()
    pq.write_table(table, tmp_path / "data" / "steps.parquet")
    ratios = [0.5, 0.5] if split else [1.0]
    preprocess(
        tmp_path,
        monkeypatch,
        "data/steps.parquet",
        selected_columns=["event"],
        window_length=2,
        split_ratios=ratios,
        **split,
    )
    lines = [line for line in capsys.readouterr().err.splitlines() if "warning: itemPosition" in line]
    assert (lines == []) if warned is None else (len(lines) == 1 and warned in lines[0])


@pytest.mark.parametrize("window_length, warned", [(9, True), (8, False)])
def test_a_window_over_twice_the_longest_sequence_is_warned_about(window_length, warned, tmp_path, monkeypatch, capsys):
    table = pa.table({"sequenceId": [1] * 4 + [2] * 3, "itemPosition": [0, 1, 2, 3, 0, 1, 2], "event": list("abcabca")})
    (tmp_path / "data").mkdir()
    pq.write_table(table, tmp_path / "data" / "short.parquet")
    preprocess(
        tmp_path,
        monkeypatch,
        "data/short.parquet",
        selected_columns=["event"],
        window_length=window_length,
        split_ratios=[1.0],
    )
    lines = [line for line in capsys.readouterr().err.splitlines() if "mostly padding" in line]
    expected = f"warning: window_length {window_length} is over twice the longest sequence (4 items)"
    assert len(lines) == 1 and expected in lines[0] if warned else lines == []


def test_integers_beyond_float64_precision_can_be_a_real_column(tmp_path, monkeypatch):
    """Nanosecond timestamps declared real: rounded to float64 as any real is, not an error."""
    base = 2**60
    table = pa.table(
        {
            "sequenceId": [1] * 4 + [2] * 4,
            "itemPosition": [0, 1, 2, 3] * 2,
            "stamp": pa.array([base + 10**9 * i for i in range(8)], pa.int64()),
        }
    )
    (tmp_path / "data").mkdir()
    pq.write_table(table, tmp_path / "data" / "stamps.parquet")
    metadata = preprocess(
        tmp_path,
        monkeypatch,
        "data/stamps.parquet",
        selected_columns=["stamp"],
        real_columns=["stamp"],
        categorical_columns=[],
        window_length=2,
        split_ratios=[1.0],
    )
    assert metadata["column_data_types"] == {"stamp": "Float64"}
    assert metadata["selected_columns_statistics"]["stamp"]["mean"] == pytest.approx(base + 3.5e9, rel=1e-12)


@pytest.mark.parametrize("write_format", ["parquet", "pt"])
def test_shards_with_several_cores_hold_the_same_windows(write_format, tmp_path, monkeypatch, reference_splits):
    monkeypatch.setattr(groups_module, "GROUP_SLOTS", int(reference_slots().sum()) // 6 + 1)  # 6 groups
    (tmp_path / "data").mkdir()
    pq.write_table(raw_table(), tmp_path / "data" / "events.parquet")
    metadata = preprocess(
        tmp_path,
        monkeypatch,
        "data/events.parquet",
        write_format=write_format,
        merge_output=False,
        n_cores=2,
        batches_per_file=2,
    )
    folder = tmp_path / metadata["split_paths"][0]
    described = read_json(folder / "metadata.json")
    names = [entry["path"] for entry in described["batch_files"]]
    assert names == [f"events-split0-{i}-00.{write_format}" for i in range(3)]  # 6 groups, 2 per file
    assert sorted(p.name for p in folder.iterdir()) == sorted([*names, "metadata.json"])
    assert described["total_samples"] == sum(entry["samples"] for entry in described["batch_files"]) == 310
    assert_matches_reference(tmp_path, metadata, reference_splits)


def test_csv_type_conflict_after_the_inferred_head_names_column_and_file(tmp_path, monkeypatch):
    monkeypatch.setattr(sources_module, "CSV_INFER_BYTES", 200)
    monkeypatch.setattr(sources_module, "CSV_BLOCK_BYTES", 256)
    rows = ["sequenceId,itemPosition,code"] + [f"1,{i},{i}" for i in range(100)] + ["1,100,x"]
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "codes.csv").write_text("\n".join(rows) + "\n")
    from sequifier.config.errors import UserError

    with pytest.raises(UserError) as error:
        preprocess(tmp_path, monkeypatch, "data/codes.csv", selected_columns=["code"], window_length=2)
    assert error.value.where == "code"
    assert f"cannot read {tmp_path / 'data' / 'codes.csv'} at line 102:" in error.value.problem


def test_csv_quotes_inside_unquoted_values_are_text_and_quoted_values_may_span_lines(tmp_path, monkeypatch):
    """Quote characters odd in number, every quoted value closed: the file is read as written."""
    (tmp_path / "data").mkdir()
    text = 'sequenceId,itemPosition,code\n0,0,5"\n0,1,"a\nb"\n0,2,"say ""hi"""\n0,3,x\n'
    (tmp_path / "data" / "codes.csv").write_text(text)
    metadata = preprocess(
        tmp_path, monkeypatch, "data/codes.csv", selected_columns=["code"], window_length=2, split_ratios=[1.0]
    )
    assert set(metadata["id_maps"]["code"]) == {"[unknown]", "[other]", '5"', "a\nb", 'say "hi"', "x"}


@pytest.mark.parametrize("declared", [True, False])
def test_an_empty_csv_field_is_a_missing_value_like_a_parquet_null(tmp_path, monkeypatch, declared: bool):
    kinds = ["a", None, "b", "a", None, "b", "c", "a"]
    table = pa.table({"sequenceId": [0] * 4 + [1] * 4, "itemPosition": [0, 1, 2, 3] * 2, "kind": kinds})
    (tmp_path / "data").mkdir()
    pq.write_table(table, tmp_path / "data" / "kinds.parquet")
    (tmp_path / "data" / "kinds.csv").write_text(
        "sequenceId,itemPosition,kind\n" + "".join(f"{i // 4},{i % 4},{k or ''}\n" for i, k in enumerate(kinds))
    )
    typing = {"categorical_columns": ["kind"], "real_columns": []} if declared else {}
    outputs = {}
    for suffix in ("parquet", "csv"):
        metadata = preprocess(
            tmp_path / suffix,
            monkeypatch,
            str(tmp_path / "data" / f"kinds.{suffix}"),
            read_format=suffix,
            selected_columns=["kind"],
            window_length=4,
            split_ratios=[1.0],
            **typing,
        )
        outputs[suffix] = (
            metadata["id_maps"],
            load_sorted_split(tmp_path / suffix / metadata["split_paths"][0], ["kind"], ["kind"]),
        )
    assert "" not in outputs["csv"][0]["kind"]
    assert outputs["csv"][0] == outputs["parquet"][0]
    assert_same_windows(outputs["csv"][1], outputs["parquet"][1])


def test_words_for_missing_values_in_a_csv_are_data_as_in_parquet(tmp_path, monkeypatch):
    codes = ["1", "NA", "2", "null", "1", "N/A", "nan", "2"]
    assert csv_code_values(tmp_path, monkeypatch, codes) == {*codes, "[unknown]", "[other]"}


def test_string_views_and_float32_categories_read_as_their_values(tmp_path, monkeypatch):
    table = raw_table()
    rows = table.num_rows
    channel = table.column("channel").cast(pa.string_view())
    kinds = pa.array([(0.1, 0.2, 0.3)[i % 3] for i in range(rows)], pa.float32())
    pq.write_table(table.set_column(table.schema.get_field_index("channel"), "channel", channel).append_column(
        "kind", kinds), tmp_path / "raw.parquet")  # fmt: skip
    metadata = preprocess(
        tmp_path,
        monkeypatch,
        "raw.parquet",
        selected_columns=["event", "channel", "kind"],
        categorical_columns=["kind"],
    )
    assert set(metadata["id_maps"]["channel"]) >= set(table.column("channel").to_pylist())
    assert {"0.1", "0.2", "0.3"} <= set(metadata["id_maps"]["kind"])


@pytest.mark.parametrize("line_break", ["\n", ""], ids=["with-line-break", "without"])
def test_a_csv_holding_only_its_header_in_a_folder_adds_no_rows(line_break, tmp_path, monkeypatch, reference_splits):
    write_parts(tmp_path / "parts", raw_table(), [], suffix="csv")
    header = (tmp_path / "parts" / "part-0.csv").read_text().splitlines()[0]
    (tmp_path / "parts" / "part-9.csv").write_text(header + line_break)
    metadata = preprocess(tmp_path, monkeypatch, "parts", read_format="csv")
    assert_matches_reference(tmp_path, metadata, reference_splits)


def test_a_header_repeated_after_the_first_block_of_the_head_is_named_with_its_row(tmp_path, monkeypatch):
    monkeypatch.setattr(sources_module, "CSV_BLOCK_BYTES", 256)
    rows = [f"{i // 4},{i % 4},c{i % 3}" for i in range(200)]
    rows.insert(150, "sequenceId,itemPosition,code")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "codes.csv").write_text("sequenceId,itemPosition,code\n" + "\n".join(rows) + "\n")
    from sequifier.config.errors import UserError

    with pytest.raises(UserError) as error:
        preprocess(tmp_path, monkeypatch, "data/codes.csv", selected_columns=["code"], window_length=2)
    assert error.value.where == "sequenceId"
    assert (
        error.value.problem == f"must hold integers, found 'sequenceId' at row 151 of {tmp_path / 'data' / 'codes.csv'}"
    )


def test_quoted_values_with_line_breaks_read_whole_across_the_readers_blocks(tmp_path, monkeypatch, capsys):
    """Blocks of 256 bytes stand for files beyond the reader's 1 MiB blocks: a break inside quotes is not a row's
    end wherever a block ends."""
    monkeypatch.setattr(sources_module, "CSV_INFER_BYTES", 200)
    monkeypatch.setattr(sources_module, "CSV_BLOCK_BYTES", 256)
    values = ["multi\nline\n,end" if i % 7 == 0 else f"c{i % 3}" for i in range(400)]
    metadata = one_column_csv(tmp_path, monkeypatch, ['"' + v + '"' if "\n" in v else v for v in values])
    assert set(metadata["id_maps"]["code"]) == {*values, "[unknown]", "[other]"}
    assert "read 400 rows, 100 sequences" in capsys.readouterr().err


def test_n_cores_beyond_the_usable_cpus_runs_on_those_cpus(tmp_path, monkeypatch, capsys, reference_splits):
    (tmp_path / "data").mkdir()
    pq.write_table(raw_table(), tmp_path / "data" / "events.parquet")
    started_workers = []
    real_run_tasks = run_module.run_tasks
    monkeypatch.setattr(
        run_module,
        "run_tasks",
        lambda fn, shared, tasks, n_cores: (
            started_workers.append(n_cores) or real_run_tasks(fn, shared, tasks, n_cores)
        ),
    )
    metadata = preprocess(tmp_path, monkeypatch, "data/events.parquet", n_cores=10**6)
    cpus = usable_cpus()
    assert (
        f"n_cores 1000000 is more than the CPUs this process may use ({cpus}); using {cpus}" in capsys.readouterr().err
    )
    assert started_workers and set(started_workers) == {cpus}
    assert_matches_reference(tmp_path, metadata, reference_splits)


@pytest.mark.parametrize(
    "first_values, first_typing, later_values, later_spellings",
    [
        # a map made from text: the later csv's '007' keeps its own id, though the csv's head shows integers
        (["007", "7", "TRUE", "1"], {"categorical_columns": ["code"]}, ["007", "007", "7", "1"], None),
        # a map made from integers the csv's head showed: the later '07' is the integer 7, as before
        (["007", "7", "1", "1"], {}, ["07", "7", "7", "1"], ["7", "7", "7", "1"]),
    ],
)
def test_a_csv_column_is_read_as_its_reused_metadata_spells_its_values(
    first_values, first_typing, later_values, later_spellings, tmp_path, monkeypatch
):
    first = one_column_csv(tmp_path, monkeypatch, first_values, **first_typing)
    id_map = first["id_maps"]["code"]
    later = one_column_csv(
        tmp_path,
        monkeypatch,
        later_values,
        name="later",
        per_sequence=len(later_values),
        window_length=4,
        metadata_config_path="configs/metadata_configs/codes.json",
    )
    stored = load_split(tmp_path / later["split_paths"][0], ["code"], ["code"]).columns["code"]
    assert list(stored[0]) == [id_map[spelling] for spelling in later_spellings or later_values]


def test_a_csv_column_of_booleans_is_read_as_booleans_under_a_map_3x_wrote(tmp_path, monkeypatch):
    """3.x's map of a boolean column spells its values 0 and 1: not a map made from text."""
    one_column_csv(tmp_path, monkeypatch, ["true", "false", "true", "false"])
    written_by_3x = tmp_path / "configs" / "metadata_configs" / "codes.json"
    metadata = json.loads(written_by_3x.read_text())
    metadata["id_maps"]["code"] = {"0": 3, "1": 4}
    written_by_3x.write_text(json.dumps(metadata))
    later = one_column_csv(
        tmp_path,
        monkeypatch,
        ["false", "True", "TRUE", "false"],
        name="later",
        window_length=4,
        metadata_config_path="configs/metadata_configs/codes.json",
    )
    stored = load_split(tmp_path / later["split_paths"][0], ["code"], ["code"]).columns["code"]
    assert list(stored[0]) == [3, 4, 4, 3]


def test_values_a_reused_map_does_not_know_are_warned_about_by_name(tmp_path, monkeypatch, capsys):
    one_column_csv(tmp_path, monkeypatch, ["007", "7", "TRUE", "1"], categorical_columns=["code"])
    capsys.readouterr()
    one_column_csv(
        tmp_path,
        monkeypatch,
        ["007", "+7", "7", "08"],
        name="later",
        per_sequence=4,
        window_length=4,
        metadata_config_path="configs/metadata_configs/codes.json",
    )
    said = capsys.readouterr().err
    read_as_text = "'code' is read as text: configs/metadata_configs/codes.json spells values as this input's double"
    assert f"{read_as_text} values would not be ('007', '1', '7', ...)" in said
    assert "warning: code: 2 of its values are not in the id map used and become [other] ('+7', '08')" in said
