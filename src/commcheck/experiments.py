"""The one table of experiments and programs that everything else iterates over.

The ReFrame configuration (``--mode seeds``), the build fixture (which programs must exist), the
gate (which variables are key, and which way is worse), the report (which section shows what)
and the tests all read these tables; none of them names a check or a program on its own.
"""

from __future__ import annotations

import dataclasses
import math
import re


@dataclasses.dataclass(frozen=True)
class Language:
    """A language (or binding mode) kernels are written in, as the ``lang`` parameter says."""

    name: str
    feature: str                    #: the environment feature that selects it
    options: tuple[str, ...] = ()   #: program options that choose it (python's message path)

    @property
    def compiled(self) -> bool:
        return self.feature in ('c', 'fortran')


LANGUAGES = {lang.name: lang for lang in (
    Language('c', 'c'), Language('fortran', 'fortran'), Language('java', 'java'),
    Language('python', 'python', ('--path', 'buffer')),
    Language('python-pickle', 'python', ('--path', 'pickle')),
)}
#: Languages built by the CMake project (``src/kernels``) or the ``commcheck-kernels`` package.
COMPILED = tuple(name for name, lang in LANGUAGES.items() if lang.compiled)
_MANAGED_P2P = ('java', 'python', 'python-pickle')

#: Kernel -> languages it exists in: the one list of programs.
KERNELS = {
    'pingpong': ('c', 'fortran', *_MANAGED_P2P),
    'comms2': ('c', 'fortran', *_MANAGED_P2P),
    'dtype': ('c', 'fortran', 'java'),
    'stencil': ('c', 'fortran'),
    'stream': ('c',),
    'fptr': ('fortran',),
    'pairsweep': ('c',),
    'collectives': ('c',),
}
#: The Java kernels' classes (package ``cc``, src/kernels/java).
JAVA_CLASSES = {'pingpong': 'cc.PingPong', 'comms2': 'cc.Comms2', 'dtype': 'cc.Dtype'}


def program(kernel: str, lang: str) -> str:
    """A kernel's program in a language: ``pingpong-c``, ``stencil-f``, ``cc.PingPong`` (a
    Java class), ``pingpong.py`` (an mpi4py script in src/kernels/python)."""
    if lang not in KERNELS[kernel]:
        raise KeyError(f'kernel {kernel} has no {lang} program')
    feature = LANGUAGES[lang].feature
    if feature == 'java':
        return JAVA_CLASSES[kernel]
    if feature == 'python':
        return f'{kernel}.py'
    return f'{kernel}-{"c" if feature == "c" else "f"}'


def compiled_programs(languages) -> tuple[str, ...]:
    """Programs of the CMake project for the given languages, as the build installs them."""
    return tuple(program(k, lang) for k, langs in KERNELS.items() for lang in langs
                 if lang in COMPILED and lang in languages)


# Directions of change: which way is a regression.
LOWER_IS_BETTER, HIGHER_IS_BETTER = 'lower', 'higher'

#: The pointer study's timed phases: kernel fields ``<phase>_s``, perf variables ``<phase>``.
POINTER_PHASES = ('init', 'read', 'write', 'total')
#: The declaration its other variants are paired with, run by run in the same launch.
POINTER_REFERENCE = 'alloc'
#: Phase -> the perf variable of its ratio to it (kernel field ``<phase>_ratio``, the median
#: pair).
POINTER_RATIOS = {phase: f'{phase}_over_{POINTER_REFERENCE}' for phase in ('read', 'total')}


@dataclasses.dataclass(frozen=True)
class Experiment:
    check: str                      # ReFrame test class
    title: str
    kernels: tuple[str, ...]        # kernels it runs
    seeds: tuple[str, ...]          # source documents (shared/seeds)
    section: str                    # report section
    #: Key variables: gated by the baseline and the gate by default, with their direction.
    key_variables: tuple[tuple[str, str], ...] = ()
    #: ``reframe --mode seeds``: the source documents' sizes and repetitions.
    seed_mode: tuple[str, ...] = ()
    #: ``reframe --mode quick``: a smoke test of every check on every stack (CI, a first look).
    quick_mode: tuple[str, ...] = ()
    #: Environment features beyond a language that the check selects on (see FEATURE_SOURCES).
    needs: tuple[str, ...] = ()
    #: Key variable -> its floor, measured in the same launch: a hardware floor (a
    #: :data:`FLOOR_VARIABLES` name, the C and Fortran kernels) or the check's own (the
    #: stencil's compute-only runs); the gate judges MPI's own cost, value over floor. A
    #: floor goes the way its key variable does (:func:`direction`).
    floors: tuple[tuple[str, str], ...] = ()
    #: Where a check has no floor, why (its launches note ``no floor: <why>``): the gate
    #: then judges the raw value, and a slower machine reads as ``regressed`` there.
    no_floor: str = ''
    #: Where the floors are MPI figures themselves, what they are (the datatypes' contiguous
    #: send): a floor that moved is then the MPI's or the machine's, not told apart, so the
    #: gate never words its move "machine changed" (:func:`mpi_floor`).
    mpi_floors: str = ''
    #: Its C and Fortran kernels report :data:`CPU_WAIT` (FLOOR and WAIT records): the gate
    #: reads it beside the variables (:func:`commcheck.analysis.gate.contention`).
    cpu_wait: bool = False
    #: Key variables that are a ratio of two MPI figures of the same job and ranks (the
    #: datatypes' ``slowdown``: the contiguous send's r_inf over the mode's): a slower machine
    #: moves both, as it moves a figure and its floor, so a worse one reads "MPI regressed".
    own_ratios: tuple[str, ...] = ()
    #: The check's defaults (variable -> value): what a plain run uses. The check reads them
    #: from here (:func:`default`), and so do the tests that run its kernels at its sizes.
    defaults: tuple[tuple[str, object], ...] = ()
    #: ``reframe --mode full``: what the default run leaves out because it is never judged
    #: (see :data:`LEFT_OUT`), put back: the sweep of the earlier default run.
    full_mode: tuple[str, ...] = ()


#: The stencil's rank counts: the seed's square process grids, and 2 for 2-core nodes.
STENCIL_RANKS = (1, 2, 4, 9, 16, 25, 36)
#: Every oversubscribed rank count, on the check's own grid (``oversubscribed_n=0``).
_ALL_OVERSUBSCRIBED = (f'oversubscribed_counts={len(STENCIL_RANKS)}', 'oversubscribed_n=0')

EXPERIMENTS = (
    Experiment(
        check='PingPong', title='Ping-pong latency and bandwidth', kernels=('pingpong',),
        seeds=('000', '001', '004'), section='p2p',
        key_variables=(('latency_8B', LOWER_IS_BETTER), ('latency_1024B', LOWER_IS_BETTER),
                       ('bw_1048576B', HIGHER_IS_BETTER)),
        floors=(('latency_8B', 'floor_latency_8B'), ('latency_1024B', 'floor_latency_1024B'),
                ('bw_1048576B', 'floor_bw_1048576B')), cpu_wait=True,
        seed_mode=('iters=2000',), quick_mode=('iters=100', 'warmup=10'),
        defaults=(('sizes', '1:1048576'), ('iters', 1000), ('warmup', 100))),
    Experiment(
        check='OsuPt2Pt', title='OSU Micro-Benchmarks point-to-point', kernels=(),
        seeds=(), section='p2p', needs=('osu',),
        key_variables=(('latency_8B', LOWER_IS_BETTER), ('latency_1024B', LOWER_IS_BETTER),
                       ('bw_1048576B', HIGHER_IS_BETTER), ('bibw_1048576B', HIGHER_IS_BETTER))),
    Experiment(
        check='ParkbenchComms', title='Parkbench COMMS1/COMMS2 Hockney fits',
        kernels=('pingpong', 'comms2'), seeds=('003',), section='hockney',
        key_variables=(('r_inf', HIGHER_IS_BETTER), ('t0', LOWER_IS_BETTER)),
        floors=(('r_inf', 'floor_bw_1048576B'), ('t0', 'floor_latency_8B')), cpu_wait=True,
        seed_mode=('iters=2000',), quick_mode=('iters=50', 'warmup=5'),
        defaults=(('sizes', '1:1048576'), ('iters', 200), ('warmup', 20))),
    Experiment(
        check='DerivedDatatypes', title='Derived datatypes', kernels=('dtype',),
        seeds=('003',), section='datatypes',
        key_variables=(('slowdown', LOWER_IS_BETTER), ('r_inf', HIGHER_IS_BETTER),
                       ('t0', LOWER_IS_BETTER)),
        # the contiguous send of the same launch, same ranks, just before the mode's sweep:
        # what the datatype engine adds is the mode's figure over it
        floors=(('r_inf', 'r_inf_contig'), ('t0', 't0_contig')),
        mpi_floors='the contiguous send of the same launch, an MPI figure', cpu_wait=True,
        own_ratios=('slowdown',),
        seed_mode=('sizes=8:1048576', 'iters=2000'),
        quick_mode=('sizes=8:16384', 'iters=40', 'warmup=4'),
        defaults=(('sizes', '8:65536'), ('iters', 200), ('warmup', 20))),
    Experiment(
        check='Stencil', title='MPI-3 shared-memory stencil', kernels=('stencil', 'stream'),
        seeds=('002',), section='stencil',
        key_variables=(('time', LOWER_IS_BETTER), ('bw_fraction', HIGHER_IS_BETTER)),
        # the same steps on the same ranks without the halo exchange, run by run just before
        # the variant's (1 rank: the sequential run), and its traffic over the STREAM bound
        # of bw_fraction (a bound, not a floor: a short STREAM probe beside busy cores gets
        # whole time slices, the stencil does not; the compute-only runs see what it sees)
        floors=(('time', 'floor_time'), ('bw_fraction', 'floor_bw_fraction')),
        seed_mode=('n=4800', 'steps=500', 'max_ranks=36', 'min_reps=3', 'target_seconds=0',
                   *_ALL_OVERSUBSCRIBED),
        quick_mode=('n=480', 'steps=20', 'max_ranks=4', 'min_reps=1', 'target_seconds=0'),
        full_mode=_ALL_OVERSUBSCRIBED,
        # n, steps None: sized from the node's last-level cache (grid_n). Runs of the
        # steps, at least 7 and 0.5 s of them: at 1 rank, 7 sequential / variant pairs in the
        # time 3 pairs of 50 steps took, their median ratio steadier; 0.5 s (8 pairs at 2
        # ranks, not 15) spread time over its floor across launches as 1 s did, 0.7 s less
        # a launch (docs/first-run.md#the-stencils-measuring-time). Of the rank counts
        # above the cores (oversubscribed: time-sliced, never judged) only the smallest runs,
        # on the kernel tests' grid (48^2, 10 steps: where every stencil mutant is killed at 4
        # ranks, tests/kernels/test_mutants.py), verified cell by cell: it validates the halo
        # exchange across more ranks (2 x 2 on a 2-core node) at a fraction of the cost.
        defaults=(('n', None), ('steps', None), ('max_ranks', 9), ('min_reps', 7),
                  ('target_seconds', 0.5), ('oversubscribed_counts', 1),
                  ('oversubscribed_n', 48), ('oversubscribed_steps', 10))),
    Experiment(
        check='StencilSequential', title='Sequential stencil baseline', kernels=('stencil',),
        seeds=('002',), section='stencil',
        key_variables=(('time', LOWER_IS_BETTER),),
        seed_mode=('n=4800', 'steps=500', 'min_reps=3', 'target_seconds=0'),
        quick_mode=('n=480', 'steps=20', 'min_reps=1', 'target_seconds=0'),
        defaults=(('n', None), ('steps', None), ('min_reps', 3), ('target_seconds', 1.0))),
    Experiment(
        check='FortranPointers', title='Fortran pointer study', kernels=('fptr',),
        seeds=('002',), section='pointers',
        key_variables=(('read', LOWER_IS_BETTER), ('write', LOWER_IS_BETTER),
                       (POINTER_RATIOS['read'], LOWER_IS_BETTER)),
        seed_mode=('n=10000', 'steps=100', 'min_reps=3', 'target_seconds=0'),
        quick_mode=('n=400', 'steps=4', 'min_reps=1', 'target_seconds=0'),
        # n, steps None: sized from the last-level cache, as the stencil's (grid_n)
        defaults=(('n', None), ('steps', None), ('min_reps', 5), ('target_seconds', 1.0))),
)

#: The collectives every collective check times (our kernel and OSU's), perf variables
#: ``<op>_<size>B`` in us (``barrier``: no size).
COLLECTIVE_OPS = ('allreduce', 'alltoall', 'bcast', 'barrier')
#: Why the collectives have no floor. A floor must take the path the MPI figure takes, without
#: MPI: the ping-pong's is a message between the same two ranks through shared memory (or TCP
#: between their nodes). A collective's time is its algorithm over every rank of the partition
#: (log p rounds or p-1 exchanges, reductions, across the nodes' links); a memcpy of the same
#: bytes on each rank is one local copy: it moves with the memory, not with the links and the
#: rounds, so a ratio over it would count a slower network or a busier node as MPI's own cost.
#: Rebuilding each algorithm without MPI would be a second MPI, not a floor.
COLLECTIVES_NO_FLOOR = ('a collective is an algorithm over every rank and link of the '
                        'partition; no MPI-free operation of the same ranks takes its path '
                        '(a memcpy of the same bytes is one local copy)')

EXPERIMENTS += (
    Experiment(
        check='FabricSweep', title='Fabric acceptance: every node pair', kernels=('pairsweep',),
        seeds=(), section='fabric',
        # Per node (node_latency_<host>, node_bw_<host>) and the population's medians; a node
        # or link named as an outlier fails the check (commcheck.analysis.fabric).
        key_variables=(('latency_median', LOWER_IS_BETTER), ('bw_median', HIGHER_IS_BETTER)),
        seed_mode=('lat_iters=1000', 'bw_iters=50'),
        quick_mode=('lat_iters=100', 'bw_iters=10')),
    Experiment(
        check='Collectives', title='Collectives across the partition',
        kernels=('collectives',), seeds=(), section='fabric',
        key_variables=(('allreduce_8B', LOWER_IS_BETTER), ('allreduce_65536B', LOWER_IS_BETTER),
                       ('alltoall_1024B', LOWER_IS_BETTER), ('bcast_65536B', LOWER_IS_BETTER),
                       ('barrier', LOWER_IS_BETTER)),
        no_floor=COLLECTIVES_NO_FLOOR,
        seed_mode=('sizes=8:1048576', 'iters=1000'),
        quick_mode=('sizes=8,1024,65536', 'iters=50', 'warmup=5')),
    Experiment(
        check='OsuCollectives', title='OSU Micro-Benchmarks collectives', kernels=(),
        seeds=(), section='fabric', needs=('osu',),
        key_variables=(('allreduce_8B', LOWER_IS_BETTER), ('allreduce_65536B', LOWER_IS_BETTER),
                       ('alltoall_1024B', LOWER_IS_BETTER), ('bcast_65536B', LOWER_IS_BETTER),
                       ('barrier', LOWER_IS_BETTER)),
        no_floor=COLLECTIVES_NO_FLOOR,
        quick_mode=('iterations=50',)),
)

BY_CHECK = {e.check: e for e in EXPERIMENTS}


#: The one rule for the perf variable of one message size, ``<name>_<size>B`` (``latency_8B``,
#: ``bw_1048576B``, ``floor_latency_8B``): :func:`sized_name` builds it, :func:`split_sized`
#: reads it, and nothing else writes the pattern out.
SIZED_NAME = re.compile(r'(?P<name>\w+?)_(?P<size>\d+)B')


def sized_name(name: str, size: int) -> str:
    """The perf variable of ``name`` at ``size`` bytes: ``sized_name('latency', 8)`` ->
    ``latency_8B``."""
    return f'{name}_{size}B'


def split_sized(variable: str) -> tuple[str, int] | None:
    """(name, size) of a perf variable named by :func:`sized_name`, or None for any other:
    ``split_sized('floor_bw_1048576B')`` -> ``('floor_bw', 1048576)``."""
    found = SIZED_NAME.fullmatch(variable)
    return (found['name'], int(found['size'])) if found else None


@dataclasses.dataclass(frozen=True)
class FloorVariable:
    """A hardware floor of the two-rank sweeps: ``<name>_<size>B`` from a ``FLOOR`` record
    (src/kernels/common/cc_floor.h) of the same launch as the MPI figures."""

    name: str                       #: ``floor_latency``: perf variables ``floor_latency_8B``...
    field: str                      #: the FLOOR record's field
    unit: str
    direction: str
    title: str

    def variable(self, size: int) -> str:
        return sized_name(self.name, size)


FLOOR_VARIABLES = (
    FloorVariable('floor_latency', 'oneway_us', 'us', LOWER_IS_BETTER,
                  'one-way time of a message through shared memory (or TCP) without MPI'),
    FloorVariable('floor_bw', 'bw_MBps', 'MB/s', HIGHER_IS_BETTER,
                  'size over that one-way time: a copy bandwidth without MPI'),
)
#: The CPU contention a launch of the C and Fortran ping-pong and COMMS2 measured (a perf
#: variable, a fraction): the largest share, over its FLOOR records, of a size's measuring (its
#: MPI and floor batches) that one of the two ranks was ready to run but waited for a CPU (run
#: delay, /proc/self/schedstat).
#: Busy loops on the ranks' cores make it large; a pipelined MPI transport then slows more than
#: the floor's one copy (MPICH 4's 1 MiB, measured: docs/floors.md), so the gate reads it
#: beside the floors (:func:`commcheck.analysis.gate.contended`). The datatypes' kernels print
#: it for their whole sweep (``WAIT`` records). Judged with the floors, never on its own, never
#: referenced.
CPU_WAIT = 'cpu_wait'
#: The unit of every performance variable that is a count or a share of something, naming what
#: it counts or what it is a share of (every other variable's unit is a physical one: us, s,
#: MB/s, B, GLUP/s, x for a factor). ``cpu_wait``: seconds a rank was ready to run but waited
#: for a CPU, per second of the measuring's wall-clock time (docs/floors.md#cpu-contention).
#: Sessions recorded before these units had none ('') and are read as having them
#: (:func:`unit_now`).
UNITS = {
    CPU_WAIT: 'of wall time',
    'halo_share': 'of loop time',               # the stencil's halo exchange, max over ranks
    'efficiency': 'of linear speedup',          # speedup over ranks
    'bw_fraction': 'of STREAM copy',            # the stencil's memory traffic over STREAM's
    'floor_bw_fraction': 'of STREAM copy',
    'fit_rms_rel': 'of measured time',          # Hockney's RMS residual, relative
    'osu_diff': 'of OSU time',                  # ours minus OSU's one-way time, over OSU's
    'reps': 'runs',
    'named': 'outliers',                        # the fabric sweep's named nodes and links
}


def unit_now(variable: str, unit: str) -> str:
    """The unit a stored value of ``variable`` is read in: as recorded, or, where it was
    recorded without one (before :data:`UNITS`), today's."""
    return unit or UNITS.get(variable, unit)
#: Checks whose C and Fortran kernels measure the floor, and the languages that do not: the
#: managed kernels (Java, Python) have none (a JIT and an interpreter between the program and
#: the hardware; no shared segment outside MPI).
FLOOR_LANGUAGES = ('c', 'fortran')


#: A grid check's two arrays ((n+2)^2 doubles each: the stencil, the pointer study) take at
#: least this many times the node's last-level cache (all its instances), STREAM's rule for a
#: run from memory: then the stencil and its STREAM bound run from memory at every rank count.
#: At 1-2x the cache (1920^2, 59 MB, on a 32 MiB L3) one rank ran from memory while each of two
#: ranks' halves nearly fit the cache: 2 ranks' STREAM read 2.1-2.7x one rank's.
GRID_OVER_CACHE = 4
#: The largest grid, from memory (4x a 32 MiB cache) or inside a cache: allocating, touching
#: and verifying larger arrays costs more than the measurement (the times per grid size:
#: docs/measurements.md#the-stencils-grid); a larger cache gets a grid inside it instead.
MAX_GRID = GRID_OVER_CACHE * (32 << 20)
#: A grid inside the cache takes at most this fraction of it, so every rank count runs from
#: the cache (and the STREAM bound with it).
GRID_IN_CACHE = 0.25
#: n is a multiple of this: every process grid of the rank counts (1, 2, 4, 9 ... 36) divides it.
GRID_MULTIPLE = 60
#: Cell updates per timed run (n^2 x steps, 1920^2 x 20): a larger grid runs fewer steps, so a
#: run takes as long whatever the cache; at least 2 steps (one halo exchange between them).
UPDATES_PER_RUN = 1920 ** 2 * 20
#: A smaller grid runs no more steps than this: on shared cores (oversubscribed, one run) each
#: step's halo exchange waits for time slices (65 ms a step, 9 ranks on 2 cores, 1920^2), so a
#: run's cost there grows with its steps; more runs (min_reps, target_seconds) make up the time.
MAX_STEPS = 20
#: Without a cache size (none detected): the earlier fixed grid, 59 MB (the bound says so).
FALLBACK_N = 1920


def grid_from_memory(llc_bytes: int) -> bool:
    """Whether a cache this size gets a grid run from memory (else one inside the cache)."""
    return GRID_OVER_CACHE * llc_bytes <= MAX_GRID


def grid_n(llc_bytes: int | None) -> int:
    """A grid check's points per dimension on a node with ``llc_bytes`` of last-level cache,
    a multiple of :data:`GRID_MULTIPLE`: the smallest whose two arrays take
    :data:`GRID_OVER_CACHE` times the cache, or for a cache too large for that
    (:func:`grid_from_memory`) the largest that takes at most :data:`GRID_IN_CACHE` of it and
    :data:`MAX_GRID` bytes."""
    if not llc_bytes:
        return FALLBACK_N
    if grid_from_memory(llc_bytes):
        side = math.isqrt(GRID_OVER_CACHE * llc_bytes // 16 - 1) + 1    # (n + 2)^2 doubles
        return max(-(-(side - 2) // GRID_MULTIPLE) * GRID_MULTIPLE, GRID_MULTIPLE)
    side = math.isqrt(int(min(GRID_IN_CACHE * llc_bytes, MAX_GRID)) // 16)
    return max((side - 2) // GRID_MULTIPLE * GRID_MULTIPLE, GRID_MULTIPLE)


def grid_steps(n: int) -> int:
    """Time steps per timed run of an n x n grid: :data:`UPDATES_PER_RUN`, within 2 and
    :data:`MAX_STEPS`."""
    return min(max(round(UPDATES_PER_RUN / n ** 2), 2), MAX_STEPS)


def default(check: str, variable: str):
    """A check's default value of one of its variables (:attr:`Experiment.defaults`)."""
    return dict(BY_CHECK[check].defaults)[variable]


def kernel_options(check: str, *variables: str) -> tuple[str, ...]:
    """The kernel options a check passes by default for ``variables`` (``--<name> <value>``):
    ``kernel_options('PingPong', 'iters')`` -> ``('--iters', '1000')``."""
    return tuple(x for v in variables for x in (f'--{v}', str(default(check, v))))


def check_of(display_name: str) -> str:
    """The check (test class) of a ReFrame display name: ``PingPong %lang=c`` -> ``PingPong``."""
    words = display_name.split()
    return words[0] if words else ''


def floor_variable(variable: str) -> FloorVariable | None:
    """The declaration a floor perf variable (``floor_bw_1048576B``) belongs to, or None."""
    found = split_sized(variable)
    if not found:
        return None
    return next((f for f in FLOOR_VARIABLES if f.name == found[0]), None)


def is_floor(check: str, variable: str) -> bool:
    """Whether ``variable`` is a floor: a hardware one, or one a key variable of ``check`` is
    judged against, or the CPU wait the kernels measure beside their figures
    (:data:`CPU_WAIT`): the machine's figures, judged with the variables, never on their own."""
    exp = BY_CHECK.get(check)
    return bool(floor_variable(variable) or variable == CPU_WAIT
                or (exp and variable in dict(exp.floors).values()))


def floor_of(check: str, variable: str) -> str | None:
    """The floor variable a key variable of ``check`` is judged against, if declared."""
    exp = BY_CHECK.get(check)
    return dict(exp.floors).get(variable) if exp else None


def mpi_floor(check: str) -> str:
    """What ``check``'s floors are where they are MPI figures (``''``: hardware floors, or
    none): their move is the MPI's or the machine's, never worded "machine changed"."""
    exp = BY_CHECK.get(check)
    return exp.mpi_floors if exp else ''


def is_own_ratio(check: str, variable: str) -> bool:
    """Whether ``variable`` of ``check`` is a ratio of two MPI figures of one job
    (``Experiment.own_ratios``): judged on its value, worded as MPI's own cost."""
    exp = BY_CHECK.get(check)
    return bool(exp and variable in exp.own_ratios)


def own_variable(variable: str) -> str:
    """The perf variable of a key variable's own cost over its floor: ``own_latency_8B``."""
    return f'own_{variable}'


def own_costs(check: str) -> tuple[tuple[str, str, str], ...]:
    """(own cost, key variable, floor) of every key variable of ``check`` that has a floor.
    An own cost is a slowdown factor over the floor of the same launch, worse up whichever
    way its variable goes (``latency / floor_latency``, ``floor_bw / bw``): what ReFrame's
    ``$ref`` bounds in place of the raw figure (commcheck.analysis.baseline)."""
    exp = BY_CHECK.get(check)
    return tuple((own_variable(v), v, f) for v, f in exp.floors) if exp else ()


def own_cost_of(check: str, variable: str) -> tuple[str, str] | None:
    """(key variable, floor) whose own cost ``variable`` is, or None."""
    found = [(v, f) for own, v, f in own_costs(check) if own == variable]
    return found[0] if found else None


def gated_variables(check: str) -> tuple[str, ...]:
    """The key variables of ``check``, their floors and own costs, and the CPU wait where its
    kernels report it: what baseline and compare keep."""
    exp = BY_CHECK.get(check)
    if not exp:
        return ()
    return (key_variables(check) + tuple(dict.fromkeys(f for _, f in exp.floors))
            + tuple(own for own, _, _ in own_costs(check)) + ((CPU_WAIT,) if exp.cpu_wait else ()))

#: Feature -> where an environment gets it: what `commcheck run` says when no environment has it.
FEATURE_SOURCES = {
    'osu': 'a Spack build (SPACK_ROOT or spack on PATH) or an OSU install (OSU_ROOT, or osu: in '
           'the site file\'s stack)',
}


def unselected(features_by_environment: dict[str, list[str]]) -> list[str]:
    """One line per experiment that no environment can run, saying what it needs."""
    have = {f for feats in features_by_environment.values() for f in feats}
    return [f'{e.check}: not selected on any environment: needs +{f}, from '
            f'{FEATURE_SOURCES[f]}'
            for e in EXPERIMENTS for f in e.needs if f not in have]


def mode_options(mode: str) -> list[str]:
    """``-S Check.var=value`` of every experiment for an execution mode (``seeds``, ``quick``)."""
    field = MODES[mode]
    return [arg for e in EXPERIMENTS for setting in getattr(e, field)
            for arg in ('-S', f'{e.check}.{setting}')]


#: ReFrame execution mode -> the field of :class:`Experiment` holding its settings.
MODES = {'seeds': 'seed_mode', 'quick': 'quick_mode', 'full': 'full_mode'}

#: What the default run leaves out (never judged), and how to have it: said in the skip
#: reason of each test case left out, in the report's stencil section and in docs/first-run.md.
LEFT_OUT = ('left out of the default run (oversubscribed: time-sliced on shared cores, never '
            'judged); every rank count: --mode full, or --mode seeds at the documents\' sizes')


def oversubscribed_runs(ranks: int, oversubscribed: list[int] | tuple[int, ...],
                        counts: int) -> bool:
    """Whether an oversubscribed rank count of the stencil runs: the ``counts`` smallest of
    the ``oversubscribed`` ones (those up to max_ranks above the node's cores) do."""
    return ranks in sorted(oversubscribed)[:counts]


def grid_for(ranks: int, n: int) -> int:
    """``n`` rounded up to a multiple of the process grid of ``ranks`` (k x k for k^2 ranks,
    ranks x 1 otherwise), which the kernel requires."""
    root = math.isqrt(ranks)
    step = root if root * root == ranks else ranks
    return -(-n // step) * step


def settings(mode: str | None, check: str) -> dict:
    """A check's settings in an execution mode (None: the default run): its defaults with the
    mode's ``var=value`` on top (values as the command line gives them, strings)."""
    found = dict(BY_CHECK[check].defaults)
    if mode:
        found.update(s.split('=', 1) for s in getattr(BY_CHECK[check], MODES[mode]))
    return found


_HIGHER_UNITS = ('MB/s', 'GB/s', 'GLUP/s')
_HIGHER_NAMES = ('bw', 'bibw', 'r_inf', 'speedup', 'efficiency', 'glups', 'bw_fraction',
                 'stream_copy')


def direction(check: str, variable: str, unit: str = '') -> str | None:
    """Which way a change of ``variable`` is worse, or None for values without a direction
    (counts, breakpoints, fit residuals): the experiment's declaration, else the unit."""
    if variable == CPU_WAIT:
        return LOWER_IS_BETTER
    exp = BY_CHECK.get(check)
    if exp:
        for name, way in exp.key_variables:
            if name == variable:
                return way
        if own_cost_of(check, variable):
            return LOWER_IS_BETTER
        floored = [name for name, floor in exp.floors if floor == variable]
        if floored:
            return direction(check, floored[0])
    floor = floor_variable(variable)
    if floor:
        return floor.direction
    base = variable.split('_')[0]
    if unit in _HIGHER_UNITS or variable in _HIGHER_NAMES or base in _HIGHER_NAMES:
        return HIGHER_IS_BETTER
    if unit in ('us', 's') or base in ('latency', 'time', 't0'):
        return LOWER_IS_BETTER
    if variable == 'slowdown':
        return LOWER_IS_BETTER
    return None


def key_variables(check: str) -> tuple[str, ...]:
    exp = BY_CHECK.get(check)
    return tuple(name for name, _ in exp.key_variables) if exp else ()
