"""``commcheck upgrade``: is the new stack slower than the old? Both run in adjacent pairs of
launches per test case, and the pairs are judged (:mod:`commcheck.analysis.paired`); the
verdicts as text, JSON (``reports/upgrade/<session>.json``, read by the report), JUnit
(``--junit``) and the exit code ``compare``'s (with ``--accept``: 0 every variable accepted, 1 one
refused, 3 one undecided when the budget ended).

The order is ReFrame's own: ``--repeat N`` makes N copies of every test case, and ReFrame runs
the cases of one copy (its environments, here the two stacks) one after the other, after a
topological sort that keeps them together; ``--exec-order random`` shuffles the copies and,
within each, which stack goes first. So every pair's two launches are adjacent, in random
order (a drift or a first-launch effect cancels, and the pair ratio is symmetric about 0 when
the stacks do not differ, which the signed-rank interval needs).

How many pairs: ``--pairs N`` is a fixed count, one ReFrame run and one look, as before issue
44. Otherwise pairs until decided (:mod:`commcheck.cli.pairing`): stages of ``--repeat k``,
each test case judged at its looks and stopped when decided, within ``--max-pairs`` pairs and
``--budget`` of its launches.
"""

from __future__ import annotations

import math

from rich.markup import escape
from rich.table import Table

from commcheck import console as textconsole
from commcheck import paths
from commcheck.analysis import junit, paired, stats, verdicts
from commcheck.cli import compare, options, pairing
from commcheck.cli.selection import keep, no_match, reports_dir_usable, wanted
from commcheck.errors import EXIT_OK, EXIT_REGRESSED, EXIT_UNDECIDED, UserError
from commcheck.results import source, store, upgraderecord

console = textconsole.make()
#: ReFrame options commcheck upgrade sets itself (what the pairs need), with what to use.
OWN_OPTIONS = {'-p': '--old/--new', '--prgenv': '--old/--new',
               '--repeat': '--pairs, --max-pairs or --budget',
               '--exec-order': 'nothing (the order is random pairs)'}
#: Pairs until decided: at most this many pairs of a test case, unless --max-pairs says. The
#: 10-minute budget binds first wherever a pair takes more than 2 s; 300, not 100: +5 % on
#: Open MPI 4's 8 B latency (a per-pair spread of 0.14 on the 2-core VM) was flagged in 6 of
#: 10 sessions within 100 pairs and 10 of 10 within 300 (docs/upgrade.md, issue 44).
DEFAULT_MAX_PAIRS = 300
#: ... and at most this much of its launches (both stacks), unless --budget says (seconds).
DEFAULT_BUDGET_S = 600.0


def add_parsers(sub) -> None:
    up = sub.add_parser('upgrade', help='old against new stack, paired launch by launch, pairs '
                                        'until decided: is the new one slower?')
    options.add_site(up)
    up.add_argument('--old', type=options.name, help="the stack in service (default: the site's "
                                                     'upgrade: old)')
    up.add_argument('--new', type=options.name, help="the stack that would replace it (default: "
                                                     "the site's upgrade: new)")
    _pairs_options(up)
    options.add_db(up)
    options.add_sessions(up, 'judge this stored session instead of running one')
    up.add_argument('--min-effect', type=options.fraction,
                    help='smallest change that can flag '
                         f'(default {paired.Settings.min_effect * 100:.0f} %%)')
    up.add_argument('--alpha', type=options.fraction,
                    help=f'family-wise false-alarm rate over every variable and look '
                         f'(default {paired.Settings.alpha})')
    options.add_verdict_outputs(
        up, 'exit 1 when most pairs saw the machine change (or the floor moved)',
        'write the judgement here (default: reports/upgrade/<session>.json)',
        'also write the verdicts as JUnit XML (one test case per variable; with --accept the '
        'margin and the bound reached)')
    up.add_argument('reframe_args', nargs='*', help='passed to reframe (after --), e.g. '
                                                    '-n PingPong')
    up.set_defaults(func=cmd_upgrade)


def _pairs_options(up) -> None:
    up.add_argument('--pairs', type=options.whole(1, 1000),
                    help='a fixed count: this many pairs per test case, one look (as before '
                         '--budget; the verdict needs at least 8 for 6 variables at alpha 0.05)')
    up.add_argument('--max-pairs', type=options.whole(1, 10000),
                    help=f'pairs until decided: at most this many per test case (default '
                         f'{DEFAULT_MAX_PAIRS})')
    up.add_argument('--budget', type=options.duration,
                    help=f'pairs until decided: at most this much of launches per test case '
                         f'and stack pair, e.g. 10m, 600s (default '
                         f'{DEFAULT_BUDGET_S / 60:.0f}m)')
    up.add_argument('--accept', type=options.percent, metavar='MARGIN',
                    help='acceptance margin, e.g. 5%%: pass (exit 0) when the new stack is not '
                         'slower by more than it, fail (exit 1) when slower by more, else go '
                         'on pairing; undecided at the end of the budget: exit 3')
    up.add_argument('--adjust', choices=(stats.SLOPE, stats.RATIO),
                    help='how the floor adjusts each figure: its slope fitted on the pairs '
                         '(default) or the ratio over the floor (slope 1, the rule before)')


def reframe_args(old: str, new: str, pairs: int, extra: list[str]) -> list[str]:
    """ReFrame's arguments for ``pairs`` adjacent pairs of launches of the two stacks (the
    module's docstring); options that would break the pairs are refused."""
    refuse_own_options(extra)
    return [*extra, '-p', f'^({old}|{new})$', '--repeat', str(pairs), '--exec-order', 'random']


def refuse_own_options(extra: list[str]) -> None:
    for arg in extra:
        given = arg.split('=')[0]
        if given in OWN_OPTIONS:
            raise UserError(f'{given}: commcheck upgrade sets it; use {OWN_OPTIONS[given]}')


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


def settings_of(args) -> paired.Settings:
    given = {'min_effect': args.min_effect, 'alpha': args.alpha, 'accept': args.accept,
             'adjust': args.adjust}
    return paired.Settings(**{k: v for k, v in given.items() if v is not None})


def _check(args) -> None:
    """The options that cannot go together, before anything runs."""
    if args.pairs and (args.max_pairs or args.budget):
        raise UserError(f'--pairs {args.pairs}: a fixed count; --max-pairs and --budget are '
                        f'for pairs until decided: give one or the other')
    if args.session and (args.pairs or args.max_pairs or args.budget):
        raise UserError('--session judges stored pairs: --pairs, --max-pairs and --budget '
                        'are for a run')
    refuse_own_options(args.reframe_args)
    if not args.json:
        reports_dir_usable('the judgement (reports/upgrade/)')


def cmd_upgrade(args) -> int:
    _check(args)
    old, new = _stacks(args)
    settings = settings_of(args)
    if args.session:
        return _stored(args, old, new, settings)
    staged = pairing.Run(old, new, settings, args.pairs,
                         None if args.pairs else args.max_pairs or DEFAULT_MAX_PAIRS,
                         None if args.pairs else args.budget or DEFAULT_BUDGET_S)
    code = pairing.pair_until_decided(args, staged, wanted(args.all),
                                      lambda s: keep(s, args.all))
    if code is not None:
        return code
    judged = pairing.judgements(staged)
    if not judged:
        raise UserError(f'the run has no key measurements of both {old} and {new}')
    code = _conclude(args, staged.sessions, old, new, settings, judged, staged.as_dict())
    if staged.produced:
        _report(args, staged.produced[-1])
    if staged.failed:
        console.print('commcheck: a check failed in this run (ReFrame said which): exit 1')
        return EXIT_REGRESSED
    return code


def _report(args, run_report) -> None:
    from commcheck.report import entry
    db = source.open_history(args.db or paths.RESULTS_DB)
    # the database judged is the report's history, opened once (--db: another one's)
    out = entry.report_of_run(run_report, paths.REPORTS_DIR, paths.RESULTS_DB if args.db else db)
    if out:
        console.print(out, highlight=False)


def _stored(args, old: str, new: str, settings: paired.Settings) -> int:
    """Judges stored sessions' pairs, pooled, as one look at all of alpha."""
    db = source.open_history(args.db or paths.RESULTS_DB)
    try:
        chosen = db.choose(uuids=args.session)
        sessions = db.load(chosen, store.warn_stderr, cases=False, wanted=wanted(args.all))
    except store.HistoryError as err:
        raise no_match(args.db or paths.RESULTS_DB, err, 'the session') from None
    if not sessions:
        raise no_match(args.db or paths.RESULTS_DB,
                       store.HistoryError(f'{db.where}: no readable stored session to judge'),
                       'the session')
    samples = [s for sess in sessions for s in sess.samples if keep(s, args.all)]
    judged = paired.compare(samples, old, new, settings)
    if not judged:
        found = sorted({s.environ for s in samples})
        raise UserError(f'session(s) {", ".join(s.uuid for s in sessions)} have no key '
                        f'measurements of both {old} and {new} (environments: '
                        f'{", ".join(found)})')
    return _conclude(args, [s.uuid for s in sessions], old, new, settings, judged, None)


def _conclude(args, sessions: list[str], old: str, new: str, settings: paired.Settings,
              judged: list[paired.Judgement], plan: dict | None) -> int:
    """The verdicts shown and written (JSON, JUnit); the exit code."""
    show(judged, f'commcheck upgrade: {new} against {old}, paired launches, session(s) '
                 f'{", ".join(sessions)}', settings, plan)
    out = upgraderecord.write(args.json or upgraderecord.path_of(paths.REPORTS_DIR, sessions[-1]),
                              paired.record(sessions, old, new, settings, judged, plan))
    console.print(f'commcheck: wrote {out}')
    if args.junit:
        junit.write(args.junit, judged, f'{new} against {old}, sessions {", ".join(sessions)}',
                    args.fail_on_machine_change)
        console.print(f'commcheck: wrote {args.junit}')
    return exit_code(judged, args.fail_on_machine_change)


def exit_code(judged: list[paired.Judgement], fail_on_machine_change: bool = False) -> int:
    """``compare``'s codes; with an acceptance margin: 1 when a variable was refused (or the
    machine changed and the site asked to fail on it), 0 when every one was accepted, else 3."""
    if not any(j.accept is not None for j in judged):
        return compare.exit_code(judged, fail_on_machine_change)
    if any(j.acceptance == verdicts.FAIL or verdicts.fails(j.verdict, fail_on_machine_change)
           for j in judged):
        return EXIT_REGRESSED
    return EXIT_OK if all(j.acceptance == verdicts.PASS for j in judged) else EXIT_UNDECIDED


def _interval(out: stats.Outcome | None) -> str:
    if out is None:
        return '-'
    if not math.isfinite(out.high):
        return f'{math.expm1(out.change):+.1%} (too few pairs for an interval)'
    return out.interval()


def _num(value) -> str:
    return '-' if value is None else f'{value:.4g}'


def table(judgements: list[paired.Judgement], title: str) -> Table:
    """Old against new per variable and size: medians, pair intervals, verdict, limit."""
    out = Table(title=title, header_style='bold', title_justify='left')
    for col in ('verdict', 'test', 'variable', 'old', 'new', 'pairs (machine)',
                'new/old, worse +', 'slope', 'floor new/old', 'detectable', 'note'):
        out.add_column(col, overflow='fold')
    order = {v: i for i, v in enumerate(verdicts.VERDICTS)}
    for j in sorted(judgements, key=lambda j: (order[j.verdict], j.key)):
        old, new = j.medians()
        style = compare.STYLES.get(j.verdict, '')
        slope = j.cost.slope if j.cost and j.floor else None
        out.add_row(f'[{style}]{escape(j.verdict)}[/{style}]' if style else j.verdict,
                    escape(j.key.test), f'{escape(j.variable)} ({escape(j.unit)})', _num(old),
                    _num(new), f'{len(j.pairs)} ({j.machine_pairs})', _interval(j.cost),
                    '-' if slope is None else f'{slope:.2f}', _interval(j.floor),
                    f'>= {j.detectable:.1%}' if j.detectable is not None else '-',
                    escape('; '.join(x for x in (j.statement(), j.note) if x)))
    return out


def show(judgements: list[paired.Judgement], title: str, settings: paired.Settings,
         plan: dict | None = None) -> None:
    console.print(table(judgements, title))
    counts = verdicts.counts(judgements)
    console.print('  '.join(f'{v}: {n}' for v, n in counts.items() if n))
    slower = sorted({(j.slower, j.variable) for j in judgements
                     if j.verdict in verdicts.SOFTWARE_REGRESSED})
    if slower:
        console.print(f'[bold red]SLOWER[/bold red]: {slower[0][0]} on '
                      f'{", ".join(v for _, v in slower)}', highlight=False)
    if settings.accept is not None:
        console.print(acceptance_line(judgements, settings.accept), highlight=False)
    for case in (plan or {}).get('cases', []):
        console.print(escape(looks_line(case)), highlight=False)
    how = ('its slope on the floor fitted on the pairs (theta: the slope column; the interval '
           'carries its uncertainty)' if settings.adjust == stats.SLOPE else
           'the ratio over the floor (slope 1)')
    console.print(f'Pairs of adjacent launches (random order); per pair the log ratio new/old '
                  f'of the value, adjusted by the floor of the same launches by {how}; the '
                  f'value without a floor. Exact signed-rank interval at '
                  f'{1 - settings.alpha:.0%} family-wise over every variable and look; '
                  f'threshold {settings.min_effect:.0%}'
                  + (f'; acceptance margin {settings.accept:.0%}' if settings.accept else '')
                  + '; detectable: the smallest worsening these pairs could flag.',
                  highlight=False)


def acceptance_line(judgements: list[paired.Judgement], margin: float) -> str:
    """The acceptance in one line: ACCEPTED, REFUSED (which variables, the bound reached) or
    NOT DECIDED."""
    refused = [j for j in judgements if j.acceptance == verdicts.FAIL]
    open_ = [j for j in judgements if j.acceptance is None]
    ends = ', '.join(f'{j.key.test} {j.variable} {j.bound:+.1%}' for j in
                     (refused or open_ or judgements) if j.bound is not None)
    if refused:
        return (f'[bold red]REFUSED[/bold red]: {refused[0].new} slower than '
                f'{refused[0].old} by more than {margin:.0%} (better ends: {ends})')
    if open_:
        return (f'[cyan]NOT DECIDED[/cyan] against the {margin:.0%} margin within the budget '
                f'(worse ends: {ends or "no interval"}); the notes say how many pairs would')
    return (f'[green]ACCEPTED[/green]: {judgements[0].new} not slower than {judgements[0].old} '
            f'by more than {margin:.0%} on any variable (worse ends: {ends})')


def looks_line(case: dict) -> str:
    """A test case's pairing: its looks, its planned pairs, why it stopped."""
    took = case.get('seconds_a_pair')
    timed = f', {took:.1f} s of launches a pair' if took else ''
    return (f'{case["test"]}: looked at {", ".join(map(str, case["looks"])) or "no"} pairs, '
            f'{case["horizon"]} planned{timed}: {case["stopped"]}')
