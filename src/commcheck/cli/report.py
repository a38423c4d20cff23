"""``commcheck report``: the HTML report of stored sessions (its path is the last line)."""

from __future__ import annotations

from commcheck import paths
from commcheck.cli import options
from commcheck.cli.selection import history, no_match, reports_dir_usable


def add_parsers(sub) -> None:
    rep = sub.add_parser('report', help='write the HTML report of stored sessions (its path '
                                        'is the last line printed)')
    options.add_db(rep)
    rep.add_argument('session', nargs='*', metavar='SESSION', type=options.session_id,
                     help='session uuid or prefix (default: the newest stored session)')
    rep.add_argument('--out', type=options.output_dir,
                     help='directory to write the report under (default: reports/)')
    rep.set_defaults(func=cmd_report)


def cmd_report(args) -> int:
    from commcheck.report import entry
    from commcheck.results import store
    from commcheck.results.store import HistoryError
    out_root = args.out or paths.REPORTS_DIR
    if not args.out:
        reports_dir_usable('the report')
    said: list[str] = []       # warnings, held back: when nothing matches, the error says it
    with history(args, said.append) as db:
        try:
            out = entry.report_of_stored(db, args.session, out_root, paths.REPORTS_DIR,
                                         said.append)
        except HistoryError as err:
            raise no_match(db, err, ' '.join(args.session) or 'the newest session') from None
    for line in said:
        store.warn_stderr(line)
    print(out)
    return 0
