"""Hydra settings and overrides that Hydra itself would answer with a traceback or a silent surprise: refused in one
line (exit 2) before anything runs; the --model-name flag's value taken as written."""

from __future__ import annotations

import time

import pytest
import yaml
from conftest import tiny_train_config, write_yaml

from sequifier import cli


@pytest.fixture
def project(reference_project, monkeypatch):
    write_yaml(reference_project / "configs" / "train.yaml", tiny_train_config())
    monkeypatch.chdir(reference_project)
    return reference_project


def refused(argv: list[str], capsys) -> str:
    assert cli.main(["train", *argv]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in lines[0], lines
    return lines[0]


@pytest.mark.parametrize("spelling", ["~model.interface.input_columns.0", "~model.interface.input_columns[1]"])
def test_removing_an_item_of_a_list_is_refused_with_the_way_to_do_it(spelling, project, capsys):
    line = refused([spelling, "--cfg", "job"], capsys)
    assert (
        "~ removes a field, not an item of a list; set the whole list instead: model.interface.input_columns=[...]"
        in line
    )


@pytest.mark.parametrize(
    "override, multirun",
    [
        ("hydra.run.dir=${oc.env:SEQUIFIER_NO_SUCH_VARIABLE}", False),
        ("hydra.run.dir=runs/${no.such.key}", False),
        ("hydra.sweep.dir=${oc.env:SEQUIFIER_NO_SUCH_VARIABLE}", True),
        ("hydra.sweep.subdir=${hydra.job.num}/${oc.env:SEQUIFIER_NO_SUCH_VARIABLE}", True),
        ("hydra.job.name=${oops}", False),
        ("hydra.output_subdir=${oops}", True),
        ("+hydra.job.env_set.SEQUIFIER_X=${oops}", False),
        ("++hydra.job.name=${oops}", False),
    ],
)
def test_a_hydra_setting_whose_interpolation_cannot_resolve_is_refused_before_any_job(
    override, multirun, project, capsys
):
    line = refused([override, *(["-m", "seed=1,2"] if multirun else [])], capsys)
    key, value = override.lstrip("+").split("=", 1)
    assert line.startswith(f"error: {key}: cannot resolve the interpolation in {value}: ")
    assert not (project / "checkpoints").exists() and not (project / "multirun").exists()


def test_a_record_folder_interpolation_that_resolves_is_taken(project, capsys, monkeypatch):
    monkeypatch.setenv("SEQUIFIER_RUNS", "runs")
    assert cli.main(["train", "hydra.run.dir=${oc.env:SEQUIFIER_RUNS}/one", "training_plan.epochs=1", "--quiet"]) == 0
    assert (project / "runs" / "one" / "result.json").is_file()


@pytest.mark.parametrize(
    "setting",
    [
        "hydra.mode=MULTIRUN",
        "hydra.searchpath=[file:///tmp]",
        "hydra.job.config.override_dirname.exclude_keys=[seed]",  # would give sweep jobs one model name
        "hydra.job.config.override_dirname.kv_sep=${oc.env:SEQUIFIER_ABSENT}",
    ],
)
def test_hydra_settings_that_would_change_how_sequifier_runs_are_refused(setting, project, capsys):
    line = refused([setting, "--cfg", "job"], capsys)
    assert line.startswith(f"error: {setting.split('=')[0]}: is not supported: ")


@pytest.mark.parametrize("name", ["p,q", "mödel", "a'b", "range(1,3)", "1e3", "true", "run-${seed}"])
def test_the_model_name_flag_is_taken_as_written(name, project, capsys):
    assert cli.main(["train", "--model-name", name, "--cfg", "job"]) == 0
    assert yaml.safe_load(capsys.readouterr().out)["model_name"] == name


def test_a_config_path_that_is_no_regular_file_says_so(project, capsys):
    line = refused(["--config-path", "/dev/null"], capsys)
    assert line == "error: /dev/null: is not a regular file, so not a config file"


def test_a_record_folder_on_a_file_system_without_storage_is_not_called_full(project, capsys):
    line = refused(["hydra.run.dir=/proc/sequifier-absent/x", "--quiet"], capsys)
    assert line.endswith("/proc is on a file system that stores no files (as /proc and /sys are)")


def test_cfg_job_of_a_sweep_shows_the_first_job_s_model_name(project, capsys):
    assert cli.main(["train", "-m", "seed=1,2", "--cfg", "job"]) == 0
    assert yaml.safe_load(capsys.readouterr().out)["model_name"] == "tiny-seed=1"


@pytest.mark.parametrize("key", ["hydra.run.dir", "hydra.sweep.dir"])
def test_an_empty_record_folder_is_refused(key, project, capsys):
    line = refused([f"{key}=", *(["-m", "seed=1,2"] if "sweep" in key else [])], capsys)
    assert line == f"error: {key}: is empty; give the folder for the run's record (it would be the working folder)"


def test_the_version_is_told(capsys):
    with pytest.raises(SystemExit) as stop:
        cli.main(["--version"])
    assert stop.value.code == 0 and capsys.readouterr().out.startswith("sequifier ")


def test_a_sweep_into_an_interpolated_folder_reports_its_jobs_there(project, capsys, monkeypatch):
    monkeypatch.setenv("SEQUIFIER_RUNS", str(project / "runs"))
    sweep = ["-m", "seed=1,2", "training_plan.epochs=1", "--quiet", "hydra.sweep.subdir=${hydra.job.override_dirname}"]
    assert cli.main(["train", "hydra.sweep.dir=${oc.env:SEQUIFIER_RUNS}/sweep-${now:%Y}", *sweep]) == 0
    folder = project / "runs" / f"sweep-{time.strftime('%Y')}"
    assert (folder / "seed=1" / "result.json").is_file() and (folder / "seed=2" / "result.json").is_file()
    assert f"sweep summary ({folder})" in capsys.readouterr().out


def test_a_sweep_folder_named_by_the_time_is_resolved_once_for_its_jobs_and_its_summary(project, capsys):
    sweep = ["-m", "seed=1,2", "training_plan.epochs=1", "--quiet"]
    assert cli.main(["train", "hydra.sweep.dir=sweeps/${now:%H%M%S%f}", *sweep]) == 0  # microseconds differ
    (folder,) = (project / "sweeps").iterdir()
    assert (folder / "0" / "result.json").is_file() and (folder / "1" / "result.json").is_file()
    assert (folder / "summary.txt").is_file() and f"sweep summary ({folder})" in capsys.readouterr().out


@pytest.mark.parametrize(
    "override", ["hydra.job={chdir: true}", "hydra.run={dir: x}", "+hydra={mode: MULTIRUN}", "hydra.sweep={dir: y}"]
)
def test_whole_sections_of_hydra_settings_are_refused_for_their_fields(override, project, capsys):
    key = override.lstrip("+").split("=")[0]
    line = refused([override, "--cfg", "job"], capsys)
    assert (
        line
        == f"error: {override}: {key} is a section of Hydra's settings: set its fields one by one ({key}.<field>=...)"
    )


@pytest.mark.parametrize(
    "override, section, near",
    [
        ("+hydra.run.dirr=x", "hydra.run", " (did you mean 'dir'?)"),
        ("hydra.job.nam=x", "hydra.job", " (did you mean 'name'?)"),
        ("++hydra.verbos=true", "hydra", " (did you mean 'verbose'?)"),
    ],
)
def test_a_hydra_setting_that_does_not_exist_is_refused_even_with_a_plus(override, section, near, project, capsys):
    line = refused([override, "--cfg", "job"], capsys)
    name = override.lstrip("+").split("=")[0].rpartition(".")[2]
    assert line.startswith(f"error: {override}: {section} has no setting {name!r}{near}; its settings are ")


def test_open_hydra_sections_take_new_keys(project, capsys):
    assert (
        cli.main(["train", "+hydra.job.env_set.SEQUIFIER_X=1", "hydra.job_logging.root.level=WARN", "--cfg", "job"])
        == 0
    )


@pytest.mark.parametrize(
    "setting, name, content",
    [
        ("hydra.run.dir=.", "result.json", '{"accuracy": 0.9}'),
        ("hydra.run.dir=mine", "result.json", "not json"),
        ("hydra.sweep.dir=.", "summary.txt", "my notes"),
    ],
)
def test_a_chosen_record_folder_holding_a_users_file_of_a_records_name_is_refused(
    setting, name, content, project, capsys
):
    folder = project / setting.split("=", 1)[1]
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(content)
    line = refused([setting, *(["-m", "seed=1,2"] if "sweep" in setting else [])], capsys)
    assert line.startswith(f"error: {setting.split('=')[0]}: {folder.resolve()} holds {name}, which sequifier did not")
    assert (folder / name).read_text() == content and not (project / "checkpoints").exists()


@pytest.mark.parametrize("multirun", [False, True])
def test_a_record_folder_chosen_through_an_interpolation_is_checked_where_it_resolves(
    multirun, project, capsys, monkeypatch
):
    folder = project / "mine"
    folder.mkdir()
    (folder / "summary.txt" if multirun else folder / "result.json").write_text("my notes")
    monkeypatch.setenv("SEQUIFIER_RUNS", str(folder))
    key = "hydra.sweep.dir" if multirun else "hydra.run.dir"
    line = refused([f"{key}=${{oc.env:SEQUIFIER_RUNS}}", *(["-m", "seed=1,2"] if multirun else [])], capsys)
    assert line.startswith(f"error: {key}: {folder} holds ")
    assert not (project / "checkpoints").exists() and sorted(p.name for p in folder.iterdir()) in (
        ["result.json"],
        ["summary.txt"],
    )


@pytest.mark.parametrize(
    "refused_in_the_job",
    [
        ["model.interface.ingestion.feature_embedding_dims={event: 0, channel: 4, amount: 4}"],
        ["global_training/scheduler=step", "global_training.scheduler.gamma=-1", "training_plan.epochs=2"],
    ],
    ids=["embedding-width-against-the-data", "scheduled-learning-rate"],
)
def test_a_run_refused_before_it_logs_leaves_no_record_folder(refused_in_the_job, project, capsys):
    (project / "outputs" / "2000-01-01" / "00-00-00").mkdir(parents=True)  # an earlier run's record stays
    with pytest.raises(SystemExit) as ended:  # raised inside the job, as the command line's exit takes it
        cli.main(["train", *refused_in_the_job])
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert ended.value.code == 2
    assert line.startswith(("error: model.interfaces.default.ingestion", "error: global_training.scheduler"))
    assert [p.relative_to(project).as_posix() for p in (project / "outputs").rglob("*")] == [
        "outputs/2000-01-01",
        "outputs/2000-01-01/00-00-00",
    ]


def test_a_record_folder_chosen_again_takes_the_next_record(project, capsys):
    arguments = ["hydra.run.dir=runs/same", "training_plan.epochs=1", "--quiet"]
    assert cli.main(["train", *arguments]) == 0
    assert cli.main(["train", *arguments, "seed=7"]) == 0
    assert "seed=7" in (project / "runs" / "same" / "result.json").read_text()
