"""The shape shared by the point-to-point checks: two ranks, a size sweep, C and Fortran."""

import reframe as rfm
from reframe.core.builtins import fixture, parameter, run_after, variable

from commcheck.rfm.build import KernelsBuild
from commcheck.rfm.mixins import StackCheck, program_name


class TwoRankSweep(rfm.RunOnlyRegressionTest, StackCheck):
    """Base of PingPong, ParkbenchComms and DerivedDatatypes (not a test by itself)."""

    valid_systems = ['*']
    valid_prog_environs = ['+mpi']
    lang = parameter(['c', 'fortran'])
    sizes = variable(str, value='1:1048576')
    iters = variable(int, value=1000)
    warmup = variable(int, value=100)
    num_tasks = 2
    num_tasks_per_node = 2
    kernels = fixture(KernelsBuild, scope='environment')

    @run_after('setup')
    def require_language(self):
        self.skip_unless_fortran(self.lang)

    def program(self, kernel: str) -> str:
        return self.kernels.program(program_name(kernel, self.lang))

    def sweep_options(self) -> list[str]:
        return ['--sizes', self.sizes, '--iters', str(self.iters), '--warmup', str(self.warmup)]
