"""The slower MPI of known size (src/kernels/tools/slowmpi): real launches of pingpong-c on
the Debian MPICH and Open MPI, without and with the interposer, alternating launch by launch
so that both see the same stretches of the machine. Loose bounds on direction and size (a
+100 % wait makes the 8 B latency more than 1.3x), never a speed."""

import os
import statistics
import subprocess

import pytest

from commcheck.analysis import kernel_records
from commcheck.site import kbuild, slowmpi
from tests.conftest import REFERENCE_STACKS as STACKS
from tests.conftest import needs_stacks

pytestmark = needs_stacks()
ARGS = ('--sizes', '8,1048576', '--iters', '400', '--warmup', '40')
PAIRS = 3


def run(stack, program, env, binding='core'):
    cmd = stack.mpi.record.launch_prefix(stack.mpi.launcher_command, 2, binding=binding,
                                         oversubscribe=2 > (os.cpu_count() or 1))
    return subprocess.run([*cmd, str(program), *ARGS], capture_output=True, text=True,
                          timeout=300, env={**kbuild.stack_environment(stack), **env})


def launch(stack, program, env):
    done = run(stack, program, env)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = {r['size']: r for r in kernel_records.parse(done.stdout)['DATA']}
    return rows[8]['oneway_us'], rows[1048576]['bw_MBps'], slowmpi.added(done.stderr)


@pytest.mark.parametrize('stack', STACKS, ids=[s.name for s in STACKS])
def test_the_interposer_slows_pingpong_by_what_it_says(kernel_builds, stack, tmp_path):
    library = slowmpi.build(stack, tmp_path / 'slowmpi')
    program = kernel_builds[stack.name] / 'pingpong-c'
    plain, slowed = [], []
    for _ in range(PAIRS):
        plain.append(launch(stack, program, slowmpi.environment(library, 0)))
        slowed.append(launch(stack, program, slowmpi.environment(library, 100)))
    # at 0 % the same path runs and is timed: nothing asked, a few ns of its own measured
    assert all(said and said['ns'] == 0 and said['small_asked'] == 0 and said['sampled'] > 0
               and said['small'] < 1000 for *_, said in plain)
    for *_, said in slowed:
        assert said and said['ranks'] == 2 and said['messages'] > 2 * 400
        assert said['ns'] > 0 and said['ns_per_kib'] > 0 and said['sampled'] > 0
        # the long waits spin on the clock: never shorter than asked; the short ones count
        # turns of a calibrated loop: about what was asked
        assert said['large'] >= 0.99 * said['large_asked'] > 0
        assert said['small'] > 0.5 * said['small_asked'] > 0
    latency = statistics.median(s[0] / p[0] for p, s in zip(plain, slowed))
    bandwidth = statistics.median(s[1] / p[1] for p, s in zip(plain, slowed))
    assert latency > 1.3, (plain, slowed)
    assert bandwidth < 1.0, (plain, slowed)


def test_a_bad_setting_is_one_line(kernel_builds, tmp_path):
    stack = STACKS[0]
    library = slowmpi.build(stack, tmp_path / 'slowmpi')
    done = run(stack, kernel_builds[stack.name] / 'pingpong-c',
               {'LD_PRELOAD': str(library), 'SLOWMPI_PERCENT': 'ten'}, binding='none')
    assert done.returncode != 0
    assert 'slowmpi: SLOWMPI_PERCENT=ten: expected a number >= 0' in done.stderr


#: A program that says where a fresh 1 MiB buffer lands after MPI_Init, as the kernels' message
#: buffers and the floor's copy did (glibc: in a mapping of its own, or from the heap, and at
#: which offset in its page).
PLACEMENT = r'''
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    unsigned char *buf = malloc(1 << 20);
    size_t header = ((size_t *)buf)[-1];     /* glibc's chunk size; bit 1: mapped */
    if (rank == 0)
        printf("PLACE offset=%lu mapped=%d\n", (unsigned long)((uintptr_t)buf & 4095),
               (int)(header >> 1 & 1));
    free(buf);
    MPI_Finalize();
    return 0;
}
'''


@pytest.mark.parametrize('stack', STACKS, ids=[s.name for s in STACKS])
def test_the_interposer_leaves_the_allocator_as_it_found_it(stack, tmp_path):
    """A 1 MiB buffer after MPI_Init lands where it lands without the interposer: its
    calibration at MPI_Init (a 1 MiB ping-pong) must not move the kernel's buffers (before it
    took its buffer from calloc and freed it, and every later 1 MiB buffer came from the heap
    at another offset: the interposed launches' 1 MiB floor read other figures on an Intel VM,
    docs/floors.md#the-floor-under-an-interposer). Read from glibc's chunk header: this test
    is about glibc, which Debian's stacks use."""
    source = tmp_path / 'place.c'
    source.write_text(PLACEMENT)
    built = subprocess.run([stack.mpi.c_wrapper, '-O1', str(source), '-o', str(tmp_path / 'place')],
                           capture_output=True, text=True, timeout=120,
                           env={**os.environ, **kbuild.stack_environment(stack)})
    assert built.returncode == 0, built.stderr
    library = slowmpi.build(stack, tmp_path / 'slowmpi')

    def placed(env) -> str:
        cmd = stack.mpi.record.launch_prefix(stack.mpi.launcher_command, 2, binding='none',
                                             oversubscribe=2 > (os.cpu_count() or 1))
        done = subprocess.run([*cmd, str(tmp_path / 'place')], capture_output=True, text=True,
                              timeout=120, env={**kbuild.stack_environment(stack), **env})
        assert done.returncode == 0, done.stderr[-2000:]
        return next(line for line in done.stdout.splitlines() if line.startswith('PLACE'))
    plain = placed({})
    assert plain == 'PLACE offset=16 mapped=1'      # glibc's own mapping, after its header
    assert placed(slowmpi.environment(library, 0)) == plain
    assert placed(slowmpi.environment(library, 20)) == plain
