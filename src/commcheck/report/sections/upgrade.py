"""Upgrade: the old against the new stack, launched in adjacent pairs and judged pair by pair
(``commcheck upgrade``, :mod:`commcheck.analysis.paired`): per variable and size the medians,
the pairs (and those left out as machine changes), the paired intervals of the value adjusted
by its floor (the slope fitted) and of the floor, the verdict naming the slower stack, the
acceptance margin and the bound reached, and the smallest change the pairs could have
detected; each test case's looks. Read from ``reports/upgrade/<session>.json`` (format 1 or
2); a session without one says so in a line."""

from __future__ import annotations

from commcheck.analysis import verdicts
from commcheck.report.context import Context, Section, record_rows
from commcheck.report.model import finite, text


def _interval(value) -> dict | None:
    if not isinstance(value, dict):
        return None
    return {'outcome': text(value.get('outcome')), 'change': finite(value.get('change')),
            'low': finite(value.get('ci_low')), 'high': finite(value.get('ci_high'))}


def _accept(value) -> dict | None:
    """A judgement's acceptance (format 2; None in format 1 or without a margin)."""
    if not isinstance(value, dict):
        return None
    result = value.get('result')
    return {'margin': finite(value.get('margin')), 'bound': finite(value.get('bound')),
            'result': result if result in ('pass', 'fail') else 'undecided'}


def _case(case) -> str | None:
    """A test case's pairing in words (format 2's plan), or None."""
    if not isinstance(case, dict) or not isinstance(case.get('looks'), list):
        return None
    looks = ', '.join(str(n) for n in case['looks'] if isinstance(n, int)) or 'no'
    return (f"{text(case.get('test'))}: looked at {looks} pairs of "
            f"{text(case.get('horizon'))} planned: {text(case.get('stopped'))}")


def _row(j: dict) -> dict:
    pairs, machine = j.get('pairs'), j.get('machine_pairs')
    return {'verdict': text(j.get('verdict')), 'test': text(j.get('test')),
            'variable': text(j.get('variable')), 'unit': text(j.get('unit')),
            'old': finite(j.get('median_old')), 'new': finite(j.get('median_new')),
            'pairs': pairs if isinstance(pairs, int) else None,
            'machine': machine if isinstance(machine, int) else None,
            'cost': _interval(j.get('cost')), 'floor': _interval(j.get('floor')),
            'floor_variable': text(j.get('floor_variable')),
            'detectable': finite(j.get('detectable')), 'slower': text(j.get('slower')),
            'slope': finite(j.get('slope')), 'accept': _accept(j.get('accept')),
            'statement': text(j.get('statement')), 'note': text(j.get('note')),
            'flagged': j.get('verdict') in verdicts.SOFTWARE_REGRESSED}


def build(ctx: Context) -> Section:
    record = ctx.upgrade
    if record is None:
        return Section({'record': None}, 'upgrade.html.j2')
    rows = record_rows(ctx, record, 'upgrade', 'judgements', 'judgement', _row)
    if rows is None:
        return Section({'record': None}, 'upgrade.html.j2')
    order = {v: i for i, v in enumerate(verdicts.VERDICTS)}
    rows.sort(key=lambda r: (order.get(r['verdict'], 99), r['test'], r['variable']))
    settings = record.get('settings') if isinstance(record.get('settings'), dict) else {}
    slower = sorted({r['slower'] for r in rows if r['flagged'] and r['slower']})
    plan = record.get('plan') if isinstance(record.get('plan'), dict) else {}
    cases = plan.get('cases') if isinstance(plan.get('cases'), list) else []
    return Section({'record': True, 'old': text(record.get('old')),
                    'new': text(record.get('new')), 'rows': rows, 'slower': slower,
                    'min_effect': finite(settings.get('min_effect')),
                    'alpha': finite(settings.get('alpha')),
                    'accept': finite(settings.get('accept')),
                    'adjust': text(settings.get('adjust') or 'ratio'),
                    'looks': [c for c in map(_case, cases) if c]}, 'upgrade.html.j2')
