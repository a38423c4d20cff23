"""The shape shared by the point-to-point checks: a pair of ranks, a size sweep, every language."""

import reframe as rfm
from reframe.core.builtins import fixture, variable

from commcheck import experiments
from commcheck.analysis import hockney, kernel_records
from commcheck.rfm.build import KernelsBuild
from commcheck.rfm.mixins import StackCheck
from commcheck.site import vocabulary


class TwoRankSweep(rfm.RunOnlyRegressionTest, StackCheck):
    """Base of PingPong, ParkbenchComms and DerivedDatatypes (not a test by itself)."""

    valid_systems = ['*']
    #: Message sizes in bytes (the kernels' ``--sizes``: ``a:b`` powers of two, or a list).
    #:
    #: :type: :class:`str`
    #: :default: the check's, from its experiment
    #:     (:attr:`commcheck.experiments.Experiment.defaults`)
    sizes = variable(str)
    #: Timed round trips (exchanges) per size (``--iters``).
    #:
    #: :type: :class:`int`
    #: :default: the check's, from its experiment
    iters = variable(int)
    #: Untimed ones before them (``--warmup``).
    #:
    #: :type: :class:`int`
    #: :default: the check's, from its experiment
    warmup = variable(int)
    #: The hardware floor beside the MPI figures (C and Fortran kernels; see
    #: src/kernels/common/cc_floor.h): ``yes`` (shared memory on one node, TCP between nodes),
    #: ``no``, or ``tcp`` (TCP even on one node).
    #:
    #: :type: :class:`str`
    #: :default: ``'yes'``
    floor = variable(str, value='yes')
    is_pair = True
    num_tasks = 2
    kernels = fixture(KernelsBuild, scope='environment')

    valid_prog_environs = vocabulary.ANY_MPI

    def environment_needs(self) -> tuple[str, ...]:
        """The language of this variant (see :meth:`StackCheck.environment_needs`)."""
        return (experiments.LANGUAGES[self.lang].feature,)

    def use_kernel(self, kernel: str, options: list[str]) -> str:
        """Run ``kernel`` in this test's language with ``options``; returns the command line
        (without the launcher) for a second run of it in the same job."""
        executable, leading, env = self.kernels.command(kernel, self.lang)
        self.executable, self.executable_opts = executable, [*leading, *options]
        self.env_vars = {**self.env_vars, **env}
        return ' '.join([executable, *leading])

    def require_fit_sizes(self):
        """A Hockney fit needs a sweep: too few sizes skips the test, saying so."""
        try:
            count = len(set(kernel_records.parse_sizes(self.sizes)))
        except kernel_records.RecordError as err:
            self.skip_because(True, str(err))
            return
        self.skip_because(count < hockney.MIN_FIT_SIZES,
                          f'not enough sizes for a Hockney fit (need >= {hockney.MIN_FIT_SIZES}, '
                          f'got {count}: --sizes {self.sizes})')

    def fit_refused(self, what: str, segment) -> bool:
        """True, with a note, when a fitted line cannot be reported (see hockney.refusal):
        the sweep does not reach sizes where the bandwidth term shows (MPJ Express's fixed
        cost hides it below ~100 KB). The test keeps its other values and passes."""
        why = hockney.refusal(segment)
        if why:
            self.notes = self.notes + [f'Hockney fit of {what} refused: {why}']
        return why is not None

    def floor_options(self) -> list[str]:
        """``--floor`` for the kernels that measure the hardware floor (C and Fortran)."""
        if self.lang not in experiments.FLOOR_LANGUAGES:
            return []
        return ['--floor', self.floor]

    def sweep_options(self) -> list[str]:
        return ['--sizes', self.sizes, '--iters', str(self.iters), '--warmup', str(self.warmup)]
