"""Opening the one History (:mod:`commcheck.results.history` declares it): ReFrame's results
database (a SQLite file, with its derived sample index), a ReFrame run report (read through a
results database made for it), or the site's shared PostgreSQL store
(:mod:`commcheck.results.pgread`). Every command and the report open theirs with
:func:`open_history`, once, and close it when done.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import tempfile
from pathlib import Path

from commcheck.results import pgread, pgstore, sample_index
from commcheck.results.archive import copy_in, open_archive
from commcheck.results.history import History, HistoryUnavailable, Listed, is_url
from commcheck.results.store import (
    HistoryError,
    ResultsDB,
    Stored,
    Warn,
    read_run_report,
    warn_stderr,
)

__all__ = ['HistoryUnavailable', 'Listed', 'LocalHistory', 'configured', 'from_run_report',
           'is_run_report', 'open_history']

#: The host ReFrame ran on, in the head of a session's record (``session_info.hostname``)
HOSTNAME = re.compile(r'"hostname": "([^"]*)"')


class LocalHistory(ResultsDB):
    """ReFrame's results database as a :class:`commcheck.results.history.History`; its series
    come from the sample index, opened (and brought up to date) only when asked for."""

    def __init__(self, path: str | Path, warn: Warn = warn_stderr):
        super().__init__(path)
        self.warn = warn

    def series(self, only=None, warn: Warn | None = None) -> sample_index.SampleIndex:
        """The sample index, up to date (for the sessions ``only`` names, when given)."""
        return sample_index.open_index(self, warn or self.warn, only=only)

    def has_series(self) -> bool:
        return sample_index.index_path(self.path).exists()

    def with_check(self, check: str, system: str, partition: str, environ: str
                   ) -> list[Stored]:
        """The sessions that ran ``check`` on that environment, from ReFrame's test case
        table (no record decoded), oldest first."""
        rows = self.query('SELECT DISTINCT session_uuid FROM testcases WHERE (name = ? OR name '
                          'LIKE ?) AND system = ? AND partition = ? AND environ = ?',
                          (check, f'{check} %', system, partition, environ))
        wanted = {uuid for uuid, in rows}
        return [s for s in self.stored() if s.uuid in wanted]

    def listing(self, cluster: str | None = None) -> list[Listed]:
        """Every session (of ``cluster``), oldest first: its clusters and test cases from
        ReFrame's test case table (one pass over it), its host from the head of its record
        (where ReFrame writes the session information; the record is not decoded)."""
        cases = {u: (systems or '', n) for u, systems, n in self.query(
            'SELECT session_uuid, group_concat(DISTINCT system), count(*) FROM testcases '
            'GROUP BY session_uuid')}
        out = []
        for uuid, start, head in self.query(
                'SELECT uuid, session_start_unix, substr(json_blob, 1, 4096) FROM sessions '
                'ORDER BY session_start_unix, uuid'):
            systems, n = cases.get(uuid, ('', 0))
            host = HOSTNAME.search(head) if isinstance(head, str) else None
            out.append(Listed(str(uuid), float(start or 0.0), '',
                              ','.join(sorted(set(systems.split(',')) - {''})),
                              host.group(1) if host else '', int(n)))
        return [s for s in out if cluster is None or cluster in s.cluster.split(',')]

    def archive(self, before: float, into: Path) -> list[Stored]:
        """Move the sessions started before ``before`` into the archive database ``into``
        (:mod:`commcheck.results.archive`)."""
        from commcheck.results import archive
        return archive.move(self, before, into)

    def close(self) -> None:
        """Nothing held open: every query has its own read-only connection."""

    def __enter__(self) -> LocalHistory:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def configured() -> str | None:
    """The shared store the site configured (``COMMCHECK_HISTORY``, else the site file's
    ``history:``: :func:`commcheck.results.pgstore.store_address`), or None: then the local
    results database is the history."""
    return pgstore.store_address()


def open_history(given=None, warn: Warn = warn_stderr, default: Path | None = None
                 ) -> History:
    """The history a reader reads: ``given`` (``--db``: a results database file, a ReFrame run
    report, or a ``postgresql://`` URL; a history already open: as is), else the configured
    shared store, else ``default`` (the local results database). A store that cannot be
    reached: :class:`HistoryUnavailable`."""
    if given is not None and not isinstance(given, (str, os.PathLike)):
        return given
    url = str(given) if is_url(given) else None if given else configured()
    if url:
        return pgread.StoreHistory(url, warn)
    if given and is_run_report(Path(given)):
        return from_run_report(Path(given), warn)
    if given is None and default is None:
        from commcheck import paths
        default = paths.RESULTS_DB
    return LocalHistory(given or default, warn)


def is_run_report(path: Path) -> bool:
    """A JSON file (a ReFrame run report), not a results database (SQLite's header)."""
    try:
        with open(path, 'rb') as handle:
            return handle.read(64).lstrip()[:1] == b'{'
    except OSError:
        return False


def from_run_report(path: Path, warn: Warn = warn_stderr) -> LocalHistory:
    """A ReFrame run report (``reframe -r --report-file FILE``, the record of a site that
    keeps results storage off) as a history: its session, validated, in a results database of
    ReFrame's schema in a temporary directory, removed when the process ends."""
    session = read_run_report(path, warn)          # one line naming the file if it is not one
    if not session.uuid:
        raise HistoryError(f'{path}: a run report without a session uuid (ReFrame 4.7 or '
                           f'later writes one)')
    scratch = Path(tempfile.mkdtemp(prefix='commcheck-report-'))
    atexit.register(shutil.rmtree, scratch, True)
    conn = open_archive(scratch / 'results.db')
    try:
        info = session.info
        cases = [(c.get('name') or c['display_name'], c.get('system'), c.get('partition'),
                  c.get('environ'), c.get('job_completion_time_unix'), session.uuid,
                  c.get('uuid')) for c in session.cases]
        copy_in(conn, (session.uuid, session.time_start, info.get('time_end_unix'),
                       path.read_text(encoding='utf-8'), str(path)), cases)
    finally:
        conn.close()
    history = LocalHistory(scratch / 'results.db', warn)
    history.where = str(path)
    return history
