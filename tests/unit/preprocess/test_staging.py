"""A failed or killed preprocess never loses the previous outputs; staging of dead runs is removed, workers die.

Each test first writes a complete set of outputs (the previous run), then fails, kills or interrupts a
second run with different data, and compares every output byte for byte with the previous set.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from reference_helpers import KILLED_IN_THE_SWAP

import sequifier.atomic as atomic_module
from sequifier.config.errors import UserError
from sequifier.config.preprocess import load_preprocess_config
from sequifier.preprocess import run_preprocess
from sequifier.preprocess.staging import STAGING_NAME, Staging

ROOT = Path(__file__).resolve().parents[3]
CONFIG = "configs/preprocess.yaml"
METADATA_FOLDER = "configs/metadata_configs"


def events(n_sequences: int, n_items: int = 12) -> pa.Table:
    rows = n_sequences * n_items
    return pa.table(
        {
            "sequenceId": np.repeat(np.arange(n_sequences), n_items),
            "itemPosition": np.tile(np.arange(n_items), n_sequences),
            "event": [f"e{i % 5}" for i in range(rows)],
            "amount": np.linspace(0.0, 1.0, rows),
        }
    )


def project(root: Path, **changes) -> Path:
    """A project whose previous run is complete; its input is then replaced, so a new run would change outputs."""
    (root / "data").mkdir(parents=True)
    (root / "configs").mkdir()
    pq.write_table(events(3), root / "data" / "events.parquet")
    config = {
        "project_root": str(root),
        "preprocessing_data_path": "data/events.parquet",
        "window_length": 5,
        **changes,
    }
    (root / CONFIG).write_text(yaml.safe_dump(config))
    run_preprocess(load_preprocess_config(root / CONFIG))
    pq.write_table(events(5), root / "data" / "events.parquet")
    return root / CONFIG


def outputs(root: Path) -> dict[str, str]:
    """Every output file (hidden ones too) with a hash of its content; the input is left out."""
    found = {}
    for folder in (root / "data", root / "configs" / "metadata_configs"):
        for path in sorted(folder.rglob("*")) if folder.is_dir() else []:
            if path.is_file() and path.name != "events.parquet":
                found[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def hidden(root: Path) -> list[str]:
    folders = [root / "data", root / "configs" / "metadata_configs"]
    return [str(p) for f in folders if f.is_dir() for p in f.iterdir() if p.name.startswith(".")]


def dead_pid() -> int:
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


@pytest.mark.parametrize("failing", ["events-split1", "events.json"], ids=["a-split-folder", "the-metadata"])
def test_a_failed_swap_puts_every_previous_output_back_and_says_so(failing, tmp_path, monkeypatch):
    config = project(tmp_path, merge_output=False)
    before = outputs(tmp_path)
    real_replace = atomic_module.os.replace

    def replace(source, target):
        if Path(target).name == failing and ".previous." not in Path(source).name:  # not when restoring
            raise OSError(errno.EIO, "Input/output error", str(target))
        real_replace(source, target)

    monkeypatch.setattr(atomic_module.os, "replace", replace)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UserError, match="the previous outputs are unchanged") as error:
        run_preprocess(load_preprocess_config(config))
    assert failing in error.value.where
    assert outputs(tmp_path) == before
    assert hidden(tmp_path) == []


def test_a_full_disk_before_staging_begins_leaves_no_staging_and_says_the_outputs_are_unchanged(tmp_path, monkeypatch):
    config = project(tmp_path)
    before = outputs(tmp_path)
    real_mkdir = Path.mkdir

    def full_disk(path, *args, **kwargs):
        if path.name == "outputs" and STAGING_NAME in path.parent.name:  # the staging folder itself was made
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        real_mkdir(path, *args, **kwargs)

    monkeypatch.setattr(Path, "mkdir", full_disk)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UserError) as error:
        run_preprocess(load_preprocess_config(config))
    assert error.value.where == str(tmp_path / "data")
    assert (
        error.value.problem
        == "cannot stage outputs there (No space left on device); the previous outputs are unchanged"
    )
    assert outputs(tmp_path) == before
    assert hidden(tmp_path) == []


def test_the_metadata_is_staged_beside_its_folder_so_data_may_live_on_another_disk(tmp_path, monkeypatch):
    """A rename between data/ and configs/ fails with EXDEV when data/ is a link to another file system."""
    config = project(tmp_path)
    real_replace = os.replace

    def replace(source, target):
        source_disk = Path(source).resolve().relative_to(tmp_path).parts[0]
        if source_disk != Path(target).resolve().relative_to(tmp_path).parts[0]:
            raise OSError(errno.EXDEV, "Invalid cross-device link", str(source))
        real_replace(source, target)

    monkeypatch.setattr(os, "replace", replace)
    monkeypatch.chdir(tmp_path)
    run_preprocess(load_preprocess_config(config))
    assert load_preprocess_config(config) and (tmp_path / "configs" / "metadata_configs" / "events.json").is_file()
    assert hidden(tmp_path) == []


@pytest.mark.skipif(
    not Path("/dev/shm").is_dir() or os.stat("/dev/shm").st_dev == os.stat(ROOT).st_dev,
    reason="needs /dev/shm on another file system",
)
def test_a_data_folder_linked_to_another_file_system(tmp_path, monkeypatch):
    config = project(tmp_path)
    scratch = Path("/dev/shm") / f"sequifier-test-{os.getpid()}"
    shutil.move(tmp_path / "data", scratch)
    try:
        (tmp_path / "data").symlink_to(scratch)
        monkeypatch.chdir(tmp_path)
        run_preprocess(load_preprocess_config(config))
        assert (scratch / "events-split0.parquet").is_file() and hidden(tmp_path) == []
    finally:
        shutil.rmtree(scratch)


def test_an_unwritable_metadata_folder_fails_before_any_work_and_keeps_the_splits(tmp_path, monkeypatch):
    config = project(tmp_path, selected_columns=["event"])
    before = {k: v for k, v in outputs(tmp_path).items() if k.startswith("data")}
    metadata_folder = tmp_path / "configs" / "metadata_configs"
    for path in metadata_folder.iterdir():
        path.unlink()
    metadata_folder.rmdir()
    metadata_folder.write_text("a file where the folder should be")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UserError) as error:
        run_preprocess(load_preprocess_config(config))
    assert "metadata_configs" in error.value.where
    assert outputs(tmp_path) == before
    assert hidden(tmp_path) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="permissions do not bind root")
def test_a_read_only_metadata_folder_keeps_the_splits(tmp_path, monkeypatch):
    config = project(tmp_path, selected_columns=["event"])
    before = outputs(tmp_path)
    metadata_folder = tmp_path / "configs" / "metadata_configs"
    metadata_folder.chmod(0o500)
    try:
        monkeypatch.chdir(tmp_path)
        with pytest.raises(UserError, match="the previous outputs are unchanged"):
            run_preprocess(load_preprocess_config(config))
        assert outputs(tmp_path) == before
    finally:
        metadata_folder.chmod(0o700)


def test_an_immutable_metadata_folder_names_the_metadata_file_not_the_temp_staged_beside_it(tmp_path, monkeypatch):
    config = project(tmp_path, selected_columns=["event"])
    before = outputs(tmp_path)
    metadata_folder = tmp_path / "configs" / "metadata_configs"
    if subprocess.run(["chattr", "+i", str(metadata_folder)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not allowed here")
    try:
        monkeypatch.chdir(tmp_path)
        with pytest.raises(UserError) as error:
            run_preprocess(load_preprocess_config(config))
    finally:
        subprocess.run(["chattr", "-i", str(metadata_folder)], check=True)
    assert error.value.where == str(metadata_folder / "events.json")
    assert error.value.problem == "Operation not permitted; the previous outputs are unchanged"
    assert outputs(tmp_path) == before and hidden(tmp_path) == []


def test_staging_of_dead_processes_is_removed_and_of_live_or_foreign_ones_kept(tmp_path, monkeypatch):
    config = project(tmp_path)
    host = socket.gethostname()
    dead = tmp_path / "data" / f".{STAGING_NAME}.{host}.{dead_pid()}.abc123.tmp"
    live = tmp_path / "data" / f".{STAGING_NAME}.{host}.1.abc123.tmp"
    foreign = tmp_path / "data" / f".{STAGING_NAME}.elsewhere.{dead_pid()}.abc123.tmp"
    dead_metadata = tmp_path / "configs" / "metadata_configs" / f".events.json.{host}.{dead_pid()}.abc123.tmp"
    for folder in (dead / "spill", live, foreign):
        folder.mkdir(parents=True)
    (dead / "spill" / "group-0.arrow").write_bytes(b"0" * 1000)
    dead_metadata.write_text("{}")
    monkeypatch.chdir(tmp_path)
    run_preprocess(load_preprocess_config(config))
    assert sorted(Path(p).name for p in hidden(tmp_path)) == sorted([live.name, foreign.name])


def _killed_run(root: Path, script: str) -> None:
    """Run preprocess in a child that SIGKILLs itself where `script` (patching sequifier) says."""
    program = textwrap.dedent(script) + textwrap.dedent(
        f"""
        from sequifier.config.preprocess import load_preprocess_config
        from sequifier.preprocess import run_preprocess
        run_preprocess(load_preprocess_config({CONFIG!r}))
        """
    )
    result = subprocess.run([sys.executable, "-c", program], cwd=root, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert result.returncode == -signal.SIGKILL


def test_a_run_killed_in_the_middle_of_the_swap_is_rolled_back_by_the_next_run(tmp_path):
    project(tmp_path, merge_output=False)
    before = outputs(tmp_path)
    _killed_run(tmp_path, KILLED_IN_THE_SWAP)
    assert outputs(tmp_path) != before  # two of four outputs were swapped in, two wait as backups
    Staging(tmp_path / "data", tmp_path / METADATA_FOLDER).remove()  # what every run does first
    assert outputs(tmp_path) == before
    assert hidden(tmp_path) == []


@pytest.mark.parametrize("relocation", ["copied", "moved"])
def test_a_killed_run_s_project_copied_or_moved_is_repaired_where_it_is_and_nowhere_else(relocation, tmp_path):
    original = tmp_path / "original"
    project(original, merge_output=False)
    before = outputs(original)
    _killed_run(original, KILLED_IN_THE_SWAP)
    killed = outputs(original)
    elsewhere = tmp_path / "elsewhere"
    if relocation == "copied":
        shutil.copytree(original, elsewhere, symlinks=True)
    else:
        original.rename(elsewhere)
    Staging(elsewhere / "data", elsewhere / METADATA_FOLDER).remove()
    assert outputs(elsewhere) == before and hidden(elsewhere) == []
    if relocation == "copied":
        assert outputs(original) == killed  # the other copy is left to its own next run


@pytest.mark.parametrize("form", ["absolute", "climbing out", "the input beside the splits"])
def test_a_killed_run_s_record_naming_files_that_are_no_outputs_is_not_applied(form, tmp_path, capsys):
    """A record copied in from elsewhere, or edited, would roll back or delete files that are not this run's."""
    victim = tmp_path / "victim"
    project(victim, merge_output=False)
    here = tmp_path / "here"
    project(here, merge_output=False)
    kept = {**outputs(victim), **outputs(here)}
    record_folder = (here / "data" / f".{STAGING_NAME}.{atomic_module._host()}.{dead_pid()}.abcd.tmp").resolve()
    record_folder.mkdir()
    target = (victim / "data" / "events-split0").resolve()
    if form == "the input beside the splits":
        target = (here / "data" / "events.parquet").resolve()
    staged = target.parent / ".preprocess.gone.tmp" / target.name
    backup = target.with_name(f".{target.name}.previous.{socket.gethostname()}.{dead_pid()}.ab12.tmp")
    move = {"staged": str(staged), "target": str(target), "backup": str(backup)}
    if form != "absolute":
        move = {key: os.path.relpath(value, record_folder) for key, value in move.items()}
    record = {"host": socket.gethostname(), "pid": dead_pid(), "committed": False, "beside": [], "moves": [move]}
    (record_folder / "run.json").write_text(json.dumps(record))
    Staging(here / "data", here / METADATA_FOLDER).remove()
    assert {**outputs(victim), **outputs(here)} == kept and (here / "data" / "events.parquet").is_file()
    assert not record_folder.exists()
    assert "which is no output of this project; the record is not applied" in capsys.readouterr().err


def test_a_killed_run_of_another_project_sharing_the_data_folder_leaves_this_project_s_metadata_alone(tmp_path):
    """data/ may be a link to another disk, which two projects can share: the metadata beside each is its own."""
    original = tmp_path / "original"
    project(original, merge_output=False)
    before = outputs(original)
    other = tmp_path / "other"
    shutil.copytree(original / "configs", other / "configs")
    (other / "data").symlink_to(original / "data")
    mine = other / METADATA_FOLDER / "events.json"
    mine.write_text('{"the other project": 1}')
    _killed_run(original, KILLED_IN_THE_SWAP)
    Staging(other / "data", other / METADATA_FOLDER).remove()
    assert mine.read_text() == '{"the other project": 1}'
    shared = {name: digest for name, digest in before.items() if name.startswith("data")}
    assert {name: digest for name, digest in outputs(original).items() if name.startswith("data")} == shared


def test_a_run_killed_after_its_swap_is_finished_by_the_next_run(tmp_path):
    project(tmp_path, merge_output=False)
    _killed_run(
        tmp_path,
        """
        import os, signal
        import sequifier.preprocess.staging as staging
        staging._finish = lambda moves: os.kill(os.getpid(), signal.SIGKILL)
        """,
    )
    swapped = {k: v for k, v in outputs(tmp_path).items() if not any(p.startswith(".") for p in Path(k).parts)}
    Staging(tmp_path / "data", tmp_path / METADATA_FOLDER).remove()
    assert outputs(tmp_path) == swapped
    assert hidden(tmp_path) == []


def test_workers_die_with_their_parent(tmp_path):
    """A parent killed with SIGKILL takes its worker processes with it."""
    pids = tmp_path / "pids"
    program = textwrap.dedent(
        f"""
        import os, time
        from sequifier.preprocess.parallel import run_tasks
        def task(shared, index):
            with open({str(pids)!r}, "a") as handle:
                handle.write(f"{{os.getpid()}}\\n")
            time.sleep(120)
        list(run_tasks(task, None, [0, 1], 2))
        """
    )
    parent = subprocess.Popen([sys.executable, "-c", program], env=dict(os.environ, PYTHONPATH=str(ROOT)))
    deadline = time.time() + 60
    while time.time() < deadline and len(pids.read_text().split() if pids.exists() else []) < 2:
        time.sleep(0.05)
    workers = [int(p) for p in pids.read_text().split()]
    parent.kill()
    parent.wait()
    deadline = time.time() + 10
    while time.time() < deadline and any(Path(f"/proc/{pid}").exists() for pid in workers):
        time.sleep(0.05)
    alive = [pid for pid in workers if _alive(pid)]
    for pid in alive:
        os.kill(pid, signal.SIGKILL)
    assert alive == []


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/stat")
    return not (status.exists() and status.read_text().split()[2] == "Z")


class _StopsWhereExitIsIgnored:
    """Takes a Ctrl-C in a finalizer, where Python ignores the SystemExit the handler raises (as in a generator
    finalized by the garbage collector, or a fork callback)."""

    def __del__(self):
        signal.raise_signal(signal.SIGINT)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_stop_whose_exit_python_ignored_still_keeps_the_previous_outputs(tmp_path, monkeypatch, capsys):
    config = project(tmp_path, merge_output=False)
    before = outputs(tmp_path)
    import sequifier.preprocess.run as run_module

    real_log = run_module.log

    def log(line: str) -> None:
        if line.startswith("split 0:"):  # every split is written, the swap comes next
            _StopsWhereExitIsIgnored()
        real_log(line)

    monkeypatch.setattr(run_module, "log", log)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stop:
        run_preprocess(load_preprocess_config(config))
    assert stop.value.code == 130
    assert "stopped by a signal" in capsys.readouterr().err
    assert outputs(tmp_path) == before
    assert hidden(tmp_path) == []


def test_a_stop_held_back_during_the_swap_says_the_new_outputs_are_in_place(tmp_path, monkeypatch, capsys):
    config = project(tmp_path, merge_output=False)
    before = outputs(tmp_path)
    import sequifier.preprocess.staging as staging_module

    real_replace = staging_module.replace_durably

    def replace_once_stopped(staged: Path, target: Path) -> None:
        os.kill(os.getpid(), signal.SIGTERM)  # held back until every output is swapped in
        real_replace(staged, target)

    monkeypatch.setattr(staging_module, "replace_durably", replace_once_stopped)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stop:
        run_preprocess(load_preprocess_config(config))
    assert stop.value.code == 143
    assert capsys.readouterr().err.splitlines()[-1].endswith("stopped by a signal; the new outputs are in place")
    monkeypatch.setattr(staging_module, "replace_durably", real_replace)
    stopped = outputs(tmp_path)
    assert stopped != before and hidden(tmp_path) == []
    run_preprocess(load_preprocess_config(config))
    assert outputs(tmp_path) == stopped


def test_a_file_output_keeps_its_name_while_the_swap_replaces_it(tmp_path, monkeypatch):
    """A reader opening a split file or the metadata during the swap finds the old or the new one, never nothing."""
    import sequifier.preprocess.staging as staging_module

    config = project(tmp_path)
    present, real = [], staging_module.replace_durably

    def watched(source, target):
        present.append(os.path.exists(target))
        real(source, target)

    monkeypatch.setattr(staging_module, "replace_durably", watched)
    run_preprocess(load_preprocess_config(config))
    assert len(present) == 4 and all(present)  # three splits and the metadata, each replaced in one rename
    assert hidden(tmp_path) == []
