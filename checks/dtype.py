"""Cost of non-contiguous messages: derived datatypes vs contiguous (seed 003, commByte/commDouble).

Each job runs the contiguous baseline and then the mode under test, back to back on the same
ranks, so the ratio compares like with like. A single Hockney line per sweep gives ``r_inf`` and
``t0`` (as seed 003 Table 2); ``slowdown`` = r_inf(contiguous) / r_inf(mode), the figure the seed
reports as 14.7x (bytes) and 21.8x (doubles) for STRIDE.
"""

import os

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import fixture, parameter, run_after, run_before, sanity_function, variable

from commcheck import hockney, records
from commcheck.rfm.build import KernelsBuild
from commcheck.rfm.mixins import StackCheck, program_name

MODES = ['stride', 'loop', 'pack', 'subarray']
STRIDES = {'byte': 64, 'double': 8}


@rfm.simple_test
class DerivedDatatypes(rfm.RunOnlyRegressionTest, StackCheck):
    descr = 'Derived-datatype ping-pong: r_inf and startup per mode, vs contiguous'
    valid_systems = ['*']
    valid_prog_environs = ['+mpi']
    lang = parameter(['c', 'fortran'])
    element = parameter(['byte', 'double'])
    mode = parameter(MODES)
    stride = variable(int, type(None), value=None)     # None: seed 003's (64 bytes, 8 doubles)
    blocklen = variable(int, value=1)
    sizes = variable(str, value='8:65536')
    iters = variable(int, value=200)
    warmup = variable(int, value=20)
    num_tasks = 2
    num_tasks_per_node = 2
    kernels = fixture(KernelsBuild, scope='environment')
    tags = {'p2p', 'seed003', 'datatypes'}

    @run_after('setup')
    def require_language(self):
        self.skip_unless_fortran(self.lang)

    def _options(self, mode):
        stride = self.stride or STRIDES[self.element]
        return ['--type', self.element, '--stride', str(stride), '--blocklen', str(self.blocklen),
                '--send-mode', mode, '--recv-mode', mode, '--sizes', self.sizes,
                '--iters', str(self.iters), '--warmup', str(self.warmup)]

    @run_before('run')
    def set_program(self):
        self.executable = self.kernels.program(program_name('dtype', self.lang))
        self.prerun_cmds = [' '.join([self.launcher_command(), self.executable,
                                      *self._options('contig')])]
        self.executable_opts = self._options(self.mode)

    def _runs(self):
        with open(os.path.join(self.stagedir, str(self.stdout))) as fp:
            return records.split_runs(fp.read())

    @sanity_function
    def validated(self):
        runs = self._runs()
        return sn.all([
            sn.assert_eq(len(runs), 2, msg=f'expected the contiguous and the {self.mode} run'),
            sn.assert_true(all(r['PASS'] for r in runs),
                           msg='a run did not validate its data (see the stderr ERROR line)')])

    @run_before('performance')
    def set_perf_variables(self):
        contig, mode = (hockney.fit_line([r['size'] for r in run['DATA']],
                                         [r['oneway_us'] for r in run['DATA']])
                        for run in self._runs())
        values = {'r_inf': (mode.r_inf_MBps, 'MB/s'), 't0': (mode.t0_us, 'us'),
                  'r_inf_contig': (contig.r_inf_MBps, 'MB/s'), 't0_contig': (contig.t0_us, 'us'),
                  'slowdown': (contig.r_inf_MBps / mode.r_inf_MBps, 'x')}
        self.perf_variables = {k: sn.make_performance_function(sn.defer(v), unit)
                               for k, (v, unit) in values.items()}
