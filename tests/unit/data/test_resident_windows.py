"""Training data at rest: ids in the smallest integer dtype of their vocabulary, reals float32, shards copied one
at a time into arrays allocated once; batches gathered from it equal straightforward int64 gathering."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import tiny_train_config

from sequifier.config.compose import canonical_config
from sequifier.config.errors import UserError
from sequifier.config.network import ColumnSpec
from sequifier.config.resolve import resolve
from sequifier.data.datasets import load_parts, resident_dtypes, shuffled_batches
from sequifier.data.stored import load_split
from sequifier.data.stored_windows import materialized
from sequifier.data.views import ViewShape, gather_batch, to_tensors, training_views

PT_SPLIT = "data/events_pt-split0"
COLUMNS = ["event", "amount"]
COMPACT = {"event": np.dtype(np.int16), "amount": np.dtype(np.float32)}


def int64_windows(folder: Path):
    """The split as int64 ids and float64 reals (load_split's defaults), reals then made float32."""
    return to_tensors(load_split(folder, COLUMNS, {"event"}), {"event"})


@pytest.mark.parametrize("window_range", [None, (5, 41)])
def test_compact_windows_hold_the_same_values(reference_project: Path, window_range):
    folder = reference_project / PT_SPLIT
    wide = load_split(folder, COLUMNS, {"event"}, window_range=window_range)
    compact = load_split(folder, COLUMNS, {"event"}, window_range=window_range, dtypes=COMPACT)
    assert compact.columns["event"].dtype == np.int16 and compact.columns["amount"].dtype == np.float32
    np.testing.assert_array_equal(compact.columns["event"], wide.columns["event"])
    np.testing.assert_array_equal(compact.columns["amount"], wide.columns["amount"].astype(np.float32))
    np.testing.assert_array_equal(compact.sequence_ids, wide.sequence_ids)
    np.testing.assert_array_equal(compact.left_pad_lengths, wide.left_pad_lengths)


@pytest.mark.parametrize("shape", [ViewShape(8, 1), ViewShape(4, 2, stride=3), ViewShape(6, 1, support=2)])
def test_batches_gathered_from_compact_windows_equal_int64_gathering(reference_project: Path, shape):
    folder = reference_project / PT_SPLIT
    wide = int64_windows(folder)
    compact = to_tensors(load_split(folder, COLUMNS, {"event"}, dtypes=COMPACT), {"event"})
    assert compact.columns["event"].dtype == torch.int16
    window_index, end_slot = training_views(wide, shape)
    order = torch.randperm(len(window_index), generator=torch.Generator().manual_seed(0))
    for chosen in order.split(7):
        expected = gather_batch(wide, window_index[chosen], end_slot[chosen], shape, ("event", "amount"), ("event",))
        got = gather_batch(compact, window_index[chosen], end_slot[chosen], shape, ("event", "amount"), ("event",))
        for field in ("inputs", "targets", "persistence"):
            for column, tensor in getattr(expected, field).items():
                assert getattr(got, field)[column].dtype == tensor.dtype
                assert torch.equal(getattr(got, field)[column], tensor)
        assert torch.equal(got.target_valid, expected.target_valid)
        assert (got.left_pad_lengths is None) == (expected.left_pad_lengths is None)


def test_training_parts_rest_compact_and_gather_int64_ids(reference_project: Path, tmp_path: Path):
    config = tiny_train_config()
    config["global_training"]["read_format"] = "pt"
    config["dataset"]["part"] = {"metadata_config_path": "configs/metadata_configs/events_pt.json"}
    spec = resolve(canonical_config(config), run_dir=tmp_path, cwd=reference_project)
    part = next(iter(load_parts(spec).values()))
    categorical = [c for c in part.train.windows.columns if spec.columns[part.interface][c].kind == "categorical"]
    assert categorical
    for name, values in part.train.windows.columns.items():
        assert values.dtype == (torch.int16 if name in categorical else torch.float32)
    batch = part.training_batch(shuffled_batches(part.train, 16, seed=1)[0])
    for name in categorical:
        for gathered in (batch.inputs.get(name), batch.targets.get(name)):
            assert gathered is None or gathered.dtype == torch.int64


@pytest.mark.parametrize("n_classes, dtype", [(30, np.int16), (32767, np.int16), (32768, np.int32), (2**40, np.int64)])
def test_ids_rest_in_the_smallest_integer_dtype_of_the_vocabulary(n_classes, dtype):
    specs = {"event": ColumnSpec("event", "categorical", n_classes), "amount": ColumnSpec("amount", "real")}
    assert resident_dtypes(specs, ["event", "amount"]) == {"event": np.dtype(dtype), "amount": np.dtype(np.float32)}


def test_ids_that_do_not_fit_the_narrow_dtype_are_refused_not_wrapped():
    with pytest.raises(UserError, match="do not fit"):
        materialized(np.array([[3, 40000]]), np.dtype(np.int16), "shard.pt")
    kept = np.array([[3, 4]], dtype=np.int16)
    assert materialized(kept, np.dtype(np.int16), "shard.pt") is kept


def test_reals_beyond_float32_are_refused_not_made_infinite():
    with pytest.raises(UserError) as refused:
        materialized(np.array([[1.0, 1.7e150]]), np.dtype(np.float32), "split.parquet: column 'x'")
    assert refused.value.where == "split.parquet: column 'x'"
    assert refused.value.problem.startswith("holds 1.7e+150, beyond the float32 range the model computes in")
    assert "normalize_real_columns: true" in refused.value.problem
    assert "normalize_on_all_data: true" in refused.value.problem  # where the fitted values were all one value
    within = materialized(np.array([[1.0, 3e38, np.nan]]), np.dtype(np.float32), "split.parquet: column 'x'")
    assert within.dtype == np.float32 and np.isfinite(within[0, :2]).all()
