"""The guard around every command: exit codes, signals, and internal errors.

- :class:`commcheck.errors.UserError`: one ``ERROR:`` line, exit 2.
- Any other exception is a bug: one line ``ERROR: internal error (Type: message); traceback in
  <log>`` with the traceback written to that log, exit 4 (never 1, which means "regressed").
- SIGINT, SIGTERM and SIGHUP are handled whatever the parent did to them (a process started in
  the background of a script inherits SIGINT ignored, one under ``nohup`` SIGHUP ignored): while
  ReFrame runs they are forwarded to it (:func:`forward_to`), which stops, cancels its jobs and
  stores the partial session; otherwise commcheck stops at once. Exit 128 + the signal number.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path

from commcheck import paths
from commcheck.errors import (
    EXIT_INTERNAL,
    EXIT_OK,
    EXIT_USAGE,
    PENDING_SIGNALS,
    Interrupted,
    UserError,
)

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

_state: dict = {'child': None, 'received': []}


def _handler(signum, _frame):
    child = _state['child']
    if child is not None and child.poll() is None:
        _state['received'].append(signum)
        with contextlib.suppress(ProcessLookupError):
            child.send_signal(signum)
        return
    raise Interrupted(signum)


@contextlib.contextmanager
def handled_signals():
    """commcheck's own handlers for the duration of a command (restored after)."""
    previous = {}
    try:
        for sig in SIGNALS:
            previous[sig] = signal.signal(sig, _handler)
    except ValueError:          # not the main thread: leave the signals alone
        pass
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


@contextlib.contextmanager
def forward_to(proc):
    """Signals received while ``proc`` runs are sent on to it; yields the list of them."""
    _state['child'], _state['received'] = proc, []
    try:
        yield _state['received']
    finally:
        _state['child'] = None


def child_signals_default() -> None:
    """In a child before exec: default dispositions and an empty mask, whatever this process
    inherited (SIG_IGN survives exec; a handler does not)."""
    for sig in SIGNALS:
        signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, [])


def log_traceback() -> Path:
    """Write the current exception's traceback to a log; its path."""
    stamp = time.strftime('%Y%m%dT%H%M%S')
    text = (f'commcheck {" ".join(sys.argv)}\n{time.strftime("%Y-%m-%dT%H:%M:%S%z")}\n'
            + traceback.format_exc())
    for folder in (paths.STATE_DIR / 'logs', Path(tempfile.gettempdir())):
        try:
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / f'commcheck-error-{stamp}-{os.getpid()}.log'
            path.write_text(text)
            return path
        except OSError:
            continue
    return Path('(no writable log directory)')


#: Longest message printed whole; a longer one keeps its two ends (what went wrong, and what
#: to do, which a message says last) around a " ... ".
LONGEST = 600


def _one_line(err: BaseException) -> str:
    text = ' '.join(str(err).split())
    half = LONGEST // 2
    return text if len(text) <= LONGEST else f'{text[:half]} ... {text[-half:]}'


def guarded(command) -> int:
    """Run ``command()`` (which returns an exit code) under the contract."""
    with handled_signals():
        try:
            if PENDING_SIGNALS:
                raise Interrupted(PENDING_SIGNALS[0])
            return command()
        except UserError as err:
            print(f'ERROR: {_one_line(err)}', file=sys.stderr)
            return EXIT_USAGE
        except Interrupted as sig:
            print(f'commcheck: stopped by {signal.Signals(sig.signum).name}', file=sys.stderr)
            return 128 + sig.signum
        except KeyboardInterrupt:
            print('commcheck: stopped by SIGINT', file=sys.stderr)
            return 128 + signal.SIGINT
        except BrokenPipeError:
            # The reader went away (`commcheck history | head`): not an error.
            with contextlib.suppress(OSError):
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return EXIT_OK
        except Exception as err:    # noqa: BLE001 - the contract: a bug is exit 4, not 1
            log = log_traceback()
            print(f'ERROR: internal error ({type(err).__name__}: {_one_line(err)}); '
                  f'traceback in {log}', file=sys.stderr)
            return EXIT_INTERNAL
