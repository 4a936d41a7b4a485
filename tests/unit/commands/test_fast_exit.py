"""The CLI's exit skips the interpreter's teardown but keeps what a normal exit guarantees."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SCRIPT = """
import atexit, sys, threading, time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from sequifier.fast_exit import run_and_leave

folder = Path(sys.argv[1])
pools = []

def late_writer():
    time.sleep(0.5)
    (folder / "thread.txt").write_text("done")

def main():
    atexit.register(lambda: (folder / "atexit.txt").write_text("ran"))
    threading.Thread(target=late_writer).start()
    pools.append(ThreadPoolExecutor(2))  # held and left running, as torch.compile leaves its compile workers
    pools[0].submit(time.sleep, 0.1)
    for line in range(50_000):
        print(f"line {line}")
    {ending}

run_and_leave(main)
"""


def _run(tmp_path: Path, ending: str, hangup=signal.SIG_DFL) -> subprocess.CompletedProcess:
    """The script in a child that starts with SIGHUP as `hangup` says (ignored under `nohup`), whatever this
    process was started with."""
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(SCRIPT).replace("{ending}", ending))
    return subprocess.run(
        [sys.executable, str(script), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=lambda: signal.signal(signal.SIGHUP, hangup),
    )


@pytest.mark.parametrize(
    ("ending", "code", "message"),
    [
        ("return 3", 3, ""),
        ("return None", 0, ""),
        ("sys.exit(2)", 2, ""),
        ("sys.exit('no such file')", 1, "no such file"),
    ],
)
def test_exit_keeps_the_code_the_output_the_threads_and_atexit(tmp_path, ending, code, message):
    done = _run(tmp_path, ending)
    assert done.returncode == code
    lines = done.stdout.splitlines()
    assert len(lines) == 50_000 and lines[-1] == "line 49999"
    assert message in done.stderr
    assert (tmp_path / "thread.txt").read_text() == "done"
    assert (tmp_path / "atexit.txt").read_text() == "ran"


def test_an_escaping_exception_exits_normally_with_its_traceback(tmp_path):
    done = _run(tmp_path, "raise RuntimeError('unexpected')")
    assert done.returncode == 1
    assert "Traceback" in done.stderr and "RuntimeError: unexpected" in done.stderr
    assert (tmp_path / "atexit.txt").read_text() == "ran"


def test_ctrl_c_that_reaches_the_top_exits_130_with_one_line(tmp_path):
    done = _run(tmp_path, "raise KeyboardInterrupt")
    assert done.returncode == 130
    assert "Traceback" not in done.stderr and "stopped by Ctrl-C" in done.stderr
    assert (tmp_path / "thread.txt").read_text() == "done"
    assert (tmp_path / "atexit.txt").read_text() == "ran"


@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP"])
def test_sigterm_or_a_hangup_that_reaches_the_top_unwinds_the_command_and_exits_with_one_line(tmp_path, name):
    ending = "\n    ".join(
        [
            "import os, signal",
            "try:",
            f"    os.kill(os.getpid(), signal.{name})",
            "    time.sleep(5)",
            "finally:",
            "    (folder / 'cleaned.txt').write_text('yes')",
        ]
    )
    done = _run(tmp_path, ending)
    assert done.returncode == 128 + signal.Signals[name]
    assert "Traceback" not in done.stderr and f"stopped by {name}" in done.stderr
    assert (tmp_path / "cleaned.txt").read_text() == "yes"
    assert (tmp_path / "atexit.txt").read_text() == "ran"


@pytest.mark.parametrize("ending, code", [("return None", 0), ("return 75", 75), ("sys.exit(2)", 2)])
@pytest.mark.parametrize("name", ["SIGTERM", "SIGINT", "SIGHUP"])
def test_a_stop_while_the_process_leaves_ends_it_at_once_with_the_code_it_leaves_with(tmp_path, ending, code, name):
    """torchrun's SIGTERM to a rank whose exit hooks run, or a second Ctrl-C after a graceful stop (exit 75): no
    exception inside a hook, no traceback, and the command's outcome stands."""
    hook = f"atexit.register(lambda: (os.kill(os.getpid(), signal.{name}), time.sleep(5)))"
    done = _run(tmp_path, f"import os, signal; {hook}; {ending}")
    assert done.returncode == code
    assert done.stderr == "" and done.stdout.splitlines()[-1] == "line 49999"


def test_a_memory_error_that_reaches_the_top_is_one_line_and_exit_1(tmp_path):
    done = _run(tmp_path, "raise MemoryError")
    assert done.returncode == 1
    assert "Traceback" not in done.stderr and done.stderr.strip().startswith(
        "error: out of memory: an allocation failed"
    )
    assert (tmp_path / "atexit.txt").read_text() == "ran"


def test_a_command_started_with_hangups_ignored_keeps_ignoring_them(tmp_path):
    done = _run(tmp_path, "import os, signal; os.kill(os.getpid(), signal.SIGHUP); return 0", hangup=signal.SIG_IGN)
    assert done.returncode == 0 and done.stderr == ""


def test_the_command_line_exits_with_the_commands_code(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "sequifier", "train", "--config-path", str(tmp_path / "missing.yaml")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert "missing.yaml" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("stop", "code", "line"),
    [("Terminated(15)", 143, "stopped by SIGTERM"), ("KeyboardInterrupt()", 130, "stopped by Ctrl-C (SIGINT)")],
)
def test_a_stop_that_a_loading_library_turned_into_an_import_error_is_still_a_stop(tmp_path, stop, code, line):
    ending = "\n    ".join(
        [
            "from sequifier.fast_exit import Terminated",
            "try:",
            f"    raise {stop}",
            "except BaseException as signal_arrived:",
            "    raise ImportError('initialization failed') from signal_arrived",
        ]
    )
    done = _run(tmp_path, ending)
    assert done.returncode == code
    assert "Traceback" not in done.stderr and done.stderr.strip() == line


def test_an_import_error_of_no_stop_keeps_its_traceback(tmp_path):
    done = _run(tmp_path, "raise ImportError('no module named nothing')")
    assert done.returncode == 1 and "ImportError: no module named nothing" in done.stderr
