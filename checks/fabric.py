"""Fabric acceptance: every node pair of a partition, and the node or link that is an outlier.

One job, one rank per node, rounds of disjoint pairs (``src/kernels/fabric/pairsweep.c``): per
pair the one-way latency of small messages and the streaming bandwidth of large ones in each
direction. The sweep is judged within itself (``commcheck.analysis.fabric``: per node the median
over its pairs, across nodes the median and MAD; a robust z-score and a minimum relative
effect), so it needs no baseline. A named node or link fails the check after every figure is
recorded, with the figures in the failure reason and the command that reruns just those nodes.

Perf variables: ``node_latency_<host>`` (us), ``node_bw_<host>`` (MB/s), the population's
``latency_median`` and ``bw_median`` (key variables), and ``named`` (how many were named).
On a one-node partition the check is skipped, saying so. A partition's ``nodes`` is the sweep's
size; ``-S FabricSweep.num_nodes=K -J nodelist=...`` sweeps K given nodes (the rerun command).
"""

import reframe as rfm
import reframe.utility.sanity as sn
import reframe.utility.typecheck as typ
from reframe.core.builtins import fixture, run_after, run_before, sanity_function, variable
from reframe.core.exceptions import PerformanceError

from commcheck import experiments
from commcheck.analysis import fabric
from commcheck.rfm.build import KernelsBuild
from commcheck.rfm.mixins import StackCheck
from commcheck.rfm.perf import computed_variables, data_records, kernel_passed
from commcheck.site import vocabulary


@rfm.simple_test
class FabricSweep(rfm.RunOnlyRegressionTest, StackCheck):
    descr = 'Node-pair sweep: latency and bandwidth of every pair of nodes, outliers named'
    valid_systems = ['*']
    valid_prog_environs = vocabulary.ANY_MPI
    #: Nodes to sweep, one rank each (0: the partition's ``nodes``).
    #: :type: int :default: 0
    num_nodes = variable(int, value=0)
    #: Round trips per pair of the latency ping-pong. :type: int :default: 200
    lat_iters = variable(int, value=200)
    #: Messages per direction and pair of the bandwidth stream. :type: int :default: 20
    bw_iters = variable(int, value=20)
    #: Message size of the latency phase. :type: str :default: '8'
    lat_size = variable(str, value='8')
    #: Message size of the bandwidth phase. :type: str :default: '1m'
    bw_size = variable(str, value='1m')
    #: Untimed round trips / messages before each phase. :type: int :default: 5
    warmup = variable(int, value=5)
    #: The whole sweep this many times in the job; a pair's figures combine its passes (the
    #: median of medians, or the best batch): a transient slows one pass, a bad link all.
    #: :type: int :default: 1
    passes = variable(int, value=1)
    #: Rounds to run, spread over the schedule (0: all N-1; see docs/fabric.md#cost).
    #: :type: int :default: 0
    rounds = variable(int, value=0)
    #: The pairs of a round one after another instead of at once (nodes that share CPUs).
    #: :type: bool :default: False
    serial = variable(typ.Bool, value=False)
    #: Timed batches per phase; the kernel reports the median and the best batch.
    #: :type: int :default: 5
    batches = variable(int, value=5)
    #: The figure judged: ``median`` (a sustained problem, jitter included) or ``best`` (nodes
    #: that share CPUs: contention only slows a batch, a slow link every one).
    #: :type: str :default: 'median'
    statistic = variable(str, value='median')
    #: Outlier threshold: the robust z-score (commcheck.analysis.fabric).
    #: :type: float :default: 5.0
    z = variable(float, value=fabric.Settings.z)
    #: Outlier threshold: the minimum relative effect (commcheck.analysis.fabric).
    #: :type: float :default: 0.5
    min_effect = variable(float, value=fabric.Settings.min_effect)
    #: The metrics that name outliers, comma-separated (both are always measured and shown).
    #: :type: str :default: 'latency,bandwidth'
    metrics = variable(str, value=','.join(fabric.Settings.metrics))
    #: What the sweep named, one line each (also in the failure reason).
    #: :type: List[str] :default: []
    outliers = variable(list, value=[])
    #: The command that reruns just the named nodes. :type: str :default: ''
    rerun = variable(str, value='')
    kernels = fixture(KernelsBuild, scope='environment')
    tags = {'fabric'}

    @run_after('setup')
    def place_ranks(self):
        """One rank per node, on every node of the partition (or ``num_nodes``). Overrides the
        mixin's hook of this name, in its place (before its core check and the launcher)."""
        nodes = self.num_nodes or self.part.get('nodes', 1)
        self.skip_because(nodes < 2, f'the sweep needs several nodes; partition '
                                     f'{self.current_partition.fullname} has {nodes}')
        self.num_tasks, self.num_tasks_per_node = nodes, 1
        super().place_ranks()

    @run_after('init')
    def known_settings(self):
        if self.statistic not in fabric.STATISTICS:
            raise ValueError(f'FabricSweep.statistic={self.statistic!r}: expected one of '
                             f'{", ".join(fabric.STATISTICS)}')
        unknown = set(self.judged_metrics()) - set(fabric.METRICS)
        if unknown or not self.judged_metrics():
            raise ValueError(f'FabricSweep.metrics={self.metrics!r}: expected a comma-separated '
                             f'list of {", ".join(fabric.METRICS)}')

    def judged_metrics(self) -> tuple[str, ...]:
        return tuple(m.strip() for m in self.metrics.split(',') if m.strip())

    @run_before('run')
    def set_program(self):
        executable, leading, env = self.kernels.command('pairsweep', 'c')
        options = ['--lat-size', self.lat_size, '--bw-size', self.bw_size,
                   '--lat-iters', str(self.lat_iters), '--bw-iters', str(self.bw_iters),
                   '--batches', str(self.batches), '--warmup', str(self.warmup)]
        if self.rounds:
            options += ['--rounds', str(self.rounds)]
        if self.passes > 1:
            options += ['--passes', str(self.passes)]
        if self.serial:
            options.append('--serial')
        self.executable, self.executable_opts = executable, [*leading, *options]
        self.env_vars = {**self.env_vars, **env}

    @sanity_function
    def validated(self):
        """PASS, and one DATA record per pair the schedule has (n/2 per round) and pass."""
        kernel_passed(self).evaluate()
        return sn.assert_eq(sn.len(data_records(self)), self.expected_pairs(),
                            msg='the sweep printed {0} pairs, its schedule has {1}')

    def expected_pairs(self) -> int:
        n = self.num_tasks
        return (self.rounds or (n + n % 2 - 1)) * (n // 2) * self.passes

    @run_before('performance')
    def set_perf_variables(self):
        if self.is_dry_run():
            return
        judged = fabric.judge(fabric.pairs_from_records(data_records(self), self.statistic),
                              fabric.Settings(z=self.z, min_effect=self.min_effect,
                                              metrics=self.judged_metrics()))
        values = {'latency_median': (judged.medians['latency'], 'us'),
                  'bw_median': (judged.medians['bandwidth'], 'MB/s'),
                  'named': (len(judged.outliers), experiments.UNITS['named'])}
        for node in judged.nodes:
            name = fabric.safe_name(node)
            values[f'node_latency_{name}'] = (judged.node_values['latency'][node], 'us')
            values[f'node_bw_{name}'] = (judged.node_values['bandwidth'][node], 'MB/s')
        self.perf_variables = computed_variables(self, values)
        self.outliers = [o.describe() for o in judged.outliers]
        self.rerun = fabric.rerun_command(judged)
        self.notes = self.notes + judged.notes

    @run_after('performance')
    def fail_on_outliers(self):
        """Every figure is recorded; a named node or link now fails the check."""
        if self.outliers and not self.is_dry_run():
            raise PerformanceError(f'fabric outliers: {"; ".join(self.outliers)}; rerun just '
                                   f'those nodes: {self.rerun}')
