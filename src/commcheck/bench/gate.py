"""Benchmark, not a test: the gate's false alarms and power on real sessions, beside the old
rule and the rule a site would script on ReFrame's ``--performance-compare``.

Sessions are real: each is ``--launches`` launches per stack of ``pingpong-c`` (sizes 8 B,
1 KiB, 1 MiB, the floor measured in every launch; with ``--stencil`` each launch also runs
``stencil-c`` at 2 ranks, S/R, on the Stencil check's grid, every run paired with its
compute-only floor: ``time`` against ``floor_time``), the stacks alternating launch by launch,
and sessions are ``--gap`` seconds apart (default three minutes), so the machine's regime moves
between sessions as it does between nightly runs. The kinds of session, in a fixed interleaved
order after three clean ones:

- clean: nothing changed;
- slowed machine: both cores shared, for the whole session, with one busy-loop process per
  core (started before the session's first launch, ended after its last): MPI unchanged, the
  machine slower. The gate must say "machine changed", never "MPI regressed";
- degraded MPI: Open MPI forced off shared memory (``OMPI_MCA_btl=self,tcp``), and with
  ``--ucx`` MPICH's UCX on TCP (``UCX_TLS=tcp,self``); the other stack clean.

Every judged session is compared with the three clean sessions before it (the baseline), at
5, 6, 8, 10, 12 launches a side (the first n launches of each session), by three rules:

- new: :func:`commcheck.analysis.gate.compare` (sessions as the unit, MPI's own cost against
  the floor); a session fails when a verdict is MPI regressed, both or regressed;
- old: the previous rule, kept here only (:func:`old_rule`): Mann-Whitney U on the pooled
  launches, Benjamini-Hochberg over the variables, flagged when the median is worse by > 20 %;
- peer X %: what a site scripts on ``reframe --performance-compare`` (medians over stored
  sessions, percentage difference, no verdict): flag when the median moved > X % the worse way.

Power: each clean judged session's launches with the MPI figures (latency, bandwidth) of both
stacks scaled by 1 + d (bandwidth divided by it) for d = 20 %, 10 %, 5 %, and the floor of the
same launches left as measured: the MPI got slower by d on an unchanged machine, with the
session's real noise. A session counts as caught when it fails the rule.

``--rejudge FILE`` judges the launches a previous run recorded (its ``--json``) under the rules
as they are now, launching nothing: a change of the rule is measured on the same sessions.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from rich.table import Table
from scipy import stats as scipy_stats

from commcheck import console as textconsole
from commcheck import experiments, paths
from commcheck.analysis import gate, kernel_records, stats, verdicts
from commcheck.errors import UserError
from commcheck.results.store import Sample
from commcheck.rfm.caches import host_last_level_cache
from commcheck.site import discover, kbuild

#: The message sizes of every launch (bytes): 8 B, 1 KiB, 1 MiB.
SIZES = (8, 1024, 1 << 20)
#: The key variables each launch measures: perf variable -> (size, DATA record's field, unit).
VARIABLES = {experiments.sized_name(name, size): (size, field, unit) for name, size, field, unit
             in (('latency', 8, 'oneway_us', 'us'), ('latency', 1024, 'oneway_us', 'us'),
                 ('bw', 1 << 20, 'bw_MBps', 'MB/s'))}
#: The test the launches are stored as (the main job's C ping-pong).
TEST = 'PingPong %lang=c'
#: --stencil: the Stencil test each launch also runs, and its variables' units.
STENCIL_TEST = 'Stencil %variant=sr %ranks=2 %seq.lang=c'
STENCIL_VARIABLES = {'time': 's', 'floor_time': 's'}
#: Round trips per launch.
ITERS = 400
#: Launches a side each judged session is judged at (its first n).
PER_SIDE = (5, 6, 8, 10, 12)
#: Of the launches ``bench gate --json`` writes (its own record; 2 as when it shared the gate's
#: number).
FORMAT_VERSION = 2
#: Clean sessions before a judged one that make its baseline.
BASELINE_SESSIONS = 3
#: The slowdowns planted for the power (a fraction: 20 %, 10 %, 5 %).
EFFECTS = (0.20, 0.10, 0.05)
#: The thresholds of the peer rule on ``--performance-compare`` (10 %, 20 %).
PEERS = (0.10, 0.20)
CLEAN, SLOWED, DEGRADED = 'clean', 'slowed machine', 'degraded MPI'
#: A degraded session's environment: Open MPI off shared memory.
DEGRADE = {'openmpi': {'OMPI_MCA_btl': 'self,tcp'}}
#: With ``--ucx``, also MPICH's UCX on TCP.
DEGRADE_UCX = {'mpich': {'UCX_TLS': 'tcp,self'}}
OLD_MIN_EFFECT, OLD_ALPHA, OLD_MIN_SAMPLES = 0.20, 0.05, 5
console = textconsole.make()


# ---- launches and sessions -------------------------------------------------------------------

def one_launch(stack, program: Path, binding: str, extra_env: dict) -> dict[str, float]:
    """One mpiexec of pingpong-c: the MPI figures and the floors of this launch."""
    return launch_with_stderr(stack, program, binding, extra_env)[0]


def launch_with_stderr(stack, program: Path, binding: str,
                       extra_env: dict) -> tuple[dict[str, float], str]:
    """:func:`one_launch`, and what the launch printed on stderr (``bench upgrade`` reads the
    interposer's account there)."""
    cmd = stack.mpi.record.launch_prefix(stack.mpi.launcher_command, 2, binding=binding,
                                         oversubscribe=2 > (os.cpu_count() or 1))
    done = subprocess.run([*cmd, str(program), '--sizes', ','.join(map(str, SIZES)), '--iters',
                           str(ITERS), '--warmup', str(ITERS // 10)], capture_output=True,
                          text=True, timeout=300,
                          env={**kbuild.stack_environment(stack), **extra_env})
    out = kernel_records.parse(done.stdout)
    rows = {r['size']: r for r in out['DATA']}
    floors = {r['size']: r for r in out['FLOOR'] if r.get('kind') != 'none'}
    if done.returncode or set(rows) != set(SIZES) or set(floors) != set(SIZES):
        raise UserError(f'pingpong-c failed on {stack.id}: {done.stderr.strip()[-300:]}')
    values = {name: float(rows[size][field]) for name, (size, field, _) in VARIABLES.items()}
    for name in VARIABLES:
        floor = experiments.floor_of('PingPong', name)
        fv = experiments.floor_variable(floor)
        values[floor] = float(floors[VARIABLES[name][0]][fv.field])
    if all(experiments.CPU_WAIT in r for r in floors.values()):    # as the check reports it
        values[experiments.CPU_WAIT] = max(float(r[experiments.CPU_WAIT])
                                           for r in floors.values())
    return values, done.stderr


def stencil_launch(stack, program: Path, binding: str, extra_env: dict) -> dict[str, float]:
    """One mpiexec of stencil-c as the Stencil check runs it at 2 ranks (its defaults, the grid
    from this host's cache): the variant's median run and its compute-only floor's."""
    n = experiments.grid_n(host_last_level_cache())
    cmd = stack.mpi.record.launch_prefix(stack.mpi.launcher_command, 2, binding=binding,
                                         oversubscribe=2 > (os.cpu_count() or 1))
    done = subprocess.run([*cmd, str(program), '--variant', 'sr', '--n', str(n), '--steps',
                           str(experiments.grid_steps(n)), '--baseline', 'yes', '--reps',
                           str(experiments.default('Stencil', 'min_reps')), '--target-seconds',
                           str(experiments.default('Stencil', 'target_seconds'))],
                          capture_output=True, text=True, timeout=600,
                          env={**kbuild.stack_environment(stack), **extra_env})
    result = kernel_records.parse(done.stdout)['RESULT']
    if done.returncode or not result or 'floor_time_s' not in result[0]:
        raise UserError(f'stencil-c failed on {stack.id}: {done.stderr.strip()[-300:]}')
    return {'time': float(result[0]['time_s']), 'floor_time': float(result[0]['floor_time_s'])}


def busy_loops() -> list[subprocess.Popen]:
    """One busy-loop process per core: the machine slowed for real."""
    return [subprocess.Popen([sys.executable, '-c', 'while True: pass'])
            for _ in range(os.cpu_count() or 1)]


def run_session(index: int, kind: str, stacks, programs, binding: str, launches: int,
                ucx: bool) -> dict:
    loops = busy_loops() if kind == SLOWED else []
    started = time.time()
    try:
        pools: dict[str, list[dict]] = {s.id: [] for s in stacks}
        for _ in range(launches):           # stacks alternate, launch by launch
            for stack in stacks:
                extra = {}
                if kind == DEGRADED:
                    extra = {**DEGRADE, **(DEGRADE_UCX if ucx else {})}.get(
                        stack.mpi.flavour, {})
                launch = one_launch(stack, programs[stack.id]['pingpong-c'], binding, extra)
                if 'stencil-c' in programs[stack.id]:
                    launch.update(stencil_launch(stack, programs[stack.id]['stencil-c'],
                                                 binding, extra))
                pools[stack.id].append(launch)
    finally:
        for proc in loops:
            proc.kill()
            proc.wait()
    degraded = sorted(s.id for s in stacks if kind == DEGRADED and
                      {**DEGRADE, **(DEGRADE_UCX if ucx else {})}.get(s.mpi.flavour))
    return {'index': index, 'kind': kind, 'started': started, 'ended': time.time(),
            'degraded_stacks': degraded, 'launches': pools}


def schedule(clean: int, slowed: int, degraded: int) -> list[str]:
    """Three clean sessions first (the first baseline), then the rest spread evenly."""
    rest = [CLEAN] * (clean - BASELINE_SESSIONS)
    for kind, count in ((SLOWED, slowed), (DEGRADED, degraded)):
        for i in range(count):
            rest.insert(round((i + 0.5) * len(rest) / count) + i % 2, kind)
    return [CLEAN] * BASELINE_SESSIONS + rest


# ---- the three rules -------------------------------------------------------------------------

def as_samples(session: dict, per_side: int, scale: float = 1.0) -> dict[tuple, list[Sample]]:
    """Samples of a session's first ``per_side`` launches per stack; MPI figures (not floors)
    made slower by ``scale``."""
    out: dict[tuple, list[Sample]] = {}
    for stack_id, pool in session['launches'].items():
        for i, launch in enumerate(pool[:per_side]):
            for name, value in launch.items():
                test, unit = ((STENCIL_TEST, STENCIL_VARIABLES[name])
                              if name in STENCIL_VARIABLES else (TEST, _unit(name)))
                if not experiments.is_floor(experiments.check_of(test), name):
                    value = value * scale if unit in ('us', 's') else value / scale
                key = ('local', 'default', stack_id, test, name)
                out.setdefault(key, []).append(Sample(
                    session=f's{session["index"]}', time=float(i), system='local',
                    partition='default', environ=stack_id, test=test, variable=name,
                    value=value, unit=unit, result='pass'))
    return out


def _unit(name: str) -> str:
    if name == experiments.CPU_WAIT:
        return experiments.UNITS[name]
    floor = experiments.floor_variable(name)
    return floor.unit if floor else VARIABLES[name][2]


def _judged(key: tuple) -> bool:
    """A key's variable is judged on its own (not a floor) by the rules kept for comparison."""
    return not experiments.is_floor(experiments.check_of(key[3]), key[4])


def merged(groups: list[dict]) -> dict[tuple, list[Sample]]:
    out: dict[tuple, list[Sample]] = {}
    for g in groups:
        for key, samples in g.items():
            out.setdefault(key, []).extend(samples)
    return out


def _worse(base: list[float], new: list[float], unit: str) -> float:
    ratio = statistics.median(new) / statistics.median(base)
    return ratio - 1 if unit in ('us', 's') else 1 / ratio - 1


def old_rule(base: dict, new: dict) -> set[tuple]:
    """The gate as it was (kept here only, for comparison): Mann-Whitney U on launches,
    Benjamini-Hochberg over the variables, flagged when the median is > 20 % worse."""
    keys = [k for k in sorted(new) if k in base and _judged(k)
            and min(len(base[k]), len(new[k])) >= OLD_MIN_SAMPLES]
    pvalues = []
    for k in keys:
        b, n = [s.value for s in base[k]], [s.value for s in new[k]]
        pvalues.append(1.0 if len(set(b) | set(n)) == 1 else
                       float(scipy_stats.mannwhitneyu(n, b, alternative='two-sided').pvalue))
    return {k for k, p in zip(keys, bh_adjust(pvalues))
            if p < OLD_ALPHA and _worse([s.value for s in base[k]], [s.value for s in new[k]],
                                        new[k][0].unit) > OLD_MIN_EFFECT}


def peer_rule(base: dict, new: dict, threshold: float) -> set[tuple]:
    """``reframe --performance-compare`` scripted: the median moved > threshold the worse way."""
    return {k for k in new if k in base and _judged(k)
            and _worse([s.value for s in base[k]], [s.value for s in new[k]],
                       new[k][0].unit) > threshold}


def judge(base: dict, new: dict) -> dict[str, dict]:
    """Per rule: {'fail': the session fails it, 'verdicts': the gate's per variable}; the gate
    with its floor's slope fitted (``slope``) and over the floor (``ratio``, the default)."""
    comps = gate.compare(base, new, gate.Settings(adjust=stats.SLOPE))
    out = {'slope': {'fail': any(c.verdict in verdicts.SOFTWARE_REGRESSED for c in comps),
                     'verdicts': {f'{c.key.environ} {c.variable}': c.verdict for c in comps},
                     'cannot_tell': sum(c.verdict == verdicts.CANNOT_TELL for c in comps),
                     'thresholds': [math.expm1(c.cost.threshold) for c in comps if c.cost]},
           'ratio': {'fail': any(c.verdict in verdicts.SOFTWARE_REGRESSED for c in gate.compare(
               base, new, gate.Settings(adjust=stats.RATIO)))},
           'old': {'fail': bool(old_rule(base, new))}}
    for x in PEERS:
        out[f'peer {x:.0%}'] = {'fail': bool(peer_rule(base, new, x))}
    return out


def bh_adjust(pvalues: list[float]) -> list[float]:
    """Benjamini-Hochberg adjusted p-values (step-up, monotone, capped at 1): the old rule."""
    if not pvalues:
        return []
    return list(scipy_stats.false_discovery_control(np.asarray(pvalues, dtype=float), method='bh'))


# ---- evaluation and tables -------------------------------------------------------------------

def evaluate(sessions: list[dict], per_side: int) -> dict:
    """Every judged session against the three clean sessions before it, by every rule."""
    out: dict = {CLEAN: [], SLOWED: [], DEGRADED: [], 'power': {d: [] for d in EFFECTS}}
    for j, sess in enumerate(sessions):
        before = [s for s in sessions[:j] if s['kind'] == CLEAN][-BASELINE_SESSIONS:]
        if len(before) < BASELINE_SESSIONS:
            continue
        base = merged([as_samples(s, per_side) for s in before])
        result = judge(base, as_samples(sess, per_side))
        result['session'] = sess['index']
        out[sess['kind']].append(result)
        if sess['kind'] == CLEAN:
            for d in EFFECTS:
                out['power'][d].append(judge(base, as_samples(sess, per_side, 1 + d)))
    return out


#: The rules every session is judged by, in the tables' order.
RULES = ('slope', 'ratio', 'old', *(f'peer {x:.0%}' for x in PEERS))


def _share(results: list[dict], rule: str) -> str:
    return f'{sum(r[rule]["fail"] for r in results)}/{len(results)}' if results else '-'


def rules_table(evaluated: dict[int, dict]) -> Table:
    table = Table(title='Clean sessions failing the gate (false alarms), and power: MPI '
                        'figures of clean sessions made slower by d, floor as measured',
                  header_style='bold')
    table.add_column('launches a side', justify='right')
    for rule in RULES:
        table.add_column(f'{rule}: false alarms', justify='right')
    table.add_column('slope: sessions with a cannot tell', justify='right')
    for d in EFFECTS:
        table.add_column(f'power at {d:.0%} ({" / ".join(RULES)})', justify='right')
    for n, ev in evaluated.items():
        clean = ev[CLEAN]
        table.add_row(str(n), *(_share(clean, r) for r in RULES),
                      f'{sum(bool(r["slope"]["cannot_tell"]) for r in clean)}/{len(clean)}',
                      *(' / '.join(_share(ev['power'][d], r) for r in RULES) for d in EFFECTS))
    return table


def verdicts_table(evaluated: dict, kind: str, sessions: list[dict]) -> Table:
    """The new rule's verdicts per variable over the sessions of one kind, and the others'."""
    table = Table(title=f'{kind} sessions: verdicts of the new rule per variable, and '
                        f'sessions failing each rule', header_style='bold')
    for col in ('launches a side', 'stack variable', 'verdicts (new)', *RULES):
        table.add_column(col)
    degraded = {s['index']: s['degraded_stacks'] for s in sessions}
    for n, ev in evaluated.items():
        results = ev[kind]
        found: dict[str, dict[str, int]] = {}
        for r in results:
            for var, v in r['slope']['verdicts'].items():
                mark = ' (degraded)' if var.split()[0] in degraded[r['session']] else ''
                found.setdefault(var + mark, {}).setdefault(v, 0)
                found[var + mark][v] += 1
        for i, (var, counts) in enumerate(sorted(found.items())):
            table.add_row(str(n) if i == 0 else '', var,
                          ', '.join(f'{v}: {c}' for v, c in sorted(counts.items())),
                          *((_share(results, r) for r in RULES) if i == 0 else
                            ('',) * len(RULES)))
    return table


def sessions_table(sessions: list[dict]) -> Table:
    """When each session ran, its kind, and per stack the medians of floor and MPI at 8 B:
    a regime change shows as a floor that moved."""
    table = Table(title='Sessions (medians of the session\'s launches)', header_style='bold')
    for col in ('session', 'started (UTC)', 'kind', 'stack', 'floor_latency_8B us',
                'latency_8B us', 'MPI cost 8B', 'floor_bw_1048576B GB/s', 'regime'):
        table.add_column(col)
    previous: dict[str, float] = {}
    for s in sessions:
        for stack_id, pool in s['launches'].items():
            floor = statistics.median(p['floor_latency_8B'] for p in pool)
            mpi = statistics.median(p['latency_8B'] for p in pool)
            was = previous.get(stack_id)
            moved = was is not None and abs(floor / was - 1) > 0.2
            big = statistics.median(p['floor_bw_1048576B'] for p in pool) / 1000
            table.add_row(str(s['index']), time.strftime('%H:%M:%S', time.gmtime(s['started'])),
                          s['kind'], stack_id, f'{floor:.4g}', f'{mpi:.4g}', f'{mpi / floor:.3g}',
                          f'{big:.3g}', f'floor {floor / was - 1:+.0%}' if moved else '')
            previous[stack_id] = floor
    return table


def launches_needed(evaluated: dict[int, dict], effect: float = 0.10) -> str:
    """The fewest launches a side with 95 % power at ``effect``, else why more would not do:
    the judgements whose threshold (derived from the spread between the baseline's sessions,
    which more launches a side do not narrow) lies above ``effect``."""
    for n, ev in evaluated.items():
        power = ev['power'][effect]
        if power and sum(r['slope']['fail'] for r in power) >= 0.95 * len(power):
            return str(n)
    if not evaluated:
        return 'not measured'
    most = max(evaluated)
    limits = [t for r in evaluated[most][CLEAN] for t in r['slope']['thresholds']]
    above = sum(t > effect for t in limits)
    return (f'more than {most}; at {most} launches the threshold of {above} of {len(limits)} '
            f'judgements of clean sessions lies above {effect:.0%} (the spread between the '
            f'baseline\'s sessions sets it: more launches a side do not lower it)')


def _stacks(args):
    site = discover.local_site()
    stacks = [s for s in site.stacks if s.mpi.prefix == '/usr' and 'c' in s.tested_languages
              and s.compiler.family == 'gnu']
    if args.stack:
        stacks = [s for s in site.stacks if s.id == args.stack]
    if not stacks:
        raise UserError('no stack to benchmark (Debian MPICH/Open MPI, or --stack NAME)')
    if args.clean < BASELINE_SESSIONS + 1:
        raise UserError(f'--clean {args.clean}: need at least {BASELINE_SESSIONS + 1} '
                        f'clean sessions ({BASELINE_SESSIONS} make the first baseline)')
    return stacks, site.partitions[0].binding


def record_sessions(args, stacks, binding: str) -> list[dict]:
    kinds = schedule(args.clean, args.slowed, args.degraded)
    sessions = []
    with tempfile.TemporaryDirectory(prefix='commcheck-gate-') as tmp:
        wanted = ('pingpong-c', *(('stencil-c',) if args.stencil else ()))
        programs = {}
        for s in stacks:
            built = kbuild.cmake_build(s, Path(tmp) / s.id, targets=wanted)
            programs[s.id] = {p: built / p for p in wanted}
        for i, kind in enumerate(kinds):
            if i:
                time.sleep(args.gap)
            with console.status(f'session {i + 1}/{len(kinds)} ({kind}): {args.launches} '
                                f'launches per stack'):
                sessions.append(run_session(i, kind, stacks, programs, binding, args.launches,
                                            args.ucx))
    return sessions


def recorded(path: Path) -> tuple[list[dict], str, list[str], float, float]:
    """(sessions, binding, stack ids, minutes, gap seconds) of a ``bench gate --json`` file,
    checked: one line naming the file when it is not one."""
    try:
        data = json.loads(Path(path).read_text(encoding='utf-8'))
        sessions, binding = list(data['sessions']), str(data['binding'])
        if not sessions:
            raise ValueError('no sessions recorded')
        for s in sessions:
            kind, _, _ = s['kind'], int(s['index']), float(s['started']) + float(s['ended'])
            if kind not in (CLEAN, SLOWED, DEGRADED) or not isinstance(s['launches'], dict):
                raise ValueError(f'session {s["index"]}: kind {kind!r} or launches unreadable')
            for pool in s['launches'].values():
                if not pool or not all(isinstance(v, (int, float)) and v > 0 for launch in pool
                                       for v in launch.values()):
                    raise ValueError(f'session {s["index"]}: no launches, or a value that is '
                                     f'not positive')
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
        raise UserError(f'{path}: not a `commcheck bench gate --json` record ({err})') from None
    stack_ids = sorted({k for s in sessions for k in s['launches']})
    gap = sessions[1]['started'] - sessions[0]['ended'] if len(sessions) > 1 else 0.0
    return sessions, binding, stack_ids, (sessions[-1]['ended'] - sessions[0]['started']) / 60, gap


def main(args, sequential: Callable[[list[dict], int], Table]) -> int:
    """The benchmark (``--rejudge``: on recorded launches); ``sequential``: the table of the
    gate with launches until decided on the same sessions
    (:func:`commcheck.bench.gate_sequential.evaluated`, given by the command, which imports
    this module)."""
    if args.rejudge:
        path, = args.rejudge
        sessions, binding, stack_ids, minutes, args.gap = recorded(path)
        args.launches = min(len(pool) for s in sessions for pool in s['launches'].values())
        console.print(f're-judging {path}: recorded '
                      f'{time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(sessions[0]["started"]))}')
        return report(args, sessions, binding, stack_ids, minutes, sequential, write=False)
    stacks, binding = _stacks(args)
    started = time.time()
    sessions = record_sessions(args, stacks, binding)
    return report(args, sessions, binding, [s.id for s in stacks],
                  (time.time() - started) / 60, sequential, write=True)


def report(args, sessions: list[dict], binding: str, stack_ids: list[str], minutes: float,
           sequential: Callable[[list[dict], int], Table], write: bool) -> int:
    """The tables of every rule over the sessions; the launches written when just recorded."""
    per_sides = [n for n in PER_SIDE if n <= args.launches] or [args.launches]
    evaluated = {n: evaluate(sessions, n) for n in per_sides}
    console.print(sessions_table(sessions))
    console.print(rules_table(evaluated))
    for kind in (SLOWED, DEGRADED):
        if any(ev[kind] for ev in evaluated.values()):
            console.print(verdicts_table(evaluated, kind, sessions))
    console.print(sequential(sessions, args.launches))
    console.print(f'{len(sessions)} sessions of {args.launches} launches per stack '
                  f'({", ".join(stack_ids)}, binding {binding}), {args.gap:.0f} s apart, '
                  f'in {minutes:.1f} min; launches a side for 95 % power '
                  f'at 10 % (the gate, slope): {launches_needed(evaluated)}')
    if not write:
        return 0
    out = args.json or paths.REPORTS_DIR / 'bench' / f'gate-{time.strftime("%Y%m%dT%H%M%S")}.json'
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({'format_version': FORMAT_VERSION, 'sizes': SIZES,
                               'iters': ITERS, 'gap_s': args.gap, 'binding': binding,
                               'sessions': sessions}, indent=1) + '\n')
    console.print(f'commcheck: wrote the launches to {out}')
    return 0
