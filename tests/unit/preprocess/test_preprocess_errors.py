"""Bad configs and bad inputs raise UserError naming the key/column/file/row, and leave no outputs behind."""

from __future__ import annotations

import gzip
import json
import os
import re
import signal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pv
import pyarrow.parquet as pq
import pytest
import yaml
from reference_helpers import REFERENCE_DIR

import sequifier.preprocess.outputs as outputs_module
import sequifier.preprocess.run as run_module
from sequifier.config.errors import UserError
from sequifier.config.preprocess import load_preprocess_config
from sequifier.data.column_names import column_name_problem
from sequifier.preprocess import run_preprocess

CONFIG = "configs/preprocess.yaml"
DATA = "data/events.parquet"
CSV = "data/events.csv"
PARTS = "data/parts"


def good_table(n_sequences: int = 3, first_sequence: int = 0) -> pa.Table:
    n_items = 12
    rows = n_sequences * n_items
    return pa.table(
        {
            "sequenceId": np.repeat(np.arange(first_sequence, first_sequence + n_sequences), n_items),
            "itemPosition": np.tile(np.arange(n_items), n_sequences),
            "event": [f"e{i % 4}" for i in range(rows)],
            "amount": np.linspace(0.0, 1.0, rows),
        }
    )


def good_config(**changes) -> dict:
    config = {"project_root": ".", "preprocessing_data_path": DATA, "read_format": "parquet", "window_length": 5}
    config.update(changes)
    return {k: v for k, v in config.items() if v is not None}


def with_column(table: pa.Table, name: str, values) -> pa.Table:
    return table.set_column(table.schema.get_field_index(name), name, pa.array(values))


def amount_with(value, table: pa.Table | None = None) -> pa.Table:
    table = table if table is not None else good_table()
    amounts = table.column("amount").to_pylist()
    amounts[7] = value
    return with_column(table, "amount", pa.array(amounts, pa.float64()))


def duplicate_position() -> pa.Table:
    positions = good_table().column("itemPosition").to_pylist()
    positions[3] = positions[2]
    return with_column(good_table(), "itemPosition", positions)


def reused_metadata(column_types: dict[str, str]) -> dict:
    """The reference metadata rewritten for `column_types`."""
    data = json.loads((REFERENCE_DIR / "configs" / "metadata_configs" / "events.json").read_text())
    categorical = [c for c, t in column_types.items() if t == "Int64"]
    data["column_data_types"] = column_types
    data["id_maps"] = {c: {"e0": 3, "e1": 4, "[unknown]": 0, "[other]": 1} for c in categorical}
    data["n_classes"] = {c: 5 for c in categorical}
    data["selected_columns_statistics"] = {c: {"mean": 0.5, "std": 0.25} for c in column_types if c not in categorical}
    return data


def two_files(second: pa.Table) -> dict:
    return {f"{PARTS}/a.parquet": good_table(), f"{PARTS}/b.parquet": second}


FOLDER = {"preprocessing_data_path": PARTS, "read_format": None}
CSV_INPUT = {"preprocessing_data_path": CSV, "read_format": "csv"}
CUTOFF = {"split_method": "value_cutoff", "split_column": "amount", "split_values": [0.3, 0.6]}
ONLY_DATA = {DATA: good_table()}


def parquet_bytes(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return sink.getvalue().to_pybytes()


def latin1_valued_parquet(dictionary: bool) -> bytes:
    """good_table as uncompressed Parquet bytes, one `event` value in Latin-1 (which Arrow does not check)."""
    events = good_table().column("event").to_pylist()
    events[5] = "VVxVV"
    sink = pa.BufferOutputStream()
    pq.write_table(with_column(good_table(), "event", events), sink, compression="none", use_dictionary=dictionary)
    return sink.getvalue().to_pybytes().replace(b"VVxVV", b"VV\xe9VV")


def latin1_named_parquet() -> bytes:
    """good_table's Parquet bytes (without Arrow's schema) with `amount` renamed in place, wherever the file names it,
    to bytes that are no UTF-8 text."""
    sink = pa.BufferOutputStream()
    pq.write_table(good_table(), sink, store_schema=False)
    return sink.getvalue().to_pybytes().replace(b"amount", b"am\xe9unt")


# id, config changes, input files (path -> table / text / JSON object), config text (replaces the YAML),
# expected `where`, message part
CASES = [
    ("missing config", None, ONLY_DATA, "", "{root}/" + CONFIG, "not found"),
    (
        "yaml syntax",
        None,
        ONLY_DATA,
        "window_length: 5\nselected_columns: [event\nseed: 1\n",
        "{root}/" + CONFIG,
        "line 3",
    ),
    ("unknown key", {"windw_length": 5}, ONLY_DATA, None, "windw_length", "did you mean 'window_length'"),
    ("no sequenceId", {}, {DATA: good_table().drop_columns(["sequenceId"])}, None, "sequenceId", "missing"),
    ("no itemPosition", {}, {DATA: good_table().drop_columns(["itemPosition"])}, None, "itemPosition", "missing"),
    (
        "unknown selected column",
        {"selected_columns": ["event", "amout"]},
        ONLY_DATA,
        None,
        "amout",
        "did you mean 'amount'",
    ),
    (
        "fractional itemPosition",
        {},
        {DATA: with_column(good_table(), "itemPosition", np.arange(36) + 0.5)},
        None,
        "itemPosition",
        "must hold integers, found 0.5 at row 1 of {root}/" + DATA,
    ),
    (
        "sequenceId beyond int64 (uint64)",
        {},
        {
            DATA: with_column(
                good_table(), "sequenceId", pa.array(np.repeat(np.arange(3, dtype=np.uint64), 12) + np.uint64(2**63))
            )
        },
        None,
        "sequenceId",
        "9223372036854775808 at row 1 of {root}/" + DATA + " is outside the 64-bit signed integer range",
    ),
    (
        "sequenceId beyond int64 (float)",
        {},
        {DATA: with_column(good_table(), "sequenceId", np.repeat(np.arange(3), 12) * 1e15 + 1e19)},
        None,
        "sequenceId",
        "1e+19 at row 1 of {root}/" + DATA + " is outside the 64-bit signed integer range",
    ),
    (
        "a column name twice",
        {},
        {DATA: pa.table([*good_table().columns, good_table()["amount"]], names=[*good_table().column_names, "amount"])},
        None,
        "{root}/" + DATA,
        "more than one column named 'amount'",
    ),
    (
        "latin-1 csv",
        CSV_INPUT,
        {CSV: "sequenceId,itemPosition,event,amount\n0,0,caf\xe9,1.0\n0,1,th\xe9,2.0\n".encode("latin-1")},
        None,
        "event",
        "not UTF-8 text in {root}/" + CSV,
    ),
    (
        "latin-1 csv header",
        CSV_INPUT,
        {CSV: "sequenceId,itemPosition,event,caf\xe9\n0,0,a,1.0\n0,1,b,2.0\n".encode("latin-1")},
        None,
        "{root}/" + CSV,
        "has a column name that is not UTF-8 text",
    ),
    (
        "latin-1 parquet value",
        {},
        {DATA: latin1_valued_parquet(dictionary=False)},
        None,
        "event",
        "holds bytes that are not UTF-8 text in {root}/" + DATA,
    ),
    (
        "latin-1 parquet value in a dictionary",
        {},
        {DATA: latin1_valued_parquet(dictionary=True)},
        None,
        "event",
        "holds bytes that are not UTF-8 text in {root}/" + DATA,
    ),
    (
        "latin-1 parquet column name",
        {},
        {DATA: latin1_named_parquet()},
        None,
        "{root}/" + DATA,
        "has a column name that is not UTF-8 text",
    ),
    ("gzip csv", CSV_INPUT, {CSV: gzip.compress(b"sequenceId,itemPosition\n0,0\n")}, None, "{root}/" + CSV, "gzip"),
    (
        "parquet read as csv",
        CSV_INPUT,
        {CSV: parquet_bytes(good_table())},
        None,
        "{root}/" + CSV,
        "read_format: parquet",
    ),
    (
        "string itemPosition",
        {},
        {DATA: with_column(good_table(), "itemPosition", [str(i) for i in range(36)])},
        None,
        "itemPosition",
        "integers",
    ),
    (
        "missing sequenceId value",
        {},
        {DATA: with_column(good_table(), "sequenceId", [0] * 5 + [None] + [1] * 30)},
        None,
        "sequenceId",
        "missing value at row 6 of {root}/" + DATA,
    ),
    (
        "duplicate position",
        {},
        {DATA: duplicate_position()},
        None,
        "itemPosition",
        "duplicate (sequenceId=0, itemPosition=2) at row 3 of {root}/" + DATA + " and row 4 of {root}/" + DATA,
    ),
    (
        "NaN real",
        {},
        {DATA: amount_with(float("nan"))},
        None,
        "amount",
        "NaN/infinite value (nan) at row 8 of {root}/" + DATA,
    ),
    ("inf real", {}, {DATA: amount_with(float("inf"))}, None, "amount", "infinite"),
    (
        "NaN in a split_column that is no feature (it fell into the last split)",
        {**CUTOFF, "selected_columns": ["event"]},
        {DATA: amount_with(float("nan"))},
        None,
        "amount",
        "split_column has a NaN value at row 8 of {root}/" + DATA,
    ),
    ("missing real", {}, {DATA: amount_with(None)}, None, "amount", "missing value at row 8"),
    ("empty input", {}, {DATA: good_table().slice(0, 0)}, None, "{root}/" + DATA, "no rows"),
    ("empty csv file", CSV_INPUT, {CSV: ""}, None, "{root}/" + CSV, "empty"),
    ("csv header only", CSV_INPUT, {CSV: "sequenceId,itemPosition,event,amount\n"}, None, "{root}/" + CSV, "no rows"),
    (
        "csv row over the reader's block",
        CSV_INPUT,
        {
            CSV: "sequenceId,itemPosition,event,amount\n"
            + "".join(f"0,{i},a,1.0\n" for i in range(10))
            + "0,10,"
            + "b" * (5 << 20)
            + ",1.0\n"
        },
        None,
        "{root}/" + CSV,
        "holds a row longer than the csv reader's 1 MiB blocks allow; convert the file to parquet",
    ),
    (
        "csv first row over the inferred head",
        CSV_INPUT,
        {CSV: "sequenceId,itemPosition,event,amount\n0,0," + "b" * (9 << 20) + ",1.0\n0,1,a,1.0\n"},
        None,
        "{root}/" + CSV,
        "holds a row longer than the csv reader's 8 MiB blocks allow",
    ),
    (
        "csv non-integer position",
        CSV_INPUT,
        {CSV: with_column(good_table(), "itemPosition", [0, 1, 2, 3.5] + list(range(4, 36)))},
        None,
        "itemPosition",
        "found 3.5 at row 4 of {root}/" + CSV,
    ),
    (
        "csv sequence ids beside a float form, where 2**53 and 2**53 + 1 would become one sequence",
        CSV_INPUT,
        {CSV: "sequenceId,itemPosition,event\n9007199254740992,0,a\n9007199254740993,0,b\n5.0,0,a\n"},
        None,
        "sequenceId",
        "9007199254740992.0 at row 1 of {root}/" + CSV + " is 2**53 or beyond in a float64 column",
    ),
    (
        "float16 sequence ids, where 3000 and 3001 are one value",
        {},
        {DATA: with_column(good_table(), "sequenceId", pa.array(np.repeat([3000, 3001, 7], 12).astype(np.float16)))},
        None,
        "sequenceId",
        "3000.0 at row 1 of {root}/" + DATA + " is 2**11 or beyond in a float16 column",
    ),
    (
        "float32 positions beyond 2**24",
        {},
        {DATA: with_column(good_table(), "itemPosition", pa.array((np.arange(36) + 2**24 - 5).astype(np.float32)))},
        None,
        "itemPosition",
        "16777216.0 at row 6 of {root}/" + DATA + " is 2**24 or beyond in a float32 column",
    ),
    (
        "positions whose windows' bookkeeping would overflow 64 bits",
        {},
        {DATA: with_column(good_table(1), "itemPosition", list(range(2**63 - 12, 2**63)))},
        None,
        "itemPosition",
        "9223372036854775807 at row 12 of {root}/" + DATA + " is too close to the 64-bit integer limits",
    ),
    (
        "a csv column of integers beyond 64 bits, which csv reads as rounded floats",
        CSV_INPUT,
        {CSV: "sequenceId,itemPosition,code\n0,0,18446744073709551615\n0,1,18446744073709551614\n0,2,3\n"},
        None,
        "code",
        "holds the integer 18446744073709551615 in {root}/" + CSV + ", which csv reads as a float",
    ),
    (
        "a word in a declared real csv column",
        {**CSV_INPUT, "real_columns": ["amount"]},
        {CSV: "sequenceId,itemPosition,amount\n0,0,1.5\n0,1,\n0,2,abc\n"},
        None,
        "amount",
        "cannot be real: its value 'abc' at row 3 of {root}/" + CSV + " is not a number",
    ),
    ("split ratios sum", {"split_ratios": [0.5, 0.3]}, ONLY_DATA, None, "split_ratios", "sum to 1"),
    (
        "window too short",
        {"window_length": 2, "max_target_offset": 2},
        ONLY_DATA,
        None,
        "window_length",
        "max_target_offset",
    ),
    (
        "window beyond any stored window",
        {"window_length": 100_000_000_000},
        ONLY_DATA,
        None,
        "window_length",
        "must be at most 65,536 (stored windows hold a column per item), got 100,000,000,000",
    ),
    ("missing data file", {}, {}, None, "{root}/" + DATA, "not found"),
    ("pt output merged", {"write_format": "pt"}, ONLY_DATA, None, "merge_output", "set merge_output: false"),
    (
        "csv output sharded",
        {"write_format": "csv", "merge_output": False},
        ONLY_DATA,
        None,
        "merge_output",
        "one file per split",
    ),
    (
        "folder whose files hold an id in types that do not convert",
        FOLDER,
        two_files(with_column(good_table(1, 3), "sequenceId", pa.array([2**63 + 5] * 12, pa.uint64()))),
        None,
        "sequenceId",
        "is uint64 in {root}/" + PARTS + "/b.parquet but int64 in {root}/" + PARTS + "/a.parquet, so the files' "
        "values are read as int64, which cannot hold one of b.parquet's",
    ),
    (
        "folder whose files hold a feature as int64 beyond 2**53 and as float64",
        FOLDER,
        {
            f"{PARTS}/a.parquet": with_column(good_table(), "event", pa.array([2**53 + 1] * 36, pa.int64())),
            f"{PARTS}/b.parquet": with_column(good_table(1, 3), "event", pa.array([1.0] * 12, pa.float64())),
        },
        None,
        "event",
        "is int64 in {root}/" + PARTS + "/a.parquet but double in {root}/" + PARTS + "/b.parquet, so the files' "
        "values are read as double",
    ),
    (
        "folder with input files in a subfolder",
        FOLDER,
        {f"{PARTS}/a.parquet": good_table(), f"{PARTS}/year=2020/b.parquet": good_table(1, 3)},
        None,
        "{root}/" + PARTS,
        "its subfolder year=2020 holds parquet files, which preprocess would not read",
    ),
    (
        "folder of mixed formats",
        FOLDER,
        {f"{PARTS}/a.parquet": good_table(), f"{PARTS}/b.csv": "sequenceId\n1\n"},
        None,
        "read_format",
        "both csv and parquet",
    ),
    (
        "input folder is the output folder",
        {"preprocessing_data_path": "data"},
        ONLY_DATA,
        None,
        "{root}/data",
        "output folder",
    ),
    (
        "output folder holding csv and parquet input",
        {"preprocessing_data_path": "data", "read_format": None},
        {"data/a.parquet": good_table(), "data/b.csv": "sequenceId\n1\n"},
        None,
        "{root}/data",
        "output folder",
    ),
    (
        "folder without data files",
        FOLDER,
        {f"{PARTS}/notes.txt": "hello"},
        None,
        "{root}/" + PARTS,
        "no .csv or .parquet",
    ),
    (
        "duplicate across files",
        FOLDER,
        two_files(good_table(n_sequences=1, first_sequence=2)),
        None,
        "itemPosition",
        "duplicate (sequenceId=2, itemPosition=0) at row 25 of {root}/data/parts/a.parquet and row 1 of "
        "{root}/data/parts/b.parquet",
    ),
    (
        "duplicate across files found by a worker process",
        {**FOLDER, "n_cores": 2},
        two_files(good_table(n_sequences=1, first_sequence=2)),
        None,
        "itemPosition",
        "duplicate (sequenceId=2, itemPosition=0) at row 25 of {root}/data/parts/a.parquet and row 1 of",
    ),
    (
        "type conflict across files",
        FOLDER,
        two_files(with_column(good_table(1, 5), "event", list(range(12)))),
        None,
        "event",
        "in {root}/data/parts/b.parquet",
    ),
    (
        "NaN in second file",
        FOLDER,
        two_files(amount_with(float("nan"), good_table(1, 5))),
        None,
        "amount",
        "at row 8 of {root}/data/parts/b.parquet",
    ),
    (
        "column missing in second file",
        FOLDER,
        two_files(good_table(1, 5).drop_columns(["amount"])),
        None,
        "amount",
        "missing from {root}/data/parts/b.parquet",
    ),
    (
        "value_cutoff without column",
        {"split_method": "value_cutoff", "split_values": [0.3, 0.6]},
        ONLY_DATA,
        None,
        "split_column",
        "value_cutoff needs",
    ),
    ("split_values count", {**CUTOFF, "split_values": [0.5]}, ONLY_DATA, None, "split_values", "make 2 splits"),
    (
        "split_values missing",
        {**CUTOFF, "split_values": []},
        ONLY_DATA,
        None,
        "split_values",
        "value_cutoff needs the cutoffs: 2 for the 3 splits of split_ratios",
    ),
    (
        "value_cutoff with one split",
        {**CUTOFF, "split_values": [], "split_ratios": [1.0]},
        ONLY_DATA,
        None,
        "split_ratios",
        "at least two splits, but split_ratios lists one; for a single split, use split_method: within_sequence",
    ),
    (
        "split_values decreasing",
        {**CUTOFF, "split_values": [0.6, 0.3]},
        ONLY_DATA,
        None,
        "split_values",
        "strictly increasing",
    ),
    (
        "split_values strings for numbers",
        {**CUTOFF, "split_values": ["a", "b"]},
        ONLY_DATA,
        None,
        "split_values",
        "is numeric",
    ),
    (
        "a folder where a split file goes",
        {},
        {DATA: good_table(), "data/events-split1.parquet/notes.txt": "mine"},
        None,
        "{root}/data/events-split1.parquet",
        "is a folder or other entry, not an earlier split file",
    ),
    (
        "a table of the user's where a split file goes",
        {},
        {DATA: good_table(), "data/events-split0.parquet": pa.table({"customer": ["alice"], "balance": [1.0]})},
        None,
        "{root}/data/events-split0.parquet",
        "is not an earlier split file: it holds no stored windows (no column sequenceId, subsequenceId,",
    ),
    (
        "a csv of the user's where a csv split goes",
        {"write_format": "csv"},
        {DATA: good_table(), "data/events-split1.csv": "sequenceId,itemPosition,event\n0,0,a\n"},
        None,
        "{root}/data/events-split1.csv",
        "it holds no stored windows (no column subsequenceId, startItemPosition,",
    ),
    (
        "a file of no format where a split file goes",
        {},
        {DATA: good_table(), "data/events-split2.parquet": b"PAR1 not a footer"},
        None,
        "{root}/data/events-split2.parquet",
        "is not an earlier split file: it cannot be read as stored windows (",
    ),
    (
        "a split folder holding other files",
        {"write_format": "parquet", "merge_output": False},
        {
            DATA: good_table(),
            "data/events-split2/events-split2-0-00.parquet": "old",
            "data/events-split2/notes.txt": "",
        },
        None,
        "{root}/data/events-split2",
        "it holds notes.txt",
    ),
    (
        "a split folder holding other files, before the input is read",
        {"write_format": "pt", "merge_output": False},
        {DATA: duplicate_position(), "data/events-split1/notes.txt": ""},
        None,
        "{root}/data/events-split1",
        "it holds notes.txt",
    ),
    (
        "a file where a split folder goes",
        {"write_format": "pt", "merge_output": False},
        {DATA: good_table(), "data/events-split0": "mine"},
        None,
        "{root}/data/events-split0",
        "is a file or link, not an earlier split folder",
    ),
    (
        "a folder where the metadata file goes",
        {},
        {DATA: good_table(), "configs/metadata_configs/events.json/keep.txt": "mine"},
        None,
        "{root}/configs/metadata_configs/events.json",
        "is a folder, link or other entry, not an earlier metadata file",
    ),
    (
        "a csv separated by semicolons",
        CSV_INPUT,
        {CSV: "sequenceId;itemPosition;event\n0;0;a\n0;1;b\n"},
        None,
        "{root}/" + CSV,
        "its header 'sequenceId;itemPosition;event' holds no comma: csv fields must be separated by commas",
    ),
    (
        "a csv separated by semicolons whose value holds a quoted comma",
        CSV_INPUT,
        {CSV: 'sequenceId;itemPosition;event\n0;0;"a,b"\n0;1;b\n'},
        None,
        "{root}/" + CSV,
        "holds no comma: csv fields must be separated by commas",
    ),
    (
        "a csv line of spaces",
        CSV_INPUT,
        {CSV: "sequenceId,itemPosition,event\n0,0,a\n0,1,b\n   \n0,2,c\n"},
        None,
        "{root}/" + CSV,
        "cannot read as csv at line 4 (CSV parse error: Expected 3 columns, got 1",
    ),
    (
        "a csv row with a field too many below the inferred head",
        CSV_INPUT | {"window_length": 2},
        {CSV: "sequenceId,itemPosition,event\n" + "".join(f"{i // 4},{i % 4},e\n" for i in range(400)) + "9,9,a,b\n"},
        None,
        "{root}/" + CSV,
        "cannot read as csv at line 402 (CSV parse error: Expected 3 columns, got 4",
    ),
    (
        "a csv value whose opening quote no quote closes",
        CSV_INPUT | {"window_length": 2},
        {CSV: 'sequenceId,itemPosition,event\n0,0,"a\nb"\n0,1,b\n0,2,"oops\n1,0,a\n1,1,b\n'},
        None,
        "{root}/" + CSV,
        "the row that starts on line 5 opens a quoted value that no quote closes, so it would take in every line",
    ),
    (
        "a csv header repeated where two files were joined",
        CSV_INPUT | {"window_length": 2},
        {CSV: "sequenceId,itemPosition,event\n0,0,a\n0,1,b\nsequenceId,itemPosition,event\n1,0,a\n"},
        None,
        "sequenceId",
        "must hold integers, found 'sequenceId' at row 3 of {root}/" + CSV,
    ),
    (
        "a file whose name is not UTF-8 in the input folder",
        {"preprocessing_data_path": PARTS},
        {f"{PARTS}/a.parquet": good_table(), f"{PARTS}/b\udcff.parquet": b"PAR1"},
        None,
        "{root}/" + PARTS,
        "holds 'b?.parquet', whose name is not UTF-8 (shown as ?); rename it",
    ),
    (
        "a csv file read as parquet",
        {"preprocessing_data_path": CSV, "read_format": "parquet"},
        {CSV: good_table()},
        None,
        "{root}/" + CSV,
        "; for a csv file, set read_format: csv",
    ),
    (
        "a cutoff that is not a number",
        CUTOFF | {"split_values": [float("nan"), 0.6]},
        ONLY_DATA,
        None,
        "split_values",
        "cutoffs must be finite numbers, got [nan, 0.6]",
    ),
    (
        "a parquet folder of partition folders only",
        {"preprocessing_data_path": PARTS, "read_format": None},
        {f"{PARTS}/year=2020/part.parquet": good_table(), f"{PARTS}/year=2021/part.parquet": good_table(3, 3)},
        None,
        "{root}/" + PARTS,
        "its subfolder year=2020 holds parquet files, which preprocess would not read",
    ),
    (
        "a csv saved as UTF-16",
        CSV_INPUT,
        {CSV: "sequenceId,itemPosition,event\n0,0,a\n0,1,b\n".encode("utf-16")},
        None,
        "{root}/" + CSV,
        "is UTF-16 or binary, not UTF-8 text",
    ),
    (
        "a csv with spaces after its commas",
        CSV_INPUT,
        {CSV: "sequenceId, itemPosition, event\n0, 0, a\n0, 1, b\n"},
        None,
        "itemPosition",
        "a column is named ' itemPosition': remove the spaces around the name",
    ),
    (
        "a date column",
        {},
        {DATA: good_table().append_column("day", pa.array([0] * 36, pa.int32()).cast(pa.date32()))},
        None,
        "day",
        "unsupported type date32[day] in {root}/" + DATA + "; use strings, integers, booleans or floats (cast the "
        "column to strings or numbers before preprocessing); or leave it out by listing the feature columns in "
        "selected_columns",
    ),
    (
        "a parquet column of bytes",
        {},
        {DATA: good_table().append_column("raw", pa.array([b"ab"] * 36, pa.binary()))},
        None,
        "raw",
        "unsupported type binary in {root}/" + DATA,
    ),
    (
        "a feature column named like an identifier of infer's outputs",
        {},
        {DATA: good_table().rename_columns(["sequenceId", "itemPosition", "subsequenceId", "amount"])},
        None,
        "{root}/" + DATA,
        "the column name 'subsequenceId' is reserved",
    ),
    (
        "a csv whose lines end in a comma",
        CSV_INPUT,
        {CSV: "sequenceId,itemPosition,event,\n" + "".join(f"{i // 12},{i % 12},e{i % 3},\n" for i in range(36))},
        None,
        "{root}/" + CSV,
        "the column name '' is empty; rename the column, or leave it out by listing the feature columns in "
        "selected_columns (a line ending in a comma adds an unnamed column)",
    ),
    (
        "a selected column whose name holds a dot",
        {"selected_columns": ["a.b"]},
        {DATA: good_table().rename_columns(["sequenceId", "itemPosition", "a.b", "amount"])},
        None,
        "selected_columns",
        "the column name 'a.b' holds a '.'",
    ),
    (
        "a column whose name is an absolute path (infer would write its probabilities there)",
        {},
        {DATA: good_table().rename_columns(["sequenceId", "itemPosition", "/tmp/escaped", "amount"])},
        None,
        "{root}/" + DATA,
        "the column name '/tmp/escaped' holds a path separator",
    ),
    (
        "split_values numbers for text",
        {**CUTOFF, "split_column": "event", "split_values": [0.3, 2]},
        ONLY_DATA,
        None,
        "split_values",
        "0.3 would compare as text",
    ),
    (
        "unknown split_column",
        {**CUTOFF, "split_column": "amout"},
        ONLY_DATA,
        None,
        "split_column",
        "did you mean 'amount'",
    ),
    ("split_values without value_cutoff", {"split_values": [1, 2]}, ONLY_DATA, None, "split_values", "only applies"),
    (
        "static id map id below 3",
        {},
        {DATA: good_table(), "configs/id_maps/event.json": {"e0": 2}},
        None,
        "{root}/configs/id_maps/event.json",
        "from 3 to 2147483647",
    ),
    (
        "static id map shared id",
        {},
        {DATA: good_table(), "configs/id_maps/event.json": {"e0": 3, "e1": 3}},
        None,
        "{root}/configs/id_maps/event.json",
        "share an id",
    ),
    (
        "static id map of a real column",
        {},
        {DATA: good_table(), "configs/id_maps/amount.json": {"0.5": 3}},
        None,
        "amount",
        "real column",
    ),
    (
        "reused metadata missing",
        {"metadata_config_path": "configs/old.json"},
        ONLY_DATA,
        None,
        "metadata_config_path",
        "does not exist",
    ),
    (
        "reused metadata kind differs",
        {"metadata_config_path": "configs/old.json"},
        {DATA: good_table(), "configs/old.json": reused_metadata({"event": "Int64", "amount": "Int64"})},
        None,
        "amount",
        "is categorical in {root}/configs/old.json but real in {root}/" + DATA,
    ),
    (
        "reused metadata hashes rare values",
        {"metadata_config_path": "configs/old.json"},
        {
            DATA: good_table(),
            "configs/old.json": {
                **reused_metadata({"event": "Int64", "amount": "Float64"}),
                "cardinality_config": {"event": {"top_k": 1, "hashing": {"num_buckets": 2}}},
            },
        },
        None,
        "metadata_config_path",
        "maps rare values to hash buckets (cardinality_config)",
    ),
    (
        "reused metadata has more columns",
        {"metadata_config_path": "configs/old.json"},
        {
            DATA: good_table(),
            "configs/old.json": reused_metadata({"event": "Int64", "amount": "Float64", "weather": "Int64"}),
        },
        None,
        "weather",
        "is a column of {root}/configs/old.json but missing from {root}/" + DATA,
    ),
    (
        "selected column unknown to reused metadata",
        {"metadata_config_path": "configs/old.json", "selected_columns": ["event", "amount"]},
        {DATA: good_table(), "configs/old.json": reused_metadata({"event": "Int64"})},
        None,
        "amount",
        "is a column of {root}/" + DATA + " but not of {root}/configs/old.json",
    ),
    (
        "real and categorical",
        {"categorical_columns": ["amount"], "real_columns": ["amount"]},
        ONLY_DATA,
        None,
        "real_columns",
        "also",
    ),
    ("string as real", {"real_columns": ["event"]}, ONLY_DATA, None, "event", "not numeric"),
    (
        "override unselected",
        {"selected_columns": ["event"], "real_columns": ["amount"]},
        ONLY_DATA,
        None,
        "real_columns",
        "not a selected column",
    ),
    ("bad read format", {"read_format": "xlsx"}, ONLY_DATA, None, "read_format", "choose one of 'csv', 'parquet'"),
    (
        "pt input",
        {"read_format": "pt"},
        ONLY_DATA,
        None,
        "read_format",
        "'pt' is not allowed; choose one of 'csv', 'parquet'",
    ),
    (
        "unknown suffix",
        {"preprocessing_data_path": "data/events.txt", "read_format": None},
        ONLY_DATA,
        None,
        "read_format",
        "cannot tell",
    ),
    (
        "depth layout without its position column",
        {"depth_layouts": {"deep": {"columns": ["event"], "context_length": 4}}},
        ONLY_DATA,
        None,
        "depth_layouts.deep.position_column",
        "required field is missing",
    ),
    (
        "id column selected",
        {"selected_columns": ["sequenceId", "event"]},
        ONLY_DATA,
        None,
        "selected_columns",
        "sequenceId or itemPosition",
    ),
    ("column twice", {"selected_columns": ["event", "event"]}, ONLY_DATA, None, "selected_columns", "more than once"),
    ("no columns", {"selected_columns": []}, ONLY_DATA, None, "selected_columns", "at least one feature column"),
    ("zero stride", {"window_stride": 0}, ONLY_DATA, None, "window_stride", "at least 1"),
    ("zero cores", {"n_cores": 0}, ONLY_DATA, None, "n_cores", "at least 1"),
    ("string window length", {"window_length": "5"}, ONLY_DATA, None, "window_length", "expected an integer"),
    ("negative split ratio", {"split_ratios": [1.2, -0.2]}, ONLY_DATA, None, "split_ratios", "positive"),
    ("alias and key", {"data_path": DATA}, ONLY_DATA, None, "data_path", "set only one"),
    (
        "bad interpolation",
        None,
        ONLY_DATA,
        "window_length: ${nope}\n",
        "{root}/" + CONFIG + ": window_length",
        "cannot resolve the interpolation: Interpolation key 'nope' not found",
    ),
    (
        "bad interpolation in a list of a fragment",
        {"additional_config_paths": ["configs/columns.yaml"], "selected_columns": None},
        {DATA: good_table(), "configs/columns.yaml": 'selected_columns: [event, "${nope}"]\n'},
        None,
        "{root}/configs/columns.yaml: selected_columns[1]",
        "cannot resolve the interpolation: Interpolation key 'nope' not found",
    ),
    (
        "bad interpolation in a fragment",
        {"additional_config_paths": ["configs/window.yaml"]},
        {DATA: good_table(), "configs/window.yaml": "seed: ${nope}\n"},
        None,
        "{root}/configs/window.yaml: seed",
        "cannot resolve the interpolation: Interpolation key 'nope' not found",
    ),
    (
        "missing fragment",
        {"additional_config_paths": ["configs/split.yaml"]},
        ONLY_DATA,
        None,
        "additional_config_paths",
        "does not exist",
    ),
    (
        "fragment overlaps the entry",
        {"additional_config_paths": ["configs/split.yaml"]},
        {DATA: good_table(), "configs/split.yaml": "window_length: 6\n"},
        None,
        "window_length",
        "set by both",
    ),
]


def write_input(path: Path, content) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, pa.Table):
        (pv.write_csv if path.suffix == ".csv" else pq.write_table)(content, path)
    elif isinstance(content, dict):
        path.write_text(json.dumps(content))
    elif isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)


def build_project(root: Path, changes: dict | None, files: dict, config_text: str | None) -> Path:
    (root / "data").mkdir(parents=True)
    (root / "configs").mkdir()
    for relative, content in files.items():
        write_input(root / relative, content)
    config_path = root / CONFIG
    if config_text is None:
        config_path.write_text(yaml.safe_dump(good_config(**(changes or {}))))
    elif config_text:
        config_path.write_text(config_text)
    return config_path


def leftovers(root: Path, inputs: set[str]) -> list[str]:
    """Files under `root` that are not inputs, and hidden (staging) entries."""
    found = (p.relative_to(root) for p in root.rglob("*") if p.is_file() or p.name.startswith("."))
    return sorted(str(p) for p in found if str(p) not in inputs)


@pytest.mark.parametrize("case", CASES, ids=[case[0] for case in CASES])
def test_bad_input_raises_user_error(case, tmp_path, monkeypatch):
    _, changes, files, config_text, where, message = case
    config_path = build_project(tmp_path, changes, files, config_text)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UserError) as error:
        run_preprocess(load_preprocess_config(config_path))
    assert error.value.where == where.format(root=tmp_path)
    assert message.format(root=tmp_path) in error.value.problem
    assert leftovers(tmp_path, {*files, CONFIG}) == []


def test_at_least_fifteen_bad_inputs_are_covered():
    assert len(CASES) >= 15


def test_both_spellings_of_the_data_path_are_one_problem_not_an_unknown_field_too(tmp_path, monkeypatch):
    config_path = build_project(tmp_path, {"data_path": DATA}, ONLY_DATA, None)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UserError) as error:
        load_preprocess_config(config_path)
    assert str(error.value).count("data_path") == 2 and "unknown field" not in str(error.value)
    assert "data_path: is another spelling of preprocessing_data_path" in str(error.value)


@pytest.mark.parametrize("field", ["project_root", "preprocessing_data_path"])
def test_a_path_of_a_wrong_type_is_described_in_yamls_words(field, tmp_path, monkeypatch):
    config_path = build_project(tmp_path, {field: [DATA]}, ONLY_DATA, None)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UserError, match=f"^{field}: expected a string, got a list$"):
        load_preprocess_config(config_path)


@pytest.mark.parametrize("field", ["max_rows", "window_stride", "batches_per_file", "n_cores", "seed"])
def test_an_integer_beyond_64_bits_is_refused(field, tmp_path, monkeypatch):
    config_path = build_project(tmp_path, {field: 2**63}, ONLY_DATA, None)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(
        UserError, match=f"^{field}: must be a 64-bit integer, from -2\\*\\*63 to 2\\*\\*63-1, got {2**63}$"
    ):
        load_preprocess_config(config_path)


@pytest.mark.parametrize(
    "changes, refused",
    [
        ({"project_root": ""}, "project_root: must not be empty (leave it out for the working directory)"),
        ({"preprocessing_data_path": " "}, "preprocessing_data_path: must not be empty; give the input file or"),
        ({"selected_columns": ["event", ""]}, "selected_columns[1]: names no column (an empty name)"),
    ],
)
def test_an_empty_path_or_column_name_is_refused(changes, refused, tmp_path, monkeypatch):
    config_path = build_project(tmp_path, changes, ONLY_DATA, None)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UserError, match=f"^{re.escape(refused)}"):
        load_preprocess_config(config_path)


def test_failed_write_leaves_nothing_behind(tmp_path, monkeypatch):
    config_path = build_project(tmp_path, {}, ONLY_DATA, None)
    monkeypatch.chdir(tmp_path)

    def broken_write(path, metadata):
        raise OSError(28, "No space left on device", str(path))

    monkeypatch.setattr(run_module, "write_metadata", broken_write)
    with pytest.raises(UserError, match="No space left on device") as error:
        run_preprocess(load_preprocess_config(config_path))
    assert "events.json" in error.value.where
    assert leftovers(tmp_path, {DATA, CONFIG}) == []


@pytest.mark.parametrize(
    "form",
    [{"write_format": "pt", "merge_output": False}, {"merge_output": False}, {}],
    ids=["pt-shards", "parquet-shards", "merged"],
)
def test_interrupted_write_leaves_nothing_behind(form, tmp_path, monkeypatch):
    config_path = build_project(tmp_path, form, ONLY_DATA, None)
    monkeypatch.chdir(tmp_path)
    real_write = outputs_module.write_task_split
    calls = []

    def interrupted(*args):
        calls.append(args)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real_write(*args)

    monkeypatch.setattr("sequifier.preprocess.tasks.write_task_split", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run_preprocess(load_preprocess_config(config_path))
    assert leftovers(tmp_path, {DATA, CONFIG}) == []


def test_sigterm_removes_staged_outputs_and_restores_the_handler(tmp_path, monkeypatch):
    config_path = build_project(tmp_path, {"merge_output": False}, ONLY_DATA, None)
    monkeypatch.chdir(tmp_path)
    real_metadata = run_module._metadata

    def terminated(*args):
        os.kill(os.getpid(), signal.SIGTERM)  # arrives while shards are staged, before anything is placed
        return real_metadata(*args)

    monkeypatch.setattr(run_module, "_metadata", terminated)
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(SystemExit) as exit_info:
        run_preprocess(load_preprocess_config(config_path))
    assert exit_info.value.code == 128 + signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) is before
    assert leftovers(tmp_path, {DATA, CONFIG}) == []


@pytest.mark.parametrize(
    "name",
    [
        "",
        "x.y",
        "0",
        "12",
        "left_pad_lengths",
        "windowStartOffset",
        "leftPadLength",
        "/tmp/x",
        "a/b",
        "a\\b",
        "a\nb",
        "t\tab",
        "é" * 126,
        "x" * 251,
    ],
)
def test_names_the_network_its_graph_or_the_outputs_cannot_carry_are_refused(name):
    assert column_name_problem(name) is not None


@pytest.mark.parametrize("name", ["my col", "7days", "x-y", "événement", "€", "event", "x" * 250, "é" * 125])
def test_other_names_are_fine(name):
    assert column_name_problem(name) is None


def test_a_project_root_that_does_not_exist_is_left_not_existing(tmp_path, monkeypatch):
    """Staging creates the output folders (and the metadata's) with their missing parents; a refused run removes
    all of them, deepest first, whichever was created first."""
    config = tmp_path / "preprocess.yaml"
    config.write_text(yaml.safe_dump(good_config(project_root=str(tmp_path / "typo" / "deeper" / "project"))))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UserError, match="data file or folder not found"):
        run_preprocess(load_preprocess_config(config))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["preprocess.yaml"]


@pytest.mark.parametrize(
    "changes, where",
    [
        ({}, "{root}/projcet/data/events.parquet"),
        ({"metadata_config_path": "configs/metadata_configs/events.json"}, "metadata_config_path"),
    ],
)
def test_a_misspelt_project_root_is_named_and_not_created(changes, where, tmp_path, monkeypatch):
    config_path = build_project(tmp_path, {"project_root": "projcet", **changes}, {DATA: good_table()}, None)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UserError) as error:
        run_preprocess(load_preprocess_config(config_path))
    assert error.value.where == where.format(root=tmp_path)
    assert error.value.problem.endswith(f"; there is no folder {tmp_path / 'projcet'}") or (
        f"; there is no folder {tmp_path / 'projcet'}" in error.value.problem
    )
    assert not (tmp_path / "projcet").exists()


def test_a_type_conflict_between_parquet_files_gives_no_csv_hint(tmp_path, monkeypatch):
    files = two_files(with_column(good_table(1, 5), "event", list(range(12))))
    config_path = build_project(tmp_path, FOLDER, files, None)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UserError) as error:
        run_preprocess(load_preprocess_config(config_path))
    assert error.value.problem.endswith(f"in {tmp_path}/data/parts/b.parquet")


def test_a_type_conflict_with_a_file_without_rows_says_the_file_is_empty(tmp_path, monkeypatch):
    empty = with_column(good_table(1, 5), "event", list(range(12))).slice(0, 0)
    config_path = build_project(tmp_path, FOLDER, two_files(empty), None)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UserError) as error:
        run_preprocess(load_preprocess_config(config_path))
    empty = f"{tmp_path}/data/parts/b.parquet"
    assert error.value.problem.endswith(
        f"; {empty} holds no rows, yet its columns' types must agree: remove it or give it theirs"
    )
