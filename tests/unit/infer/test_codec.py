"""Decoding stored windows gives back the raw input, and encoding raw values gives back the stored ones."""

from __future__ import annotations

import csv

import numpy as np
from conftest import REFERENCE_DIR

from sequifier.data.metadata import read_metadata
from sequifier.data.stored import load_split
from sequifier.infer.codec import category_names, class_column_names, decode_values, encode_values
from sequifier.infer.outputs import _probabilities_table

COLUMNS = ["event", "channel", "amount", "delay"]


def _contract_columns() -> tuple[dict, dict]:
    metadata = read_metadata(REFERENCE_DIR / "configs" / "metadata_configs" / "events.json")
    columns = {}
    for name in COLUMNS:
        if name in metadata.categorical_columns:
            columns[name] = {
                "kind": "categorical",
                "n_classes": metadata.n_classes[name],
                "id_map": metadata.id_maps[name],
            }
        else:
            columns[name] = {"kind": "real", "statistics": metadata.selected_columns_statistics[name]}
    return columns, metadata.special_token_ids


def _raw_rows() -> dict[tuple[int, int], dict]:
    with (REFERENCE_DIR / "data" / "events.csv").open() as handle:
        return {(int(r["sequenceId"]), int(r["itemPosition"])): r for r in csv.DictReader(handle)}


def test_stored_windows_decode_to_the_raw_input_and_encode_back():
    columns, special = _contract_columns()
    raw = _raw_rows()
    stored = load_split(REFERENCE_DIR / "data" / "events-split1.parquet", COLUMNS, {"event", "channel"})
    width = stored.columns["event"].shape[1]
    checked = 0
    for window in range(len(stored)):
        for slot in range(int(stored.left_pad_lengths[window]), width):
            key = (int(stored.sequence_ids[window]), int(stored.start_item_positions[window]) + slot)
            row = raw[key]
            for name in COLUMNS:
                stored_value = stored.columns[name][window, slot]
                decoded = decode_values(np.array([stored_value]), columns[name], special)[0]
                encoded = encode_values(
                    np.array([row[name]], dtype=object if columns[name]["kind"] == "categorical" else float),
                    columns[name],
                    special,
                )[0]
                if columns[name]["kind"] == "categorical":
                    assert decoded == row[name] and encoded == stored_value, (key, name)
                else:
                    assert abs(decoded - float(row[name])) < 1e-9 and abs(encoded - stored_value) < 1e-9, (key, name)
            checked += 1
    assert checked > 500


def test_decode_of_encode_is_identity_and_unknown_values_become_other():
    columns, special = _contract_columns()
    events = np.array(["e00", "e11", "e05"], dtype=object)
    assert list(decode_values(encode_values(events, columns["event"], special), columns["event"], special)) == list(
        events
    )
    assert list(encode_values(np.array(["never seen"], dtype=object), columns["event"], special)) == [1]
    amounts = np.array([0.0, 12.5, 99.25])
    np.testing.assert_allclose(
        decode_values(encode_values(amounts, columns["amount"], special), columns["amount"], special),
        amounts,
        atol=1e-12,
    )


def test_ids_stay_ids_without_decoding_and_every_id_has_a_name():
    columns, special = _contract_columns()
    assert list(decode_values(np.array([3, 14]), columns["event"], special, decode_categories=False)) == [3, 14]
    names = category_names(columns["event"], special)
    assert list(names[:3]) == ["[unknown]", "[other]", "[mask]"] and names[3] == "e00" and names[14] == "e11"


def test_probability_columns_of_a_sparse_id_map_have_one_distinct_name_per_class():
    special = {"[unknown]": 0, "[other]": 1, "[mask]": 2}
    column = {"kind": "categorical", "n_classes": 11, "id_map": {"😀": 3, "": 4, "café": 10}}
    class_ids = np.arange(1, 11)
    names = class_column_names(column, special, class_ids)
    assert names == ["[other]", "[mask]", "😀", "", *[f"[unused {i}]" for i in range(5, 10)], "café"]
    table = _probabilities_table(
        {"sequenceId": np.zeros(2, dtype=np.int64)},
        np.full((2, 10), 0.1),
        "event",
        {"class_ids": {"event": class_ids.tolist()}, "columns": {"event": column}, "special_token_ids": special},
        decode_categories=True,
    )
    assert table.num_columns == 11 and np.allclose(np.sum([table[n].to_numpy() for n in names], axis=0), 1.0)


def test_a_predicted_unused_id_is_named_as_its_probability_column():
    special = {"[unknown]": 0, "[other]": 1, "[mask]": 2}
    column = {"kind": "categorical", "n_classes": 8, "id_map": {"a": 3, "True": 5, "b": 7}}
    predicted = decode_values(np.array([4, 6, 1, 7]), column, special)
    assert list(predicted) == ["[unused 4]", "[unused 6]", "[other]", "b"]
    assert class_column_names(column, special, np.array([4, 6])) == list(predicted[:2])
