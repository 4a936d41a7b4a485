"""Loss curves read back from metric files: only the latest run, last value per epoch, phases; pictures written."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from sequifier.commands import plot
from sequifier.config.errors import UserError
from sequifier.training.curves import CURVES_FILE, draw_curves, draw_sweep
from sequifier.training.history import read_history
from sequifier.training.metrics import MetricsFile

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def write_run(folder: Path, run_id: str, losses: list[float], phases: list[str], target: str = "event") -> None:
    """Epoch e: training loss losses[e], validation loss losses[e] + 0.1, baseline 3.0."""
    folder.mkdir(parents=True, exist_ok=True)
    training = MetricsFile(folder / "training-metrics.csv", run_id)
    validation = MetricsFile(folder / "validation-metrics.csv", run_id)
    for epoch, (loss, phase) in enumerate(zip(losses, phases), start=1):
        common = dict(phase=phase, dataset="main", epoch=epoch, global_step=10 * epoch, learning_rate=0.1)
        for name in (target, "aggregate"):
            part = "" if name == "aggregate" else "p"
            training.write(**common, part=part, target=name, metric="loss", value=loss)
            validation.write(**common, part=part, target=name, metric="loss", value=loss + 0.1)
            validation.write(**common, part=part, target=name, metric="baseline_loss", value=3.0)
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


def test_characters_the_font_lacks_give_one_note_and_no_python_warning(tmp_path: Path, caplog, recwarn):
    write_run(tmp_path, "r", [2.0, 1.5], ["main", "main"], target="事件")
    with caplog.at_level("INFO", logger="sequifier"):
        assert draw_curves(tmp_path).read_bytes().startswith(PNG_MAGIC)
    assert not [w for w in recwarn if "missing from font" in str(w.message)]
    assert caplog.text.count("draws some characters of the column names as boxes") == 1


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


@pytest.mark.parametrize(
    "content, said",
    [
        (bytes(range(256)) * 2, "is not a readable metric file"),
        (b"a,b,c\n1,2,3\n", "lacks the metric columns run_id, phase"),
        (b"", "hold no rows yet"),
        (b"run_id,phase,dataset,part,epoch,global_step,target,metric,value,learning_rate\n", "hold no rows yet"),
        (b"run_id,phase,dataset,part,epoch,target,metric,value\nr,p,d,,one,event,loss,2.0\n", "not a metric row"),
    ],
    ids=["binary", "other-columns", "empty", "header-only", "epoch-not-a-number"],
)
def test_a_metric_file_that_is_not_one_is_a_user_error_naming_it(tmp_path: Path, content: bytes, said: str):
    (tmp_path / "training-metrics.csv").write_bytes(content)
    with pytest.raises(UserError, match=said):
        draw_curves(tmp_path)


def test_a_folder_that_does_not_exist_is_named_as_such(tmp_path: Path):
    with pytest.raises(UserError, match="missing: does not exist"):
        draw_curves(tmp_path / "missing")


@pytest.mark.parametrize("value", ["nan", "inf", "1e400", "-1", "x", ""])
def test_a_floor_that_is_not_a_finite_loss_is_refused(tmp_path: Path, value: str):
    write_run(tmp_path, "r", [2.0], ["main"])
    with pytest.raises(UserError, match="a finite number, at least 0") as caught:
        plot.run(argparse.Namespace(folders=[tmp_path], floor=[f"event={value}"]))
    assert caught.value.where == "--floor" and not (tmp_path / CURVES_FILE).exists()


def test_floors_are_checked_against_every_folder_before_any_picture_is_drawn(tmp_path: Path):
    first, second = tmp_path / "first", tmp_path / "second"
    write_run(first, "r", [2.0], ["main"])
    write_run(second, "r", [2.0], ["main"], target="amount")
    with pytest.raises(UserError, match="has no target 'event'"):
        plot.run(argparse.Namespace(folders=[first, second], floor=["event=1.0"]))
    assert not (first / CURVES_FILE).exists()


def test_a_series_of_one_epoch_drawn_without_markers_is_seen():
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    from sequifier.training.curves import _line

    figure, axes = pyplot.subplots()
    _line(axes, {1: 2.0}, linestyle="--", marker=None)
    _line(axes, {1: 2.0, 2: 1.0}, linestyle="--", marker=None)
    assert [line.get_marker() for line in axes.lines] == ["_", "None"]
    pyplot.close(figure)
