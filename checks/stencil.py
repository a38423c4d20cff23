"""MPI-3 shared-memory windows vs Send/Recv for the 2-D 5-point heat stencil (seed 002).

Variants: blocking S/R, non-blocking S/R, SHM (``MPI_Win_allocate_shared``), SHM-NC
(``alloc_shared_noncontig``) and hybrid (SHM-NC inside a node, S/R between nodes; on one node
the kernel emulates nodes of sqrt(ranks) ranks). Speedup and efficiency are against the
sequential run of the same size and language (a fixture); ``bw_fraction`` is the stencil's
memory traffic (16 B/update) over the STREAM copy bandwidth that the same ranks reach in the same
job, just before the stencil runs (same nodes, same placement).
Defaults fit a login node; seed 002's sizes: ``--mode seeds`` (4800 x 4800, 500 steps, 36 ranks).
"""

import math

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import fixture, parameter, run_after, run_before, sanity_function, variable

from commcheck.rfm.build import KernelsBuild
from commcheck import experiments
from commcheck.rfm.mixins import StackCheck
from commcheck.rfm.perf import computed_variables, kernel_run, perf_record

GRID_N = 1920      # 59 MB of grids, beyond the caches: bw_fraction then means something
STEPS = 50
HEAT_RTOL = 1e-12
STREAM_DOUBLES = 4_000_000      # per rank: 96 MB of arrays, well beyond any cache
STREAM_REPS = 5


def stencil_result(check) -> dict:
    return kernel_run(check, 'stencil')['RESULT'][0]


class StencilSequential(rfm.RunOnlyRegressionTest, StackCheck):
    """The one-rank run every parallel variant is measured and verified against."""

    descr = 'sequential 5-point stencil, the baseline of speedup and efficiency'
    valid_systems = ['*']
    lang = parameter(experiments.KERNELS['stencil'])
    n = variable(int, value=GRID_N)
    steps = variable(int, value=STEPS)
    num_tasks = 1
    kernels = fixture(KernelsBuild, scope='environment')

    @run_after('init')
    def select_environments(self):
        self.valid_prog_environs = [f'+{self.lang}']

    @run_before('run')
    def set_program(self):
        self.executable = self.kernels.program(experiments.program('stencil', self.lang))
        self.executable_opts = ['--variant', 'seq', '--n', str(self.n), '--steps', str(self.steps)]

    @sanity_function
    def validated(self):
        return sn.assert_found(r'^PASS ', self.stdout, msg='sequential stencil did not verify')

    @run_before('performance')
    def set_perf_variables(self):
        if self.is_dry_run():
            return
        self.perf_variables = {'time': perf_record(self, 'RESULT', 'time_s', 's'),
                               'glups': perf_record(self, 'RESULT', 'glups', 'GLUP/s')}


@rfm.simple_test
class Stencil(rfm.RunOnlyRegressionTest, StackCheck):
    descr = '2-D heat stencil: halo exchange by Send/Recv vs MPI-3 shared-memory windows'
    valid_systems = ['*']
    variant = parameter(['sr', 'nb', 'shm', 'shmnc', 'hybrid'])
    ranks = parameter([1, 2, 4, 9, 16, 25, 36])   # the seed's square grids, and 2 for 2-core nodes
    max_ranks = variable(int, value=9)
    n = variable(int, value=GRID_N)
    steps = variable(int, value=STEPS)
    verify = variable(str, type(None), value=None)     # None: the kernel's own default
    seq = fixture(StencilSequential, scope='environment', action='fork')
    # Held directly, not only through `seq`: ReFrame cleans a fixture's stage once all of its
    # own dependents are done, and the programs live there.
    kernels = fixture(KernelsBuild, scope='environment')
    tags = {'seed002', 'stencil', 'shm'}

    @run_after('init')
    def select_environments(self):
        # The language is the forked sequential fixture's: select environments by it.
        info = type(self).get_variant_info(self.variant_num, recurse=True)
        self.valid_prog_environs = [f"+{info['fixtures']['seq']['params']['lang']}"]

    @run_after('init')
    def place_on_one_node(self):
        self.num_tasks = self.ranks
        self.num_tasks_per_node = self.ranks

    @run_after('init')
    def limit_ranks(self):
        self.skip_if(self.ranks > self.max_ranks,
                     f'{self.ranks} ranks > max_ranks={self.max_ranks} (login-node default; '
                     f'-S Stencil.max_ranks=36 or --mode seeds for the seed\'s grid)')

    @property
    def lang(self) -> str:
        return self.seq.lang

    @run_before('run')
    def set_program(self):
        self.executable = self.kernels.program(experiments.program('stencil', self.lang))
        self.executable_opts = ['--variant', self.variant, '--n', str(self.n),
                                '--steps', str(self.steps)]
        if self.verify:
            self.executable_opts += ['--verify', self.verify]
        if self.variant == 'hybrid':
            self.executable_opts += ['--node-size', str(self.emulated_node_size())]
        self.prerun_cmds = [' '.join([self.launcher_command(), self.kernels.program(experiments.program('stream', 'c')),
                                      '--n', str(STREAM_DOUBLES), '--reps', str(STREAM_REPS)])]

    def emulated_node_size(self) -> int:
        """Nodes of sqrt(P) consecutive ranks: one row of a square process grid per node."""
        root = math.isqrt(self.ranks)
        return root if root * root == self.ranks else self.ranks

    @sanity_function
    def validated(self):
        """Both programs validated their data, and the heat equals the sequential run's."""
        sn.evaluate(sn.assert_true(kernel_run(self, 'stream')['PASS'],
                                   msg='STREAM did not validate its arrays'))
        sn.evaluate(sn.assert_true(kernel_run(self, 'stencil')['PASS'],
                                   msg='stencil did not verify its result'))
        sn.evaluate(sn.assert_eq((self.n, self.steps), (self.seq.n, self.seq.steps),
                                 msg='sequential baseline ran another size: {1} vs {0}'))
        return sn.assert_reference(stencil_result(self)['total_heat'],
                                   stencil_result(self.seq)['total_heat'], -HEAT_RTOL, HEAT_RTOL,
                                   msg="total heat {0} differs from the sequential run's {1}")

    @run_before('performance')
    def set_perf_variables(self):
        if self.is_dry_run():
            return
        result, seq_time = stencil_result(self), stencil_result(self.seq)['time_s']
        stream = kernel_run(self, 'stream')['RESULT'][0]
        speedup = seq_time / result['time_s']
        self.perf_variables = computed_variables(self, {
            'time': (result['time_s'], 's'), 'glups': (result['glups'], 'GLUP/s'),
            'halo_share': (result['halo_share'], ''), 'speedup': (speedup, 'x'),
            'efficiency': (speedup / self.ranks, ''),
            'stream_copy': (stream['copy_GBps'], 'GB/s'),
            'bw_fraction': (result['mem_GBps'] / stream['copy_GBps'], '')})
