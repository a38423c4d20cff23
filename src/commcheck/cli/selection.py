"""What the commands over stored sessions share: the selection they read (through the sample
index where one exists), the variables the gate judges, and the checks that must hold before any
of them reads or prints (outputs writable; a selection that matches sessions, else "no session
matches ...", exit 2, as for an empty database)."""

from __future__ import annotations

import datetime
from pathlib import Path

from commcheck import experiments, paths
from commcheck.cli import options
from commcheck.errors import UserError
from commcheck.results.store import SampleKey


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
    for opt in ('cluster', 'system'):
        if getattr(args, opt, None):
            said.append(f'--{opt} {getattr(args, opt)}')
    return ', '.join(said) or 'the selection'


def no_match(db, err: Exception, what: str) -> UserError:
    """A HistoryError that says nothing was selected becomes "no session matches ..."."""
    text = str(err)
    if 'no stored session' in text and 'ambiguous' not in text:
        return UserError(f'no session matches {what} in {getattr(db, "where", db)}: {text}')
    return err if isinstance(err, UserError) else UserError(text)


def history(args, warn=None):
    """The history the command reads, opened once: ``--db`` (a results database or the
    shared store's URL), else the configured store, else the local results database."""
    from commcheck.results import source, store
    return source.open_history(getattr(args, 'db', None), warn or store.warn_stderr)


def cluster(args) -> str | None:
    """The cluster (ReFrame system) the selection is limited to, if any."""
    return getattr(args, 'cluster', None) or getattr(args, 'system', None)


def selected(args, history, warn):
    """The stored sessions the selection options name, decoded from the history (only they,
    in a process per core, keeping only the samples the gate judges; faster than the sample
    index, which holds every variable), or "no session matches" when none."""
    from commcheck.results import store
    try:      # only the selected sessions' records are decoded
        chosen = history.choose(uuids=args.session or (), last=args.last, since=args.since,
                                until=args.until, cluster=cluster(args))
    except store.HistoryError as err:
        raise no_match(history, err, describe(args)) from None
    if not chosen:
        raise UserError(f'no session matches {describe(args)} in {history.where} '
                        f'({len(history.stored())} stored)')
    return history.load(chosen, warn, cases=False, wanted=wanted(args.all))


def ref_dir(args) -> Path:
    ref_dir = Path(args.refs) if args.refs else paths.references_dir()
    problem = options.path_problem(ref_dir, 'directory', parents=not args.refs)
    if problem:
        raise UserError(f'--refs / RFM_REFERENCE_PREFIX: {problem}')
    return ref_dir


def keep(sample, everything: bool) -> bool:
    """Whether the gate judges this sample: not oversubscribed, a gated variable (any variable
    with a direction, with ``--all``)."""
    return not sample.oversubscribed and keep_key(sample.key, sample.unit, everything)


def wanted(everything: bool):
    """:func:`keep_key` as a reader's filter (test, variable, unit), each asked once: the
    samples it refuses are never made."""
    seen: dict[tuple[str, str, str], bool] = {}

    def want(test: str, variable: str, unit: str) -> bool:
        key = (test, variable, unit)
        if key not in seen:
            seen[key] = keep_key(SampleKey('', '', '', test, variable), unit, everything)
        return seen[key]
    return want


def keep_key(key: SampleKey, unit: str, everything: bool) -> bool:
    check, variable = key.check, key.variable
    if everything:
        return experiments.direction(check, variable, unit) is not None
    return variable in experiments.gated_variables(check)
