"""Collectives across a partition: allreduce, alltoall, bcast and barrier per message size.

``Collectives`` runs our validated kernel (``src/kernels/fabric/collectives.c``: every
allreduce result checked against its closed form, every alltoall block and bcast message by
its stamps) on every node of a multi-node partition (one rank per node by default) and within
one node (the partition's cores). ``OsuCollectives`` runs OSU's ``osu_allreduce``,
``osu_alltoall``, ``osu_bcast`` and ``osu_barrier`` with the same placement where the stack has
OSU (see checks/osu.py). Perf variables: ``<op>_<size>B`` and ``barrier``, in us per call (the
slowest rank's), the names shared by both checks.
"""


import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import (
    fixture,
    parameter,
    run_after,
    run_before,
    sanity_function,
    variable,
)

from commcheck.analysis import kernel_records, osu_output
from commcheck.experiments import BY_CHECK, COLLECTIVE_OPS, sized_name
from commcheck.rfm.build import KernelsBuild, OsuProgram
from commcheck.rfm.mixins import StackCheck
from commcheck.rfm.perf import data_records, job_output, kernel_passed, no_floor, perf_record
from commcheck.site import vocabulary


class PartitionWide(rfm.RunOnlyRegressionTest, StackCheck):
    """Every node of the partition, ``tasks_per_node`` ranks each (not a test by itself)."""

    valid_systems = ['*']
    valid_prog_environs = vocabulary.ANY_MPI
    #: Ranks per node (0: 1 on a multi-node partition, its cores, at least 2, on one node).
    #: :type: int :default: 0
    tasks_per_node = variable(int, value=0)
    kernels = fixture(KernelsBuild, scope='environment')

    @run_after('setup')
    def place_ranks(self):
        """Overrides the mixin's hook of this name, in its place."""
        part = self.part
        nodes = part.get('nodes', 1)
        per_node = self.tasks_per_node or (1 if nodes > 1 else max(2, part.get('cores') or 2))
        self.num_tasks, self.num_tasks_per_node = nodes * per_node, per_node
        super().place_ranks()


def op_label(op: str, size: int) -> str:
    return op if op == 'barrier' else sized_name(op, size)


@rfm.simple_test
class Collectives(PartitionWide):
    descr = 'MPI collectives across the partition, every result validated'
    #: Bytes per rank: a list or a power-of-two range (see src/kernels/README.md).
    #: :type: str :default: '8:65536'
    sizes = variable(str, value='8:65536')
    #: Timed calls per op and size. :type: int :default: 100
    iters = variable(int, value=100)
    #: Untimed warm-up calls per op and size. :type: int :default: 10
    warmup = variable(int, value=10)
    tags = {'fabric', 'collectives'}

    @run_before('run')
    def set_program(self):
        executable, leading, env = self.kernels.command('collectives', 'c')
        self.executable = executable
        self.executable_opts = [*leading, '--sizes', self.sizes, '--iters', str(self.iters),
                                '--warmup', str(self.warmup)]
        self.env_vars = {**self.env_vars, **env}

    def timed(self) -> list[tuple[str, int]]:
        """(op, size) of every figure asked for (barrier: one, size 0)."""
        sizes = kernel_records.parse_sizes(self.sizes)
        return [(op, s) for op in COLLECTIVE_OPS for s in (sizes if op != 'barrier' else [0])]

    @sanity_function
    def validated(self):
        """PASS, and a DATA record for every op and size asked for."""
        kernel_passed(self).evaluate()
        got = [(r.get('op'), r.get('size')) for r in data_records(self)]
        return sn.assert_eq(got, self.timed(), msg='the kernel printed {0}, asked for {1}')

    @run_before('performance')
    def set_perf_variables(self):
        self.perf_variables = {
            op_label(op, size): perf_record(self, 'DATA', 'time_us', 'us', op=op, size=size)
            for op, size in self.timed()} | no_floor(self)


#: OSU program -> our op name.
OSU_COLLECTIVES = {f'osu_{op}': op for op in COLLECTIVE_OPS}


@rfm.simple_test
class OsuCollectives(PartitionWide, OsuProgram):
    descr = 'OSU Micro-Benchmarks collectives across the partition'

    def environment_needs(self) -> tuple[str, ...]:
        return BY_CHECK['OsuCollectives'].needs
    #: The OSU collective benchmark of the test case (``osu_<op>``, one a test case).
    #: :type: str :default: every one of ``OSU_COLLECTIVES``
    benchmark = parameter(list(OSU_COLLECTIVES))
    #: OSU's ``-m``: message sizes (not for osu_barrier). :type: str :default: '8:65536'
    sizes = variable(str, value='8:65536')
    #: OSU's ``-i``: timed iterations per size. :type: int :default: 100
    iterations = variable(int, value=100)
    tags = {'fabric', 'collectives', 'osu'}

    @run_before('run')
    def set_options(self):
        self.executable_opts = ['-i', str(self.iterations)]
        if self.benchmark != 'osu_barrier':
            self.executable_opts += ['-m', self.sizes, '-c']

    def _table(self) -> dict:
        text = job_output(self)
        if self.benchmark == 'osu_barrier':
            return {0: osu_output.parse_single(text)}
        return osu_output.parse_table(text)

    @sanity_function
    def table_complete(self):
        """A validated result (OSU's ``-c``) for every size; osu_barrier: its one figure."""
        if self.benchmark == 'osu_barrier':
            return sn.assert_true(self._table())
        problems = osu_output.problems(job_output(self), kernel_records.parse_sizes(self.sizes))
        return sn.assert_false(problems, msg='; '.join(problems))

    @run_before('performance')
    def set_perf_variables(self):
        if self.is_dry_run():
            return
        op = OSU_COLLECTIVES[self.benchmark]
        self.perf_variables = {op_label(op, size): sn.make_performance_function(
            sn.defer(value), 'us') for size, value in self._table().items()} | no_floor(self)
