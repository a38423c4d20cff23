"""MPI-3 shared-memory windows vs Send/Recv for the 2-D 5-point heat stencil (seed 002).

Variants: blocking S/R, non-blocking S/R, SHM (``MPI_Win_allocate_shared``), SHM-NC
(``alloc_shared_noncontig``) and hybrid (SHM-NC inside a node, S/R between nodes; on one node
the kernel emulates nodes of sqrt(ranks) ranks). Speedup and efficiency are against the
sequential run of the same size and language (a fixture); ``bw_fraction`` is the stencil's
memory traffic (16 B/update) over the node's STREAM copy bandwidth measured in the same session.
Defaults fit a login node; seed 002's sizes: ``--mode seeds`` (4800 x 4800, 500 steps, 36 ranks).
"""

import math
import os

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import fixture, parameter, run_after, run_before, sanity_function, variable

from commcheck import records
from commcheck.rfm.build import KernelsBuild, StreamProbe
from commcheck.rfm.mixins import StackCheck, program_name
from commcheck.rfm.perf import perf_record

GRID_N = 480
STEPS = 100
HEAT_RTOL = 1e-12


def stencil_result(check) -> dict:
    out = records.parse_file(os.path.join(check.stagedir, str(check.stdout)))
    return out['RESULT'][0] if out['RESULT'] else {}


class StencilSequential(rfm.RunOnlyRegressionTest, StackCheck):
    """The one-rank run every parallel variant is measured and verified against."""

    descr = 'sequential 5-point stencil, the baseline of speedup and efficiency'
    valid_systems = ['*']
    valid_prog_environs = ['+mpi']
    lang = parameter(['c', 'fortran'])
    n = variable(int, value=GRID_N)
    steps = variable(int, value=STEPS)
    num_tasks = 1
    kernels = fixture(KernelsBuild, scope='environment')

    @run_after('setup')
    def require_language(self):
        self.skip_unless_fortran(self.lang)

    @run_before('run')
    def set_program(self):
        self.executable = self.kernels.program(program_name('stencil', self.lang))
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
    valid_prog_environs = ['+mpi']
    variant = parameter(['sr', 'nb', 'shm', 'shmnc', 'hybrid'])
    ranks = parameter([1, 4, 9, 16, 25, 36])
    max_ranks = variable(int, value=9)
    n = variable(int, value=GRID_N)
    steps = variable(int, value=STEPS)
    verify = variable(str, type(None), value=None)     # None: the kernel's own default
    seq = fixture(StencilSequential, scope='environment', action='fork')
    stream = fixture(StreamProbe, scope='environment')
    # Held directly, not only through `seq`: ReFrame cleans a fixture's stage once all of its
    # own dependents are done, and the programs live there.
    kernels = fixture(KernelsBuild, scope='environment')
    tags = {'seed002', 'stencil', 'shm'}

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
        self.executable = self.kernels.program(program_name('stencil', self.lang))
        self.executable_opts = ['--variant', self.variant, '--n', str(self.n),
                                '--steps', str(self.steps)]
        if self.verify:
            self.executable_opts += ['--verify', self.verify]
        if self.variant == 'hybrid':
            self.executable_opts += ['--node-size', str(self.emulated_node_size())]

    def emulated_node_size(self) -> int:
        """Nodes of sqrt(P) consecutive ranks: one row of a square process grid per node."""
        root = math.isqrt(self.ranks)
        return root if root * root == self.ranks else self.ranks

    @sanity_function
    def validated(self):
        mine, seq = stencil_result(self), stencil_result(self.seq)
        return sn.all([
            sn.assert_found(r'^PASS ', self.stdout, msg='stencil did not verify its result'),
            sn.assert_eq((self.n, self.steps), (self.seq.n, self.seq.steps),
                         msg='sequential baseline ran another size: {1} vs {0}'),
            sn.assert_reference(mine.get('total_heat', 0.0), seq.get('total_heat', 1.0),
                                -HEAT_RTOL, HEAT_RTOL,
                                msg='total heat {0} differs from the sequential run\'s'),
        ])

    @run_before('performance')
    def set_perf_variables(self):
        if self.is_dry_run():
            return
        result, seq_time = stencil_result(self), stencil_result(self.seq)['time_s']
        speedup = seq_time / result['time_s']
        values = {'speedup': (speedup, 'x'), 'efficiency': (speedup / self.ranks, ''),
                  'bw_fraction': (result['mem_GBps'] / self.stream.result('copy_GBps'), '')}
        self.perf_variables = {
            'time': perf_record(self, 'RESULT', 'time_s', 's'),
            'glups': perf_record(self, 'RESULT', 'glups', 'GLUP/s'),
            'halo_share': perf_record(self, 'RESULT', 'halo_share', ''),
            **{k: sn.make_performance_function(sn.defer(v), unit)
               for k, (v, unit) in values.items()}}
