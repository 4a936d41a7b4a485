"""Loss curves read back from metric files: only the latest run, last value per epoch, phases; pictures written."""

from __future__ import annotations

from pathlib import Path

import pytest

from sequifier.config.errors import UserError
from sequifier.training.curves import CURVES_FILE, draw_curves, draw_sweep
from sequifier.training.history import read_history
from sequifier.training.metrics import MetricsFile

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def write_run(folder: Path, run_id: str, losses: list[float], phases: list[str]) -> None:
    """Epoch e: training loss losses[e], validation loss losses[e] + 0.1, baseline 3.0."""
    training = MetricsFile(folder / "training-metrics.csv", run_id)
    validation = MetricsFile(folder / "validation-metrics.csv", run_id)
    for epoch, (loss, phase) in enumerate(zip(losses, phases), start=1):
        common = dict(phase=phase, dataset="main", epoch=epoch, global_step=10 * epoch, learning_rate=0.1)
        for target in ("event", "aggregate"):
            part = "" if target == "aggregate" else "p"
            training.write(**common, part=part, target=target, metric="loss", value=loss)
            validation.write(**common, part=part, target=target, metric="loss", value=loss + 0.1)
            validation.write(**common, part=part, target=target, metric="baseline_loss", value=3.0)
    training.close()
    validation.close()


def test_history_holds_only_the_latest_run_of_the_model_name(tmp_path: Path):
    write_run(tmp_path, "old", [9.0, 8.0, 7.0], ["a", "a", "a"])
    write_run(tmp_path, "new", [2.0, 1.5], ["warm", "main"])
    history = read_history(tmp_path)
    assert history.series("training") == {"event": {1: 2.0, 2: 1.5}, "aggregate": {1: 2.0, 2: 1.5}}
    assert history.series("validation", "baseline_loss")["event"] == {1: 3.0, 2: 3.0}
    assert history.phase_starts() == [(2, "main")]
    assert history.names()[0] == "aggregate"


def test_a_later_row_of_the_same_epoch_replaces_an_earlier_one(tmp_path: Path):
    """Validation at a mid-epoch snapshot is followed by the end-of-epoch validation of the same epoch."""
    write_run(tmp_path, "r", [2.0], ["p"])
    extra = MetricsFile(tmp_path / "validation-metrics.csv", "r")
    extra.write(
        phase="p", dataset="main", part="", epoch=1, global_step=12, target="aggregate", metric="loss", value=1.7
    )
    extra.close()
    assert read_history(tmp_path).series("validation")["aggregate"] == {1: 1.7}


def test_draw_curves_writes_a_png_and_leaves_no_temporary_file(tmp_path: Path):
    write_run(tmp_path, "r", [2.0, 1.5, 1.2], ["warm", "main", "main"])
    path = draw_curves(tmp_path)
    assert path == tmp_path / CURVES_FILE
    assert path.read_bytes().startswith(PNG_MAGIC)
    assert sorted(p.name for p in tmp_path.iterdir()) == [CURVES_FILE, "training-metrics.csv", "validation-metrics.csv"]


def test_a_floor_for_a_target_the_run_lacks_is_refused_with_the_targets(tmp_path: Path):
    write_run(tmp_path, "r", [2.0, 1.5, 1.2], ["main", "main", "main"])
    with pytest.raises(UserError, match=r"has no target 'evnt' \(did you mean 'event'\?\); its targets: ") as caught:
        draw_curves(tmp_path, {"evnt": 1.2})
    assert caught.value.where == "--floor" and not (tmp_path / CURVES_FILE).exists()
    assert draw_curves(tmp_path, {"event": 1.0}).is_file()


def test_a_folder_without_metric_files_is_a_user_error(tmp_path: Path):
    with pytest.raises(UserError, match="holds no metric files"):
        draw_curves(tmp_path)


def test_draw_sweep_writes_a_png(tmp_path: Path):
    for name, losses in (("a", [2.0, 1.0]), ("b", [2.5, 2.0])):
        write_run(tmp_path / name, "r", losses, ["p", "p"])
    path = draw_sweep([("lr=0.1", [tmp_path / "a"]), ("lr=0.3", [tmp_path / "b"])], tmp_path / "sweep.png")
    assert path.read_bytes().startswith(PNG_MAGIC)
