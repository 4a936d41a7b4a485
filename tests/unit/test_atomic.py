"""The atomic writer: a target holds its old or its complete new content, whatever happens to the writer."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from sequifier.atomic import atomic_path, remove_stale_temps, temp_path_for, write_bytes_atomic, write_text_atomic
from sequifier.preprocess.staging import STAGING_NAME, Staging

REPO_ROOT = Path(__file__).resolve().parents[2]
OLD = b"old content\n" * 1000
NEW = b"new content\n" * 1000

# Writes a first chunk of the target's temp, reports the temp path, then waits (mid-write) until killed.
KILLED_MID_WRITE = """
    import sys
    from pathlib import Path
    from sequifier.atomic import atomic_path

    with atomic_path(Path(sys.argv[1])) as temporary, open(temporary, "wb") as handle:
        handle.write(b"x" * (8 << 20))
        handle.flush()
        print(temporary, flush=True)
        sys.stdin.read()
        handle.write(b"x" * (8 << 20))
"""

# Rewrites the target forever with files of one repeated byte, reporting each completed write.
REWRITING_FOREVER = """
    import sys
    from pathlib import Path
    from sequifier.atomic import write_bytes_atomic

    count = 0
    while True:
        write_bytes_atomic(Path(sys.argv[1]), bytes([count % 256]) * (4 << 20))
        count += 1
        print(count, flush=True)
"""


def start_writer(script: str, target: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(script), str(target)],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def kill(process: subprocess.Popen) -> None:
    process.send_signal(signal.SIGKILL)
    process.wait()  # reaped, so its pid no longer exists
    process.stdin.close()
    process.stdout.close()


def dead_pid() -> int:
    finished = subprocess.Popen([sys.executable, "-c", "pass"])
    finished.wait()
    return finished.pid


def names_in(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_success_replaces_the_content(tmp_path):
    target = tmp_path / "file.bin"
    target.write_bytes(OLD)
    write_bytes_atomic(target, NEW)
    assert target.read_bytes() == NEW
    assert names_in(tmp_path) == ["file.bin"]


def test_text_is_written_as_utf8_into_missing_folders(tmp_path):
    target = tmp_path / "a" / "b" / "meta.json"
    write_text_atomic(target, '{"name": "café"}')
    assert target.read_bytes() == '{"name": "café"}'.encode("utf-8")


def test_writers_that_need_a_path_replace_the_target(tmp_path):
    target = tmp_path / "model.onnx"
    target.write_bytes(OLD)
    with atomic_path(target) as temporary:
        assert temporary.parent == tmp_path and temporary.name.startswith(".model.onnx.")
        temporary.write_bytes(NEW)
        assert target.read_bytes() == OLD
    assert target.read_bytes() == NEW
    assert names_in(tmp_path) == ["model.onnx"]


@pytest.mark.parametrize(
    "failure", [RuntimeError("writer failed"), KeyboardInterrupt()], ids=["exception", "interrupt"]
)
def test_a_failing_writer_keeps_the_old_file_and_removes_its_temp(failure, tmp_path):
    target = tmp_path / "file.bin"
    target.write_bytes(OLD)
    with pytest.raises(type(failure)):
        with atomic_path(target) as temporary:
            temporary.write_bytes(NEW[: len(NEW) // 2])
            raise failure
    assert target.read_bytes() == OLD
    assert names_in(tmp_path) == ["file.bin"]


def test_a_writer_killed_mid_write_leaves_the_old_file_and_the_next_write_removes_its_temp(tmp_path):
    target = tmp_path / "file.bin"
    target.write_bytes(OLD)
    writer = start_writer(KILLED_MID_WRITE, target)
    try:
        temporary = Path(writer.stdout.readline().strip())
        assert temporary.stat().st_size >= 8 << 20  # it is writing
    finally:
        kill(writer)
    assert target.read_bytes() == OLD
    assert names_in(tmp_path) == sorted(["file.bin", temporary.name])
    write_bytes_atomic(target, NEW)
    assert target.read_bytes() == NEW
    assert names_in(tmp_path) == ["file.bin"]


def test_a_writer_killed_at_any_moment_leaves_a_complete_file(tmp_path):
    target = tmp_path / "file.bin"
    writer = start_writer(REWRITING_FOREVER, target)
    try:
        for _ in range(3):
            assert writer.stdout.readline()
    finally:
        kill(writer)
    content = target.read_bytes()
    assert len(content) == 4 << 20 and content == content[:1] * len(content)
    write_bytes_atomic(target, NEW)
    assert names_in(tmp_path) == ["file.bin"]


def test_only_temps_of_dead_processes_of_this_target_are_removed(tmp_path):
    target = tmp_path / "file.bin"
    own = temp_path_for(target)
    dead = own.with_name(own.name.replace(f".{os.getpid()}.", f".{dead_pid()}."))
    other_host = dead.with_name(dead.name.replace(".file.bin.", ".file.bin.elsewhere-", 1))
    other_target = dead.with_name(dead.name.replace(".file.bin.", ".file.bin.old.", 1))
    for path in (own, dead, other_host, other_target):
        path.write_bytes(OLD)
    write_bytes_atomic(target, NEW)
    assert names_in(tmp_path) == sorted(p.name for p in (target, own, other_host, other_target))


def test_a_staging_folder_of_a_dead_run_is_removed_by_the_next_run(tmp_path):
    own = temp_path_for(tmp_path / STAGING_NAME)
    stale = own.with_name(own.name.replace(f".{os.getpid()}.", f".{dead_pid()}."))
    (stale / "outputs").mkdir(parents=True)
    (stale / "outputs" / "shard.pt").write_bytes(OLD)
    staging = Staging(tmp_path, tmp_path / "metadata_configs")
    assert names_in(tmp_path) == [staging.root.name]
    staging.remove()
    assert names_in(tmp_path) == []


def test_stale_temps_of_a_missing_folder_are_nothing_to_remove(tmp_path):
    remove_stale_temps(tmp_path / "missing" / "file.bin")
    assert names_in(tmp_path) == []


def test_a_file_system_error_names_the_target_even_when_the_temp_cannot_be_removed(tmp_path, monkeypatch):
    """On a read-only file system unlink fails with EROFS even where nothing exists: the write's error, naming
    the file written (not its temp), is the one raised."""
    target = tmp_path / "result.json"
    real_unlink = Path.unlink

    def read_only_unlink(path, missing_ok=False):
        if path.name.endswith(".tmp"):
            raise OSError(30, "Read-only file system", str(path))
        return real_unlink(path, missing_ok)

    monkeypatch.setattr(Path, "unlink", read_only_unlink)
    with pytest.raises(OSError) as caught:
        with atomic_path(target) as temporary:
            temporary.write_bytes(b"{}")
            raise OSError(28, "No space left on device", str(temporary))
    assert (caught.value.errno, caught.value.filename) == (28, str(target))


def test_a_name_of_up_to_255_bytes_can_be_written_and_its_stale_temps_are_found(tmp_path):
    target = tmp_path / ("é" * 120 + "-last-2.onnx")
    assert len(target.name.encode()) == 252
    stale = temp_path_for(target)
    stale = stale.with_name(stale.name.replace(f".{os.getpid()}.", f".{dead_pid()}."))
    stale.write_bytes(OLD)
    write_bytes_atomic(target, NEW)
    assert target.read_bytes() == NEW and names_in(tmp_path) == [target.name]
