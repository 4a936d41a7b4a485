"""Standard streams that outlive their reader: what is written to a closed or broken stdout/stderr is dropped,
and the command's work goes on.

A stream closed before the process started (`>&-`) is opened on /dev/null, so that no file the command opens
takes its descriptor. A stream whose reader went away (`| head -1`, a `tee` that died) raises BrokenPipeError
on the next write; the first such write points the descriptor at /dev/null and is written again there, so
that this write, every later one (child processes and libraries included) and the final flush succeed.
"""

from __future__ import annotations

import errno
import os
import sys
from typing import Any, TextIO

STREAMS = (("stdin", 0), ("stdout", 1), ("stderr", 2))


def keep_streams_writable() -> None:
    """Call first thing in a process: descriptors 0-2 open, sys.stdout and sys.stderr forgiving."""
    for _, descriptor in STREAMS:
        try:
            os.fstat(descriptor)
        except OSError:
            _point_at_null(descriptor)
    for name, descriptor in STREAMS[1:]:
        stream = getattr(sys, name)
        if stream is None:  # Python found the descriptor closed at start
            stream = open(descriptor, "w", encoding="utf-8", errors="backslashreplace", closefd=False)
        if not isinstance(stream, _Forgiving):
            setattr(sys, name, _Forgiving(stream))


def _point_at_null(descriptor: int) -> None:
    null = os.open(os.devnull, os.O_RDWR)
    if null != descriptor:
        os.dup2(null, descriptor)
        os.close(null)


def _gone(error: BaseException) -> bool:
    return isinstance(error, OSError) and error.errno in (errno.EPIPE, errno.EBADF)


class _Forgiving:
    """A text stream whose writes and flushes survive the loss of its reader."""

    def __init__(self, stream: TextIO):
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except OSError as error:
            if not _gone(error):
                raise
            self._to_null()
            return self._stream.write(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as error:
            if not _gone(error):
                raise
            self._to_null()
            self._stream.flush()

    def _to_null(self) -> None:
        try:
            _point_at_null(self._stream.fileno())
        except (OSError, ValueError):
            self._stream = open(os.devnull, "w", encoding="utf-8")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)
