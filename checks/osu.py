"""OSU Micro-Benchmarks 7.x point-to-point: osu_latency, osu_bw, osu_bibw.

The independent peer of our ping-pong: the same perf-variable names (``latency_<n>B``,
``bw_<n>B``, ``bibw_<n>B``) so reports and references line up. OSU comes from the stack's
Spack environment or a site install (``OSU_ROOT``); elsewhere the check is skipped, saying why.
"""


import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import fixture, parameter, run_before, sanity_function

from commcheck.analysis import kernel_records, osu_output
from commcheck.experiments import BY_CHECK, sized_name
from commcheck.rfm.build import KernelsBuild, OsuProgram
from commcheck.rfm.mixins import StackCheck
from commcheck.rfm.perf import job_output
from commcheck.site import vocabulary

SIZES = '1:1048576'
# benchmark -> (perf-variable prefix, unit)
BENCHMARKS = {'osu_latency': ('latency', 'us'), 'osu_bw': ('bw', 'MB/s'),
              'osu_bibw': ('bibw', 'MB/s')}


@rfm.simple_test
class OsuPt2Pt(rfm.RunOnlyRegressionTest, StackCheck, OsuProgram):
    descr = 'OSU Micro-Benchmarks point-to-point, the reference peer of PingPong'
    valid_systems = ['*']
    valid_prog_environs = vocabulary.ANY_MPI
    #: The OSU point-to-point benchmark of the test case.
    #: :type: str :default: every one of ``BENCHMARKS`` (osu_latency, osu_bw, osu_bibw)
    benchmark = parameter(list(BENCHMARKS))
    is_pair = True
    kernels = fixture(KernelsBuild, scope='environment')
    tags = {'p2p', 'osu'}

    def environment_needs(self) -> tuple[str, ...]:
        return BY_CHECK['OsuPt2Pt'].needs

    @run_before('run')
    def set_options(self):
        self.executable_opts = ['-m', SIZES, '-c']

    @sanity_function
    def table_complete(self):
        """A validated result (OSU's own ``-c`` check passed) for every size asked for."""
        problems = osu_output.problems(job_output(self), kernel_records.parse_sizes(SIZES))
        return sn.assert_false(problems, msg='; '.join(problems))

    @run_before('performance')
    def set_perf_variables(self):
        if self.is_dry_run():
            return
        name, unit = BENCHMARKS[self.benchmark]
        table = osu_output.parse_table(job_output(self))
        self.perf_variables = {
            sized_name(name, size): sn.make_performance_function(sn.defer(value), unit)
            for size, value in table.items()}
