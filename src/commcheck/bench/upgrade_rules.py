"""The rules ``commcheck bench upgrade`` judges its recorded sessions by, side by side on the
same launches, and its tables.

Fixed counts, each session judged on its first n pairs (n in :data:`PAIR_COUNTS`), per stack:

- ``slope``: ``commcheck upgrade``'s paired rule, each figure adjusted by its floor with the
  slope fitted on the pairs (issue 44);
- ``ratio``: the same over the floor (slope 1: the rule before issue 44);
- ``gate``: ``commcheck compare`` between sessions, the new side against the old sides of the
  3 sessions before it (not busy-loop ones) as the baseline;
- ``environ``: ``commcheck compare --environ OLD --against NEW`` on the session, unpaired;
- ``perf-compare 10 %``: the median of the new side more than 10 % worse than the old side's.

Pairs until decided (:mod:`commcheck.analysis.sequential`), the slope's rule: looks at 12, 18,
27 ... pairs, alpha spent over them, each session stopped when every variable is decided or its
horizon reached (the recorded pairs, ``--max-pairs`` at most, and what ``--budget`` of its
launches holds at the session's own time a pair); with the acceptance margin ``--accept`` too.
Their rows give the pairs used, median and maximum, a row per cap of ``--max-pairs``.

A session counts as flagged on a variable when the rule calls it regressed (``latency_8B`` and
``bw_1048576B`` are the issue's; ``any`` is any of the three). For A/A kinds that is a false
alarm; for the others, power. Beside them, the floors: the old side's median floors (8 B, us;
1 MiB, GB/s) and the median floor ratio new/old of the pairs, which shows whether the
interposer moves the floor (issue 44: it did, through the allocator)."""

from __future__ import annotations

import math
import statistics

from rich.table import Table

from commcheck import experiments
from commcheck.analysis import gate, paired, sequential, stats, verdicts
from commcheck.bench import gate as bench_gate
from commcheck.results.store import Sample

AA, AA_BUSY = 'A/A', 'A/A, busy loops'     #: the two kinds whose new side adds nothing
#: The kinds of session and the wait each adds on the new side (% of a launch's own time).
KINDS = {AA: 0.0, '+2 %': 2.0, '+5 %': 5.0, '+10 %': 10.0, '+20 %': 20.0, AA_BUSY: 0.0}
#: Pairs each session is judged at by the fixed-count rules (its first n).
PAIR_COUNTS = (8, 12, 16, 32, 64)
#: Sessions before a judged one whose old sides make the gate's baseline.
BASELINE_SESSIONS = 3
#: The fixed-count rules, in the tables' order.
RULES = ('slope', 'ratio', 'gate', 'environ', 'perf-compare 10 %')
#: The variables the tables show one by one (the issue's).
SHOWN = (experiments.sized_name('latency', 8), experiments.sized_name('bw', 1 << 20))
#: The floors shown beside them.
FLOORS = (experiments.sized_name('floor_latency', 8), experiments.sized_name('floor_bw', 1 << 20))


def samples(session: dict, stack: str, side: str, n: int, environ: str) -> dict:
    """The first ``n`` pairs' launches of one side, keyed as compare keys them."""
    out: dict[tuple, list[Sample]] = {}
    for launch in session['stacks'][stack][side][:n]:
        for name, value in launch['values'].items():
            key = ('local', 'default', environ, bench_gate.TEST, name)
            out.setdefault(key, []).append(Sample(
                session=f's{session["index"]}', time=float(launch['seq']), system='local',
                partition='default', environ=environ, test=bench_gate.TEST, variable=name,
                value=value, unit=bench_gate._unit(name), result='pass'))
    return out


def flat(session: dict, stack: str, n: int) -> list[Sample]:
    """Both sides' first ``n`` pairs, as ``commcheck upgrade`` reads a session."""
    return [s for side in ('old', 'new') for ss in samples(session, stack, side, n, side).values()
            for s in ss]


def _flagged(judged) -> set[str]:
    return {v for v, verdict in judged if verdict in verdicts.SOFTWARE_REGRESSED}


def judge(sessions: list[dict], j: int, stack: str, n: int) -> dict:
    """Per fixed-count rule, the variables it flags in session ``j`` (None: the rule cannot be
    applied); the slope's detectable change per variable."""
    sess = sessions[j]
    old, new = samples(sess, stack, 'old', n, 'old'), samples(sess, stack, 'new', n, 'new')
    both = flat(sess, stack, n)
    judged = paired.compare(both, 'old', 'new')
    out = {'slope': _flagged((c.variable, c.verdict) for c in judged),
           'ratio': _flagged((c.variable, c.verdict) for c in paired.compare(
               both, 'old', 'new', paired.Settings(adjust=stats.RATIO))),
           'detectable': {c.variable: c.detectable for c in judged}}
    out['environ'] = _flagged((c.variable, c.verdict) for c in gate.compare(
        _relabel(old, 'new vs old'), _relabel(new, 'new vs old')))
    out['perf-compare 10 %'] = {k[4] for k in bench_gate.peer_rule(
        _relabel(old, 'x'), _relabel(new, 'x'), 0.10)}
    before = [s for s in sessions[:j]
              if s['kind'] != AA_BUSY and stack in s['stacks']][-BASELINE_SESSIONS:]
    if len(before) < BASELINE_SESSIONS:
        out['gate'] = None
    else:
        baseline = bench_gate.merged([samples(s, stack, 'old', n, stack) for s in before])
        out['gate'] = _flagged((c.variable, c.verdict) for c in gate.compare(
            baseline, samples(sess, stack, 'new', n, stack)))
    return out


def _relabel(group: dict, environ: str) -> dict:
    """The same samples keyed under another environment label (compare --environ's)."""
    return {(k[0], k[1], environ, k[3], k[4]): v for k, v in group.items()}


def horizon(session: dict, stack: str, budget_s: float | None,
            max_pairs: int | None = None) -> int:
    """The pairs a sequential run of this session could use: those recorded, ``max_pairs`` at
    most (``commcheck upgrade --max-pairs``'s cap), and what ``budget_s`` of its launches holds
    at its own time a pair (records of format 1 have no launch times: the recorded pairs)."""
    sides = session['stacks'][stack]
    recorded = min(len(sides['old']), len(sides['new']), max_pairs or math.inf)
    took = [o.get('seconds', 0) + n.get('seconds', 0) for o, n in zip(sides['old'], sides['new'])]
    if not budget_s or not all(took):
        return recorded
    return max(1, min(recorded, int(budget_s // statistics.median(took))))


def sequential_judge(session: dict, stack: str, budget_s: float | None,
                     accept: float | None = None, max_pairs: int | None = None) -> dict:
    """Pairs until decided on one recorded session: the variables flagged, the acceptance of
    each, the pairs used."""
    settings = paired.Settings(accept=accept)
    family = len(bench_gate.VARIABLES)
    plan = sequential.Plan(horizon(session, stack, budget_s, max_pairs), settings.alpha, family)

    def look(n: int, share: float) -> list[paired.Judgement]:       # verdicts alone: fast
        return paired.compare(flat(session, stack, n), 'old', 'new', settings, share, family,
                              exact=False)
    judged, used, _ = sequential.run(plan, look, lambda js: all(j.decided for j in js))
    judged = judged or []
    return {'flagged': _flagged((j.variable, j.verdict) for j in judged), 'pairs': used,
            'accept': {j.variable: j.acceptance for j in judged}}


# ---- evaluation ------------------------------------------------------------------------------

def _of_kind(sessions: list[dict], kind: str, stack: str) -> list[int]:
    """The sessions of one kind that recorded this stack (``--rejudge`` pools records of
    different stacks, each session holding its own)."""
    return [j for j, s in enumerate(sessions) if s['kind'] == kind and stack in s['stacks']]


def evaluate(sessions: list[dict], stacks: list[str], counts: list[int]) -> list[dict]:
    """One row per (kind, stack, pairs): per fixed-count rule the sessions flagged on each
    shown variable and on any, out of those judged; the slope's median detectable change."""
    rows = []
    for kind in KINDS:
        for stack in stacks:
            for n in counts:
                judged = [judge(sessions, j, stack, n) for j in _of_kind(sessions, kind, stack)]
                if not judged:
                    continue
                row = {'kind': kind, 'stack': stack, 'pairs': n, 'sessions': len(judged),
                       'realized': realized(sessions, kind, stack, n),
                       'floors': floors(sessions, kind, stack, n)}
                for rule in RULES:
                    done = [r[rule] for r in judged if r[rule] is not None]
                    row[rule] = {**{v: sum(v in f for f in done) for v in SHOWN},
                                 'any': sum(bool(f) for f in done), 'of': len(done)}
                for v in SHOWN:
                    limits = [x for x in (r['detectable'].get(v) for r in judged) if x is not None]
                    row[f'detectable {v}'] = statistics.median(limits) if limits else None
                rows.append(row)
    return rows


def evaluate_sequential(sessions: list[dict], stacks: list[str], budget_s: float | None,
                        accept: float, caps: list[int | None] | None = None) -> list[dict]:
    """One row per (kind, stack, cap): pairs until decided, without and with the margin, at
    most ``cap`` pairs (each of ``caps``; None: the recorded ones): sessions flagged, accepted,
    refused, and the pairs they used."""
    rows = []
    for kind in KINDS:
        for stack in stacks:
            chosen = [sessions[j] for j in _of_kind(sessions, kind, stack)]
            for cap in (caps or [None]) if chosen else []:
                rows.append(_sequential_row(chosen, kind, stack, budget_s, accept, cap))
    return rows


def _sequential_row(chosen: list[dict], kind: str, stack: str, budget_s: float | None,
                    accept: float, cap: int | None) -> dict:
    """One row of :func:`evaluate_sequential`: the sessions of one kind and stack, at most
    ``cap`` pairs."""
    plain = [sequential_judge(s, stack, budget_s, None, cap) for s in chosen]
    margin = [sequential_judge(s, stack, budget_s, accept, cap) for s in chosen]
    return {'kind': kind, 'stack': stack, 'sessions': len(chosen), 'cap': cap,
            'horizon': [horizon(s, stack, budget_s, cap) for s in chosen],
            'flagged': {**{v: sum(v in r['flagged'] for r in plain) for v in SHOWN},
                        'any': sum(bool(r['flagged']) for r in plain)},
            'pairs': [r['pairs'] for r in plain],
            'accepted': sum(all(a == verdicts.PASS for a in r['accept'].values())
                            for r in margin),
            'refused': sum(any(a == verdicts.FAIL for a in r['accept'].values()) for r in margin),
            'accept pairs': [r['pairs'] for r in margin],
            'floors': floors(chosen, kind, stack, None)}


def floors(sessions: list[dict], kind: str, stack: str, n: int | None) -> dict:
    """The old side's median floors (8 B us, 1 MiB MB/s) and the pairs' median floor ratio
    new/old, over the sessions of one kind."""
    out, chosen = {}, [sessions[j] for j in _of_kind(sessions, kind, stack)]
    for name in FLOORS:
        old = [x['values'][name] for s in chosen for x in s['stacks'][stack]['old'][:n]]
        ratio = [b['values'][name] / a['values'][name] for s in chosen
                 for a, b in zip(s['stacks'][stack]['old'][:n], s['stacks'][stack]['new'][:n])]
        out[name] = (statistics.median(old), statistics.median(ratio)) if old else (None, None)
    return out


def realized(sessions: list[dict], kind: str, stack: str, n: int) -> dict[str, float | None]:
    """What the interposer added, measured, over the old side's median figure: the slowdown
    the new side really carried (8 B: added ns over the one-way time; 1 MiB: over its time).
    Both sides load the interposer and time their waits alike, the old side's asked 0: what it
    measured (the path's own cost and the timing's residue) is taken off the new side's."""
    added = {side: ([], []) for side in ('old', 'new')}
    lat8, time1m = [], []
    for s in (sessions[j] for j in _of_kind(sessions, kind, stack)):
        for side, (small, large) in added.items():
            small += [x['added_small_ns'] for x in s['stacks'][stack][side][:n]]
            large += [x['added_large_ns'] for x in s['stacks'][stack][side][:n]]
        lat8 += [x['values']['latency_8B'] * 1e3 for x in s['stacks'][stack]['old'][:n]]
        time1m += [(1 << 20) / x['values']['bw_1048576B'] * 1e3
                   for x in s['stacks'][stack]['old'][:n]]
    if not lat8:
        return {'latency_8B': None, 'bw_1048576B': None}
    (old8, old1m), (new8, new1m) = added['old'], added['new']
    return {'latency_8B': (statistics.median(new8) - statistics.median(old8))
            / statistics.median(lat8),
            'bw_1048576B': (statistics.median(new1m) - statistics.median(old1m))
            / statistics.median(time1m)}


# ---- tables ----------------------------------------------------------------------------------

def _cell(counts: dict) -> str:
    if not counts['of']:
        return '-'
    return ' / '.join(str(counts[v]) for v in (*SHOWN, 'any')) + f' of {counts["of"]}'


def _floors(found: dict) -> str:
    """``0.071 us, 38.2 GB/s (x1.00, x0.99)``: the old side's floors and the ratio new/old."""
    (f8, r8), (f1m, r1m) = (found[name] for name in FLOORS)
    if f8 is None:
        return '-'
    return f'{f8:.3g} us, {f1m / 1000:.3g} GB/s (x{r8:.2f}, x{r1m:.2f})'


def table(rows: list[dict]) -> Table:
    out = Table(title='Fixed counts. Sessions flagged per rule: latency_8B / bw_1048576B / any '
                      'variable, of the sessions judged (A/A kinds: false alarms; others: '
                      'power); the floor beside them', header_style='bold')
    for col in ('kind', 'stack', 'pairs', 'added, measured: 8 B / 1 MiB',
                'floor 8 B, 1 MiB (new/old)', *RULES, 'slope: detectable 8 B / 1 MiB (median)'):
        out.add_column(col)
    for r in rows:
        real = r['realized']
        added = ' / '.join('-' if real[v] is None else f'{real[v]:+.1%}' for v in SHOWN)
        limits = ' / '.join('-' if r[f'detectable {v}'] is None else
                            f'{r[f"detectable {v}"]:.1%}' for v in SHOWN)
        out.add_row(r['kind'], r['stack'], str(r['pairs']), added, _floors(r['floors']),
                    *(_cell(r[rule]) for rule in RULES), limits)
    return out


def _used(pairs: list[int]) -> str:
    return f'{statistics.median(pairs):g} / {max(pairs)}' if pairs else '-'


def sequential_table(rows: list[dict], accept: float) -> Table:
    out = Table(title=f'Pairs until decided (the slope\'s rule, alpha spent over the looks): '
                      f'sessions flagged latency_8B / bw_1048576B / any; with a {accept:.0%} '
                      f'margin, sessions accepted / refused; pairs used, median / max',
                header_style='bold')
    for col in ('kind', 'stack', 'sessions', 'at most pairs', 'planned pairs (median)',
                'floor 8 B, 1 MiB', 'flagged', 'pairs used',
                f'accept {accept:.0%}: passed / refused', 'pairs used'):
        out.add_column(col)
    for r in rows:
        flagged = ' / '.join(str(r['flagged'][v]) for v in (*SHOWN, 'any'))
        out.add_row(r['kind'], r['stack'], str(r['sessions']),
                    'as recorded' if r['cap'] is None else str(r['cap']),
                    f'{statistics.median(r["horizon"]):g}', _floors(r['floors']), flagged,
                    _used(r['pairs']), f'{r["accepted"]} / {r["refused"]}',
                    _used(r['accept pairs']))
    return out
