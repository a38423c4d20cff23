"""Fortran array access through allocatable, pointer and ``c_f_pointer`` (seed 002, Table 3).

Seed 002 found the shared-window Fortran stencil slower than its C twin and traced it to access
through ``c_f_pointer``; this check keeps measuring the three ways a Fortran code can hold the
grid. The grid is sized from the last-level cache (:class:`CacheSizedGrid`, as the stencil's);
the seed's size: ``-S FortranPointers.n=10000 -S FortranPointers.steps=100``.

The pointer and c_f_pointer variants run each of their runs just after an allocatable one in the
same launch (``--baseline yes``): ``read_over_alloc`` and ``total_over_alloc``, the median of the
pairs' ratios, compare the declarations at the same moment of the machine, which separate tests
minutes apart cannot where the node's speed drifts.
"""

import reframe as rfm
import reframe.utility.sanity as sn
import reframe.utility.typecheck as typ
from reframe.core.builtins import fixture, parameter, run_before, sanity_function, variable

from commcheck import experiments
from commcheck.rfm.build import KernelsBuild
from commcheck.rfm.caches import CacheSizedGrid
from commcheck.rfm.mixins import StackCheck
from commcheck.rfm.perf import perf_record
from commcheck.site import vocabulary


@rfm.simple_test
class FortranPointers(rfm.RunOnlyRegressionTest, StackCheck, CacheSizedGrid):
    descr = 'Fortran pointer study: allocatable vs pointer vs c_f_pointer on a shared window'
    valid_systems = ['*']
    valid_prog_environs = vocabulary.ANY_MPI

    def environment_needs(self) -> tuple[str, ...]:
        return ('fortran',)

    #: How the array is held: allocatable, Fortran pointer, or a C pointer (c_f_pointer).
    #: :type: str :default: 'alloc', 'pointer' and 'cptr'
    variant = parameter(['alloc', 'pointer', 'cptr'])
    n = experiments.default('FortranPointers', 'n')
    steps = experiments.default('FortranPointers', 'steps')

    #: Whole runs at least (kernel option ``--reps``); each phase's value is the median run.
    #: :type: int  :default: the experiment's (5)
    min_reps = variable(int, value=experiments.default('FortranPointers', 'min_reps'))

    #: More runs until their totals add up to this many seconds (``--target-seconds``).
    #: :type: float  :default: the experiment's (1.0)
    target_seconds = variable(float, value=experiments.default('FortranPointers', 'target_seconds'))

    #: Pair every run of the pointer and c_f_pointer variants with an allocatable run just
    #: before it (kernel option ``--baseline``); the allocatable variant runs alone.
    #: :type: bool  :default: ``True``
    paired = variable(typ.Bool, value=True)
    num_tasks = 1
    kernels = fixture(KernelsBuild, scope='environment')
    tags = {'seed002', 'fortran'}

    @run_before('run')
    def set_program(self):
        self.executable = self.kernels.program(experiments.program('fptr', 'fortran'))
        self.executable_opts = ['--variant', self.variant, '--n', str(self.n),
                                '--steps', str(self.steps), '--reps', str(self.min_reps),
                                '--target-seconds', str(self.target_seconds)]
        if self.is_paired:
            self.executable_opts += ['--baseline', 'yes']

    @property
    def is_paired(self) -> bool:
        return self.paired and self.variant != experiments.POINTER_REFERENCE

    @sanity_function
    def validated(self):
        return sn.assert_found(r'^PASS ', self.stdout, msg='pointer study did not validate')

    @run_before('performance')
    def set_perf_variables(self):
        self.perf_variables = {p: perf_record(self, 'RESULT', f'{p}_s', 's')
                               for p in (*experiments.POINTER_PHASES, 'total_min', 'total_max')}
        self.perf_variables['reps'] = perf_record(self, 'RESULT', 'reps', experiments.UNITS['reps'])
        if self.is_paired:
            self.perf_variables.update({
                name: perf_record(self, 'RESULT', f'{phase}_ratio', 'x')
                for phase, name in experiments.POINTER_RATIOS.items()})
