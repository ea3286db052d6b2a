"""Per-run leases: an exclusive ``flock`` on a lock file, so one process computes a run.

Why ``flock``: the kernel drops the lock when its holder dies (even by SIGKILL), so a
killed sweep never leaves a lease that blocks the next one; there is no stale-lock
timeout to guess. The lock file is removed on release; a waiter that wakes up holding
the lock of a file that was removed meanwhile retries on the new file (checked by inode),
so removal never lets two processes hold the same lease.

Leases are re-entrant within one thread (the store's corruption check takes the lease of
a run that :func:`dpdl_core.runs.runner.run` may already hold) and exclusive between threads
and processes. ``flock`` needs a local file system or one that supports it (NFSv4 does);
this module is POSIX-only, like the rest of the multi-process machinery.
"""
from __future__ import annotations

import errno
import fcntl
import os
import socket
import threading
import warnings
from pathlib import Path

__all__ = ["Lease", "LeaseWaitWarning"]

# (lock path, thread id) -> [fd, depth]: leases this process holds, for re-entrancy.
_HELD: dict[tuple[str, int], list[int]] = {}
_HELD_GUARD = threading.Lock()


class LeaseWaitWarning(UserWarning):
    """A run is leased by another process; this one waits for it."""


class Lease:
    """Exclusive lease on a lock file, usable as a context manager.

    Parameters
    ----------
    path : path
        The lock file (created when the lease is taken, removed when it is released).
    what : str
        Names the leased thing in the message printed while waiting.
    """

    def __init__(self, path: str | Path, what: str = "run"):
        self.path = Path(path)
        self.what = what
        self._key = (os.fspath(self.path), threading.get_ident())

    def acquire(self, blocking: bool = True) -> bool:
        """Take the lease; wait for its holder when ``blocking``, else return False if held."""
        with _HELD_GUARD:
            held = _HELD.get(self._key)
            if held is not None:
                held[1] += 1
                return True
        self.path.parent.mkdir(parents=True, exist_ok=True)
        warned = False
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError as exc:
                    if exc.errno not in (errno.EAGAIN, errno.EACCES):
                        raise
                    if not blocking:
                        os.close(fd)
                        return False
                    if not warned:
                        warnings.warn(f"{self.what} is being computed by {self._holder(fd)}; waiting for it "
                                      f"(lock {self.path})", LeaseWaitWarning, stacklevel=3)
                        warned = True
                    fcntl.flock(fd, fcntl.LOCK_EX)
                # The holder we waited for removes the file on release: our lock is then on
                # an orphaned inode that a newcomer would not see, so start over.
                try:
                    same = os.stat(self.path).st_ino == os.fstat(fd).st_ino
                except FileNotFoundError:
                    same = False
                if same:
                    break
                os.close(fd)
            except BaseException:
                os.close(fd)
                raise
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {os.getpid()} on {socket.gethostname()}\n".encode())
        with _HELD_GUARD:
            _HELD[self._key] = [fd, 1]
        return True

    def release(self) -> None:
        """Drop one level of the lease; the last one removes the lock file and unlocks it."""
        with _HELD_GUARD:
            held = _HELD[self._key]
            held[1] -= 1
            if held[1]:
                return
            del _HELD[self._key]
        # Unlink while still locked, so nobody can lock this inode and believe it is current.
        self.path.unlink(missing_ok=True)
        os.close(held[0])

    @staticmethod
    def _holder(fd: int) -> str:
        text = os.pread(fd, 200, 0).decode(errors="replace").strip()
        return text or "another process"

    def __enter__(self) -> Lease:
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()
