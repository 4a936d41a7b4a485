"""Rows a resume cut from a metric file come back only while `latest.pt` is still the file they belong to."""

from __future__ import annotations

from pathlib import Path

from sequifier.training.cut_rows import drop_cut_rows, keep_cut_rows, put_back_cut_rows


def cut(tmp_path: Path) -> tuple[Path, Path]:
    metrics, latest = tmp_path / "training-metrics.csv", tmp_path / "latest.pt"
    metrics.write_bytes(b"header\nrow 1\nrow 2\n")
    latest.write_bytes(b"the later run's checkpoint")
    keep_cut_rows(metrics, latest)
    metrics.write_bytes(b"header\nrow 1\n")
    return metrics, latest


def test_rows_come_back_while_latest_is_the_same_file(tmp_path: Path):
    metrics, latest = cut(tmp_path)
    put_back_cut_rows(metrics, latest)
    assert metrics.read_bytes() == b"header\nrow 1\nrow 2\n" and list(tmp_path.glob(".*")) == []


def test_rows_stay_cut_once_another_checkpoint_replaced_latest(tmp_path: Path):
    metrics, latest = cut(tmp_path)
    replacement = tmp_path / "new.pt"
    replacement.write_bytes(b"the resumed run's checkpoint")
    replacement.replace(latest)
    put_back_cut_rows(metrics, latest)
    assert metrics.read_bytes() == b"header\nrow 1\n" and list(tmp_path.glob(".*")) == []


def test_a_checkpoint_written_drops_the_copy(tmp_path: Path):
    metrics, latest = cut(tmp_path)
    drop_cut_rows(metrics)
    put_back_cut_rows(metrics, latest)
    assert metrics.read_bytes() == b"header\nrow 1\n" and list(tmp_path.glob(".*")) == []
