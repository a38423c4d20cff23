"""Benchmark, not a test: our C ping-pong beside independent peers on the same stack.

For every stack: commcheck's ``pingpong-c``, NetPIPE (Debian's ``NPmpich2``/``NPopenmpi``, from
the flavour record) and, where the stack has them, OSU's ``osu_latency``. Rounds alternate
between the programs so load drifts hit all alike; the median and the best per program are
printed (on a shared VM the two ranks' placement moves small-message latency from one launch to
the next, so the best of the rounds compares like with like). 1 MiB bandwidth is size / one-way
time for all three (OSU's ``osu_bw`` streams a window of messages, a different quantity).
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
from functools import partial
from pathlib import Path

from rich.progress import Progress
from rich.table import Table

from commcheck import console as textconsole
from commcheck.analysis import kernel_records, osu_output
from commcheck.errors import UserError
from commcheck.rfm.build import osu_program
from commcheck.site import discover, kbuild, rfmconfig

ROUNDS = 7
MIB = 1 << 20
console = textconsole.make()


class BenchError(UserError):
    pass


def ours(stack, program: Path, iters: int) -> tuple[float, ...]:
    """8 B latency, 1 MiB bandwidth, and the hardware floor of the same launch at both sizes
    (the main job's ``floor_latency_8B`` and ``floor_bw_1048576B``)."""
    done = kbuild.launch(stack, 2, program, '--sizes', f'8,{MIB}', '--iters', str(iters),
                         '--warmup', str(max(iters // 10, 1)))
    found = kernel_records.parse(done.stdout)
    rows = found['DATA']
    floors = {int(r['size']): r for r in found['FLOOR'] if r.get('kind') != 'none'}
    if done.returncode or len(rows) != 2 or set(floors) != {8, MIB}:
        raise BenchError(f'pingpong-c failed on {stack.id}: {done.stderr.strip()[-300:]}')
    return (rows[0]['oneway_us'], MIB / rows[1]['oneway_us'],
            floors[8]['oneway_us'], floors[MIB]['bw_MBps'])


def netpipe(stack, iters: int, workdir: Path) -> tuple[float, float] | None:
    name = stack.mpi.record.netpipe
    program = shutil.which(name) if name else None
    if not program or stack.mpi.install_prefix != '/usr':     # Debian's NetPIPE: Debian's MPI
        return None
    values = []
    for size, n in ((8, iters), (MIB, max(iters // 40, 50))):
        out = workdir / f'np-{stack.id}-{size}.out'
        done = kbuild.launch(stack, 2, program, '-l', str(size), '-u', str(size), '-p', '0',
                             '-n', str(n), '-o', str(out))
        if done.returncode:
            raise BenchError(f'{program} failed on {stack.id}: {done.stderr.strip()[-300:]}')
        seconds = float(out.read_text().split()[2])     # bytes, Mbit/s, one-way seconds
        values.append(seconds * 1e6)
    return values[0], MIB / values[1]


def osu_latency(stack, extras: dict, iters: int) -> tuple[float, float] | None:
    program = osu_program(extras, 'osu_latency')
    if not program:
        return None
    done = kbuild.launch(stack, 2, program, '-m', f'8:{MIB}', '-i', str(iters))
    table = osu_output.parse_table(done.stdout)
    return table[8], MIB / table[MIB]


def summarize(values: list[tuple[float, ...]]) -> tuple[float, ...]:
    """(median latency, best latency, median bandwidth, best bandwidth) over the rounds, and
    where the program measured it (ours) the median 8 B floor and 1 MiB floor bandwidth."""
    lat, bw = [v[0] for v in values], [v[1] for v in values]
    floors = tuple(statistics.median(v[i] for v in values) for i in (2, 3) if len(values[0]) > i)
    return statistics.median(lat), min(lat), statistics.median(bw), max(bw), *floors


def main(args) -> int:
    site = discover.local_site()
    stacks = [s for s in site.stacks if 'c' in s.tested_languages]
    if args.stack:
        stacks = [s for s in stacks if s.id == args.stack]
        if not stacks:
            raise BenchError(f'no stack {args.stack!r}; stacks: '
                             f'{", ".join(s.id for s in site.stacks)}')
    table = Table(title=f'ping-pong, {ROUNDS} alternating rounds, {args.iters} round trips',
                  header_style='bold')
    for col in ('stack', 'program', '8 B median (us)', '8 B best (us)', '1 MiB median (MB/s)',
                '1 MiB best (MB/s)', '8 B floor (us)', '1 MiB floor (MB/s)'):
        table.add_column(col, justify='left' if col in ('stack', 'program') else 'right')
    with tempfile.TemporaryDirectory(prefix='commcheck-bench-') as tmp, Progress(
            console=console, transient=True) as progress:
        task = progress.add_task('building', total=len(stacks) * (ROUNDS + 1))
        for stack in stacks:
            progress.update(task, description=f'{stack.id}: building the kernels')
            program = kbuild.cmake_build(stack, Path(tmp) / stack.id) / 'pingpong-c'
            progress.advance(task)
            extras = rfmconfig.environment(site, stack)['extras']
            samples: dict[str, list[tuple[float, float]]] = {}
            for rnd in range(ROUNDS):
                progress.update(task, description=f'{stack.id}: round {rnd + 1}/{ROUNDS}')
                for name, run in (('commcheck', partial(ours, stack, program, args.iters)),
                                  ('NetPIPE', partial(netpipe, stack, args.iters, Path(tmp))),
                                  ('osu_latency', partial(osu_latency, stack, extras,
                                                          args.iters))):
                    value = run()
                    if value:
                        samples.setdefault(name, []).append(value)
                progress.advance(task)
            stats = {name: summarize(vals) for name, vals in samples.items()}
            base = stats['commcheck']
            for name, row in stats.items():
                table.add_row(stack.id, name, *(f'{v:.3f}' if i in (0, 1, 4) else f'{v:.0f}'
                                                for i, v in enumerate(row)))
                if name != 'commcheck':
                    table.add_row('', f'ours vs {name}', f'{base[0] - row[0]:+.3f}',
                                  f'{base[1] - row[1]:+.3f}', f'{base[2] / row[2] - 1:+.1%}',
                                  f'{base[3] / row[3] - 1:+.1%}')
    console.print(table)
    return 0
