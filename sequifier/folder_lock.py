"""Locks (flock) that commands take on folders, released by the kernel however their process ends; where the file
system has no such locks (flock as NFS emulates it may refuse), commands go unlocked."""

from __future__ import annotations

import fcntl


def locked_at_once(descriptor: int, mode: int) -> bool:
    """Take `mode` (fcntl.LOCK_EX or LOCK_SH) on the open folder `descriptor` without waiting: False where another
    process holds a lock in the way; True where it is taken, or where the file system takes none."""
    try:
        fcntl.flock(descriptor, mode | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError:
        pass
    return True
