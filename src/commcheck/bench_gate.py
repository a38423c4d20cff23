"""Benchmark, not a test: how often the gate cries wolf, and how often it catches a 50 % loss.

Real launches are the noise. On each stack, ``pingpong-c`` (the ``PingPong`` kernel, key sizes
8 B, 1 KiB, 1 MiB, bound as the local partition declares) is launched many times in a row, each
launch a separate ``mpiexec`` like one ReFrame test case. The launches are cut, in time order,
into a baseline (the first ``M``) and ``k`` later "sessions" of ``M`` launches each; every
session is compared with the baseline by :func:`commcheck.gate.compare` exactly as
``commcheck compare`` does (all six key variables of both stacks in one family).

- False positives: clean sessions that fail the gate, and variables flagged in total.
- Power: the same clean sessions with the 8 B latency multiplied by ``SHIFT`` (1.5) and,
  separately, the 1 MiB bandwidth divided by it. Scaling real held-out launches keeps their
  real noise (its shape and its drift between sessions) and adds a pure shift beyond the
  gate's minimum effect (20 %): what a uniformly slower stack looks like. It does not model a
  regression that also changes the variance.
- Cost: the smallest ``M`` (launches per side) at which power reaches 95 %.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from commcheck import discover, gate, kbuild, records
from commcheck.errors import UserError
from commcheck.history import Sample

SIZES = (8, 1024, 1 << 20)
VARIABLES = {'latency_8B': (8, 'oneway_us', 'us'), 'latency_1024B': (1024, 'oneway_us', 'us'),
             'bw_1048576B': (1 << 20, 'bw_MBps', 'MB/s')}
ITERS = 400
PER_SIDE = (5, 6, 8, 10, 12)    # below 5 a side the gate does not decide (gate.Settings)
SHIFT = 1.5                         #: the injected slowdown of the power columns
console = Console(highlight=False)


def one_launch(stack, program: Path, binding: str) -> dict[str, float]:
    done = kbuild.launch(stack, 2, program, '--sizes', ','.join(map(str, SIZES)), '--iters',
                         str(ITERS), '--warmup', str(ITERS // 10), binding=binding)
    rows = {r['size']: r for r in records.parse(done.stdout)['DATA']}
    if done.returncode or set(rows) != set(SIZES):
        raise UserError(f'pingpong-c failed on {stack.id}: {done.stderr.strip()[-300:]}')
    return {name: float(rows[size][field]) for name, (size, field, _) in VARIABLES.items()}


def as_samples(stack_id: str, launches: list[dict], scale: dict | None = None) -> dict:
    out: dict[tuple, list[Sample]] = {}
    for i, launch in enumerate(launches):
        for name, value in launch.items():
            key = ('local', 'default', stack_id, 'PingPong %lang=c', name)
            value *= (scale or {}).get(name, 1.0)
            out.setdefault(key, []).append(Sample(
                session='b', time=float(i), system='local', partition='default',
                environ=stack_id, test='PingPong %lang=c', variable=name, value=value,
                unit=VARIABLES[name][2], result='pass'))
    return out


def judge(pools: dict[str, list[dict]], per_side: int, scale: dict | None = None):
    """(sessions flagged, variables flagged, sessions) over the k sessions of ``per_side``."""
    n = min(len(p) for p in pools.values())
    sessions = (n - per_side) // per_side
    failed = flagged = 0
    for s in range(sessions):
        base, now = {}, {}
        for stack_id, pool in pools.items():
            lo = per_side * (s + 1)
            base.update(as_samples(stack_id, pool[:per_side]))
            now.update(as_samples(stack_id, pool[lo:lo + per_side], scale))
        verdicts = gate.compare(base, now)
        hits = [c for c in verdicts if c.verdict == gate.REGRESSED
                and (scale is None or c.variable in scale)]
        failed += bool(hits)
        flagged += len(hits)
    return failed, flagged, sessions


def main(args) -> int:
    site = discover.local_site()
    stacks = [s for s in site.stacks if s.mpi.prefix == '/usr' and 'c' in s.tested_languages
              and s.compiler.family == 'gnu']
    if args.stack:
        stacks = [s for s in site.stacks if s.id == args.stack]
    if not stacks:
        raise UserError('no stack to benchmark (Debian MPICH/Open MPI, or --stack NAME)')
    binding = site.partitions[0].binding
    launches = args.launches
    pools: dict[str, list[dict]] = {s.id: [] for s in stacks}
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix='commcheck-gate-') as tmp, Progress(
            console=console, transient=True) as progress:
        programs = {}
        for stack in stacks:
            programs[stack.id] = kbuild.cmake_build(stack, Path(tmp) / stack.id) / 'pingpong-c'
        task = progress.add_task('launching', total=launches * len(stacks))
        for i in range(launches):        # stacks alternate, so drift hits both alike
            for stack in stacks:
                progress.update(task, description=f'launch {i + 1}/{launches} on {stack.id}')
                pools[stack.id].append(one_launch(stack, programs[stack.id], binding))
                progress.advance(task)
    elapsed = time.monotonic() - started
    per_launch = elapsed / (launches * len(stacks))

    table = Table(title=f'gate on real launches: {launches} per stack '
                        f'({", ".join(pools)}), binding {binding}', header_style='bold')
    for col in ('launches per side', 'clean sessions', 'failing the gate', 'variables flagged',
                f'power latency 8 B x{SHIFT}', f'power bandwidth 1 MiB /{SHIFT}'):
        table.add_column(col, justify='right')
    needed = None
    for per_side in PER_SIDE:
        if launches < 3 * per_side:
            continue
        fp_sessions, fp_vars, k = judge(pools, per_side)
        lat, _, _ = judge(pools, per_side, {'latency_8B': SHIFT})
        bw, _, _ = judge(pools, per_side, {'bw_1048576B': 1 / SHIFT})
        table.add_row(str(per_side), str(k), f'{fp_sessions}', f'{fp_vars}', f'{lat / k:.0%}',
                      f'{bw / k:.0%}')
        if needed is None and lat / k >= 0.95 and bw / k >= 0.95 and fp_sessions == 0:
            needed = per_side
    console.print(table)
    for stack_id, pool in pools.items():
        for name in VARIABLES:
            values = [p[name] for p in pool]
            med = statistics.median(values)
            mad = statistics.median(abs(v - med) for v in values)
            console.print(f'{stack_id} {name}: median {med:.4g}, robust CV '
                          f'{1.4826 * mad / med:.1%}, min {min(values):.4g}, '
                          f'max {max(values):.4g}')
    console.print(f'one launch: {per_launch:.2f} s (mpiexec start, {ITERS} round trips of 3 '
                  f'sizes); launches per side for >= 95 % power with no false alarm: '
                  f'{needed or "more than " + str(PER_SIDE[-1])}')
    return 0


def bh_adjust(pvalues: list[float]) -> list[float]:
    """Benjamini-Hochberg adjusted p-values (step-up, monotone, capped at 1): the old rule."""
    import numpy as np
    from scipy import stats
    if not pvalues:
        return []
    return list(stats.false_discovery_control(np.asarray(pvalues, dtype=float), method='bh'))
