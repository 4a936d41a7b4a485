"""Inference outputs appear whole or not at all: failures and interruptions leave the previous outputs as they were."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
from contextlib import contextmanager
from pathlib import Path

import pytest
import torch
from conftest import REFERENCE_DIR, write_yaml
from infer_helpers import GENERATIVE, SPLIT, export_all, infer, outputs

import sequifier.infer.runner as runner
import sequifier.infer.staged_parts as staged_parts
from sequifier.atomic import temp_path_for
from sequifier.config.errors import UserError
from sequifier.data.stored import file_window_counts


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    export_all(tmp_path)
    return tmp_path


def _folder(project: Path, kind: str = "predictions") -> Path:
    return project / "outputs" / kind / Path(GENERATIVE).stem


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {
        path.relative_to(folder).as_posix(): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()
    }


def _hidden(project: Path) -> list[Path]:
    return [path for path in (project / "outputs").rglob(".*") if path.name.endswith(".tmp")]


def test_an_interruption_between_parts_leaves_every_kind_of_the_previous_outputs(project, monkeypatch):
    infer(project, GENERATIVE, output_probabilities=True)
    before = {kind: _snapshot(_folder(project, kind)) for kind in ("predictions", "probabilities")}
    monkeypatch.setattr(runner, "WINDOWS_PER_PART", 5)
    real_part, calls = runner.infer_part, []

    def interrupted_part(*args):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real_part(*args)

    monkeypatch.setattr(runner, "infer_part", interrupted_part)
    with pytest.raises(KeyboardInterrupt):
        infer(project, GENERATIVE, output_probabilities=True, seed=7, write_format="parquet")
    assert {kind: _snapshot(_folder(project, kind)) for kind in before} == before
    assert _hidden(project) == []


def test_a_run_of_fewer_parts_replaces_all_parts_of_the_earlier_run(project, monkeypatch):
    monkeypatch.setattr(runner, "WINDOWS_PER_PART", 5)
    many = infer(project, GENERATIVE)
    assert len(many) > 2
    monkeypatch.setattr(runner, "WINDOWS_PER_PART", 100_000)
    mine = ["notes.txt", "part-all-merged.csv", "part-7.parquet.bak", "part-archive.csv"]
    for name in mine[:3]:
        (_folder(project) / name).write_text("mine")
    (_folder(project) / mine[3]).mkdir()
    assert infer(project, GENERATIVE) == [_folder(project) / "part-000.csv"]
    assert sorted(p.name for p in _folder(project).iterdir()) == sorted([*mine, "part-000.csv"])
    assert (_folder(project) / "part-all-merged.csv").read_text() == "mine"


def test_an_output_folder_that_is_a_file_is_a_clear_error_that_changes_nothing(project):
    folder = _folder(project)
    folder.parent.mkdir(parents=True)
    folder.write_text("a file of the user's")
    with pytest.raises(UserError) as caught:
        infer(project, GENERATIVE)
    assert caught.value.where == str(folder) and "is in the way of this run's output folder (a file)" in str(
        caught.value
    )
    assert folder.read_text() == "a file of the user's"
    assert _hidden(project) == []


def test_staging_a_killed_run_left_is_removed_by_the_next_run(project):
    stale = temp_path_for(_folder(project))
    dead = 2**22 + 12345  # above the default pid_max of 4,194,304: no such process
    stale = stale.with_name(stale.name.replace(f".{os.getpid()}.", f".{dead}."))
    (stale / "part-000.csv").parent.mkdir(parents=True)
    (stale / "part-000.csv").write_text("half")
    infer(project, GENERATIVE)
    assert not stale.exists()
    assert (_folder(project) / "part-000.csv").is_file()


def test_a_stop_while_parts_are_moved_in_waits_until_the_new_outputs_are_whole(project, monkeypatch):
    monkeypatch.setattr(runner, "WINDOWS_PER_PART", 5)
    infer(project, GENERATIVE, output_probabilities=True)  # csv parts of every kind
    real_replace, moves = staged_parts.replace_durably, []

    def replace_then_ctrl_c(staged, final):
        moves.append(final)
        real_replace(staged, final)
        if len(moves) == 1:
            signal.raise_signal(signal.SIGINT)

    monkeypatch.setattr(staged_parts, "replace_durably", replace_then_ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        infer(project, GENERATIVE, output_probabilities=True, write_format="parquet")
    assert len(moves) > 2
    for kind in ("predictions", "probabilities"):
        names = [path.name for path in _folder(project, kind).rglob("part-*")]
        assert names and all(name.endswith(".parquet") for name in names), names
    assert _hidden(project) == []


def test_a_folder_in_the_way_of_a_part_is_named_before_anything_moves(project, monkeypatch):
    monkeypatch.setattr(runner, "WINDOWS_PER_PART", 5)
    infer(project, GENERATIVE)
    in_the_way = _folder(project) / "part-001.parquet"
    in_the_way.mkdir()
    before = _snapshot(_folder(project))
    with pytest.raises(UserError) as caught:
        infer(project, GENERATIVE, write_format="parquet")
    assert caught.value.where == str(in_the_way) and "in the way" in caught.value.problem
    assert _snapshot(_folder(project)) == before and in_the_way.is_dir()
    assert _hidden(project) == []


@contextmanager
def immutable(folder: Path):
    """`folder` takes no new file and lets none go, for every user (chattr +i): what a read-only mount does to root."""
    if subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not allowed here")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(folder)], check=True)


def test_a_folder_that_takes_no_file_is_named_before_any_kind_moves(project, monkeypatch):
    infer(project, GENERATIVE, output_probabilities=True)
    kinds = ("predictions", "probabilities")
    before = {kind: _snapshot(_folder(project, kind)) for kind in kinds}
    locked = next(path for path in _folder(project, "probabilities").iterdir() if path.is_dir())
    with immutable(locked), pytest.raises(UserError) as caught:
        infer(project, GENERATIVE, output_probabilities=True, write_format="parquet")
    assert caught.value.where == str(locked)
    assert "the previous outputs are unchanged" in caught.value.problem
    assert {kind: _snapshot(_folder(project, kind)) for kind in kinds} == before
    assert _hidden(project) == []


def test_an_earlier_part_that_cannot_be_replaced_stops_the_run_before_any_kind_moves(project):
    infer(project, GENERATIVE, output_probabilities=True)
    kinds = ("predictions", "probabilities")
    before = {kind: _snapshot(_folder(project, kind)) for kind in kinds}
    locked = next(_folder(project, "probabilities").rglob("part-*"))
    with immutable(locked), pytest.raises(UserError) as caught:
        infer(project, GENERATIVE, output_probabilities=True, seed=7)
    assert caught.value.where == str(locked)
    assert "(Operation not permitted); the previous outputs are unchanged" in caught.value.problem
    assert {kind: _snapshot(_folder(project, kind)) for kind in kinds} == before
    assert _hidden(project) == []


def test_a_move_that_fails_halfway_puts_every_earlier_part_back(project, monkeypatch):
    infer(project, GENERATIVE, output_probabilities=True)
    kinds = ("predictions", "probabilities")
    before = {kind: _snapshot(_folder(project, kind)) for kind in kinds}
    real_replace, calls = staged_parts.replace_durably, []

    def failing_replace(source, target):
        calls.append(target)
        if len(calls) == 2:
            raise OSError(5, "Input/output error", str(target))
        real_replace(source, target)

    monkeypatch.setattr(staged_parts, "replace_durably", failing_replace)
    with pytest.raises(UserError, match="the previous outputs are unchanged"):
        infer(project, GENERATIVE, output_probabilities=True, seed=7)
    assert {kind: _snapshot(_folder(project, kind)) for kind in kinds} == before
    assert _hidden(project) == []


@pytest.mark.parametrize("in_the_way", ["a link to nothing", "a file"])
def test_a_kind_folder_in_the_way_is_named_before_anything_is_written(in_the_way, project, tmp_path):
    kind_folder = project / "outputs" / "predictions"
    kind_folder.parent.mkdir(parents=True, exist_ok=True)
    if in_the_way == "a file":
        kind_folder.write_text("mine")
    else:
        kind_folder.symlink_to(tmp_path / "gone")
    with pytest.raises(UserError) as caught:
        infer(project, GENERATIVE)
    assert caught.value.where == str(kind_folder)
    what = f"a link to {tmp_path / 'gone'}, which does not exist" if in_the_way == "a link to nothing" else "a file"
    assert caught.value.problem == f"is in the way of this run's output folder ({what}); move it away"
    assert _hidden(project) == []


def test_a_target_folder_of_an_earlier_run_that_this_run_does_not_predict_is_noted(project, capsys):
    stale = _folder(project, "probabilities") / "nextAction"
    stale.mkdir(parents=True)
    (stale / "part-000.csv").write_text("an earlier run's\n")
    config = {"project_root": str(project), "model_path": f"models/{GENERATIVE}", "data_path": str(SPLIT)}
    runner.run_inference(write_yaml(project / "configs" / "infer.yaml", config | {"output_probabilities": True}))
    note = f"note: {stale} holds an earlier run's probabilities of a target this run does not predict"
    assert note in capsys.readouterr().out
    assert (stale / "part-000.csv").read_text() == "an earlier run's\n"


@pytest.mark.parametrize("fields", [{}, {"autoregressive": True, "generation_steps": 3}], ids=["views", "generation"])
def test_progress_moves_with_the_model_calls_inside_a_part(fields, tmp_path, monkeypatch):
    """Parts hold up to 100,000 windows: the count moves as the model's batches end, not once a part."""
    columns = ["event", "amount"]
    ingestion = {"type": "embedding", "output_dim": 16, "feature_embedding_dims": {"event": 8, "amount": 8}}
    export_all(tmp_path, interface={"input_columns": columns, "target_columns": columns, "ingestion": ingestion})
    totals: list[int] = []
    moves: list[tuple[int, int]] = []  # (windows, part files written before)
    written: list[Path] = []
    real_write = runner.write_table

    class Recorded(runner.Progress):
        def __init__(self, label, total, **options):
            totals.append(total)
            super().__init__(label, total, **options)

        def advance(self, count, position=None, detail=None):
            moves.append((count, len(written)))
            super().advance(count, position, detail)

    def recorded_write(table, path, write_format):
        written.append(path)
        real_write(table, path, write_format)

    monkeypatch.setattr(runner, "Progress", Recorded)
    monkeypatch.setattr(runner, "write_table", recorded_write)
    infer(tmp_path, GENERATIVE, inference_batch_size=4, **fields)
    (total,) = totals
    assert total > 40 and sum(count for count, _ in moves) == total
    assert all(count > 0 for count, _ in moves)
    assert len([count for count, files in moves if files == 0]) >= total // 4 - 1


def test_a_shard_folder_is_read_a_part_at_a_time_and_a_bad_id_in_a_later_shard_loses_nothing(
    project, monkeypatch, tmp_path
):
    """Parts of 5 windows read from the shards in turn give the rows of one whole read; an id beyond the model's
    classes in the last shard stops the run after earlier parts were predicted, leaving the previous outputs."""
    shards = tmp_path / "shards"
    shutil.copytree(REFERENCE_DIR / "data" / "events_pt-split2", shards)
    infer(project, GENERATIVE, data_path=shards)
    whole = outputs(project, "predictions", GENERATIVE)
    monkeypatch.setattr(runner, "WINDOWS_PER_PART", 5)
    windows = sum(file_window_counts(shards))
    assert len(infer(project, GENERATIVE, data_path=shards)) == -(-windows // 5)
    assert outputs(project, "predictions", GENERATIVE).equals(whole)
    last = sorted(shards.glob("*.pt"))[-1]
    payload = torch.load(last, weights_only=False)
    payload["sequences"]["event"][-1, -1] = 99
    torch.save(payload, last)
    before = _snapshot(_folder(project))
    predicted = []
    real_part = runner.infer_part
    monkeypatch.setattr(runner, "infer_part", lambda *args: predicted.append(1) or real_part(*args))
    with pytest.raises(UserError, match=f"{shards} holds the id 99, outside the classes of {GENERATIVE}"):
        infer(project, GENERATIVE, data_path=shards)
    assert len(predicted) >= windows // 2 // 5 and _snapshot(_folder(project)) == before and _hidden(project) == []


def test_two_runs_placing_parts_at_once_take_turns_and_the_last_set_is_whole(tmp_path):
    outputs = tmp_path / "outputs"
    first, second = staged_parts.StagedParts(outputs, "m"), staged_parts.StagedParts(outputs, "m")
    for staged, format_ in ((first, "csv"), (second, "parquet")):
        for number in range(2 if format_ == "csv" else 1):
            staged.path("predictions", "", f"part-{number:03d}.{format_}").write_text(format_)
    placed = threading.Event()

    def place_second():
        with second.placing_alone():
            second.check_placeable()
            second.place()
        placed.set()

    with first.placing_alone():
        waiting = threading.Thread(target=place_second)
        waiting.start()
        assert not placed.wait(0.5)  # the second run waits while the first places its set
        first.check_placeable()
        first.place()
    waiting.join(10)
    assert placed.is_set()
    assert sorted(path.name for path in (outputs / "predictions" / "m").iterdir()) == ["part-000.parquet"]
