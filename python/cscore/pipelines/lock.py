"""An exclusive lock on an output of :func:`cscore.decode_file`: :class:`OutputLock`.

The lock is a small JSON file beside the output (``<output>.cscore-lock``)
holding the owner's pid, host, process start time, the time it was taken and a
random token.  It is created atomically (``O_CREAT | O_EXCL``), so of two runs
only one gets it; the other is refused with a message naming the holder.

A lock left by a process that died (SIGKILL, power loss) is *stale* when it was
taken on this host and its pid is no longer running (or now belongs to a process
started at another time).  A stale lock is taken over safely: under an advisory
``flock`` on the folder (held for a few milliseconds, released by the kernel if
its holder dies), the file is removed only if it still holds the very content
that was judged stale, and the new lock is then created with ``O_EXCL`` again.
A lock taken on another host is never broken: its liveness cannot be checked.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import socket
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import Any

__all__ = ["LOCK_SUFFIX", "OutputLock", "lock_holder", "lock_path"]

#: Appended to the output's name to make the lock file's name (beside the output).
LOCK_SUFFIX = ".cscore-lock"

#: An unreadable (empty, half-written) lock file older than this many seconds
#: belongs to a creator that died between creating and writing it.
_UNREADABLE_GRACE_S = 10.0


def lock_path(output: str | os.PathLike[str]) -> Path:
    """The lock file of ``output``: ``<output>.cscore-lock`` in the same folder.

    Parameters
    ----------
    output : path
        The output of a decode run.

    Returns
    -------
    pathlib.Path
    """
    out = Path(os.path.abspath(os.fspath(output)))
    return out.with_name(out.name + LOCK_SUFFIX)


def _pid(value: Any) -> int:
    """A lock file's pid: an integer in [1, 2**31); ValueError otherwise (damaged)."""
    if not isinstance(value, int) or isinstance(value, bool) or not 0 < value < 2**31:
        raise ValueError(f"not a process id: {value!r}")
    return value


def _start_time(pid: int) -> str | None:
    """The start time of process ``pid`` in clock ticks since boot (Linux), else None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2 :].split()
    return fields[19] if len(fields) > 19 else None


def _pid_running(pid: int, start: Any) -> bool:
    """Whether ``pid`` runs and (where known) was started at ``start``."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: it runs, under another user
        return True
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
        if stat[stat.rfind(")") + 2 :].split()[:1] == ["Z"]:
            return False  # a zombie: dead, not yet reaped
    except OSError:
        pass
    now = _start_time(pid)
    return not (isinstance(start, str) and now is not None and now != start)


@contextlib.contextmanager
def _folder_guard(folder: Path) -> Iterator[None]:
    """An exclusive ``flock`` on ``folder`` (no-op where flock is unavailable)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the flock


class OutputLock:
    """Exclusive lock on a decode output, as a context manager.

    Parameters
    ----------
    output : path
        The output the run writes; the lock file is :func:`lock_path` of it.

    Raises
    ------
    ValueError
        On entering, when another live run holds the lock (the message names
        its pid, host and start time, and the lock file to delete if that run
        is known to be gone).
    """

    def __init__(self, output: str | os.PathLike[str]) -> None:
        self.path = lock_path(output)
        self.output = Path(output)
        self.token = secrets.token_hex(16)
        self.held = False

    def _content(self) -> dict[str, Any]:
        pid = os.getpid()
        return {
            "cscore_lock": 1,
            "pid": pid,
            "host": socket.gethostname(),
            "start": _start_time(pid),
            "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "output": str(self.output),
            "token": self.token,
        }

    def _create(self) -> bool:
        try:
            fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            return False
        try:
            os.write(fd, json.dumps(self._content()).encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        return True

    def _read(self) -> tuple[bytes, int, float] | None:
        """(content, inode, mtime) of the lock file, or None when there is none.

        Opened without blocking (a FIFO at the lock's path would wait for a
        writer for ever); anything but a regular file is refused.
        """
        try:
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise ValueError(f"lock file {self.path} cannot be read ({exc.strerror})") from None
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise ValueError(
                    f"lock path {self.path} is not a regular file; remove it (cscore "
                    "creates its lock files itself)"
                )
            return f.read(65536), st.st_ino, st.st_mtime

    def _state(self, seen: tuple[bytes, int, float]) -> tuple[str, str]:
        """``("live" | "stale" | "young", holder)`` of the lock file content ``seen``.

        "young": unreadable but recent (its creator is writing it).
        """
        try:
            holder = json.loads(seen[0])
            pid, host = _pid(holder["pid"]), str(holder["host"])
        except (ValueError, TypeError, KeyError, RecursionError):
            if time.time() - seen[2] > _UNREADABLE_GRACE_S:
                return "stale", "an unreadable lock file"
            return "young", "a lock file being written"
        who = f"pid {pid} on host {host!r} (since {holder.get('time', '?')})"
        if host != socket.gethostname() or _pid_running(pid, holder.get("start")):
            return "live", who
        return "stale", who

    def acquire(self) -> None:
        """Take the lock, taking over a stale one; refuse a live holder."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        who = "?"
        for _ in range(200):
            if self._create():
                self.held = True
                return
            seen = self._read()
            if seen is None:
                continue  # released meanwhile: try again
            state, who = self._state(seen)
            if state == "young":
                time.sleep(0.005)
                continue
            if state == "live":
                raise ValueError(
                    f"output {self.output} is in use by another cscore decode run: {who} "
                    f"holds its lock {self.path}; wait for it to finish (if that run is "
                    "known to be gone, delete the lock file)"
                )
            with _folder_guard(self.path.parent):
                now = self._read()
                if now == seen:  # still the very lock judged stale
                    self.path.unlink()
        raise ValueError(f"could not take the lock {self.path} ({who} keeps it)")

    def release(self) -> None:
        """Remove the lock file if it is still this lock's."""
        if not self.held:
            return
        self.held = False
        seen = self._read()
        if seen is None:
            return
        try:
            mine = json.loads(seen[0]).get("token") == self.token
        except (ValueError, AttributeError, RecursionError):
            mine = False
        if mine:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()

    def __enter__(self) -> OutputLock:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


def lock_holder(output: str | os.PathLike[str]) -> str | None:
    """Who holds the lock of ``output``, if a live run does.

    Parameters
    ----------
    output : path
        The output of a decode run.

    Returns
    -------
    str or None
        A description of the holder (pid, host, time); None when the output is
        not locked or its lock is stale.
    """
    lk = OutputLock(output)
    seen = lk._read()
    if seen is None:
        return None
    state, who = lk._state(seen)
    return None if state == "stale" else who
