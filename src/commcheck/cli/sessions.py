"""``commcheck sessions``: the clusters and the sessions of the history (the shared store, or a
results database): per cluster its sites, hosts, sessions and their span; then one line a
session. No record is decoded."""

from __future__ import annotations

import dataclasses
import datetime
import json

from commcheck import console as textconsole
from commcheck.cli import options
from commcheck.cli.selection import history
from commcheck.errors import EXIT_OK, UserError

console = textconsole.make()


def add_parsers(sub) -> None:
    ses = sub.add_parser('sessions', help='list the clusters and the sessions of the history '
                                          '(the shared store or a results database)')
    options.add_db(ses)
    options.add_cluster(ses)
    ses.add_argument('--clusters', action='store_true',
                     help='only the clusters, not every session')
    ses.add_argument('--json', type=options.output_file,
                     help='write the sessions listed here (one object a session)')
    ses.set_defaults(func=cmd_sessions)


def _when(unix: float) -> str:
    return datetime.datetime.fromtimestamp(unix, datetime.timezone.utc).strftime(
        '%Y-%m-%d %H:%M UTC')


def clusters(rows) -> dict[str, dict]:
    """cluster -> its sites, hosts, number of sessions, first and last start."""
    out: dict[str, dict] = {}
    for r in rows:
        one = out.setdefault(r.cluster, {'sites': set(), 'hosts': set(), 'sessions': 0,
                                         'first': r.time_start, 'last': r.time_start})
        one['sites'].add(r.site)
        one['hosts'].add(r.host)
        one['sessions'] += 1
        one['first'], one['last'] = min(one['first'], r.time_start), max(one['last'],
                                                                       r.time_start)
    return dict(sorted(out.items()))


def cmd_sessions(args) -> int:
    with history(args) as stored:
        rows = stored.listing(args.cluster)
        where = stored.where
    if not rows:
        raise UserError(f'no stored session in {where}'
                        + (f' on cluster {args.cluster}' if args.cluster else ''))
    found = clusters(rows)
    console.print(f'{where}: {len(rows)} session(s) on {len(found)} cluster(s)',
                  highlight=False)
    for name, c in found.items():
        console.print(f'cluster {name or "?"}: {c["sessions"]} session(s), '
                      f'{_when(c["first"])} .. {_when(c["last"])}; site '
                      f'{", ".join(sorted(s or "-" for s in c["sites"]))}; host(s) '
                      f'{", ".join(sorted(h or "-" for h in c["hosts"]))}', highlight=False)
    if not args.clusters:
        console.print('\nsession                               started               '
                      'cluster      site         host         cases', highlight=False)
        for r in rows:
            console.print(f'{r.uuid:36}  {_when(r.time_start):20}  {r.cluster or "-":11}  '
                          f'{r.site or "-":11}  {r.host or "-":11}  {r.cases}',
                          highlight=False, soft_wrap=True)
    if args.json:
        args.json.write_text(json.dumps([dataclasses.asdict(r) for r in rows], indent=1)
                             + '\n')
        console.print(f'commcheck: wrote {args.json}', highlight=False)
    return EXIT_OK
