"""Parkbench COMMS1 (ping-pong) and COMMS2 (simultaneous exchange) with Hockney fits (seed 003).

The Hockney model t(n) = (n + n_half) / r_inf is fitted by weighted least squares to the time
per message: once over the whole sweep, as Parkbench did (``r_inf``, ``n_half``, ``t0``), and
piecewise, because today's stacks switch from eager to rendezvous (``*_small``/``*_large``
segments split at ``breakpoint``, found from the data unless ``breakpoint_bytes`` is given).
The C and Fortran kernels also measure the hardware floor (``floor_latency_<n>B``,
``floor_bw_<n>B``), which the gate judges ``t0`` and ``r_inf`` against.
Seed sweep: ``-S ParkbenchComms.iters=2000`` (sizes 1 B to 1 MiB are the default).
"""

import reframe as rfm
from reframe.core.builtins import parameter, run_after, run_before, sanity_function, variable

from commcheck import experiments
from commcheck.analysis import hockney
from commcheck.rfm.p2p import TwoRankSweep
from commcheck.rfm.perf import (
    computed_variables,
    data_records,
    floor_variables,
    kernel_passed,
    with_own_costs,
)

# benchmark -> (program kernel, the DATA field holding the time per message)
KERNELS = {'comms1': ('pingpong', 'oneway_us'), 'comms2': ('comms2', 'msg_us')}


def fit_values(fit: hockney.HockneyFit, single: hockney.Segment) -> dict:
    small, large = fit.segments[0], fit.segments[-1]
    values = {'r_inf': (single.r_inf_MBps, 'MB/s'), 'n_half': (single.n_half_bytes, 'B'),
              't0': (single.t0_us, 'us'),
              'fit_rms_rel': (single.rms_rel, experiments.UNITS['fit_rms_rel']),
              'breakpoint': (fit.breakpoint_bytes or 0, 'B')}
    for name, seg in (('small', small), ('large', large)):
        values.update({f'r_inf_{name}': (seg.r_inf_MBps, 'MB/s'),
                       f'n_half_{name}': (seg.n_half_bytes, 'B'),
                       f't0_{name}': (seg.t0_us, 'us')})
    return values


@rfm.simple_test
class ParkbenchComms(TwoRankSweep):
    descr = 'Parkbench COMMS1/COMMS2: Hockney r_inf, n_1/2 and startup per stack'
    #: COMMS1 (the ping-pong kernel's one-way times) or COMMS2 (the exchange kernel's).
    #: :type: str :default: every one of ``KERNELS`` ('comms1', 'comms2')
    benchmark = parameter(list(KERNELS))
    #: The kernel's language. :type: str :default: every language of ``comms2``'s kernels
    lang = parameter(experiments.KERNELS['comms2'])
    sizes = experiments.default('ParkbenchComms', 'sizes')
    iters = experiments.default('ParkbenchComms', 'iters')
    warmup = experiments.default('ParkbenchComms', 'warmup')
    #: The size (bytes) the two Hockney segments split at; None: found from the data.
    #: :type: int or None :default: None
    breakpoint_bytes = variable(int, type(None), value=None)
    tags = {'p2p', 'seed003', 'hockney'}

    @run_after('setup')
    def need_a_sweep(self):
        self.require_fit_sizes()

    @run_before('run')
    def set_program(self):
        self.use_kernel(KERNELS[self.benchmark][0], self.sweep_options() + self.floor_options())

    @sanity_function
    def validated(self):
        return kernel_passed(self, self.sizes)

    @run_before('performance')
    def set_perf_variables(self):
        if self.is_dry_run():
            return
        _, time_key = KERNELS[self.benchmark]
        rows = data_records(self)
        fit = hockney.fit_records(rows, time_key, breakpoint=self.breakpoint_bytes)
        single = hockney.fit_line([r['size'] for r in rows], [r[time_key] for r in rows])
        floors = floor_variables(self)
        if self.fit_refused(self.benchmark, single):
            self.perf_variables = floors
            return
        values = fit_values(fit, single)
        refused = [self.fit_refused(f'{self.benchmark} ({part} messages)', seg)
                   for part, seg in zip(('small', 'large'), fit.segments)
                   if len(fit.segments) == 2]
        if any(refused):
            # Both segments, or none: a lone segment is not the piecewise model.
            values = {k: v for k, v in values.items()
                      if not k.endswith(('_small', '_large')) and k != 'breakpoint'}
        self.perf_variables = with_own_costs(self, {**computed_variables(self, values),
                                                    **floors})
