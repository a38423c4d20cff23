"""``commcheck bench gate``: the gate with its default rule (over the floor) judged at looks,
launches until decided (:mod:`commcheck.analysis.sequential`), beside the fixed counts of
:mod:`commcheck.bench.gate`, on the same sessions.

Each judged session is looked at on its first 6, 9, 12 ... launches a side (a horizon of the
session's launches), each look spending its share of alpha (the union bound keeps the false
alarms over the looks at alpha), and stopped when every variable is decided; it counts as
flagged when the look it stopped at (or its last) reads a software regression. Its rows give
the launches a side used, median and maximum."""

from __future__ import annotations

import statistics

from rich.table import Table

from commcheck.analysis import gate, sequential, verdicts
from commcheck.bench import gate as bench_gate

#: Launches a side at the first look.
FIRST = 6


def judge(base: dict, session: dict, launches: int, scale: float = 1.0) -> dict:
    """{'fail': the session read a software regression where it stopped, 'launches': the
    launches a side it used}."""
    plan = sequential.Plan(horizon=launches, first=min(FIRST, launches))

    def look(n: int, share: float) -> list[gate.Comparison]:
        return gate.compare(base, bench_gate.as_samples(session, n, scale),
                            gate.Settings(alpha=0.05 * share))
    comps, used, _ = sequential.run(
        plan, look, lambda cs: all(c.verdict in verdicts.DECIDED for c in cs))
    return {'fail': any(c.verdict in verdicts.SOFTWARE_REGRESSED for c in comps or []),
            'launches': used}


def evaluate(sessions: list[dict], launches: int) -> dict:
    """Every judged session against the three clean sessions before it (their first
    ``launches``), by kind; power on clean sessions' MPI figures made slower."""
    out: dict = {bench_gate.CLEAN: [], bench_gate.SLOWED: [], bench_gate.DEGRADED: [],
                 **{d: [] for d in bench_gate.EFFECTS}}
    for j, sess in enumerate(sessions):
        before = [s for s in sessions[:j] if s['kind'] == bench_gate.CLEAN][
            -bench_gate.BASELINE_SESSIONS:]
        if len(before) < bench_gate.BASELINE_SESSIONS:
            continue
        base = bench_gate.merged([bench_gate.as_samples(s, launches) for s in before])
        out[sess['kind']].append(judge(base, sess, launches))
        if sess['kind'] == bench_gate.CLEAN:
            for d in bench_gate.EFFECTS:
                out[d].append(judge(base, sess, launches, 1 + d))
    return out


def table(evaluated: dict) -> Table:
    out = Table(title='The gate (its default, over the floor), launches until decided: sessions '
                      'failing it, and the launches a side used (median / max)',
                header_style='bold')
    for col in ('sessions', 'failing', 'launches used'):
        out.add_column(col)
    for kind, results in evaluated.items():
        if not results:
            continue
        name = f'power at {kind:.0%}' if isinstance(kind, float) else kind
        used = [r['launches'] for r in results]
        out.add_row(name, f'{sum(r["fail"] for r in results)}/{len(results)}',
                    f'{statistics.median(used):g} / {max(used)}')
    return out


def evaluated(sessions: list[dict], launches: int) -> Table:
    """The table of :func:`evaluate` (what ``bench gate`` prints after its fixed counts)."""
    return table(evaluate(sessions, launches))
