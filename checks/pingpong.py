"""Ping-pong latency and bandwidth, C and Fortran (seeds 000/004 and 001).

Rank 0 sends, rank 1 echoes; the kernel times round trips per size and validates every
payload. Perf variables: ``latency_<n>B`` (one-way, µs) and ``bw_<n>B`` (MB/s) for every
measured size, and the hardware floor of the same launch, ``floor_latency_<n>B`` and
``floor_bw_<n>B`` (C and Fortran; see experiments.FLOOR_VARIABLES); references usually gate
``latency_8B``, ``latency_1024B`` and ``bw_1048576B``, through their own costs over those floors
(``own_latency_8B`` ...: experiments.own_costs).
Seed 001's grid: ``-S PingPong.sizes=8,64,512,4096,32768,262144,1048576 -S PingPong.iters=10000``.
"""

import reframe as rfm
from reframe.core.builtins import parameter, run_before, sanity_function

from commcheck import experiments
from commcheck.rfm.p2p import TwoRankSweep
from commcheck.rfm.perf import (
    first_message,
    floor_variables,
    kernel_passed,
    sweep_variables,
    with_own_costs,
)


@rfm.simple_test
class PingPong(TwoRankSweep):
    descr = 'MPI ping-pong: one-way latency and bandwidth per message size'
    #: The kernel's language. :type: str :default: every language of ``pingpong``'s kernels
    lang = parameter(experiments.KERNELS['pingpong'])
    sizes = experiments.default('PingPong', 'sizes')
    iters = experiments.default('PingPong', 'iters')
    warmup = experiments.default('PingPong', 'warmup')
    tags = {'p2p', 'seed000', 'seed001'}

    @run_before('run')
    def set_program(self):
        self.use_kernel('pingpong', self.sweep_options() + self.floor_options())

    @sanity_function
    def validated(self):
        return kernel_passed(self, self.sizes)

    @run_before('performance')
    def set_perf_variables(self):
        if self.is_dry_run():
            return
        self.perf_variables = with_own_costs(self, {
            **sweep_variables(self, 'oneway_us', 'latency', 'us'),
            **sweep_variables(self, 'bw_MBps', 'bw', 'MB/s'),
            **first_message(self), **floor_variables(self)})
