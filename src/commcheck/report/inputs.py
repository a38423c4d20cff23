"""Reading what a report is made of, never failing: a run report (salvaged if truncated), the
gate's and the upgrade's records (:mod:`commcheck.results.gaterecord`,
:mod:`commcheck.results.upgraderecord`), the baseline file. Each problem is one warning; what
can be read is returned.
"""

from __future__ import annotations

import json
from pathlib import Path

from commcheck import paths
from commcheck.analysis import trend
from commcheck.results import baselinefile, gaterecord, store, upgraderecord
from commcheck.results.history import HistoryUnavailable
from commcheck.results.store import HistoryError, Session, Warn


def _salvage(text: str) -> dict | None:
    """The session information and the complete test cases of a truncated run report.

    ReFrame writes ``{"session_info": {...}, "runs": [{..., "testcases": [{...}, ...``: each
    object that was written completely is decoded; the cut-off tail is dropped.
    """
    decoder = json.JSONDecoder()
    start = text.find('"session_info"')
    if start < 0:
        return None
    try:
        info, _ = decoder.raw_decode(text, text.index('{', start))
    except ValueError:
        return None
    cases, pos = [], text.find('"testcases"')
    while pos >= 0:
        pos = text.find('[', pos) + 1
        while pos > 0:
            while pos < len(text) and text[pos] in ' \t\r\n,':
                pos += 1
            if pos >= len(text) or text[pos] != '{':
                break
            try:
                case, pos = decoder.raw_decode(text, pos)
            except ValueError:
                pos = -1
                break
            cases.append(case)
        pos = text.find('"testcases"', pos) if pos > 0 else -1
    return {'session_info': info, 'runs': [{'testcases': cases}]}


def load_run_report(path: str | Path, warn: Warn) -> Session | None:
    """The session of a run report; a truncated one gives what it holds, with a warning."""
    path = Path(path)
    try:
        return store.read_run_report(path, warn)
    except HistoryError as err:
        warn(str(err))
    try:
        text = path.read_text(encoding='utf-8', errors='replace')
    except OSError:
        return None
    salvaged = _salvage(text)
    if not salvaged:
        return None
    try:
        session = store.session_from_report(salvaged, str(path), warn)
    except HistoryError as err:
        warn(str(err))
        return None
    warn(f'{path}: damaged or truncated; the report shows the {len(session.cases)} test '
         f'case(s) that were written completely')
    return session


#: The gate's and the upgrade's records, read through their models' readers.
load_gate = gaterecord.load
load_upgrade = upgraderecord.load


def load_baselines(systems: list[str], warn: Warn) -> dict[str, baselinefile.BaselineFile]:
    """The baseline file of each system, where one exists
    (``<references>/<system>.baseline.json``)."""
    out = {}
    for system in systems:
        path = baselinefile.baseline_path(paths.references_dir(), system)
        if not path.exists():
            continue
        try:
            out[system] = baselinefile.load(path)
        except baselinefile.BaselineError as err:
            warn(f'{err}; the history shows no baseline band')
    return out


class SessionsHistory:
    """History from sessions already in memory (a report of run reports, the tests)."""

    def __init__(self, sessions: list[Session]):
        self._sessions = sorted(sessions, key=lambda s: s.time_start)
        self._series: dict | None = None

    def sessions(self) -> list:
        return self._sessions

    def sessions_with(self, check: str, system: str, partition: str, environ: str) -> list:
        """The sessions (with their test cases) that ran ``check`` on that environment."""
        return [s for s in self._sessions if any(
            str(c.get('display_name', '')).split()[:1] == [check]
            and (c.get('system'), c.get('partition'), c.get('environ')) == (
                system, partition, environ) for c in s.cases)]

    def reopened(self) -> SessionsHistory:
        return self

    def __enter__(self) -> SessionsHistory:
        return self

    def __exit__(self, *exc) -> None:
        """Nothing to close: the sessions are in memory."""

    def points(self, key: tuple) -> list[trend.Point]:
        if self._series is None:
            self._series = trend.series(self._sessions)
        return list(self._series.get(key, []))


class StoredHistory:
    """History from a history source's series (the sample index of a results database, the
    shared store's measurements): one variable read at a time."""

    def __init__(self, source, index):
        self.source, self.index = source, index
        self._sessions = index.sessions()
        self._when = {s.uuid: s.when for s in self._sessions}

    def sessions(self) -> list:
        return self._sessions

    def points(self, key: tuple) -> list[trend.Point]:
        return trend.indexed_points(self.index.launches(key), self._when)

    def reopened(self) -> StoredHistory:
        """This history through a connection of its own (for a forked process)."""
        return StoredHistory(self.source, self.index.reopened())

    def sessions_with(self, check: str, system: str, partition: str, environ: str) -> list:
        """The sessions (with their test cases) that ran ``check`` on that environment: found
        without decoding (ReFrame's test case table, the store's measurements), and only
        those decoded."""
        return self.source.load(self.source.with_check(check, system, partition, environ),
                                self.index.warn)

    def close(self) -> None:
        self.index.close()

    def __enter__(self) -> StoredHistory:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def shown_history(stored) -> SessionsHistory | StoredHistory:
    """The history a report shows: a :class:`StoredHistory`, or sessions in memory."""
    if isinstance(stored, (SessionsHistory, StoredHistory)):
        return stored
    return SessionsHistory([s for s in stored or () if isinstance(s, Session)])


def stored_history(history, warn: Warn) -> SessionsHistory | StoredHistory:
    """The stored sessions' history through the source's series; none (warned) if
    unreadable. A shared store that cannot be reached is not "no history": it stops the
    report (:class:`commcheck.results.history.HistoryUnavailable`)."""
    try:
        return StoredHistory(history, history.series(warn=warn))
    except HistoryUnavailable:
        raise
    except HistoryError as err:
        warn(f'{err}; the report has no history')
        return SessionsHistory([])
