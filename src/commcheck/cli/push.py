"""``commcheck push``: sessions into the shared history store (:mod:`commcheck.results.pgstore`).

With no SOURCE, every session of the local results database (``reports/results.db``: the
spool) that the store does not hold yet; a SOURCE is a ReFrame run report (what
``reframe ... -r --report-file FILE`` leaves, the after-script of a CI job) or a results
database. Each session is one transaction keyed by its uuid: a second push is a no-op and says
so. ``commcheck run`` pushes at its end (:func:`after_run`).

Exit: 0 every session landed or was there already; 2 refused, a retry cannot help (bad source
file, authentication, a newer schema, missing privileges: one ERROR line says what to fix);
3 the store cannot be reached now (one line: ``history store unavailable: <reason>; N sessions
wait in <spool>``): the sessions wait, and the next push or run lands them.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from commcheck import dburl, paths
from commcheck.cli import options
from commcheck.errors import EXIT_OK, EXIT_UNDECIDED, UserError


def add_parsers(sub) -> None:
    push = sub.add_parser('push', help='write sessions to the shared history store')
    push.add_argument('--db', metavar='ADDRESS', type=options.nonempty,
                      help='the store: a PostgreSQL URL or libpq string, no password (default: '
                           f'{dburl.ENV}, else the site file\'s history:)')
    options.add_site(push)
    push.add_argument('--init', action='store_true',
                      help='only create or migrate the store\'s tables (as its owner role)')
    push.add_argument('sources', nargs='*', metavar='SOURCE', type=options.existing_file,
                      help='a ReFrame run report or results database (default: '
                           'reports/results.db, every session the store lacks)')
    push.set_defaults(func=cmd_push)


def site_name(args) -> str:
    """The site the sessions are stored under: ``--site``, else ``COMMCHECK_SITE``, else
    ``local`` (a site file's path: its name)."""
    given = args.site or os.environ.get('COMMCHECK_SITE', '').strip() or 'local'
    return Path(given).stem if given.endswith(('.yaml', '.yml')) or '/' in given else given


def site_history(args):
    """What reads the ``history:`` of the site ``--site`` (else ``COMMCHECK_SITE``) names, for
    :func:`commcheck.results.pgstore.store_address` (the local site has none)."""
    return lambda: options.load_site(args).history if site_name(args) != 'local' else None


def cmd_push(args) -> int:
    from commcheck.results import pgstore
    address = pgstore.store_address(args.db, site_history(args))
    if address is None:
        raise UserError(f'no history store named: give --db ADDRESS, set {dburl.ENV}, or '
                        f'history: in the site file (docs/shared-history.md)')
    if args.init:
        return _init(address)
    spools = [pgstore.Spool(source) for source in args.sources]
    if not spools:
        if not paths.RESULTS_DB.exists():
            print(f'commcheck push: nothing to push (no {paths.RESULTS_DB})')
            return EXIT_OK
        spools = [pgstore.Spool(paths.RESULTS_DB)]
    try:
        done = pgstore.push(address, spools, site_name(args), print)
    except pgstore.StoreUnavailable as err:
        print(f'ERROR: {err.line()}', file=sys.stderr)
        return EXIT_UNDECIDED
    print(f'commcheck push: {len(done.pushed)} pushed, {len(done.already)} already in the '
          f'store ({dburl.redact(address)})')
    return EXIT_OK


def _init(address: str) -> int:
    from commcheck.results import pgstore
    try:
        with pgstore.connect(address, 'push --init') as conn:
            before = pgstore.ensure_schema(conn, address)
    except pgstore.StoreUnavailable as err:
        print(f'ERROR: history store unavailable: {err.reason}', file=sys.stderr)
        return EXIT_UNDECIDED
    done = ('up to date' if before == pgstore.SCHEMA_VERSION else
            'created' if before == 0 else f'migrated from version {before}')
    print(f'commcheck push: history store {dburl.redact(address)}: schema version '
          f'{pgstore.SCHEMA_VERSION} ({done})')
    return EXIT_OK


def after_run(address: str, site: str, db=None) -> None:
    """``commcheck run``'s push of everything that waits (this session and earlier ones):
    one line, whatever happens; never changes the run's exit code. ``db``: the results
    database the run already opened, if it did."""
    from commcheck.results import pgstore
    from commcheck.results.store import HistoryError
    where = dburl.redact(address)
    try:
        if not paths.RESULTS_DB.exists():
            return
        done = pgstore.push(address, [pgstore.Spool(paths.RESULTS_DB, db)], site,
                            lambda _: None)
        print(f'commcheck: history store {where}: {len(done.pushed)} session(s) pushed, '
              f'{len(done.already)} already there')
    except pgstore.StoreUnavailable as err:
        print(f'commcheck: {err.line()} (the next run or `commcheck push` lands them)',
              file=sys.stderr)
    except (pgstore.StoreRefused, HistoryError) as err:
        print(f'commcheck: not pushed to the history store: {err} (the sessions stay in '
              f'{paths.RESULTS_DB}; fix that, then `commcheck push`)', file=sys.stderr)
