"""The sweep report finds the jobs where Hydra put them and leaves its table in the sweep folder."""

from __future__ import annotations

from pathlib import Path

from sequifier.commands import record_folder
from sequifier.commands.record_folder import sweep_folder
from sequifier.commands.sweep import SUMMARY_FILE, report_sweep


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
