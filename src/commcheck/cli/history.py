"""``commcheck history``: change points over stored sessions, read one variable at a time from
the sample index (:mod:`commcheck.analysis.trend` finds them)."""

from __future__ import annotations

import json
import re

from rich.table import Table

from commcheck import console as textconsole
from commcheck import experiments
from commcheck.analysis import trend
from commcheck.cli import options
from commcheck.cli.selection import cluster, describe, history, keep_key, no_match
from commcheck.errors import EXIT_OK
from commcheck.results import store
from commcheck.results.store import HistoryError

console = textconsole.make()


def add_parsers(sub) -> None:
    hist = sub.add_parser('history', help='change points over stored sessions')
    options.add_selection(hist, 'history over this')
    options.add_cluster(hist)
    hist.add_argument('--match', type=options.pattern, default='',
                      help='regex on "environ test variable"')
    options.add_all(hist)
    hist.add_argument('--json', type=options.output_file, help='write the change points here')
    hist.set_defaults(func=cmd_history)


def cmd_history(args) -> int:
    with history(args) as stored:
        try:
            return _history(args, stored)
        except store.HistoryError as err:
            raise no_match(stored, err, describe(args)) from None


def _search(index, sessions: list, everything: bool, pattern):
    """(series, change points) of each variable the selection keeps, one variable at a time
    (in a process per core on a long history, each through its own connection)."""
    when = {s.uuid: s.when for s in sessions}
    keys = {key for key, unit in index.keys(sessions, measured=True)
            if keep_key(key, unit, everything) and key.variable != experiments.CPU_WAIT
            and (pattern is None or pattern.search(' '.join(key[2:])))}   # the wait: context

    def run(part: list[tuple]):
        with index.reopened() as mine:
            return trend.stream(((key, trend.indexed_points(mine.launches(key, sessions), when))
                                 for key in part), len(keys))
    return trend.search(keys, run)


def _history(args, stored) -> int:
    chosen = stored.choose(uuids=args.session or (), last=args.last, since=args.since,
                           until=args.until, cluster=cluster(args))
    if not chosen:
        raise HistoryError(f'no session matches {describe(args)} in {stored.where}')
    pattern = re.compile(args.match) if args.match else None
    with console.status('searching change points...'):
        with stored.series() as index:
            sessions = index.sessions(chosen)
            series, points = _search(index, sessions, args.all, pattern)
    table = Table(title=f'commcheck history: {len(sessions)} sessions, {len(series)} variables',
                  header_style='bold')
    for col in ('variable', 'sessions', 'first', 'latest', 'change points'):
        table.add_column(col, overflow='fold')
    by_key: dict = {}
    for cp in points:
        by_key.setdefault(cp.key, []).append(cp)
    for key, pts in sorted(series.items()):
        cps = '; '.join(
            f"{cp.change:+.0%} [{cp.interval[0]:+.0%}, {cp.interval[1]:+.0%}] from "
            f"{cp.session[:8]} ({cp.when[:16]})"
            + (f": {', '.join(f'{k} {a} -> {b}' for k, (a, b) in cp.provenance_changes.items())}"
               if cp.provenance_changes else '')
            for cp in by_key.get(key, []))
        table.add_row(store.key_label(key), str(len(pts)), f'{pts[0].value:.4g}',
                      f'{pts[-1].value:.4g}', cps or '-')
    console.print(table)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({
            'sessions': [s.uuid for s in sessions],
            'series': [{'key': list(k), 'points': [{'session': p.session, 'when': p.when,
                                                     'value': p.value} for p in pts]}
                       for k, pts in sorted(series.items())],
            'change_points': [cp.as_dict() for cp in points]}, indent=1) + '\n')
        console.print(f'commcheck: wrote {args.json}')
    return EXIT_OK
