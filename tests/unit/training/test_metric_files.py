"""Metric CSVs cut by a crash or an edit: the next run's rows start on lines of their own, and it says so."""

from __future__ import annotations

import csv
import logging

import pytest

from sequifier.config.errors import UserError
from sequifier.training.history import has_rows, read_history
from sequifier.training.metrics import METRIC_FIELDS, MetricsFile


def write_rows(path, run_id: str, epochs: range) -> int:
    metrics = MetricsFile(path, run_id)
    for epoch in epochs:
        metrics.write(
            phase="p",
            dataset="d",
            part="",
            epoch=epoch,
            global_step=epoch,
            target="event",
            metric="loss",
            value=1.0 / epoch,
            learning_rate=0.1,
        )
    size = metrics.size()
    metrics.close()
    return size


@pytest.mark.parametrize("kept_bytes", [None, "as at the checkpoint"], ids=["appending", "resuming"])
def test_a_row_cut_in_the_middle_is_removed_before_new_rows_are_written(kept_bytes, tmp_path, caplog):
    path = tmp_path / "validation-metrics.csv"
    size = write_rows(path, "run", range(1, 4))
    path.write_bytes(path.read_bytes()[:-12])  # the third row loses its end
    with caplog.at_level(logging.WARNING, logger="sequifier"):
        metrics = MetricsFile(path, "run", size if kept_bytes else None)
    metrics.write(
        phase="p",
        dataset="d",
        part="",
        epoch=3,
        global_step=3,
        target="event",
        metric="loss",
        value=0.25,
        learning_rate=0.1,
    )
    metrics.close()
    rows = list(csv.DictReader(path.open(newline="")))
    assert [row["epoch"] for row in rows] == ["1", "2", "3"] and all(None not in row for row in rows)
    assert rows[-1]["value"] == "0.25"
    assert "ended in a partial row" in caplog.text
    missing = f"held {size} bytes when the checkpoint was written: rows of the run are missing"
    assert (missing in caplog.text) == bool(kept_bytes)
    assert read_history(tmp_path).values[("validation", "event", "loss")] == {1: 1.0, 2: 0.5, 3: 0.25}


def test_a_file_without_a_whole_line_starts_again_with_its_header(tmp_path):
    path = tmp_path / "training-metrics.csv"
    path.write_text("run_id,pha")
    MetricsFile(path, "run").close()
    assert path.read_text().splitlines() == [",".join(METRIC_FIELDS)]


def test_a_whole_file_is_left_as_it_is(tmp_path, caplog):
    path = tmp_path / "training-metrics.csv"
    size = write_rows(path, "run", range(1, 3))
    before = path.read_bytes()
    with caplog.at_level(logging.WARNING, logger="sequifier"):
        MetricsFile(path, "run", size).close()
    assert path.read_bytes() == before and caplog.text == ""


def test_reading_leaves_out_a_last_row_cut_short_and_refuses_a_short_row_before_it(tmp_path, capsys):
    path = tmp_path / "validation-metrics.csv"
    write_rows(path, "run", range(1, 4))
    whole = path.read_bytes()
    path.write_bytes(whole[: whole.rindex(b",0.333") + 4])  # the last row ends "...,0.3", no newline, fields missing
    assert has_rows(tmp_path) and capsys.readouterr().err == ""  # said once, by the reading below
    assert read_history(tmp_path).values[("validation", "event", "loss")] == {1: 1.0, 2: 0.5}
    assert f"note: {path} ends in a partial row (an edit or a crash cut it); it is left out" in capsys.readouterr().err
    lines = whole.decode().splitlines(keepends=True)
    lines[2] = lines[2].rsplit(",", 1)[0] + "\r\n"  # a row without its learning_rate
    path.write_text("".join(lines), newline="")
    with pytest.raises(UserError, match="holds a row that is not a metric row"):
        read_history(tmp_path)
