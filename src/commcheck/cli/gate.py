"""``commcheck baseline``, ``compare`` and ``history``: the gate over stored sessions.

The decisions are :mod:`commcheck.analysis.gate`'s and :mod:`commcheck.cli.gate_output`'s; here
are their options and what must hold before any of them reads or prints: outputs writable, a
selection that matches sessions ("no session matches ...", exit 2, like an empty database).
"""

from __future__ import annotations

import datetime
from pathlib import Path

from commcheck import paths
from commcheck.cli import options
from commcheck.errors import UserError


def add_parsers(sub) -> None:
    _baseline_parser(sub)
    _compare_parser(sub)
    _history_parser(sub)
    _archive_parser(sub)


def _archive_parser(sub) -> None:
    arch = sub.add_parser('archive', help='move old sessions out of the results database '
                                          '(copied, verified, then deleted)')
    arch.add_argument('--before', type=options.date, required=True,
                      help='sessions started before this date (YYYY-MM-DD[THH:MM])')
    options.add_db(arch)
    arch.add_argument('--into', type=options.output_file,
                      help='archive database (default: reports/archive.db; created or added to)')
    arch.set_defaults(func=cmd_archive)


def _baseline_parser(sub) -> None:
    base = sub.add_parser('baseline', help='write references from stored launches')
    options.add_selection(base, 'baseline from this')
    base.add_argument('--system', type=options.name,
                      help='the system to baseline (default: the only one)')
    from commcheck.analysis.baseline import Policy  # the defaults are the policy's, said once
    base.add_argument('--min-samples', type=options.positive_int,
                      help=f'launches a variable needs (default {Policy.min_samples})')
    base.add_argument('--floor', type=options.positive_number,
                      help="narrowest bound of ReFrame's one-launch reference, a slowdown "
                           f'factor minus 1 (default {Policy.floor}: gross breakage only)')
    options.add_all(base)
    base.add_argument('--refs', type=options.output_dir,
                      help='reference directory (default: RFM_REFERENCE_PREFIX or '
                           'config/references)')
    base.set_defaults(func=cmd_baseline)


def _compare_parser(sub) -> None:
    comp = sub.add_parser('compare', help='the gate: flag regressions against the baseline')
    options.add_db(comp)
    options.add_sessions(comp, 'session(s) to judge (default: the newest)')
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
    comp.add_argument('--min-samples', type=options.positive_int,
                      help='launches a side below which nothing is computed '
                           f'(default {Settings.min_samples})')
    comp.add_argument('--fail-on-machine-change', action='store_true',
                      help='exit 1 when the hardware floor moved too (a site that wants to '
                           'catch a bad node)')
    options.add_all(comp)
    comp.add_argument('--json', type=options.output_file,
                      help='write the comparison here (default: reports/gate/<session>.json)')
    comp.set_defaults(func=cmd_compare)


def _history_parser(sub) -> None:
    hist = sub.add_parser('history', help='change points over stored sessions')
    options.add_selection(hist, 'history over this')
    hist.add_argument('--match', type=options.pattern, default='',
                      help='regex on "environ test variable"')
    options.add_all(hist)
    hist.add_argument('--json', type=options.output_file, help='write the change points here')
    hist.set_defaults(func=cmd_history)


# -- checks before any work ----------------------------------------------------------------
def reports_dir_usable(what: str) -> None:
    """The default output under COMMCHECK_REPORTS must be writable."""
    problem = options.path_problem(paths.REPORTS_DIR, 'directory', parents=True)
    if problem:
        raise UserError(f'COMMCHECK_REPORTS: {problem} (where {what} is written)')


def describe(args) -> str:
    """The selection the arguments asked for, in words."""
    said = []
    for opt in ('session', 'baseline_session'):
        if getattr(args, opt, None):
            said.append(f'--{opt.replace("_", "-")} {" ".join(getattr(args, opt))}')
    for opt in ('since', 'until'):
        if getattr(args, opt, None) is not None:
            when = datetime.datetime.fromtimestamp(getattr(args, opt)).isoformat(timespec='minutes')
            said.append(f'--{opt} {when}')
    if getattr(args, 'last', None):
        said.append(f'--last {args.last}')
    return ', '.join(said) or 'the selection'


def no_match(db: Path, err: Exception, what: str) -> UserError:
    """A HistoryError that says nothing was selected becomes "no session matches ..."."""
    text = str(err)
    if 'no stored session' in text and 'ambiguous' not in text:
        return UserError(f'no session matches {what} in {db}: {text}')
    return err if isinstance(err, UserError) else UserError(text)


def selected(args, warn):
    """The stored sessions the selection options name, their samples read through the sample
    index where ``history`` or the report made one (only these sessions are added to it if
    missing), else decoded from the database (a command creates no index as a side effect);
    "no session matches" when none."""
    from commcheck.results import sample_index, store
    db = store.ResultsDB(args.db or paths.RESULTS_DB)
    try:      # only the selected sessions' records are decoded
        chosen = db.choose(uuids=args.session or (), last=args.last, since=args.since,
                           until=args.until)
    except store.HistoryError as err:
        raise no_match(db.path, err, describe(args)) from None
    if not chosen:
        raise UserError(f'no session matches {describe(args)} in {db.path} '
                        f'({len(db.stored())} stored)')
    if not sample_index.index_path(db.path).exists():
        return db.load(chosen, warn, cases=False)
    try:
        index = sample_index.open_index(db, warn, only=[s.uuid for s in chosen])
    except store.HistoryError as err:
        warn(f'{err}; the sessions are decoded from the database instead')
        return db.load(chosen, warn, cases=False)
    try:
        return index.load(chosen)
    finally:
        index.close()


# -- the commands ----------------------------------------------------------------------------
def _ref_dir(args) -> Path:
    ref_dir = Path(args.refs) if args.refs else paths.references_dir()
    problem = options.path_problem(ref_dir, 'directory', parents=not args.refs)
    if problem:
        raise UserError(f'--refs / RFM_REFERENCE_PREFIX: {problem}')
    return ref_dir


def cmd_baseline(args) -> int:
    from commcheck.analysis import baseline
    from commcheck.results import store
    ref_dir = _ref_dir(args)
    sessions = selected(args, store.warn_stderr)
    systems = sorted({s.system for sess in sessions for s in sess.samples})
    if args.system:
        if args.system not in systems:
            raise UserError(f'--system {args.system}: the selected sessions measured '
                            f'{", ".join(systems) or "nothing"}')
        systems = [args.system]
    if len(systems) != 1:
        raise UserError(f'the sessions measured systems {systems}: choose one with --system')
    given = {'min_samples': args.min_samples, 'floor': args.floor}
    policy = baseline.Policy(all_variables=args.all,
                             **{k: v for k, v in given.items() if v is not None})
    variables = baseline.compute(sessions, systems[0], policy, store.warn_stderr)
    written = baseline.write(ref_dir, systems[0], sessions, variables, policy)
    print(f'commcheck: baselined {len(variables)} variable(s) of {systems[0]} from '
          f'{len(sessions)} session(s)')
    print(written['diff'] or f'commcheck: {written["references"]} unchanged')
    print(f'commcheck: wrote {written["references"]} and {written["baseline"]} '
          f'(previous versions kept as .prev)')
    return 0


def cmd_compare(args) -> int:
    from commcheck.cli import gate_output
    from commcheck.results import store
    if bool(args.environ) != bool(args.against):
        raise UserError('--environ OLD and --against NEW go together')
    if not args.json:
        reports_dir_usable('the comparison (reports/gate/)')
        problem = options.path_problem(paths.REPORTS_DIR / 'gate', 'directory', parents=True)
        if problem:
            raise UserError(f'{problem} (where the comparison is written; or give --json)')
    try:
        return gate_output.compare(args)
    except store.HistoryError as err:
        raise no_match(args.db or paths.RESULTS_DB, err,
                       describe(args) if args.session or args.baseline_session
                       else 'the newest session') from None


def cmd_history(args) -> int:
    from commcheck.cli import gate_output
    from commcheck.results import store
    try:
        return gate_output.history_cmd(args)
    except store.HistoryError as err:
        raise no_match(args.db or paths.RESULTS_DB, err, describe(args)) from None


def cmd_archive(args) -> int:
    from commcheck.results import archive
    db = args.db or paths.RESULTS_DB
    if not args.into:
        reports_dir_usable('the archive database')
    into = args.into or paths.REPORTS_DIR / 'archive.db'
    moved = archive.move(db, args.before, into)
    when = datetime.datetime.fromtimestamp(args.before).isoformat(' ', 'minutes')
    span = f' ({moved[0].uuid} ... {moved[-1].uuid})' if moved else ''
    print(f'commcheck: moved {len(moved)} session(s) started before {when} from {db} to '
          f'{into}{span}')
    return 0
