"""Checkpoint files: written whole, read safely; a failed save leaves the earlier ones alone."""

from __future__ import annotations

import errno
import os
import pickle
import subprocess
import sys

import pytest
import torch

import sequifier.training.checkpoint as checkpoint_module
from sequifier.config.errors import UserError
from sequifier.training.checkpoint import LATEST, read_checkpoint, write_checkpoint


def test_a_snapshot_refreshes_latest_and_a_latest_only_checkpoint_keeps_the_snapshots(tmp_path):
    write_checkpoint(tmp_path, "epoch-1.pt", {"weights": torch.ones(3)})
    path = write_checkpoint(tmp_path, "batch-7.pt", {"weights": torch.full((3,), 2.0)})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["batch-7.pt", "epoch-1.pt", LATEST]
    assert path.read_bytes() == (tmp_path / LATEST).read_bytes()
    write_checkpoint(tmp_path, None, {"weights": torch.full((3,), 3.0)})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["batch-7.pt", "epoch-1.pt", LATEST]
    assert torch.equal(read_checkpoint(tmp_path / LATEST)["weights"], torch.full((3,), 3.0))
    assert torch.equal(read_checkpoint(tmp_path / "batch-7.pt")["weights"], torch.full((3,), 2.0))


def test_a_failed_save_keeps_the_earlier_checkpoints_and_leaves_no_temp(tmp_path, monkeypatch):
    write_checkpoint(tmp_path, "epoch-1.pt", {"weights": torch.ones(3)})
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}

    def torn_save(payload, path):
        path.write_bytes(b"half a checkpoint")
        raise OSError("disk full")

    monkeypatch.setattr(checkpoint_module.torch, "save", torn_save)
    with pytest.raises(OSError):
        write_checkpoint(tmp_path, "epoch-2.pt", {"weights": torch.zeros(3)})
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_a_refused_refresh_of_latest_names_the_snapshot_written_and_the_overrides_that_continue_from_it(
    tmp_path, monkeypatch
):
    write_checkpoint(tmp_path, "epoch-1.pt", {"weights": torch.ones(3)})
    earlier_latest = (tmp_path / LATEST).read_bytes()

    def full_disk(source, target):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(target))

    monkeypatch.setattr(checkpoint_module.shutil, "copyfile", full_disk)
    with pytest.raises(UserError) as refused:
        write_checkpoint(tmp_path, "epoch-2.pt", {"weights": torch.zeros(3)})
    snapshot = tmp_path / "epoch-2.pt"
    assert refused.value.where == str(tmp_path / LATEST)
    assert "No space left on device" in refused.value.problem
    advice = refused.value.problem.partition("`sequifier train ")[2].partition("`")[0].split()
    assert advice == ["global_training.resume.policy=required", f"global_training.resume.checkpoint_path={snapshot}"]
    assert torch.equal(read_checkpoint(snapshot)["weights"], torch.zeros(3))
    assert (tmp_path / LATEST).read_bytes() == earlier_latest


def test_a_refused_write_gives_the_systems_reason_without_torchs_internals(tmp_path, monkeypatch):
    def refused_save(payload, path):  # torch's writer reports a refused open as this RuntimeError
        raise RuntimeError(
            "[enforce fail at inline_container.cc:747] . open file failed with strerror: Read-only file system"
        )

    monkeypatch.setattr(checkpoint_module.torch, "save", refused_save)
    with pytest.raises(OSError) as refused:
        write_checkpoint(tmp_path, "epoch-1.pt", {"weights": torch.ones(3)})
    assert (refused.value.errno, refused.value.strerror) == (errno.EROFS, "Read-only file system")
    assert refused.value.filename == str(tmp_path / "epoch-1.pt") and "enforce" not in str(refused.value)


def test_a_write_beyond_the_file_size_limit_names_the_limit(tmp_path):
    """torch's writer reports it as an iostream error, without the system's reason."""
    script = (
        "import resource, sys, torch\n"
        "from pathlib import Path\n"
        "from sequifier.training.checkpoint import write_checkpoint\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (65536, resource.RLIM_INFINITY))\n"
        "try:\n"
        "    write_checkpoint(Path(sys.argv[1]), 'epoch-1.pt', {'weights': torch.ones(100_000)})\n"
        "except OSError as error:\n"
        "    print(error.errno, error.filename, error.strerror, sep='|')\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, timeout=120)
    number, filename, reason = done.stdout.strip().split("|")
    assert (int(number), filename) == (errno.EFBIG, str(tmp_path / "epoch-1.pt"))
    assert reason == "File too large for this process's file-size limit (`ulimit -f`) of 65536 bytes"
    assert list(tmp_path.iterdir()) == []


class RunsCode:
    def __reduce__(self):
        return (exec, ("open(__import__('os').environ['SEQUIFIER_MARKER'], 'w').write('ran')",))


def test_a_checkpoint_that_would_run_code_is_refused_and_the_code_does_not_run(tmp_path, monkeypatch):
    marker = tmp_path / "marker"
    monkeypatch.setenv("SEQUIFIER_MARKER", str(marker))
    path = tmp_path / LATEST
    with path.open("wb") as file:
        pickle.dump({"format": "sequifier_checkpoint", "version": 1, "payload": RunsCode()}, file)
    torch.save({"format": "sequifier_checkpoint", "version": 1, "payload": RunsCode()}, tmp_path / "saved.pt")
    for candidate in (path, tmp_path / "saved.pt"):
        with pytest.raises(UserError, match="refused|not a readable checkpoint"):
            read_checkpoint(candidate)
    assert not marker.exists()


def test_other_formats_and_versions_are_refused_whole(tmp_path):
    torch.save({"weights": torch.ones(2)}, tmp_path / "other.pt")
    with pytest.raises(UserError, match="not a sequifier checkpoint"):
        read_checkpoint(tmp_path / "other.pt")
    torch.save({"format": "sequifier_checkpoint", "version": 99}, tmp_path / "future.pt")
    with pytest.raises(UserError, match="version 99 cannot be resumed"):
        read_checkpoint(tmp_path / "future.pt")
    (tmp_path / "torn.pt").write_bytes(b"PK\x03\x04 torn")
    with pytest.raises(UserError, match="not a readable checkpoint"):
        read_checkpoint(tmp_path / "torn.pt")


def test_a_checkpoint_damaged_where_it_still_unpickles_is_refused(tmp_path):
    state = {"weights": torch.ones(4), "optimizer": {"state": {0: {"step": torch.tensor(3.0)}}, "lr": 0.1}}
    path = write_checkpoint(tmp_path, "epoch-1.pt", state)
    assert torch.equal(read_checkpoint(path)["optimizer"]["state"][0]["step"], torch.tensor(3.0))
    payload = torch.load(path, weights_only=True)
    payload["optimizer"]["state"][0]["step"] = torch.tensor(9.5e14)  # as bytes overwritten inside a tensor read
    torch.save(payload, path)
    with pytest.raises(UserError, match="damaged: its contents differ from the digest") as caught:
        read_checkpoint(path)
    assert caught.value.where == str(path)


def test_a_checkpoint_without_a_digest_is_read_as_before(tmp_path):
    torch.save({"format": "sequifier_checkpoint", "version": 1, "weights": torch.ones(2)}, tmp_path / "old.pt")
    assert torch.equal(read_checkpoint(tmp_path / "old.pt")["weights"], torch.ones(2))


def test_a_file_that_is_no_pickle_is_refused_without_torchs_advice_to_load_it_unsafely(tmp_path):
    (tmp_path / "split.parquet").write_bytes(b"PAR1" + bytes(range(256)) * 4 + b"PAR1")
    with pytest.raises(UserError, match="not a readable checkpoint") as caught:
        read_checkpoint(tmp_path / "split.parquet")
    assert "weights_only` set to `False" not in str(caught.value) and "False" not in str(caught.value)


def test_an_empty_or_cut_checkpoint_says_what_is_wrong(tmp_path):
    (tmp_path / "empty.pt").write_bytes(b"")
    with pytest.raises(UserError, match=r"not a readable checkpoint: the file is empty \(0 bytes\)"):
        read_checkpoint(tmp_path / "empty.pt")
    torch.save({"weights": torch.ones(64)}, tmp_path / "whole.pt")
    (tmp_path / "cut.pt").write_bytes((tmp_path / "whole.pt").read_bytes()[:40])
    with pytest.raises(UserError, match=r"not a readable checkpoint: the archive is cut short or damaged"):
        read_checkpoint(tmp_path / "cut.pt")
