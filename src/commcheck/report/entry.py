"""The two ways the command line asks for a report: of the session ``commcheck run`` just ran
(its run report), and of stored sessions (``commcheck report [SESSION...]``). Both take the
stored sessions as history and the gate's record (``<reports>/gate/<uuid>.json``) when there is one.
"""

from __future__ import annotations

from pathlib import Path

from commcheck.report.build import write_report
from commcheck.report.inputs import load_run_report, stored_history
from commcheck.results import gaterecord, source, store, upgraderecord
from commcheck.results.store import HistoryError, Session, Warn


def gate_record(sessions: list[Session], reports_dir: Path, warn: Warn, model=gaterecord
                ) -> dict | None:
    """``commcheck compare`` writes its record under the newest judged session's uuid
    (:func:`commcheck.results.gaterecord.path_of`; ``commcheck upgrade`` its own,
    :mod:`commcheck.results.upgraderecord`)."""
    for session in reversed(sessions):
        record = model.load(model.path_of(reports_dir, session.uuid), warn)
        if record is not None:
            return record
    return None


def upgrade_record(sessions: list[Session], reports_dir: Path, warn: Warn) -> dict | None:
    return gate_record(sessions, reports_dir, warn, upgraderecord)


class _Collect:
    """Warns, and keeps what it warned: the page lists the problems met while reading."""

    def __init__(self, warn: Warn):
        self.warn, self.seen = warn, []

    def __call__(self, message: str) -> None:
        self.seen.append(message)
        self.warn(message)


def report_of_run(run_report: Path, reports_dir: Path, db,
                  warn: Warn = store.warn_stderr) -> Path | None:
    """The report of a run report's session; a damaged run report gives what it holds, an
    unreadable one the newest stored session (said so). None only when nothing can be read.
    ``db``: the history (an open one, or a results database's path), opened once."""
    warn = _Collect(warn)
    session = load_run_report(run_report, warn)
    history = None
    if session is None:
        history = _opened(db, warn)
        newest = _newest(history, warn) if history is not None else None
        if newest is None:
            warn(f'{run_report}: unreadable and no stored session; no report written')
            return None
        session = newest
        warn(f'reporting the newest stored session {session.uuid} instead')
    gate = gate_record([session], reports_dir, warn)
    upgrade = upgrade_record([session], reports_dir, warn)
    return _write([session], reports_dir, history if history is not None else _opened(db, warn),
                  gate, warn, upgrade)


def _opened(db, warn: Warn):
    """The history of ``db`` (:func:`commcheck.results.source.open_history`), or None, said
    so."""
    try:
        return source.open_history(db, warn)
    except HistoryError as err:
        warn(f'{err}; the report has no history')
        return None


def _newest(history, warn: Warn) -> Session | None:
    try:
        newest = history.load(history.choose(last=1), warn)
    except HistoryError as err:
        warn(f'{err}; the report has no history')
        return None
    return newest[-1] if newest else None


def _write(sessions: list[Session], out_root: Path, history, gate, warn: _Collect,
           upgrade: dict | None = None) -> Path:
    """The report, with the stored history (an open source, or None) read through its
    series."""
    stored = stored_history(history, warn) if history is not None else []
    try:
        return write_report(sessions, out_root, history_sessions=stored, gate=gate,
                            warn=warn.warn, notes=warn.seen, upgrade=upgrade)
    finally:
        if hasattr(stored, 'close'):
            stored.close()


def report_of_stored(db, wanted: list[str], out_root: Path, reports_dir: Path,
                     warn: Warn = store.warn_stderr) -> Path:
    """The report of stored sessions (uuid prefixes; none: the newest), from ``db`` (a
    history source, or a results database's path). A prefix that matches no session is a
    warning; HistoryError when no session at all is left to report on."""
    warn = _Collect(warn)
    stored = source.open_history(db, warn)
    picked: dict[str, store.Stored] = {}
    for want in wanted:
        try:
            found = stored.resolve(want)
            picked[found.uuid] = found
        except HistoryError as err:
            warn(f'{err}; left out of the report')
    if not wanted:
        picked = {s.uuid: s for s in stored.choose(last=1)}
    sessions = stored.load(picked.values(), warn)     # only the reported sessions are decoded
    if not sessions:
        raise HistoryError(f'{stored.where}: no stored session to report on'
                           + (f' (asked for {", ".join(wanted)})' if wanted else ''))
    gate = gate_record(sessions, reports_dir, warn)
    return _write(sessions, out_root, stored, gate, warn,
                  upgrade_record(sessions, reports_dir, warn))
