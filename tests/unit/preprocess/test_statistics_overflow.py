"""Statistics that overflow float64 (values near ±1e308, a corrupted page) are refused with the column named."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from sequifier.config.errors import UserError
from sequifier.config.preprocess import load_preprocess_config
from sequifier.preprocess import run_preprocess
from sequifier.preprocess.moment_tree import group_nodes, tree_moments
from sequifier.preprocess.statistics import statistics_of


def _project(root: Path, amounts: np.ndarray, **settings) -> Path:
    (root / "data").mkdir(parents=True)
    rows = amounts.size
    table = pa.table(
        {
            "sequenceId": np.repeat(np.arange(rows // 10), 10),
            "itemPosition": np.tile(np.arange(10), rows // 10),
            "amount": amounts,
            "event": ["a", "b"] * (rows // 2),
        }
    )
    pq.write_table(table, root / "data" / "events.parquet")
    config = {"project_root": str(root), "preprocessing_data_path": "data/events.parquet", "window_length": 4}
    config.update(settings)
    (root / "preprocess.yaml").write_text(yaml.safe_dump(config))
    return root / "preprocess.yaml"


@pytest.mark.parametrize(
    "big",
    [[1.5e308, -1.6e308, 1.7e308], [1.7e308, 1.7e308, 1.7e308]],
    ids=["spread-overflows-the-variance", "sum-overflows-the-mean"],
)
def test_values_near_the_float_limit_are_refused_naming_the_column(big, tmp_path):
    amounts = np.linspace(0.0, 1.0, 40)
    amounts[[1, 2, 5]] = big
    with pytest.raises(UserError, match="overflow") as error:
        run_preprocess(load_preprocess_config(_project(tmp_path, amounts)))
    assert error.value.where == "amount"
    assert not (tmp_path / "configs" / "metadata_configs" / "events.json").exists()


def test_finite_moments_of_large_values_are_kept():
    values = np.array([1e150, 2e150, 3e150])
    parts = [group_nodes(values[:1], np.zeros(1, np.int64), 0, 1), group_nodes(values[1:], np.zeros(2, np.int64), 1, 1)]
    statistics = statistics_of("amount", tree_moments(parts))
    assert statistics == pytest.approx({"mean": 2e150, "std": 1e150})


@pytest.mark.parametrize("scale, warned", [(1e-300, True), (1e-12, True), (1.0, False)])
def test_values_too_close_for_the_normalization_epsilon_are_warned_about(scale, warned, tmp_path, capsys):
    amounts = np.linspace(1.0, 2.0, 40) * scale
    run_preprocess(load_preprocess_config(_project(tmp_path, amounts)))
    said = [line for line in capsys.readouterr().err.splitlines() if "warning: amount:" in line]
    assert bool(said) == warned, said
    if warned:
        assert "squeezes them toward 0" in said[0] and "multiply the column by a large constant" in said[0]
        assert "set normalize_real_columns: false" not in said[0]  # float32 would hold them as one value too


def test_the_warning_spares_a_column_of_one_value(tmp_path, capsys):
    run_preprocess(load_preprocess_config(_project(tmp_path, np.full(40, 3e-300))))
    assert "warning: amount:" not in capsys.readouterr().err


@pytest.mark.parametrize("on_all_data", [False, True])
def test_one_fitted_value_beside_other_values_in_later_splits_is_warned_about(on_all_data, tmp_path, capsys):
    amounts = np.ones((4, 10))
    amounts[:, 8:] = [5.0, 9.0]  # the last items of each sequence go to the later splits
    config = _project(tmp_path, amounts.ravel(), normalize_on_all_data=on_all_data)
    run_preprocess(load_preprocess_config(config))
    said = [line for line in capsys.readouterr().err.splitlines() if "warning: amount:" in line]
    if on_all_data:
        assert said == []
        return
    assert len(said) == 1 and "the values normalization is fitted on are all 1, while other splits hold" in said[0]
    assert "values from 1 to 9" in said[0] and "set normalize_on_all_data: true" in said[0]
