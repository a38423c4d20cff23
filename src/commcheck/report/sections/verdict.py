"""1. The verdict: counts per environment as ReFrame counts them, what regressed, what was
skipped and why, what was not selected and why."""

from __future__ import annotations

from commcheck import experiments
from commcheck.analysis import verdicts
from commcheck.report.context import Context, Section, record_rows
from commcheck.report.model import Case, experiment_languages, feature, finite, text

#: ReFrame's results, in the columns the summary counts them in ('fail_deps' is a skip).
COLUMNS = {'pass': 'pass', 'fail': 'fail', 'skip': 'skipped', 'fail_deps': 'skipped',
           'abort': 'aborted'}
FAILED = ('fail', 'abort')
COUNTED = ('Counted as ReFrame counts test cases: every launch is one (--repeat N makes N), '
           'and fixtures (the kernel build of each environment, the sequential stencil '
           'baseline) are test cases too.')


def first_line(message: str, limit: int = 300) -> str:
    line = message.strip().splitlines()[0] if message.strip() else ''
    return line if len(line) <= limit else line[:limit - 1] + '…'


def _counts(cases: list[Case], environ: str | None) -> dict:
    mine = [c for c in cases if environ is None or c.environ == environ]
    row = {'environ': environ, 'cases': len(mine), 'fixtures': sum(c.fixture for c in mine),
           'pass': 0, 'fail': 0, 'skipped': 0, 'aborted': 0, 'other': 0}
    for c in mine:
        row[COLUMNS.get(c.result, 'other')] += 1
    return row


def _reframe_summary(ctx: Context) -> dict:
    """ReFrame's own totals (session_info), summed over the reported sessions."""
    out = {'num_cases': 0, 'num_failures': 0, 'num_skipped': 0, 'num_aborted': 0}
    for s in ctx.sessions:
        for key in out:
            value = s.info.get(key)
            if not isinstance(value, int) or isinstance(value, bool):
                return {}
            out[key] += value
    return out


def _gate(ctx: Context) -> tuple[dict | None, str]:
    record = ctx.gate
    if record is None:
        return None, ('No gate record for this session: nothing was compared with a baseline '
                      '(commcheck compare writes one; the report then shows it).')
    rows = record_rows(ctx, record, 'gate', 'comparisons', 'comparison', _gate_row)
    if rows is None:
        return None, 'The gate record found is of other sessions; not shown.'
    order = {v: i for i, v in enumerate(verdicts.VERDICTS)}
    shown = (*verdicts.SOFTWARE_REGRESSED, verdicts.MACHINE_CHANGED, verdicts.IMPROVED)
    flagged = sorted((r for r in rows if r['verdict'] in shown),
                     key=lambda r: (order.get(r['verdict'], 99), -abs(r['change'] or 0)))
    counts = record.get('counts') if isinstance(record.get('counts'), dict) else {}
    settings = record.get('settings') if isinstance(record.get('settings'), dict) else {}
    return {'against': text(record.get('against')), 'compared': len(rows),
            'counts': {text(k): v for k, v in counts.items() if isinstance(v, int) and v},
            'min_effect': finite(settings.get('min_effect')),
            'alpha': finite(settings.get('alpha')), 'flagged': flagged}, ''


def _changes(value) -> list[dict]:
    if not isinstance(value, dict):
        return []
    out = []
    for key, pair in value.items():
        if isinstance(pair, (list, tuple)) and len(pair) == 2:
            out.append({'field': text(key), 'before': text(pair[0]), 'after': text(pair[1])})
    return out


def _gate_row(comp: dict) -> dict:
    since = comp.get('since') if isinstance(comp.get('since'), dict) else None
    return {
        'verdict': text(comp.get('verdict')), 'environ': text(comp.get('environ')),
        'test': text(comp.get('test')), 'variable': text(comp.get('variable')),
        'unit': text(comp.get('unit')), 'direction': text(comp.get('direction')),
        'median_base': finite(comp.get('median_base')),
        'median_new': finite(comp.get('median_new')),
        'change': finite(comp.get('change')), 'ci_low': finite(comp.get('ci_low')),
        'ci_high': finite(comp.get('ci_high')), 'p_adj': finite(comp.get('p_adj')),
        'n_base': comp.get('n_base'), 'n_new': comp.get('n_new'),
        'since': None if since is None else {
            'session': text(since.get('session'))[:8], 'when': text(since.get('when')),
            'change': finite(since.get('change')),
            'changes': _changes(since.get('provenance_changes'))},
        'changes': _changes(comp.get('provenance_changes')), 'note': text(comp.get('note'))}


def skip_reason(case: Case, index: dict, seen: frozenset = frozenset()) -> str:
    """Why a test case was skipped, following skipped or failed fixtures and dependencies to
    the reason recorded where the skip started."""
    deps = [index[(case.session, name, env)] for name, env in case.dependencies
            if (case.session, name, env) in index]
    seen = seen | {case.unique_name}
    if case.result == 'fail_deps':
        failed = [d for d in deps if d.result in FAILED + ('fail_deps',)]
        if failed:
            d = failed[0]
            kind = 'fixture' if d.fixture else 'dependency'
            why = first_line(d.fail_reason) or skip_reason(d, index, seen)
            return f'its {kind} {d.test} ({d.environ}) failed: {why}'
        return 'a dependency failed (which one was not recorded)'
    if case.skip_reason:
        return case.skip_reason
    for d in deps:
        if d.result in ('skip', 'fail_deps') and d.unique_name not in seen:
            kind = 'fixture' if d.fixture else 'dependency'
            return f'its {kind} {d.test} ({d.environ}) was skipped: ' \
                   f'{skip_reason(d, index, seen)}'
    return 'no reason recorded (the test did not record one in skip_reason)'


def _skipped(ctx: Context) -> list[dict]:
    index = {(c.session, c.unique_name, c.environ): c for c in ctx.cases}
    groups: dict[str, list[str]] = {}
    for case in ctx.cases:
        if COLUMNS.get(case.result) == 'skipped':
            groups.setdefault(skip_reason(case, index), []).append(case.label)
    return [{'reason': reason, 'count': len(labels), 'cases': sorted(set(labels))}
            for reason, labels in sorted(groups.items(), key=lambda kv: -len(kv[1]))]


def _notes(ctx: Context) -> list[dict]:
    """What tests that passed could not compute (a fit the sweep cannot support...)."""
    groups: dict[str, list[str]] = {}
    for case in ctx.cases:
        for note in case.notes:
            groups.setdefault(note, []).append(case.label)
    return [{'note': note, 'count': len(labels), 'cases': sorted(set(labels))}
            for note, labels in sorted(groups.items(), key=lambda kv: -len(kv[1]))]


def _failures(ctx: Context) -> list[dict]:
    return [{'test': c.test, 'environ': c.environ, 'result': c.result,
             'phase': c.fail_phase, 'fixture': c.fixture,
             'reason': c.fail_reason[:2000] or 'no reason recorded'}
            for c in ctx.cases if c.result in FAILED]


def _not_selected(ctx: Context) -> tuple[list[dict], list[str]]:
    ran = {c.check for c in ctx.cases if not c.fixture}
    ran = [e.check for e in experiments.EXPERIMENTS if e.check in ran]
    out, unknown = [], []
    for env in ctx.environments:
        langs = ctx.languages(env)
        if langs is None:
            if any(c.environ == env and not c.fixture for c in ctx.cases):
                unknown.append(env)
            continue
        missing = []
        for check in ran:
            lacking = [lang for lang in experiment_languages(check)
                       if feature(lang) not in langs]
            if lacking:
                missing.append({'check': check, 'languages': lacking})
        if missing:
            out.append({'environ': env, 'languages': list(langs), 'missing': missing})
    return out, unknown


def _status(total: dict, gate: dict | None) -> tuple[str, str]:
    if not total['cases']:
        return 'no data', 'No test case could be read: nothing to judge (see the warnings).'
    failed = total['fail'] + total['aborted']
    regressed = sum(r['verdict'] == verdicts.REGRESSED for r in gate['flagged']) if gate else 0
    parts = []
    if failed:
        parts.append(f'{failed} of {total["cases"]} test cases failed')
    else:
        parts.append(f'{total["pass"]} of {total["cases"]} test cases passed')
    if total['skipped']:
        parts.append(f'{total["skipped"]} skipped')
    if gate is None:
        parts.append('not compared with a baseline')
    else:
        improved = sum(r['verdict'] == verdicts.IMPROVED for r in gate['flagged'])
        parts.append(f'{regressed} variable(s) regressed, {improved} improved')
    status = 'fail' if failed else 'regressed' if regressed else 'pass'
    return status, '; '.join(parts)


def build(ctx: Context) -> Section:
    gate, gate_note = _gate(ctx)
    rows = [_counts(ctx.cases, env) for env in ctx.environments]
    if gate:
        for row in rows:
            for verdict in (verdicts.REGRESSED, verdicts.IMPROVED):
                row[verdict] = sum(r['verdict'] == verdict and r['environ'] == row['environ']
                                   for r in gate['flagged'])
    total = _counts(ctx.cases, None)
    if gate:
        for verdict in (verdicts.REGRESSED, verdicts.IMPROVED):
            total[verdict] = sum(r['verdict'] == verdict for r in gate['flagged'])
    summary = _reframe_summary(ctx)
    matches = bool(summary) and (
        summary['num_cases'] == total['cases'] and summary['num_failures'] == total['fail']
        and summary['num_skipped'] == total['skipped']
        and summary['num_aborted'] == total['aborted'])
    not_selected, unknown = _not_selected(ctx)
    status, headline = _status(total, gate)
    systems = sorted({c.system for c in ctx.cases if c.system})
    return Section({
        'status': status, 'headline': headline, 'systems': systems,
        'sessions': [s.uuid for s in ctx.sessions], 'counted': COUNTED,
        'environments': rows, 'total': total, 'reframe_summary': summary,
        'matches_reframe': matches, 'gate': gate, 'gate_note': gate_note,
        'failures': _failures(ctx), 'skipped': _skipped(ctx), 'notes': _notes(ctx),
        'not_selected': not_selected, 'languages_unknown': unknown,
        'warnings': []}, 'verdict.html.j2')
