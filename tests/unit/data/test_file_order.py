"""`parts.<part>.file_order`: the order a shard folder's files are read and shuffled in, as sequifier 3.x does.

`shuffled` (default): files in metadata.json order, one shuffle over all views of the part.
`name`: files in path order, each file's views shuffled on their own, files one after another.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import tiny_train_config

from sequifier.config.compose import canonical_config
from sequifier.config.resolve import resolve
from sequifier.data.datasets import SplitData, load_parts, shuffled_batches
from sequifier.data.stored import file_window_counts, load_split

PT_SPLIT = "data/events_pt-split0"
COLUMNS = ["event", "amount"]


def reversed_listing(project: Path) -> Path:
    """The training shard folder with its metadata.json listing the files in reverse path order."""
    folder = project / PT_SPLIT
    described = json.loads((folder / "metadata.json").read_text())
    described["batch_files"] = sorted(described["batch_files"], key=lambda entry: entry["path"], reverse=True)
    (folder / "metadata.json").write_text(json.dumps(described))
    return folder


def per_file_sequence_ids(folder: Path) -> dict[str, np.ndarray]:
    files = json.loads((folder / "metadata.json").read_text())["batch_files"]
    return {
        entry["path"]: torch.load(folder / entry["path"], weights_only=True)["sequence_ids"].numpy() for entry in files
    }


def test_name_reads_files_in_path_order_and_shuffled_in_listed_order(reference_project: Path):
    folder = reversed_listing(reference_project)
    by_file = per_file_sequence_ids(folder)
    by_path = np.concatenate([by_file[name] for name in sorted(by_file)])
    as_listed = np.concatenate([by_file[name] for name in sorted(by_file, reverse=True)])
    assert not np.array_equal(by_path, as_listed)
    np.testing.assert_array_equal(load_split(folder, COLUMNS, {"event"}, "name").sequence_ids, by_path)
    np.testing.assert_array_equal(load_split(folder, COLUMNS, {"event"}, "shuffled").sequence_ids, as_listed)
    sizes = {name: len(ids) for name, ids in by_file.items()}
    assert file_window_counts(folder, "name") == [sizes[name] for name in sorted(sizes)]
    assert file_window_counts(folder, "shuffled") == [sizes[name] for name in sorted(sizes, reverse=True)]
    assert file_window_counts(reference_project / "data" / "events-split0.parquet", "name") == []


def split_of(sizes: tuple[int, ...]) -> SplitData:
    n = sum(sizes)
    return SplitData(None, torch.arange(n), torch.zeros(n, dtype=torch.int64), sizes)  # type: ignore[arg-type]


def test_one_block_is_one_shuffle_over_every_view():
    order = torch.cat(shuffled_batches(split_of((10,)), 4, seed=7))
    torch.testing.assert_close(order, torch.randperm(10, generator=torch.Generator().manual_seed(7)))


def test_blocks_are_shuffled_on_their_own_and_visited_in_order():
    order = torch.cat(shuffled_batches(split_of((6, 9, 5)), 4, seed=3)).tolist()
    assert sorted(order[:6]) == list(range(6))
    assert sorted(order[6:15]) == list(range(6, 15))
    assert sorted(order[15:]) == list(range(15, 20))
    assert order[:6] != list(range(6)) or order[6:15] != list(range(6, 15))


@pytest.mark.parametrize("file_order", ["shuffled", "name"])
def test_a_part_in_name_order_trains_each_file_before_the_next(reference_project: Path, tmp_path: Path, file_order):
    folder = reversed_listing(reference_project)
    by_file = per_file_sequence_ids(folder)
    first_file = set(by_file[min(by_file)].tolist())
    config = tiny_train_config()
    config["global_training"]["read_format"] = "pt"
    config["dataset"]["part"] = {
        "metadata_config_path": "configs/metadata_configs/events_pt.json",
        "file_order": file_order,
    }
    part = next(iter(load_parts(resolve(canonical_config(config), run_dir=tmp_path, cwd=reference_project)).values()))
    n_first = len(by_file[min(by_file)])
    order = torch.cat(shuffled_batches(part.train, 16, seed=1))
    first_views = part.train.windows.sequence_ids[part.train.window_index[order[:n_first]]]
    from_first_file = set(first_views.tolist()) <= first_file
    assert from_first_file == (file_order == "name")
    assert sorted(order.tolist()) == list(range(len(part.train)))
