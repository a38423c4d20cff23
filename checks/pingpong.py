"""Ping-pong latency and bandwidth, C and Fortran (seeds 000/004 and 001).

Rank 0 sends, rank 1 echoes; the kernel times round trips per size and validates every
payload. Perf variables: ``latency_<n>B`` (one-way, µs) and ``bw_<n>B`` (MB/s) for every
measured size; references usually gate ``latency_8B``, ``latency_1024B`` and ``bw_1048576B``.
Seed 001's grid: ``-S PingPong.sizes=8,64,512,4096,32768,262144,1048576 -S PingPong.iters=10000``.
"""

import reframe as rfm
from reframe.core.builtins import fixture, parameter, run_after, run_before, sanity_function, variable

from commcheck.rfm.build import KernelsBuild
from commcheck.rfm.mixins import StackCheck, program_name
from commcheck.rfm.perf import kernel_passed, sweep_variables


@rfm.simple_test
class PingPong(rfm.RunOnlyRegressionTest, StackCheck):
    descr = 'MPI ping-pong: one-way latency and bandwidth per message size'
    valid_systems = ['*']
    valid_prog_environs = ['+mpi']
    lang = parameter(['c', 'fortran'])
    sizes = variable(str, value='1:1048576')
    iters = variable(int, value=1000)
    warmup = variable(int, value=100)
    num_tasks = 2
    num_tasks_per_node = 2
    kernels = fixture(KernelsBuild, scope='environment')
    tags = {'p2p', 'seed000', 'seed001'}

    @run_after('setup')
    def require_language(self):
        self.skip_unless_fortran(self.lang)

    @run_before('run')
    def set_program(self):
        self.executable = self.kernels.program(program_name('pingpong', self.lang))
        self.executable_opts = ['--sizes', self.sizes, '--iters', str(self.iters),
                                '--warmup', str(self.warmup)]

    @sanity_function
    def validated(self):
        return kernel_passed(self)

    @run_before('performance')
    def set_perf_variables(self):
        if self.is_dry_run():
            return
        self.perf_variables = {**sweep_variables(self, 'oneway_us', 'latency', 'us'),
                               **sweep_variables(self, 'bw_MBps', 'bw', 'MB/s')}
