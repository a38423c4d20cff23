"""MPI-3 shared-memory windows vs Send/Recv for the 2-D 5-point heat stencil (seed 002).

Variants: blocking S/R, non-blocking S/R, SHM (``MPI_Win_allocate_shared``), SHM-NC
(``alloc_shared_noncontig``) and hybrid (SHM-NC inside a node, S/R between nodes; on one node
the kernel emulates nodes of sqrt(ranks) ranks). Speedup and efficiency are against the
sequential run of the same size and language: at 1 rank, sequential runs in the same launch,
each just before one of the variant's (``--baseline yes``: the median of the pairs' ratios,
so a machine that changes speed between launches does not move it); at more ranks, the
sequential fixture's launch. ``floor_time``: the same ranks doing the same steps without the
halo exchange, each run just before one of the variant's in the same launch (``--baseline
yes``: at 1 rank the sequential run, at more every rank's block alone, checked cell by cell);
the gate judges ``time`` against it, and ``bw_fraction`` against ``floor_bw_fraction``, the
compute-only runs' traffic over the same STREAM bound (experiments: Stencil's floors; a busy
core slows a short STREAM probe less than the stencil). ``bw_fraction`` is the
stencil's memory traffic (16 B/update) over the STREAM copy bandwidth that the same ranks reach
in the same job, just before and just after the stencil runs, the best of both (same nodes, same
placement); none where the ranks are oversubscribed (time-sliced on shared cores, STREAM's
aggregate is no bound).
Defaults fit a login node; seed 002's sizes: ``--mode seeds`` (4800 x 4800, 500 steps, 36 ranks).
"""

import math
import os
import re

import reframe as rfm
import reframe.utility.sanity as sn
import reframe.utility.typecheck as typ
from reframe.core.builtins import (
    fixture,
    parameter,
    run_after,
    run_before,
    sanity_function,
    variable,
)

from commcheck import experiments
from commcheck.rfm.build import KernelsBuild
from commcheck.rfm.caches import CacheSizedGrid
from commcheck.rfm.mixins import StackCheck
from commcheck.rfm.perf import (
    computed_variables,
    job_output,
    kernel_run,
    kernel_runs,
    perf_record,
    with_own_costs,
)
from commcheck.rfm.plugin import Plugin
from commcheck.site import vocabulary

HEAT_RTOL = 1e-12
STREAM_REPS = 5


#: The last-level cache of the node the job runs on, printed by the job itself: one
#: instance's size and how many instances (distinct sets of CPUs sharing one).
LLC_PROBE = ('echo "LLC bytes=$(cat /sys/devices/system/cpu/cpu0/cache/index3/size '
             '2>/dev/null || echo 0) instances=$(cat /sys/devices/system/cpu/cpu*/cache/index3/'
             'shared_cpu_list 2>/dev/null | sort -u | wc -l)"')
LLC = re.compile(r'^LLC bytes=(\d+)([KMG]?) instances=(\d+)', re.MULTILINE)


def stencil_result(check) -> dict:
    return kernel_run(check, 'stencil')['RESULT'][0]


def stencil_verified(check, verify: str | None) -> None:
    """The kernel compared every cell with its independent reference and said PASS; with
    ``verify='no'`` chosen explicitly, it must say ``verified=0`` instead (and no PASS)."""
    run = kernel_run(check, 'stencil')
    result = run['RESULT'][0] if run['RESULT'] else {}
    if verify == 'no':
        sn.evaluate(sn.assert_eq(result.get('verified'), 0,
                                 msg='--verify no, but the kernel reports verified={0}'))
        return
    sn.evaluate(sn.assert_true(run['PASS'] and result.get('verified') == 1,
                               msg='stencil did not verify its result (see the stderr ERROR '
                                   'line: the first cell that differs)'))


def describe_bound(check, grid_bytes: int) -> str:
    """Which level of the memory hierarchy the stencil and its STREAM bound ran from."""
    match = LLC.search(job_output(check))
    llc = 0
    if match:
        llc = int(match.group(1)) * {'': 1, 'K': 1 << 10, 'M': 1 << 20, 'G': 1 << 30}[
            match.group(2)] * max(int(match.group(3)), 1)
    level = ('unknown cache size' if not llc else
             'in the last-level cache' if grid_bytes <= llc else 'from memory')
    when = ('just before the stencil' if check.oversubscribed else
            f'just before and {STREAM_REPS} just after the stencil')
    return (f'STREAM copy over the same working set: {check.stream_doubles()} doubles per rank '
            f'on {check.ranks} rank(s), best of {STREAM_REPS} reps {when}, each timed on rank 0 '
            f'from the barrier that starts every rank to the barrier after the last one ends; '
            f'{check.n}^2 grid ({check.grid_source}), {grid_bytes / 1e6:.0f} MB of grids, '
            f'last-level cache {llc / (1 << 20):.0f} MiB: '
            f'{level}' + ('; oversubscribed: the ranks share the cores, so STREAM gives no '
                          'bound and no bw_fraction is reported' if check.oversubscribed else ''))


class RepeatedRuns(Plugin):
    """Timed runs repeated until they are long and many enough to be stable: the kernel runs
    the steps at least ``min_reps`` times and until the runs add up to ``target_seconds``, and
    reports the median run with the fastest and slowest (``time_min``, ``time_max``).
    Oversubscribed runs (more ranks than cores: time-slicing decides, never gated) run once."""

    #: Timed runs of the steps, at least (kernel option ``--reps``).
    #: :type: int  :default: the check's, from its experiment (Stencil 7, sequential 3)
    min_reps = variable(int)

    #: More runs until their times add up to this many seconds (``--target-seconds``).
    #: :type: float  :default: the check's, from its experiment (Stencil 0.5, sequential 1.0)
    target_seconds = variable(float)

    def repetition_options(self) -> list[str]:
        if self.oversubscribed:
            return ['--reps', '1']
        return ['--reps', str(self.min_reps), '--target-seconds', str(self.target_seconds)]

    def spread_variables(self, result: dict) -> dict:
        """The median run's spread: fastest and slowest run, and how many ran."""
        return {'time_min': (result['time_min_s'], 's'), 'time_max': (result['time_max_s'], 's'),
                'reps': (result['reps'], experiments.UNITS['reps'])}


class StencilSequential(rfm.RunOnlyRegressionTest, StackCheck, RepeatedRuns, CacheSizedGrid):
    """The one-rank run every parallel variant is measured and verified against."""

    descr = 'sequential 5-point stencil, the baseline of speedup and efficiency'
    valid_systems = ['*']
    #: The kernel's language. :type: str :default: every language of ``stencil``'s kernels
    lang = parameter(experiments.KERNELS['stencil'])
    n = experiments.default('StencilSequential', 'n')
    steps = experiments.default('StencilSequential', 'steps')
    min_reps = experiments.default('StencilSequential', 'min_reps')
    target_seconds = experiments.default('StencilSequential', 'target_seconds')
    num_tasks = 1
    kernels = fixture(KernelsBuild, scope='environment')


    @run_before('run')
    def set_program(self):
        self.executable = self.kernels.program(experiments.program('stencil', self.lang))
        self.executable_opts = ['--variant', 'seq', '--n', str(self.n), '--steps', str(self.steps),
                                *self.repetition_options()]

    @sanity_function
    def validated(self):
        stencil_verified(self, None)
        return True

    @run_before('performance')
    def set_perf_variables(self):
        if self.is_dry_run():
            return
        self.perf_variables = {
            'time': perf_record(self, 'RESULT', 'time_s', 's'),
            'glups': perf_record(self, 'RESULT', 'glups', 'GLUP/s'),
            **computed_variables(self, self.spread_variables(stencil_result(self)))}


@rfm.simple_test
class Stencil(rfm.RunOnlyRegressionTest, StackCheck, RepeatedRuns, CacheSizedGrid):
    descr = '2-D heat stencil: halo exchange by Send/Recv vs MPI-3 shared-memory windows'
    valid_systems = ['*']
    #: The halo exchange: blocking S/R, non-blocking S/R, SHM (``MPI_Win_allocate_shared``),
    #: SHM-NC (``alloc_shared_noncontig``) or hybrid (SHM-NC inside a node, S/R between).
    #: :type: str :default: every one of the five
    variant = parameter(['sr', 'nb', 'shm', 'shmnc', 'hybrid'])
    #: Ranks of the test case: the seed's square grids, and 2 for 2 cores.
    #: :type: int :default: every one of ``experiments.STENCIL_RANKS``
    ranks = parameter(experiments.STENCIL_RANKS)
    #: Rank counts above this are skipped (a 2-core node runs 1, 2, 4 and 9: oversubscribed).
    #:
    #: :type: :class:`int`
    #: :default: the experiment's (9)
    max_ranks = variable(int, value=experiments.default('Stencil', 'max_ranks'))
    n = experiments.default('Stencil', 'n')
    steps = experiments.default('Stencil', 'steps')
    min_reps = experiments.default('Stencil', 'min_reps')
    target_seconds = experiments.default('Stencil', 'target_seconds')
    #: How many of the rank counts above a node's cores (oversubscribed: never judged) run,
    #: the smallest first; the others are skipped, saying how to have them (``--mode full``).
    #:
    #: :type: :class:`int`
    #: :default: the experiment's (1: on a 2-core node, 4 ranks runs and 9 does not)
    oversubscribed_counts = variable(int, value=experiments.default('Stencil',
                                                                    'oversubscribed_counts'))
    #: The grid (points per dimension) and time steps of an oversubscribed run, verified cell
    #: by cell against the kernel's own sequential computation; ``oversubscribed_n=0``: the
    #: check's grid, compared with the sequential fixture's run as every other rank count.
    #:
    #: :type: :class:`int`
    #: :default: the experiment's (48 and 10: the kernel tests' grid)
    oversubscribed_n = variable(int, value=experiments.default('Stencil', 'oversubscribed_n'))
    #: The time steps of an oversubscribed run (see ``oversubscribed_n``).
    #:
    #: :type: :class:`int`
    #: :default: the experiment's (10)
    oversubscribed_steps = variable(int, value=experiments.default('Stencil',
                                                                   'oversubscribed_steps'))
    #: The run used the oversubscribed runs' small grid, not the sequential fixture's.
    #: :type: bool :default: False
    small_grid = variable(bool, value=False)
    #: ``no`` runs without the every-cell comparison (only total heat and checksum are then
    #: compared with the sequential run): an explicit choice, never a silent default.
    #: :type: str or None :default: None (the every-cell comparison)
    verify = variable(str, type(None), value=None)
    #: Pair each run with a compute-only run of the same steps just before it (``--baseline
    #: yes``): ``floor_time``, the floor ``time`` is judged against, and at 1 rank the speedup
    #: from the pairs. ``false`` runs the variant alone (speedup from the sequential fixture).
    #:
    #: :type: :class:`bool`
    #: :default: ``True``
    paired = variable(typ.Bool, value=True)
    #: Which level of the memory hierarchy ``bw_fraction``'s bound (STREAM) was measured at.
    #: :type: str :default: '' (set by the run)
    bound = variable(str, value='')
    seq = fixture(StencilSequential, scope='environment', action='fork')
    # Held directly, not only through `seq`: ReFrame cleans a fixture's stage once all of its
    # own dependents are done, and the programs live there.
    kernels = fixture(KernelsBuild, scope='environment')
    tags = {'seed002', 'stencil', 'shm'}

    valid_prog_environs = vocabulary.ANY_MPI

    def environment_needs(self) -> tuple[str, ...]:
        """The language of the forked sequential fixture (see
        :meth:`commcheck.rfm.mixins.StackCheck.environment_needs`)."""
        info = type(self).get_variant_info(self.variant_num, recurse=True)
        return (experiments.LANGUAGES[info['fixtures']['seq']['params']['lang']].feature,)

    @run_after('init')
    def place_on_one_node(self):
        self.num_tasks = self.ranks
        self.num_tasks_per_node = self.ranks

    #: The ranks are spread over real nodes (hybrid: no emulated --node-size).
    #: :type: bool :default: False
    spans_nodes = variable(bool, value=False)

    @run_after('setup')
    def place_ranks(self):
        """On a ``placement: different-nodes`` partition, spread the ranks evenly over its
        nodes: real nodes, so the hybrid variant's SHM is each node's MPI_COMM_TYPE_SHARED
        (no emulated --node-size). What cannot cross nodes (one rank, the SHM-only variants)
        runs on the same-node partitions. Overrides the mixin's hook of this name, in its
        place: the ranks per node are set before its core check and the launcher."""
        part = self.part
        if part.get('placement') == 'different-nodes':
            self.skip_because(self.ranks < 2 or self.variant in ('shm', 'shmnc'),
                              f'{self.variant} on {self.ranks} rank(s) does not cross nodes: '
                              f'it runs on the same-node partitions')
            self.num_tasks_per_node = -(-self.ranks // min(part.get('nodes', 1), self.ranks))
            self.spans_nodes = True
        super().place_ranks()

    @run_after('init')
    def limit_ranks(self):
        self.skip_if(self.ranks > self.max_ranks,
                     f'{self.ranks} ranks > max_ranks={self.max_ranks} (login-node default; '
                     f'-S Stencil.max_ranks=36 or --mode seeds for the seed\'s grid)')

    @run_after('setup')
    def keep_one_oversubscribed_count(self):
        """Oversubscribed rank counts are never judged: the smallest ``oversubscribed_counts``
        of them run (on the small grid), to validate the halo exchange across more ranks."""
        if not self.oversubscribed:
            return
        part = self.part
        cores, nodes = part.get('cores') or os.cpu_count(), part.get('nodes') or 1
        spread = part.get('placement') == 'different-nodes'
        over = [r for r in experiments.STENCIL_RANKS if r <= self.max_ranks and
                (-(-r // min(nodes, r)) if spread else r) > cores]
        self.skip_because(not experiments.oversubscribed_runs(self.ranks, over,
                                                              self.oversubscribed_counts),
                          f'{self.ranks} ranks on {cores} cores: {experiments.LEFT_OUT}')
        if self.oversubscribed_n:
            self.n = experiments.grid_for(self.ranks, self.oversubscribed_n)
            self.steps = self.oversubscribed_steps
            self.grid_source, self.small_grid = 'the oversubscribed runs\' small grid', True

    @property
    def lang(self) -> str:
        return self.seq.lang

    @run_before('run')
    def set_program(self):
        self.executable = self.kernels.program(experiments.program('stencil', self.lang))
        self.executable_opts = ['--variant', self.variant, '--n', str(self.n),
                                '--steps', str(self.steps), *self.repetition_options()]
        if self.paired:
            self.executable_opts += ['--baseline', 'yes']
        if self.verify and not self.small_grid:     # the small grid is always verified
            self.executable_opts += ['--verify', self.verify]
        if self.variant == 'hybrid' and not self.spans_nodes:
            self.executable_opts += ['--node-size', str(self.emulated_node_size())]
        # The bound: STREAM copy over the same working set per rank as the stencil's (two
        # arrays of its block), so both run from the same level of the memory hierarchy; just
        # before and just after the stencil, the best of both (one probe can land in a slow
        # moment of a shared node, and a bound below the stencil's own traffic is none).
        # Oversubscribed: one probe, shown as measured; it bounds nothing (no bw_fraction).
        stream = ' '.join([self.launcher_command(),
                           self.kernels.program(experiments.program('stream', 'c')),
                           '--n', str(self.stream_doubles()), '--reps', str(STREAM_REPS)])
        self.prerun_cmds = [LLC_PROBE, stream]
        self.postrun_cmds = [] if self.oversubscribed else [stream]

    def stream_doubles(self) -> int:
        return max(-(-(self.n + 2) ** 2 // self.ranks), 1000)

    def emulated_node_size(self) -> int:
        """Nodes of sqrt(P) consecutive ranks: one row of a square process grid per node."""
        root = math.isqrt(self.ranks)
        return root if root * root == self.ranks else self.ranks

    @sanity_function
    def validated(self):
        """STREAM validated its arrays; the stencil compared every cell with its independent
        sequential reference (unless verification was explicitly turned off); and its total
        heat and position-weighted checksum equal the sequential baseline run's."""
        sn.evaluate(sn.assert_true(all(run['PASS'] for run in kernel_runs(self, 'stream')),
                                   msg='STREAM did not validate its arrays'))
        stencil_verified(self, None if self.small_grid else self.verify)
        if self.small_grid:         # another size than the sequential fixture's: no compare
            return True
        sn.evaluate(sn.assert_eq((self.n, self.steps), (self.seq.n, self.seq.steps),
                                 msg='sequential baseline ran another size: {1} vs {0}'))
        for field in ('total_heat', 'checksum'):
            sn.evaluate(sn.assert_reference(
                stencil_result(self)[field], stencil_result(self.seq)[field], -HEAT_RTOL,
                HEAT_RTOL, msg=f"{field} {{0}} differs from the sequential run's {{1}}"))
        return True

    @run_before('performance')
    def set_perf_variables(self):
        if self.is_dry_run():
            return
        result, seq_time = stencil_result(self), stencil_result(self.seq)['time_s']
        stream = max((run['RESULT'][0] for run in kernel_runs(self, 'stream')),
                     key=lambda result: result['copy_GBps'])
        self.bound = describe_bound(self, 16 * (self.n + 2) ** 2)
        # 1 rank: sequential and variant runs paired in this launch; else across launches
        paired_seq = self.paired and self.ranks == 1
        speedup = result['seq_ratio'] if paired_seq else seq_time / result['time_s']
        floor = ({'floor_time': (result['seq_time_s' if paired_seq else 'floor_time_s'], 's')}
                 if self.paired else {})
        # oversubscribed: ranks time-sliced on shared cores make no bound (none shown)
        fraction = {}
        if not self.oversubscribed:
            fraction['bw_fraction'] = (result['mem_GBps'] / stream['copy_GBps'],
                                      experiments.UNITS['bw_fraction'])
            if floor:   # the compute-only runs' traffic over the same bound: its floor
                fraction['floor_bw_fraction'] = (fraction['bw_fraction'][0] * result['time_s']
                                                 / floor['floor_time'][0],
                                                 experiments.UNITS['floor_bw_fraction'])
        self.perf_variables = with_own_costs(self, computed_variables(self, {
            'time': (result['time_s'], 's'), 'glups': (result['glups'], 'GLUP/s'),
            'halo_share': (result['halo_share'], experiments.UNITS['halo_share']),
            # none on the small grid: the sequential fixture ran another size
            **({} if self.small_grid else {'speedup': (speedup, 'x'),
                                           'efficiency': (speedup / self.ranks,
                                                          experiments.UNITS['efficiency'])}),
            'stream_copy': (stream['copy_GBps'], 'GB/s'), **fraction, **floor,
            **({'seq_time': (result['seq_time_s'], 's')} if paired_seq else {}),
            **self.spread_variables(result)}))
