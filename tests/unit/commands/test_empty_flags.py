"""Flags: an empty value is refused by the parser (exit 2), not taken as the config's, and so is a flag given twice;
--debug keeps exit 2."""

from __future__ import annotations

import pytest

from sequifier import cli


@pytest.mark.parametrize(
    "argv",
    [
        ["infer", "--model-path", ""],
        ["infer", "--data-path", " "],
        ["preprocess", "--data-path", ""],
        ["train", "--model-name", ""],
        ["train", "--config-path", ""],
        ["make", ""],
    ],
)
def test_an_empty_flag_is_refused(argv, capsys):
    with pytest.raises(SystemExit) as stop:
        cli.main(argv)
    assert stop.value.code == 2
    assert "must not be empty" in capsys.readouterr().err


def test_debug_shows_the_traceback_and_keeps_the_exit_code(tmp_path, capsys):
    assert cli.main(["plot", str(tmp_path / "absent"), "--debug"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" in err and "UserError" in err and err.strip().splitlines()[-1].startswith("error: ")


@pytest.mark.parametrize("argv", [["train", "--config-name", "x"], ["preprocess", "extra"], ["infer", "--resolve"]])
def test_an_unknown_argument_shows_its_command_s_usage(argv, capsys):
    with pytest.raises(SystemExit) as stop:
        cli.main(argv)
    assert stop.value.code == 2
    error = capsys.readouterr().err
    assert f"sequifier {argv[0]}: error: unrecognized arguments: {argv[1]}" in error
    assert error.startswith(f"usage: sequifier {argv[0]} ")


def test_a_working_folder_whose_path_is_not_utf8_is_refused(tmp_path, monkeypatch, capsys):
    folder = tmp_path / "project\udcff"
    folder.mkdir()
    monkeypatch.chdir(folder)
    assert cli.main(["preprocess"]) == 2
    assert "project?: the working folder's path holds bytes that are not UTF-8" in capsys.readouterr().err
    assert list(folder.iterdir()) == []


@pytest.mark.parametrize(
    "argv",
    [
        ["preprocess", "--data-path", "data/\udcff.parquet"],
        ["infer", "--model-path", "models/m\udcff.pt"],
        ["infer", "--data-path", "data/s\udcff.parquet"],
        ["train", "model_name=a\udcffb"],
    ],
)
def test_an_argument_of_bytes_that_are_not_utf8_is_refused_before_anything_runs(argv, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert cli.main(argv) == 2
    error = capsys.readouterr().err
    assert error.startswith(f"error: {argv[-1].replace(chr(0xDCFF), '?')}: holds bytes that are not UTF-8")
    assert list(tmp_path.iterdir()) == []


def test_make_refuses_a_project_whose_path_holds_an_interpolation(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["make", "in${x}", "--demo"]) == 2
    assert f"in${{x}}: its path {tmp_path}/in${{x}} holds '${{', which Hydra reads" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
    inside = tmp_path / "p${y"
    inside.mkdir()
    monkeypatch.chdir(inside)
    assert cli.main(["make", "demo", "--demo"]) == 2
    assert f"demo: its path {inside}/demo holds '${{'" in capsys.readouterr().err
    assert list(inside.iterdir()) == []


@pytest.mark.parametrize("folder", ["p${x", "q${HOME}"])
def test_train_refuses_to_run_in_a_folder_whose_path_holds_an_interpolation(folder, tmp_path, monkeypatch, capsys):
    (tmp_path / folder).mkdir()
    monkeypatch.chdir(tmp_path / folder)
    assert cli.main(["train"]) == 2
    error = capsys.readouterr().err
    assert error.splitlines() == [
        f"error: {tmp_path / folder}: Hydra reads '${{' in the path of the folder a train command runs in as an "
        "interpolation of its config; run it from a folder whose path has no '${'"
    ]
    assert list((tmp_path / folder).iterdir()) == []


def test_plot_says_a_folder_that_does_not_exist_does_not_exist(tmp_path, capsys):
    assert cli.main(["plot", str(tmp_path / "absent")]) == 2
    assert f"{tmp_path / 'absent'}: does not exist; pass a logs/<model> folder" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, flag",
    [
        (["train", "--seed", "1", "--seed", "2", "--cfg", "job"], "--seed"),
        (["train", "--config-path", "a.yaml", "--config-path", "b.yaml"], "--config-path"),
        (["infer", "--model-path", "a.onnx", "--model-path", "b.onnx"], "--model-path"),
        (["preprocess", "--data-path", "a.csv", "--data-path", "b.csv"], "--data-path"),
    ],
)
def test_a_flag_given_twice_is_refused_rather_than_one_value_winning(argv, flag, capsys):
    with pytest.raises(SystemExit) as stop:
        cli.main(argv)
    assert stop.value.code == 2
    assert f"sequifier {argv[0]}: error: {flag} is given twice; give it once" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv", [["train", "--see", "5"], ["infer", "--model", "m.onnx"], ["preprocess", "--data", "x"]]
)
def test_an_abbreviated_flag_is_refused_not_taken_for_the_flag_it_begins(argv, capsys):
    with pytest.raises(SystemExit) as stop:
        cli.main(argv)
    assert stop.value.code == 2
    assert f"unrecognized arguments: {argv[1]}" in capsys.readouterr().err
