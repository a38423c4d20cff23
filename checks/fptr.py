"""Fortran array access through allocatable, pointer and ``c_f_pointer`` (seed 002, Table 3).

Seed 002 found the shared-window Fortran stencil slower than its C twin and traced it to access
through ``c_f_pointer``; this check keeps measuring the three ways a Fortran code can hold the
grid. The grid is sized from the last-level cache (:class:`CacheSizedGrid`, as the stencil's);
the seed's size: ``-S FortranPointers.n=10000 -S FortranPointers.steps=100``.
"""

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import fixture, parameter, run_before, sanity_function, variable

from commcheck import experiments
from commcheck.rfm.build import KernelsBuild
from commcheck.rfm.caches import CacheSizedGrid
from commcheck.rfm.mixins import StackCheck
from commcheck.rfm.perf import perf_record

PHASES = ('init', 'read', 'write', 'total')


@rfm.simple_test
class FortranPointers(rfm.RunOnlyRegressionTest, StackCheck, CacheSizedGrid):
    descr = 'Fortran pointer study: allocatable vs pointer vs c_f_pointer on a shared window'
    valid_systems = ['*']
    valid_prog_environs = ['+fortran']
    variant = parameter(['alloc', 'pointer', 'cptr'])
    n = experiments.default('FortranPointers', 'n')
    steps = experiments.default('FortranPointers', 'steps')

    #: Whole runs at least (kernel option ``--reps``); each phase's value is the median run.
    #: :type: int  :default: the experiment's (5)
    min_reps = variable(int, value=experiments.default('FortranPointers', 'min_reps'))

    #: More runs until their totals add up to this many seconds (``--target-seconds``).
    #: :type: float  :default: the experiment's (1.0)
    target_seconds = variable(float, value=experiments.default('FortranPointers', 'target_seconds'))
    num_tasks = 1
    kernels = fixture(KernelsBuild, scope='environment')
    tags = {'seed002', 'fortran'}

    @run_before('run')
    def set_program(self):
        self.executable = self.kernels.program(experiments.program('fptr', 'fortran'))
        self.executable_opts = ['--variant', self.variant, '--n', str(self.n),
                                '--steps', str(self.steps), '--reps', str(self.min_reps),
                                '--target-seconds', str(self.target_seconds)]

    @sanity_function
    def validated(self):
        return sn.assert_found(r'^PASS ', self.stdout, msg='pointer study did not validate')

    @run_before('performance')
    def set_perf_variables(self):
        self.perf_variables = {p: perf_record(self, 'RESULT', f'{p}_s', 's')
                               for p in (*PHASES, 'total_min', 'total_max')}
        self.perf_variables['reps'] = perf_record(self, 'RESULT', 'reps', '')
