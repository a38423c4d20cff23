"""``commcheck archive``: old sessions moved out of the results database (copied, verified,
then deleted: :mod:`commcheck.results.archive`)."""

from __future__ import annotations

import datetime

from commcheck import paths
from commcheck.cli import options
from commcheck.cli.selection import history, reports_dir_usable


def add_parsers(sub) -> None:
    arch = sub.add_parser('archive', help='move old sessions out of the results database or '
                                          'the shared store (copied, verified, then deleted)')
    arch.add_argument('--before', type=options.date, required=True,
                      help='sessions started before this date (YYYY-MM-DD[THH:MM])')
    options.add_db(arch)
    arch.add_argument('--into', type=options.output_file,
                      help='archive database (default: reports/archive.db; created or added to)')
    arch.set_defaults(func=cmd_archive)


def cmd_archive(args) -> int:
    if not args.into:
        reports_dir_usable('the archive database')
    into = args.into or paths.REPORTS_DIR / 'archive.db'
    with history(args) as stored:
        moved = stored.archive(args.before, into)
        where = stored.where
    when = datetime.datetime.fromtimestamp(args.before).isoformat(' ', 'minutes')
    span = f' ({moved[0].uuid} ... {moved[-1].uuid})' if moved else ''
    print(f'commcheck: moved {len(moved)} session(s) started before {when} from {where} to '
          f'{into}{span}')
    return 0
