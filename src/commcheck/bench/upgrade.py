"""Benchmark, not a test: the paired upgrade rule (:mod:`commcheck.analysis.paired`) on real
sessions, beside today's between-session gate, ``compare --environ/--against`` and a 10 % rule
on ReFrame's ``--performance-compare``, on the same launches.

A session is ``--pairs`` pairs of launches of ``pingpong-c`` per stack (sizes 8 B, 1 KiB,
1 MiB, the floor measured in every launch): per pair the "old" and the "new" side, in random
order, the stacks alternating pair by pair. Both sides load the slowmpi interposer
(``src/kernels/tools/slowmpi``), so the only difference between them is its wait: the old side
at 0 %, the new side at the session kind's size, a percentage of each launch's own 8 B one-way
time and of its 1 MiB one-way time (each launch sizes it in its own regime; what it added,
measured, is recorded). Kinds, interleaved round by round, sessions ``--gap`` seconds apart:
A/A, +2 %, +5 %, +10 %, +20 %, and A/A with a busy loop on every core for the whole session.

Each session is judged at 6, 8, 12 and 16 pairs (its first n pairs), per stack, by:

- paired: ``commcheck upgrade``'s rule on the session's pairs;
- gate: ``commcheck compare`` between sessions, the new side against the old sides of the 3
  sessions before it (not busy-loop ones) as the baseline;
- environ: ``commcheck compare --environ OLD --against NEW`` on the session, unpaired;
- perf-compare 10 %: the median of the new side more than 10 % worse than the old side's, as
  a site scripts on ``reframe --performance-compare``.

A session counts as flagged on a variable when the rule calls it regressed (``latency_8B`` and
``bw_1048576B`` are the issue's; ``any`` is any of the three). For A/A kinds that is a false
alarm; for the others, power. ``--rejudge FILE`` judges recorded launches again.
"""

from __future__ import annotations

import json
import random
import statistics
import tempfile
import time
from pathlib import Path

from rich.table import Table

from commcheck import console as textconsole
from commcheck import experiments, paths
from commcheck.analysis import gate, paired
from commcheck.bench import gate as bench_gate
from commcheck.errors import UserError
from commcheck.results.store import Sample
from commcheck.site import kbuild, slowmpi

AA, AA_BUSY = 'A/A', 'A/A, busy loops'
#: The kinds of session and the wait each adds on the new side (% of a launch's own time).
KINDS = {AA: 0.0, '+2 %': 2.0, '+5 %': 5.0, '+10 %': 10.0, '+20 %': 20.0, AA_BUSY: 0.0}
#: Pairs each session is judged at (its first n).
PAIR_COUNTS = (6, 8, 12, 16)
#: Sessions before a judged one whose old sides make the gate's baseline.
BASELINE_SESSIONS = 3
#: The rules every session is judged by, in the tables' order.
RULES = ('paired', 'gate', 'environ', 'perf-compare 10 %')
#: The variables the tables show one by one (the issue's).
SHOWN = (experiments.sized_name('latency', 8), experiments.sized_name('bw', 1 << 20))
#: The version of the record ``--json`` writes and ``--rejudge`` reads.
FORMAT_VERSION = 1
console = textconsole.make()


# ---- recording -------------------------------------------------------------------------------

def _launch(stack, program: Path, library: Path, binding: str, percent: float) -> dict:
    values, stderr = bench_gate.launch_with_stderr(stack, program, binding,
                                                   slowmpi.environment(library, percent))
    said = slowmpi.added(stderr)
    if said is None:
        raise UserError(f'slowmpi on {stack.id}: no account of the added delay on stderr '
                        f'(not loaded?): {stderr.strip()[-300:]}')
    return {'values': values, 'added_small_ns': said['small'], 'added_large_ns': said['large']}


def run_session(index: int, kind: str, stacks, programs, libraries, binding: str,
                pairs: int) -> dict:
    """One session: ``pairs`` pairs per stack, old and new in random order within a pair."""
    loops = bench_gate.busy_loops() if kind == AA_BUSY else []
    rng, seq = random.Random(index), 0
    out = {s.id: {'old': [], 'new': []} for s in stacks}
    started = time.time()
    try:
        for _ in range(pairs):
            for stack in stacks:
                sides = ['old', 'new']
                rng.shuffle(sides)
                for side in sides:
                    launch = _launch(stack, programs[stack.id], libraries[stack.id], binding,
                                     KINDS[kind] if side == 'new' else 0.0)
                    launch['seq'] = seq = seq + 1
                    out[stack.id][side].append(launch)
    finally:
        for proc in loops:
            proc.kill()
            proc.wait()
    return {'index': index, 'kind': kind, 'started': started, 'ended': time.time(),
            'stacks': out}


def record_sessions(args, stacks, binding: str, save) -> list[dict]:
    """The sessions, kinds interleaved; ``save(sessions)`` after each one, so a benchmark of
    hours stopped part-way keeps what it recorded (``--rejudge`` reads it)."""
    kinds = [kind for _ in range(args.per_kind) for kind in KINDS]
    sessions = []
    with tempfile.TemporaryDirectory(prefix='commcheck-upgrade-') as tmp:
        programs = {s.id: kbuild.cmake_build(s, Path(tmp) / s.id, targets=('pingpong-c',))
                    / 'pingpong-c' for s in stacks}
        libraries = {s.id: slowmpi.build(s, Path(tmp) / s.id) for s in stacks}
        for i, kind in enumerate(kinds):
            if i:
                time.sleep(args.gap)
            with console.status(f'session {i + 1}/{len(kinds)} ({kind}): {args.pairs} pairs '
                                f'per stack'):
                sessions.append(run_session(i, kind, stacks, programs, libraries, binding,
                                            args.pairs))
            save(sessions)
    return sessions


# ---- judging ---------------------------------------------------------------------------------

def samples(session: dict, stack: str, side: str, n: int, environ: str) -> dict:
    """The first ``n`` pairs' launches of one side, keyed as compare keys them."""
    out: dict[tuple, list[Sample]] = {}
    for launch in session['stacks'][stack][side][:n]:
        for name, value in launch['values'].items():
            floor = experiments.floor_variable(name)
            key = ('local', 'default', environ, bench_gate.TEST, name)
            out.setdefault(key, []).append(Sample(
                session=f's{session["index"]}', time=float(launch['seq']), system='local',
                partition='default', environ=environ, test=bench_gate.TEST, variable=name,
                value=value, unit=floor.unit if floor else bench_gate.VARIABLES[name][2],
                result='pass'))
    return out


def _flagged(verdicts) -> set[str]:
    return {v for v, verdict in verdicts if verdict in gate.SOFTWARE_REGRESSED}


def judge(sessions: list[dict], j: int, stack: str, n: int) -> dict:
    """Per rule, the variables it flags in session ``j`` (None: the rule cannot be applied)."""
    sess = sessions[j]
    old, new = samples(sess, stack, 'old', n, 'old'), samples(sess, stack, 'new', n, 'new')
    flat = [s for group in (old, new) for ss in group.values() for s in ss]
    judged = paired.compare(flat, 'old', 'new')
    out = {'paired': _flagged((c.variable, c.verdict) for c in judged),
           'detectable': {c.variable: c.detectable for c in judged}}
    out['environ'] = _flagged((c.variable, c.verdict) for c in gate.compare(
        _relabel(old, 'new vs old'), _relabel(new, 'new vs old')))
    out['perf-compare 10 %'] = {k[4] for k in bench_gate.peer_rule(
        _relabel(old, 'x'), _relabel(new, 'x'), 0.10)}
    before = [s for s in sessions[:j] if s['kind'] != AA_BUSY][-BASELINE_SESSIONS:]
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


def evaluate(sessions: list[dict], stacks: list[str], counts: list[int]) -> list[dict]:
    """One row per (kind, stack, pairs): per rule the sessions flagged on each shown variable
    and on any, out of those judged; the paired rule's median detectable change on each."""
    rows = []
    for kind in KINDS:
        for stack in stacks:
            for n in counts:
                judged = [judge(sessions, j, stack, n) for j, s in enumerate(sessions)
                          if s['kind'] == kind]
                row = {'kind': kind, 'stack': stack, 'pairs': n, 'sessions': len(judged),
                       'realized': realized(sessions, kind, stack, n)}
                for rule in RULES:
                    done = [r[rule] for r in judged if r[rule] is not None]
                    row[rule] = {**{v: sum(v in f for f in done) for v in SHOWN},
                                 'any': sum(bool(f) for f in done), 'of': len(done)}
                for v in SHOWN:
                    limits = [r['detectable'].get(v) for r in judged]
                    limits = [x for x in limits if x is not None]
                    row[f'detectable {v}'] = statistics.median(limits) if limits else None
                rows.append(row)
    return rows


def realized(sessions: list[dict], kind: str, stack: str, n: int) -> dict[str, float | None]:
    """What the interposer added, measured, over the old side's median figure: the slowdown
    the new side really carried (8 B: added ns over the one-way time; 1 MiB: over its time).
    Both sides load the interposer and time their waits alike, the old side's asked 0: what it
    measured (the path's own cost and the timing's residue) is taken off the new side's."""
    added = {side: ([], []) for side in ('old', 'new')}
    lat8, time1m = [], []
    for s in sessions:
        if s['kind'] != kind:
            continue
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


def _cell(counts: dict) -> str:
    if not counts['of']:
        return '-'
    return ' / '.join(str(counts[v]) for v in (*SHOWN, 'any')) + f' of {counts["of"]}'


def table(rows: list[dict]) -> Table:
    out = Table(title='Sessions flagged, per rule: latency_8B / bw_1048576B / any variable, of '
                      'the sessions judged (A/A kinds: false alarms; others: power)',
                header_style='bold')
    for col in ('kind', 'stack', 'pairs', 'added, measured: 8 B / 1 MiB', *RULES,
                'paired: detectable 8 B / 1 MiB (median)'):
        out.add_column(col)
    for r in rows:
        real = r['realized']
        added = ' / '.join('-' if real[v] is None else f'{real[v]:+.1%}' for v in SHOWN)
        limits = ' / '.join('-' if r[f'detectable {v}'] is None else
                            f'{r[f"detectable {v}"]:.1%}' for v in SHOWN)
        out.add_row(r['kind'], r['stack'], str(r['pairs']), added,
                    *(_cell(r[rule]) for rule in RULES), limits)
    return out


# ---- command ---------------------------------------------------------------------------------

def recorded(path: Path) -> tuple[list[dict], dict]:
    """(sessions, header) of a ``bench upgrade --json`` file, checked: one line naming the
    file when it is not one."""
    try:
        data = json.loads(Path(path).read_text(encoding='utf-8'))
        if data.get('format_version') != FORMAT_VERSION or data.get('kind') != 'bench upgrade':
            raise ValueError('not format 1 of bench upgrade')
        sessions = list(data['sessions'])
        for s in sessions:
            if s['kind'] not in KINDS:
                raise ValueError(f'session {s.get("index")}: kind {s["kind"]!r}')
            for sides in s['stacks'].values():
                for launch in sides['old'] + sides['new']:
                    if not all(v > 0 for v in launch['values'].values()):
                        raise ValueError(f'session {s["index"]}: a value not positive')
                    float(launch['seq']), float(launch['added_small_ns'])
        if not sessions:
            raise ValueError('no sessions recorded')
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
        raise UserError(f'{path}: not a `commcheck bench upgrade --json` record ({err})') \
            from None
    return sessions, data


def _write(out: Path, header: dict, sessions: list[dict]) -> None:
    """The record so far, replaced whole (a reader never sees half a file)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    part = out.with_name(out.name + '.part')
    part.write_text(json.dumps({**header, 'sessions': sessions}, indent=1) + '\n')
    part.replace(out)


def main(args) -> int:
    if args.rejudge:
        sessions, header = recorded(args.rejudge)
        pairs = min(len(sd['old']) for s in sessions for sd in s['stacks'].values())
    else:
        stacks, binding = bench_gate._stacks(args)
        pairs = args.pairs
        started = time.time()
        stamp = time.strftime('%Y%m%dT%H%M%S')
        out = args.json or paths.REPORTS_DIR / 'bench' / f'upgrade-{stamp}.json'
        header = {'format_version': FORMAT_VERSION, 'kind': 'bench upgrade',
                  'sizes': bench_gate.SIZES, 'iters': bench_gate.ITERS, 'gap_s': args.gap,
                  'binding': binding}

        def save(done: list[dict]) -> None:
            _write(out, {**header, 'minutes': (time.time() - started) / 60}, done)

        console.print(f'commcheck: the launches go to {out}, session by session')
        sessions = record_sessions(args, stacks, binding, save)
    stack_ids = sorted({k for s in sessions for k in s['stacks']})
    counts = [n for n in PAIR_COUNTS if n <= pairs] or [pairs]
    console.print(table(evaluate(sessions, stack_ids, counts)))
    console.print(f'{len(sessions)} sessions ({", ".join(stack_ids)}), {pairs} pairs per stack '
                  f'each, {header.get("gap_s", 0):.0f} s apart, recorded '
                  f'{time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(sessions[0]["started"]))}')
    if not args.rejudge:
        console.print(f'commcheck: wrote the launches to {out}')
    return 0
