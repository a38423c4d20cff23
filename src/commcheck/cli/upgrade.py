"""``commcheck upgrade``: is the new stack slower than the old? Both run in one ReFrame session,
in adjacent pairs of launches per test case, and the pairs are judged
(:mod:`commcheck.analysis.paired`); the verdicts as text, JSON (``reports/upgrade/<session>.json``,
read by the report) and the exit code ``compare``'s.

The order is ReFrame's own: ``--repeat N`` makes N copies of every test case, and ReFrame runs
the cases of one copy (its environments, here the two stacks) one after the other, after a
topological sort that keeps them together; ``--exec-order random`` shuffles the copies and,
within each, which stack goes first. So every pair's two launches are adjacent, in random
order (a drift or a first-launch effect cancels, and the pair ratio is symmetric about 0 when
the stacks do not differ, which the signed-rank interval needs).
"""

from __future__ import annotations

import argparse
import json
import math

from rich.markup import escape
from rich.table import Table

from commcheck import console as textconsole
from commcheck import paths
from commcheck.analysis import gate, paired
from commcheck.cli import compare, options, run
from commcheck.cli.selection import keep, no_match, reports_dir_usable, wanted
from commcheck.errors import EXIT_OK, EXIT_REGRESSED, UserError
from commcheck.results import source, store

console = textconsole.make()
#: ReFrame options commcheck upgrade sets itself (what the pairs need), with what to use.
OWN_OPTIONS = {'-p': '--old/--new', '--prgenv': '--old/--new', '--repeat': '--pairs',
               '--exec-order': 'nothing (the order is random pairs)'}
DEFAULT_PAIRS = 12


def add_parsers(sub) -> None:
    up = sub.add_parser('upgrade', help='old against new stack in one session, paired launch by '
                                        'launch: is the new one slower?')
    options.add_site(up)
    up.add_argument('--old', type=options.name, help="the stack in service (default: the site's "
                                                     'upgrade: old)')
    up.add_argument('--new', type=options.name, help="the stack that would replace it (default: "
                                                     "the site's upgrade: new)")
    up.add_argument('--pairs', type=options.whole(1, 1000), default=DEFAULT_PAIRS,
                    help=f'pairs of launches per test case (default {DEFAULT_PAIRS}; the '
                         f'verdict needs at least 8 for 6 variables at alpha 0.05)')
    options.add_db(up)
    options.add_sessions(up, 'judge this stored session instead of running one')
    up.add_argument('--min-effect', type=options.fraction,
                    help='smallest change that can flag '
                         f'(default {paired.Settings.min_effect * 100:.0f} %%)')
    up.add_argument('--alpha', type=options.fraction,
                    help=f'family-wise false-alarm rate (default {paired.Settings.alpha})')
    up.add_argument('--fail-on-machine-change', action='store_true',
                    help='exit 1 when most pairs saw the machine change (or the floor moved)')
    options.add_all(up)
    up.add_argument('--json', type=options.output_file,
                    help='write the judgement here (default: reports/upgrade/<session>.json)')
    up.add_argument('reframe_args', nargs='*', help='passed to reframe (after --), e.g. '
                                                    '-n PingPong')
    up.set_defaults(func=cmd_upgrade)


def reframe_args(old: str, new: str, pairs: int, extra: list[str]) -> list[str]:
    """ReFrame's arguments for ``pairs`` adjacent pairs of launches of the two stacks (the
    module's docstring); options that would break the pairs are refused."""
    for arg in extra:
        given = arg.split('=')[0]
        if given in OWN_OPTIONS:
            raise UserError(f'{given}: commcheck upgrade sets it; use {OWN_OPTIONS[given]}')
    return [*extra, '-p', f'^({old}|{new})$', '--repeat', str(pairs), '--exec-order', 'random']


def _stacks(args) -> tuple[str, str]:
    """(old, new): given, else the site's ``upgrade:`` pair; each a stack of the site."""
    site = options.load_site(args) if not (args.old and args.new and args.session) else None
    pair = site.upgrade if site else None
    old, new = args.old or (pair and pair.old), args.new or (pair and pair.new)
    if not (old and new):
        raise UserError(f'--old and --new: name the two stacks (or declare `upgrade: {{old: ..., '
                        f'new: ...}}` in the site file of {args.site})')
    if old == new:
        raise UserError(f'--old and --new are the same stack ({old}): for an A/A check declare '
                        f'it twice in the site file, under two names')
    for side, name in (('--old', old), ('--new', new)):
        if site and name not in [s.id for s in site.stacks]:
            raise UserError(f'{side} {name}: no such stack on site {args.site}; stacks: '
                            f'{", ".join(s.id for s in site.stacks)}')
    return old, new


def cmd_upgrade(args) -> int:
    if not args.json:
        reports_dir_usable('the judgement (reports/upgrade/)')
    old, new = _stacks(args)
    status = EXIT_OK
    if not args.session:
        before = set(paths.RUNS_DIR.glob('run-report-*.json'))
        status = run.cmd_run(argparse.Namespace(
            site=args.site, no_report=True,
            reframe_args=reframe_args(old, new, args.pairs, args.reframe_args)))
        if status not in (EXIT_OK, EXIT_REGRESSED):
            return status
        produced = sorted(set(paths.RUNS_DIR.glob('run-report-*.json')) - before)
    try:
        db = source.LocalHistory(args.db or paths.RESULTS_DB)
        code, session = _judge(args, db, old, new)
    except store.HistoryError as err:
        raise no_match(args.db or paths.RESULTS_DB, err, 'the session') from None
    if not args.session and produced:
        from commcheck.report import entry
        # the database judged is the report's history, opened once (--db: another one's)
        out = entry.report_of_run(produced[-1], paths.REPORTS_DIR,
                                  paths.RESULTS_DB if args.db else db)
        if out:
            console.print(out, highlight=False)
    if status == EXIT_REGRESSED:
        console.print('commcheck: a check failed in this session (ReFrame said which): exit 1')
        return EXIT_REGRESSED
    return code


def _judge(args, db: store.ResultsDB, old: str, new: str) -> tuple[int, str]:
    chosen = db.choose(uuids=args.session or (), last=None if args.session else 1)
    sessions = db.load(chosen, store.warn_stderr, cases=False, wanted=wanted(args.all))
    if not sessions:
        raise store.HistoryError(f'{db.path}: no readable stored session to judge')
    samples = [s for sess in sessions for s in sess.samples if keep(s, args.all)]
    given = {'min_effect': args.min_effect, 'alpha': args.alpha}
    settings = paired.Settings(**{k: v for k, v in given.items() if v is not None})
    judgements = paired.compare(samples, old, new, settings)
    label = ', '.join(s.uuid for s in sessions)
    if not judgements:
        found = sorted({s.environ for s in samples})
        raise UserError(f'session(s) {label} have no key measurements of both {old} and {new} '
                        f'(environments: {", ".join(found)})')
    show(judgements, f'commcheck upgrade: {new} against {old}, paired launches, session(s) '
                     f'{label}', settings)
    record = paired.record([s.uuid for s in sessions], old, new, settings, judgements)
    out = args.json or paths.REPORTS_DIR / 'upgrade' / f'{sessions[-1].uuid}.json'
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1, default=str) + '\n')
    console.print(f'commcheck: wrote {out}')
    return compare.exit_code(judgements, args.fail_on_machine_change), sessions[-1].uuid


def _interval(out: gate.Outcome | None) -> str:
    if out is None:
        return '-'
    if not math.isfinite(out.high):
        return f'{math.expm1(out.change):+.1%} (too few pairs for an interval)'
    return (f'{math.expm1(out.change):+.1%} [{math.expm1(out.low):+.1%}, '
            f'{math.expm1(out.high):+.1%}]')


def _num(value) -> str:
    return '-' if value is None else f'{value:.4g}'


def table(judgements: list[paired.Judgement], title: str) -> Table:
    """Old against new per variable and size: medians, pair intervals, verdict, limit."""
    out = Table(title=title, header_style='bold', title_justify='left')
    for col in ('verdict', 'test', 'variable', 'old', 'new', 'pairs (machine)',
                'new/old, worse +', 'floor new/old', 'detectable', 'note'):
        out.add_column(col, overflow='fold')
    order = {v: i for i, v in enumerate(gate.VERDICTS)}
    for j in sorted(judgements, key=lambda j: (order[j.verdict], j.key)):
        old, new = j.medians()
        style = compare.STYLES.get(j.verdict, '')
        out.add_row(f'[{style}]{escape(j.verdict)}[/{style}]' if style else j.verdict,
                    escape(j.key.test), f'{escape(j.variable)} ({escape(j.unit)})', _num(old),
                    _num(new), f'{len(j.pairs)} ({j.machine_pairs})', _interval(j.cost),
                    _interval(j.floor),
                    f'>= {j.detectable:.1%}' if j.detectable is not None else '-',
                    escape('; '.join(x for x in (j.statement(), j.note) if x)))
    return out


def show(judgements: list[paired.Judgement], title: str, settings: paired.Settings) -> None:
    console.print(table(judgements, title))
    counts = gate.counts(judgements)
    console.print('  '.join(f'{v}: {n}' for v, n in counts.items() if n))
    slower = sorted({(j.slower, j.variable) for j in judgements
                     if j.verdict in gate.SOFTWARE_REGRESSED})
    if slower:
        console.print(f'[bold red]SLOWER[/bold red]: {slower[0][0]} on '
                      f'{", ".join(v for _, v in slower)}', highlight=False)
    console.print(f'Pairs of adjacent launches (random order); per pair the log ratio new/old '
                  f"of MPI's own cost (value over the floor of the same launch; the value "
                  f'without a floor), its Hodges-Lehmann estimate and exact signed-rank '
                  f'interval at {1 - settings.alpha:.0%} family-wise; threshold '
                  f'{settings.min_effect:.0%}; detectable: the smallest worsening these pairs '
                  f'could flag.', highlight=False)
