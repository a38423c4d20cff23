"""``commcheck compare``: the gate, the judged session(s) against the baseline; its verdicts
as text, its JSON and its exit code. The rule is :mod:`commcheck.analysis.gate`'s."""

from __future__ import annotations

import math
from pathlib import Path

from rich.markup import escape

from commcheck import console as textconsole
from commcheck import paths
from commcheck.analysis import gate, junit, stats, trend, verdicts
from commcheck.cli import options
from commcheck.cli.selection import describe, history, keep, no_match, reports_dir_usable, wanted
from commcheck.errors import EXIT_OK, EXIT_REGRESSED, EXIT_UNDECIDED, UserError
from commcheck.results import baselinefile, gaterecord, store
from commcheck.results.store import HistoryError

# A terminal's own width; in a CI log or a pipe, wide enough that rows stay one line.
console = textconsole.make()


def add_parsers(sub) -> None:
    comp = sub.add_parser('compare', help='the gate: flag regressions against the baseline')
    options.add_db(comp)
    options.add_sessions(comp, 'session(s) to judge (default: the newest)')
    options.add_cluster(comp)
    comp.add_argument('--baseline', type=options.existing_file,
                      help='baseline file (default: <references>/<system>.baseline.json)')
    comp.add_argument('--baseline-session', action='append', metavar='UUID',
                      type=options.session_id,
                      help='take the baseline from these stored sessions instead')
    comp.add_argument('--environ', metavar='OLD', type=options.name,
                      help='compare two environments of the session(s): OLD ...')
    comp.add_argument('--against', metavar='NEW', type=options.name, help='... against NEW')
    from commcheck.analysis.gate import Settings  # the defaults are the gate's, said once
    comp.add_argument('--min-effect', type=options.fraction,
                      help="smallest change that can flag (default: from the baseline's "
                           f'spread, at least {Settings.session_floor * 100:.0f} %% between '
                           f'sessions, {Settings.launch_floor * 100:.0f} %% between launches)')
    comp.add_argument('--alpha', type=options.fraction,
                      help='family-wise false-alarm rate over the variables '
                           f'(default {Settings.alpha})')
    comp.add_argument('--adjust', choices=(stats.SLOPE, stats.RATIO),
                      help="how a floor adjusts its key variable: as the ratio over it (MPI's "
                           "own cost, slope 1; default) or by the slope fitted on the baseline's "
                           'launches (docs/gate.md: where each holds)')
    comp.add_argument('--min-samples', type=options.positive_int,
                      help='launches a side below which nothing is computed '
                           f'(default {Settings.min_samples})')
    options.add_verdict_outputs(
        comp, 'exit 1 when the hardware floor moved too (a site that wants to catch a bad node)',
        'write the comparison here (default: reports/gate/<session>.json)',
        'also write the verdicts as JUnit XML (one test case per judged variable; failures are '
        'the verdicts that exit 1)')
    comp.set_defaults(func=cmd_compare)


def cmd_compare(args) -> int:
    if bool(args.environ) != bool(args.against):
        raise UserError('--environ OLD and --against NEW go together')
    if not args.json:
        reports_dir_usable('the comparison (reports/gate/)')
        problem = options.path_problem(paths.REPORTS_DIR / gaterecord.DIRECTORY, 'directory',
                                     parents=True)
        if problem:
            raise UserError(f'{problem} (where the comparison is written; or give --json)')
    with history(args) as stored:
        try:
            return _compare(args, stored)
        except store.HistoryError as err:
            raise no_match(stored, err,
                           describe(args) if args.session or args.baseline_session
                           else 'the newest session') from None


def _env_pair(samples, old: str, new: str) -> tuple[dict, dict]:
    """Two environments of the same sessions, keyed alike: the upgrade question."""
    label = f'{new} vs {old}'
    base, now = {}, {}
    for s in samples:
        if s.environ not in (old, new):
            continue
        key = (s.system, s.partition, label, s.test, s.variable)
        (base if s.environ == old else now).setdefault(key, []).append(s)
    return base, now


def _baseline_samples(args, judged, db: store.Listing) -> tuple[dict, str]:
    if args.baseline_session:
        chosen = db.load([db.resolve(u) for u in args.baseline_session], store.warn_stderr,
                         cases=False, wanted=wanted(args.all))
        samples = [s for sess in chosen for s in sess.samples if keep(s, args.all)]
        _same_clusters(judged, samples)
        return store.group(samples), f'sessions {", ".join(s.uuid[:8] for s in chosen)}'
    systems = sorted({s.system for s in judged})
    ref_dir = paths.references_dir()
    out, names = {}, []
    for system in systems:
        path = args.baseline or baselinefile.baseline_path(ref_dir, system)
        record = baselinefile.load(Path(path))
        if record.system != system:         # like with like: a cluster against itself only
            raise UserError(f'--baseline {path}: a baseline of cluster {record.system}, the '
                            f'judged session(s) ran on {system}: the gate compares a cluster '
                            f'with itself')
        out.update(record.samples())
        names.append(str(path))
    return out, ', '.join(names)


def _same_clusters(judged: list, base: list) -> None:
    """The gate compares like with like: baseline sessions of another cluster (ReFrame
    system) than the judged ones are refused, not judged as "no baseline"."""
    now, then = {s.system for s in judged}, {s.system for s in base}
    if then and not then & now:
        raise UserError(f'--baseline-session: the baseline sessions ran on cluster(s) '
                        f'{", ".join(sorted(then))}, the judged ones on '
                        f'{", ".join(sorted(now))}: the gate compares a cluster with itself')


def _since(regressed: list[gate.Comparison], base: dict, db) -> dict:
    """Where each regressed variable's shift started, if found, in the stored sessions from
    the baseline's first session on: only these sessions, and only these variables, are read
    from the sample index, so the cost does not grow with the years stored before the
    baseline (a baseline file without its sessions' ids, written before they were kept,
    searches the whole history). Where no index exists none is built, and a line says so."""
    if not regressed:
        return {}
    if not db.has_series():
        console.print('since when: not looked up: no sample index yet (`commcheck history` or '
                      'the report makes it; compare does not build one)')
        return {}
    sessions = {s.session for c in regressed for s in base.get(c.key, ())}
    stored = db.stored()
    first = [i for i, st in enumerate(stored) if st.uuid in sessions]
    window = stored[min(first):] if first else stored
    with db.series(only=[s.uuid for s in window]) as index:
        chosen = index.sessions(window)
        when = {s.uuid: s.when for s in chosen}
        out = {}
        for comp in regressed:
            found = trend.detect(trend.indexed_points(index.launches(comp.key, chosen), when),
                                 comp.key)
            out[comp.key] = found[-1].as_dict() if found else None
        return out


def _num(value) -> str:
    return '-' if value is None else f'{value:.4g}'


def _pct(value) -> str:
    return '-' if value is None else f'{value:+.1%}'


def _outcome(out: stats.Outcome | None) -> str:
    """An outcome's change and interval, as fractions (worse positive)."""
    return '-' if out is None else out.interval()


STYLES = {verdicts.MPI_REGRESSED: 'bold red', verdicts.BOTH: 'bold red',
          verdicts.REGRESSED: 'bold red', verdicts.MACHINE_CHANGED: 'bold yellow',
          verdicts.IMPROVED: 'green', verdicts.CANNOT_TELL: 'cyan'}


COLUMNS = ('verdict', 'test', 'variable', 'baseline', 'now', 'change',
           'MPI cost (or value), worse +', 'floor, worse +', 'threshold', 'detectable', 'n',
           'note')


LEFT = {'verdict', 'test', 'variable', 'note'}


def _row(c: gate.Comparison) -> tuple[str, ...]:
    d = c.as_dict()
    return (c.verdict, d['test'], f"{d['variable']} ({c.unit})", _num(d['median_base']),
            _num(d['median_new']), _pct(d['change']), _outcome(c.cost), _outcome(c.floor),
            f'{math.expm1(c.cost.threshold):.1%} ({c.cost.level})' if c.cost else '-',
            f'>= {c.cost.detectable:.0%}' if c.cost else '-', f"{d['n_base']}/{d['n_new']}",
            c.note)


def table_text(comparisons, title: str) -> str:
    """The verdicts as aligned text, one line per variable (whole, so that grep finds a row),
    one block per environment, worst verdicts first; verdicts coloured as rich markup.
    Plain text, not a rich Table: a suite's several hundred variables render in a tenth of a
    second rather than three, and no row folds over lines."""
    order = {v: i for i, v in enumerate(verdicts.VERDICTS)}
    rows = [(c.key.environ, _row(c)) for c in
            sorted(comparisons, key=lambda c: (c.key.environ, order[c.verdict], c.key))]
    widths = [max([len(col)] + [len(r[i]) for _, r in rows]) for i, col in enumerate(COLUMNS)]

    def line(cells) -> str:
        return '  '.join(escape(x.ljust(w) if col in LEFT else x.rjust(w))
                         for x, w, col in zip(cells, widths, COLUMNS)).rstrip()
    out, environ = [f'[bold]{escape(title)}[/bold]'], None
    for env, row in rows:
        if env != environ:
            environ = env
            out += ['', f'[bold]{escape(env)}[/bold]', f'[bold]{line(COLUMNS)}[/bold]']
        text = line(row)
        style = STYLES.get(row[0])
        out.append(f'[{style}]{text[:widths[0]]}[/{style}]{text[widths[0]:]}' if style
                   else text)
    return '\n'.join(out)


def _what_changed(comparisons) -> None:
    """One line per environment and set of provenance changes, under the table (a line a
    reader, and grep, can find whole)."""
    seen: dict[tuple, list[str]] = {}
    for c in comparisons:
        if c.provenance_changes and c.verdict not in (verdicts.NO_BASELINE,):
            changes = tuple(f'{k} {a} -> {b}' for k, (a, b) in c.provenance_changes.items())
            seen.setdefault((c.key.environ, changes), []).append(f'{c.variable} {c.verdict}')
    for (environ, changes), what in seen.items():
        console.print(f'what else changed, {environ}: {"; ".join(changes)} '
                      f'({", ".join(what)})', soft_wrap=True)


def exit_code(comparisons, fail_on_machine_change: bool = False) -> int:
    """1 when the software regressed (or the machine changed and the site asked to fail on
    it), 3 when nothing could be decided, else 0."""
    found = {c.verdict for c in comparisons}
    if any(verdicts.fails(v, fail_on_machine_change) for v in found):
        return EXIT_REGRESSED
    return EXIT_OK if found & set(verdicts.DECIDED) else EXIT_UNDECIDED


def _explain(comparisons, settings: gate.Settings) -> None:
    machine = [c for c in comparisons if c.verdict == verdicts.MACHINE_CHANGED]
    if machine:
        console.print(f'[bold yellow]MACHINE CHANGED[/bold yellow]: the hardware floor moved '
                      f'for {len(machine)} variable(s) while MPI\'s own cost did not get worse '
                      f'by more than that move '
                      f'(' + ', '.join(f'{c.key.environ} {c.variable}' for c in machine[:6])
                      + '): the node is different today, not the software.')
    effect = (f'{settings.min_effect:.0%} (given)' if settings.min_effect is not None else
              'derived per variable (threshold column)')
    console.print(f'Three outcomes per quantity: DIFFERENT when the {1 - settings.alpha:.0%} '
                  f'family-wise interval of the change lies beyond the threshold, SAME when it '
                  f'lies inside it, else cannot tell. Threshold: {effect}. With a floor, MPI\'s '
                  f'own cost and the floor are judged apart; ' + _adjusted(comparisons,
                                                                          settings))


def _adjusted(comparisons, settings: gate.Settings) -> str:
    """How MPI's own cost was made: over the floor, or adjusted by the slopes fitted."""
    if settings.adjust == stats.RATIO:
        return "MPI's own cost is the value over the floor of the same launch."
    slopes = sorted({(c.variable, round(c.cost.slope, 2)) for c in comparisons
                     if c.cost and c.cost.slope is not None})
    shown = ', '.join(f'{v} {t:.2f}' for v, t in slopes[:8]) + (' ...' if len(slopes) > 8
                                                                 else '')
    return ("MPI's own cost is the value adjusted by its floor, y - theta (x - mean x) on log "
            "values, theta the Theil-Sen slope of the baseline's launches (its interval "
            f"carried: --adjust ratio divides instead){': ' + shown if shown else ''}.")


def _compare(args, db) -> int:
    if bool(args.environ) != bool(args.against):
        raise HistoryError('--environ OLD and --against NEW go together')
    chosen = db.choose(uuids=args.session or (), last=None if args.session else 1,
                       cluster=args.cluster)
    judged_sessions = db.load(chosen, store.warn_stderr, cases=False, wanted=wanted(args.all))
    if not judged_sessions:
        raise HistoryError(f'{db.where}: no readable stored session to judge'
                           + (f' on cluster {args.cluster}' if args.cluster else ''))
    judged = [s for sess in judged_sessions for s in sess.samples if keep(s, args.all)]
    label = ', '.join(s.uuid for s in judged_sessions)
    if args.environ:
        base, now = _env_pair(judged, args.environ, args.against)
        if not now or not base:
            found = sorted({s.environ for s in judged})
            raise HistoryError(f'session(s) {label} have no key measurements of both '
                               f'{args.environ} and {args.against} (environments: {found})')
        against = f'{args.environ} in the same session(s)'
    else:
        now = store.group(judged)
        base, against = _baseline_samples(args, judged, db)
    given = {'min_effect': args.min_effect, 'alpha': args.alpha, 'min_samples': args.min_samples,
             'adjust': getattr(args, 'adjust', None)}
    fail_on_machine = bool(getattr(args, 'fail_on_machine_change', False))
    settings = gate.Settings(**{k: v for k, v in given.items() if v is not None})
    with console.status('comparing (bootstrap intervals, rank tests)...'):
        comparisons = gate.compare(base, now, settings)
    counts = verdicts.counts(comparisons)
    regressed = [c for c in comparisons if c.verdict in verdicts.SOFTWARE_REGRESSED]
    since = {} if args.environ else _since(regressed, base, db)
    console.print(table_text(comparisons, f'commcheck compare: {label} against {against}'),
                  soft_wrap=True, highlight=False)
    _what_changed(comparisons)
    console.print('  '.join(f'{v}: {n}' for v, n in counts.items() if n))
    _explain(comparisons, settings)
    out = gaterecord.write(
        args.json or gaterecord.path_of(paths.REPORTS_DIR, judged_sessions[-1].uuid),
        gaterecord.GateRecord(
            [s.uuid for s in judged_sessions], against,
            {**vars(settings), 'fail_on_machine_change': fail_on_machine}, counts,
            [{**c.as_dict(), 'since': since.get(c.key)} for c in comparisons]).as_dict())
    console.print(f'commcheck: wrote {out}')
    if args.junit:
        junit.write(args.junit, comparisons, f'{label} against {against}', fail_on_machine)
        console.print(f'commcheck: wrote {args.junit}')
    return exit_code(comparisons, fail_on_machine)
