"""One run at a time per state directory, and nothing left running by a run that was killed.

``<state>/run.lock`` is held (``flock``) by the ``commcheck run`` that uses the state directory;
it holds that run's pid, start time and run id. A second run started meanwhile refuses at once,
naming the first (two runs would share ReFrame's stage directories and results database). The
lock dies with its process, so a run killed outright (SIGKILL, a CI runner's hard timeout) leaves
a record without a holder: the next run takes the lock over, says so, and ends what the dead run
left running. Those leftovers are found by the run id: commcheck starts ReFrame with
``COMMCHECK_RUN_ID=<id>`` in its environment, which ReFrame's build and run jobs (each in a
session of its own) and everything they start inherit; every process of this user whose
environment carries the id is sent SIGTERM, then SIGKILL, by process group.
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import json
import os
import signal
import time
import uuid
from pathlib import Path

from commcheck.errors import UserError

RUN_ID = 'COMMCHECK_RUN_ID'
GRACE = 5.0     #: seconds between SIGTERM and SIGKILL to leftovers


class RunLock:
    """The state directory's run lock (see the module docstring)."""

    def __init__(self, state_dir: Path):
        self.state_dir = Path(state_dir)
        self.path = self.state_dir / 'run.lock'
        self.fd: int | None = None
        self.run_id = uuid.uuid4().hex
        self.previous: dict | None = None

    def _read(self) -> dict | None:
        try:
            text = os.pread(self.fd, 4096, 0).decode('utf-8', 'replace')
            return json.loads(text) if text.strip() else None
        except (OSError, ValueError):
            return None

    def acquire(self, argv: list[str]) -> None:
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = self._read() or {}
            os.close(self.fd)
            self.fd = None
            raise UserError(
                f'another commcheck run (pid {holder.get("pid", "?")}, started '
                f'{holder.get("started", "?")}) is using {self.state_dir} ({self.path} is '
                f'locked): wait for it, or give this run its own COMMCHECK_STATE and '
                f'COMMCHECK_REPORTS') from None
        self.previous = self._read()
        self.write({'pid': os.getpid(), 'started': _now(), 'run_id': self.run_id,
                    'argv': argv})

    def write(self, record: dict) -> None:
        data = json.dumps(record).encode()
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, data, 0)

    def update(self, **fields) -> None:
        record = self._read() or {}
        record.update(fields)
        self.write(record)

    def release(self) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self.fd, 0)        # empty: nobody left anything behind
            os.close(self.fd)
            self.fd = None


def _now() -> str:
    return datetime.datetime.now().astimezone().isoformat(timespec='seconds')


def processes_of(run_id: str) -> list[int]:
    """Pids of this user's processes whose environment carries ``COMMCHECK_RUN_ID=run_id``."""
    marker = f'{RUN_ID}={run_id}'.encode()
    found, me = [], os.getpid()
    for entry in Path('/proc').iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            environ = (entry / 'environ').read_bytes()
        except OSError:
            continue
        if marker in environ.split(b'\0'):
            found.append(int(entry.name))
    return found


INTERPRETERS = ('bash', 'sh', 'python', 'python3')


def _command(pid: int) -> str:
    """The program's name (a script's, not its interpreter's)."""
    try:
        words = Path(f'/proc/{pid}/cmdline').read_bytes().decode(errors='replace').split('\0')
    except OSError:
        return '?'
    names = [os.path.basename(w) for w in words if w and not w.startswith('-')]
    if len(names) > 1 and names[0] in INTERPRETERS:
        return names[1]
    return names[0] if names else '?'


def _signal_all(pids: list[int], sig: int) -> None:
    groups = set()
    for pid in pids:
        with contextlib.suppress(OSError):
            groups.add(os.getpgid(pid))
    groups.discard(os.getpgrp())
    for group in groups:
        with contextlib.suppress(OSError):
            os.killpg(group, sig)
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, sig)


def end_processes(run_id: str) -> list[str]:
    """End every process of the run ``run_id`` (SIGTERM, then SIGKILL after a grace period);
    'name (pid)' of each one found."""
    pids = processes_of(run_id)
    if not pids:
        return []
    names = [f'{_command(pid)} ({pid})' for pid in pids]
    _signal_all(pids, signal.SIGTERM)
    deadline = time.monotonic() + GRACE
    while time.monotonic() < deadline:
        left = processes_of(run_id)
        if not left:
            return names
        time.sleep(0.2)
    _signal_all(processes_of(run_id), signal.SIGKILL)
    time.sleep(0.2)
    return names


def clean_after_dead_run(lock: RunLock) -> str | None:
    """What the run that held the lock before, and died holding it, left; one line or None."""
    record = lock.previous
    if not record or not record.get('run_id'):
        return None
    ended = end_processes(record['run_id'])
    what = (f'ended what it left running: {", ".join(ended[:8])}'
            + (f' and {len(ended) - 8} more' if len(ended) > 8 else '')) if ended \
        else 'nothing of it was still running'
    return (f'the run of pid {record.get("pid", "?")} (started {record.get("started", "?")}) '
            f'was stopped before it finished; took its lock over and {what}')
