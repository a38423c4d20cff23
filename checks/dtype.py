"""Cost of non-contiguous messages: derived datatypes vs contiguous (seed 003, commByte/commDouble).

Each job runs the contiguous baseline and then the mode under test, back to back on the same
ranks, so the ratio compares like with like. A single Hockney line per sweep gives ``r_inf`` and
``t0`` (as seed 003 Table 2); ``slowdown`` = r_inf(contiguous) / r_inf(mode), the figure the seed
reports as 14.7x (bytes) and 21.8x (doubles) for STRIDE. ``r_inf_contig`` and ``t0_contig``
are the floors the gate judges ``r_inf`` and ``t0`` against (experiments: DerivedDatatypes'
floors): the same ranks' contiguous send in the same launch, so a slower machine or transport
moves both and the datatype engine's own cost stays.

Where OSU is available, the STRIDE job also runs ``osu_latency -D vect:<stride>:<blocklen>`` at
the same useful payload (doubles as pairs of floats, OSU has no double type) and records the
difference: an independent check that our vector-type timing is what MPI gives.
"""


import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import parameter, run_after, run_before, sanity_function, variable

from commcheck import experiments
from commcheck.analysis import hockney, kernel_records, osu_output
from commcheck.rfm.build import osu_program
from commcheck.rfm.p2p import TwoRankSweep
from commcheck.rfm.perf import computed_variables, job_output, run_passed, with_own_costs

MODES = ['stride', 'loop', 'pack', 'subarray']
JAVA_MODES = ('stride', 'loop')
STRIDES = {'byte': 64, 'double': 8}
# element -> (OSU datatype, OSU elements per ours): OSU's vector types know no double
OSU_TYPES = {'byte': ('mpi_char', 1), 'double': ('mpi_float', 2)}


@rfm.simple_test
class DerivedDatatypes(TwoRankSweep):
    descr = 'Derived-datatype ping-pong: r_inf and startup per mode, vs contiguous'
    #: The kernel's language. :type: str :default: every language of ``dtype``'s kernels
    lang = parameter(experiments.KERNELS['dtype'])
    #: The element type sent. :type: str :default: 'byte' and 'double'
    element = parameter(['byte', 'double'])
    #: How the strided data is sent: a vector type, a loop, MPI_Pack or a subarray type.
    #: :type: str :default: every one of ``MODES``
    mode = parameter(MODES)
    #: Elements from one block's start to the next; None: seed 003's (64 bytes, 8 doubles).
    #: :type: int or None :default: None
    stride = variable(int, type(None), value=None)
    #: Elements of a block. :type: int :default: 1
    blocklen = variable(int, value=1)
    sizes = experiments.default('DerivedDatatypes', 'sizes')
    iters = experiments.default('DerivedDatatypes', 'iters')
    warmup = experiments.default('DerivedDatatypes', 'warmup')
    #: The useful payload (bytes) of the OSU cross-check. :type: int :default: 65536
    osu_compare_bytes = variable(int, value=65536)
    tags = {'p2p', 'seed003', 'datatypes'}

    def _options(self, mode):
        stride = self.stride or STRIDES[self.element]
        return ['--type', self.element, '--stride', str(stride), '--blocklen', str(self.blocklen),
                '--send-mode', mode, '--recv-mode', mode, *self.sweep_options()]

    @run_after('init')
    def modes_of_the_language(self):
        self.skip_if(self.lang == 'java' and self.mode not in JAVA_MODES,
                     f'mpiJava 1.2 has no {self.mode} (MPI_Pack / subarray types): the Java '
                     f'kernel runs {", ".join(JAVA_MODES)}')

    @run_after('setup')
    def need_a_sweep(self):
        self.require_fit_sizes()

    @run_before('run')
    def set_program(self):
        command = self.use_kernel('dtype', self._options(self.mode))
        self.prerun_cmds = [' '.join([self.launcher_command(), command,
                                      *self._options('contig')])]
        self.osu_path = (osu_program(self.stack, 'osu_latency')
                         if self.mode == 'stride' else None)
        if self.osu_path:
            self.postrun_cmds = ['echo "# OSU cross-check"', self._osu_command()]

    def _osu_command(self) -> str:
        osu_type, per_element = OSU_TYPES[self.element]
        stride = (self.stride or STRIDES[self.element]) * per_element
        block = self.blocklen * per_element
        extent = self.osu_compare_bytes * stride // block
        return ' '.join([self.launcher_command(), self.osu_path, '-D', f'vect:{stride}:{block}',
                         '-T', osu_type, '-m', f'{extent}:{extent}', '-i', str(self.iters),
                         '-x', str(self.warmup)])

    def _osu_oneway_us(self) -> float:
        text = job_output(self).split('# OSU cross-check', 1)[1]
        return next(iter(osu_output.parse_table(text).values()))

    def _runs(self):
        return kernel_records.split_runs(job_output(self))

    @sanity_function
    def validated(self):
        runs = self._runs()
        sn.evaluate(sn.assert_eq(len(runs), 2,
                                 msg=f'expected the contiguous and the {self.mode} run'))
        for run, what in zip(runs, ('the contiguous run', f'the {self.mode} run')):
            run_passed(run, self.sizes, what)
        return True

    @run_before('performance')
    def set_perf_variables(self):
        if self.is_dry_run():
            return
        contig, mode = (hockney.fit_line([r['size'] for r in run['DATA']],
                                         [r['oneway_us'] for r in run['DATA']])
                        for run in self._runs())
        if self.fit_refused('contig', contig) or self.fit_refused(self.mode, mode):
            self.perf_variables = {}
            return
        values = {'r_inf': (mode.r_inf_MBps, 'MB/s'), 't0': (mode.t0_us, 'us'),
                  'r_inf_contig': (contig.r_inf_MBps, 'MB/s'), 't0_contig': (contig.t0_us, 'us'),
                  'slowdown': (contig.r_inf_MBps / mode.r_inf_MBps, 'x')}
        waits = [run['WAIT'][0]['cpu_wait'] for run in self._runs() if run['WAIT']]
        if len(waits) == 2:     # both sweeps read their ranks' run delay (C and Fortran)
            values[experiments.CPU_WAIT] = (max(waits), experiments.UNITS[experiments.CPU_WAIT])
        if self.osu_path:
            ours = kernel_records.select(self._runs()[1]['DATA'], size=self.osu_compare_bytes)
            theirs = self._osu_oneway_us()
            values.update({'osu_oneway': (theirs, 'us'),
                           'osu_diff': ((ours['oneway_us'] - theirs) / theirs,
                                        experiments.UNITS['osu_diff'])})
        self.perf_variables = with_own_costs(self, computed_variables(self, values))
