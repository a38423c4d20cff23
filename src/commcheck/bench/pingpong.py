"""Benchmark, not a test: our C ping-pong beside independent peers on the same stack.

For every stack: commcheck's ``pingpong-c``, NetPIPE (Debian's ``NPmpich2``/``NPopenmpi``, from
the flavour record) and, where the stack has them, OSU's ``osu_latency``. Rounds alternate
between the programs, and each round visits every stack in turn, so a slow stretch of the
machine (the 8 B floor 4x slower for a minute or so on a shared VM) costs every stack a round
or two rather than one stack all of its rounds, as it did when each stack ran its rounds in one
block; the median and the best per program are printed. Every launch binds its ranks as the
site's partition declares (``binding``), as the main job's do. 1 MiB bandwidth is size /
one-way time for all three (OSU's ``osu_bw`` streams a window of messages, a different
quantity).
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

#: Rounds, each every stack and program in turn (the median and the best are printed).
ROUNDS = 7
#: The size bandwidth is measured at (bytes).
MIB = 1 << 20
console = textconsole.make()


class BenchError(UserError):
    pass


def ours(stack, binding: str, program: Path, iters: int) -> tuple[float, ...]:
    """8 B latency, 1 MiB bandwidth, and the hardware floor of the same launch at both sizes
    (the main job's ``floor_latency_8B`` and ``floor_bw_1048576B``)."""
    done = kbuild.launch(stack, 2, program, '--sizes', f'8,{MIB}', '--iters', str(iters),
                         '--warmup', str(max(iters // 10, 1)), binding=binding)
    found = kernel_records.parse(done.stdout)
    rows = found['DATA']
    floors = {int(r['size']): r for r in found['FLOOR'] if r.get('kind') != 'none'}
    if done.returncode or len(rows) != 2 or set(floors) != {8, MIB}:
        raise BenchError(f'pingpong-c failed on {stack.id}: {done.stderr.strip()[-300:]}')
    return (rows[0]['oneway_us'], MIB / rows[1]['oneway_us'],
            floors[8]['oneway_us'], floors[MIB]['bw_MBps'])


def netpipe(stack, binding: str, iters: int, workdir: Path) -> tuple[float, float] | None:
    name = stack.mpi.record.netpipe
    program = shutil.which(name) if name else None
    if not program or stack.mpi.install_prefix != '/usr':     # Debian's NetPIPE: Debian's MPI
        return None
    values = []
    for size, n in ((8, iters), (MIB, max(iters // 40, 50))):
        out = workdir / f'np-{stack.id}-{size}.out'
        done = kbuild.launch(stack, 2, program, '-l', str(size), '-u', str(size), '-p', '0',
                             '-n', str(n), '-o', str(out), binding=binding)
        if done.returncode:
            raise BenchError(f'{program} failed on {stack.id}: {done.stderr.strip()[-300:]}')
        seconds = float(out.read_text().split()[2])     # bytes, Mbit/s, one-way seconds
        values.append(seconds * 1e6)
    return values[0], MIB / values[1]


def osu_latency(stack, binding: str, extras: dict, iters: int) -> tuple[float, float] | None:
    program = osu_program(extras, 'osu_latency')
    if not program:
        return None
    done = kbuild.launch(stack, 2, program, '-m', f'8:{MIB}', '-i', str(iters), binding=binding)
    table = osu_output.parse_table(done.stdout)
    return table[8], MIB / table[MIB]


def summarize(values: list[tuple[float, ...]]) -> tuple[float, ...]:
    """(median latency, best latency, median bandwidth, best bandwidth) over the rounds, and
    where the program measured it (ours) the median 8 B floor and 1 MiB floor bandwidth."""
    lat, bw = [v[0] for v in values], [v[1] for v in values]
    floors = tuple(statistics.median(v[i] for v in values) for i in (2, 3) if len(values[0]) > i)
    return statistics.median(lat), min(lat), statistics.median(bw), max(bw), *floors


def measure(site, stacks, binding: str, iters: int) -> dict[str, dict[str, list[tuple]]]:
    """Stack -> program -> one value tuple per round; every stack's kernels built first."""
    extras = {stack.id: rfmconfig.environment(site, stack)['extras'] for stack in stacks}
    with tempfile.TemporaryDirectory(prefix='commcheck-bench-') as tmp, Progress(
            console=console, transient=True) as progress:
        task = progress.add_task('building', total=len(stacks) * (ROUNDS + 1))
        programs = {}
        for stack in stacks:
            progress.update(task, description=f'{stack.id}: building the kernels')
            programs[stack.id] = kbuild.cmake_build(stack, Path(tmp) / stack.id) / 'pingpong-c'
            progress.advance(task)
        samples: dict[str, dict[str, list[tuple]]] = {s.id: {} for s in stacks}
        for rnd in range(ROUNDS):
            for stack in stacks:
                progress.update(task, description=f'round {rnd + 1}/{ROUNDS}: {stack.id}')
                for name, run in (
                        ('commcheck', partial(ours, stack, binding, programs[stack.id], iters)),
                        ('NetPIPE', partial(netpipe, stack, binding, iters, Path(tmp))),
                        ('osu_latency', partial(osu_latency, stack, binding, extras[stack.id],
                                                iters))):
                    value = run()
                    if value:
                        samples[stack.id].setdefault(name, []).append(value)
                progress.advance(task)
    return samples


def main(args) -> int:
    site = discover.local_site()
    stacks = [s for s in site.stacks if 'c' in s.tested_languages]
    if args.stack:
        stacks = [s for s in stacks if s.id == args.stack]
        if not stacks:
            raise BenchError(f'no stack {args.stack!r}; stacks: '
                             f'{", ".join(s.id for s in site.stacks)}')
    binding = site.partitions[0].binding
    table = Table(title=f'ping-pong, {ROUNDS} rounds (each every stack and program in turn), '
                        f'{args.iters} round trips, ranks bound: {binding} (the partition\'s '
                        f'binding, as the main job)',
                  header_style='bold')
    for col in ('stack', 'program', '8 B median (us)', '8 B best (us)', '1 MiB median (MB/s)',
                '1 MiB best (MB/s)', '8 B floor (us)', '1 MiB floor (MB/s)'):
        table.add_column(col, justify='left' if col in ('stack', 'program') else 'right')
    samples = measure(site, stacks, binding, args.iters)
    for stack in stacks:
        stats = {name: summarize(vals) for name, vals in samples[stack.id].items()}
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
