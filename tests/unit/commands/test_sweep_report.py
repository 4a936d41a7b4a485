"""The sweep report finds the jobs where Hydra put them and leaves its table in the sweep folder."""

from __future__ import annotations

import json
from pathlib import Path

from sequifier.commands import record_folder
from sequifier.commands.record_folder import sweep_folder
from sequifier.commands.sweep import RESULT_FILE, SUMMARY_FILE, SWEEP_ID_VARIABLE, report_sweep


def test_the_users_sweep_dir_wins_and_is_relative_to_the_working_folder(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(record_folder.time, "strftime", lambda form: "d" if "Y" in form else "t")
    assert sweep_folder({}) == tmp_path / "multirun" / "d" / "t"
    assert sweep_folder({}) == tmp_path / "multirun" / "d" / "t-2"  # a sweep of the same second
    assert sweep_folder({"hydra.sweep.dir": "runs/lr"}) == tmp_path / "runs" / "lr"
    assert sweep_folder({"hydra.sweep.dir": f"'{tmp_path / 'abs dir'}'"}) == tmp_path / "abs dir"


def test_a_sweep_without_results_fails_and_says_where_it_looked(tmp_path: Path, capsys):
    assert report_sweep(tmp_path) == 1
    assert f"no job results (result.json) under {tmp_path}" in capsys.readouterr().out
    assert "no job results" in (tmp_path / SUMMARY_FILE).read_text()


def test_files_named_result_json_that_sequifier_did_not_write_are_left_out(tmp_path: Path, monkeypatch, capsys):
    monkeypatch.setenv(SWEEP_ID_VARIABLE, "sweep-1")
    record = {"status": "ok", "sweep_id": "sweep-1", "job": 0, "model_name": "m", "monitored_loss": 1.5}
    (tmp_path / "0").mkdir()
    (tmp_path / "0" / RESULT_FILE).write_text(json.dumps(record))
    for folder, content in (("notes", "not json"), ("list", "[1, 2]"), ("other", '{"accuracy": 0.9}')):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / RESULT_FILE).write_text(content)
    assert report_sweep(tmp_path) == 0
    assert "1.5000" in capsys.readouterr().out
