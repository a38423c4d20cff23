"""Benchmark, not a test: our C ping-pong beside independent peers on the same stack.

For every stack: commcheck's ``pingpong-c``, NetPIPE (Debian's ``NPmpich2``/``NPopenmpi``) and,
where the stack has them, OSU's ``osu_latency``. Rounds alternate between the programs so load
drifts hit all alike; the median and the best per program are printed (on a shared VM the
two ranks' placement flips small-message latency between two levels from one launch to the next,
so the best of the rounds compares like with like). 1 MiB bandwidth is size / one-way time
for all three (OSU's ``osu_bw`` streams a window of messages, a different quantity).
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
from pathlib import Path

from commcheck import discover, kbuild, osu, records
from commcheck.rfm.build import osu_program

NETPIPE = {'mpich': 'NPmpich2', 'openmpi': 'NPopenmpi'}
ROUNDS = 7
MIB = 1 << 20


def ours(stack, program: Path, iters: int) -> tuple[float, float]:
    done = kbuild.launch(stack, 2, program, '--sizes', f'8,{MIB}', '--iters', str(iters),
                         '--warmup', str(iters // 10))
    rows = records.parse(done.stdout)['DATA']
    if done.returncode or len(rows) != 2:
        raise RuntimeError(f'pingpong-c failed on {stack.name}: {done.stderr.strip()}')
    return rows[0]['oneway_us'], MIB / rows[1]['oneway_us']


def netpipe(stack, iters: int, workdir: Path) -> tuple[float, float] | None:
    program = shutil.which(NETPIPE.get(stack.mpi.flavour, ''))
    if not program:
        return None
    values = []
    for size, n in ((8, iters), (MIB, max(iters // 40, 50))):
        out = workdir / f'np-{stack.name}-{size}.out'
        done = kbuild.launch(stack, 2, program, '-l', str(size), '-u', str(size), '-p', '0',
                             '-n', str(n), '-o', str(out))
        if done.returncode:
            raise RuntimeError(f'{program} failed on {stack.name}: {done.stderr.strip()}')
        seconds = float(out.read_text().split()[2])     # bytes, Mbit/s, one-way seconds
        values.append(seconds * 1e6)
    return values[0], MIB / values[1]


def osu_latency(stack, extras: dict, iters: int) -> tuple[float, float] | None:
    program = osu_program(extras, 'osu_latency')
    if not program:
        return None
    done = kbuild.launch(stack, 2, program, '-m', f'8:{MIB}', '-i', str(iters))
    table = osu.parse_table(done.stdout)
    return table[8], MIB / table[MIB]


def summarize(values: list[tuple[float, float]]) -> tuple[float, float, float, float]:
    """(median latency, best latency, median bandwidth, best bandwidth) over the rounds."""
    lat, bw = [v[0] for v in values], [v[1] for v in values]
    return statistics.median(lat), min(lat), statistics.median(bw), max(bw)


def main(args) -> int:
    site = discover.local_site()
    print(f'{"stack":14} {"program":12} {"8 B med us":>12} {"8 B best us":>12} '
          f'{"1 MiB med MB/s":>12} {"1 MiB best":>12}')
    with tempfile.TemporaryDirectory(prefix='commcheck-bench-') as tmp:
        for stack in site.stacks:
            program = kbuild.cmake_build(stack, Path(tmp) / stack.name) / 'pingpong-c'
            extras = site.environment_extras(stack)
            samples: dict[str, list[tuple[float, float]]] = {}
            for _ in range(ROUNDS):
                for name, run in (('commcheck', lambda: ours(stack, program, args.iters)),
                                  ('NetPIPE', lambda: netpipe(stack, args.iters, Path(tmp))),
                                  ('osu_latency', lambda: osu_latency(stack, extras,
                                                                      args.iters))):
                    value = run()
                    if value:
                        samples.setdefault(name, []).append(value)
            stats = {name: summarize(vals) for name, vals in samples.items()}
            for name, row in stats.items():
                print(f'{stack.name:14} {name:12} ' + ' '.join(f'{v:12.3f}' for v in row))
            base = stats['commcheck']
            for name, row in stats.items():
                if name != 'commcheck':
                    print(f'{stack.name:14} {"vs " + name:12} {base[0] - row[0]:+12.3f} '
                          f'{base[1] - row[1]:+12.3f} {100 * (base[2] / row[2] - 1):+11.1f}% '
                          f'{100 * (base[3] / row[3] - 1):+11.1f}%')
    return 0
