"""Mutation tests: the kernels' validation catches realistic bugs.

Each mutant is a textual patch (file, old text, new text) applied to a copy of src/kernels. The
old text must occur exactly once, so a mutant cannot silently stop applying when the sources
change. Every mutant is built for each stack with the stack's own wrappers (only its program,
in one configured tree per stack) and run at the sizes of the kernel tests
(tests/kernels/test_kernel_cli.py) and at the ReFrame checks' default sizes. It is killed when
the run fails with an ``ERROR: validation failed`` line and no PASS record: not 0, not a crash
and not a usage error (neither prints that line). The kernels exit 3 there (MPI_Abort(3)), but
the exit code is the launcher's to relay: Debian MPICH 4.0.2's mpiexec reported one such abort
of a 1-rank run as 1 (a CI rehearsal, 2026-11-26), so any non-zero code counts. The unpatched
copy, built and run by the same harness, must pass every one of those runs (the control), so a
harness bug cannot make mutants look killed.

The stacks are built in parallel (one compiler per core), then run one after the other (ranks
of two jobs sharing two cores would wait for each other's time slices), and the summary
(mutants tried and killed per kernel, stack and language) is printed with the test output.
Mutants that cannot fail somewhere are not run there: on 2 ranks the process grid is 2 x 1,
so a stencil without east/west exchange is run on 4; hybrid on 2 ranks of one emulated node
has no Send/Recv part, so it runs with --node-size 1 there. A racy mutant (the shared-window
fence removed) is left out: it is caught only when the ranks drift apart, which a test cannot
promise.
"""

from __future__ import annotations

import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from commcheck import experiments, paths
from commcheck.analysis import kernel_records
from commcheck.rfm.caches import host_last_level_cache
from commcheck.site import kbuild
from tests.conftest import REFERENCE_STACKS, needs_stacks

MUTATION_STACKS = REFERENCE_STACKS
pytestmark = [needs_stacks(),
              pytest.mark.skipif(not MUTATION_STACKS, reason='no Debian MPICH or Open MPI stack')]

Run = tuple[int, tuple[str, ...]]          # (ranks, arguments)
Edit = tuple[str, str, str]                # (file under src/kernels, old text, new text)

# The kernel tests' sizes (test_kernel_cli.py) and the ReFrame checks' defaults, read from the
# table of experiments (commcheck.experiments: Experiment.defaults): Stencil (ranks 2 and 4;
# hybrid emulates nodes of sqrt(ranks) ranks), PingPong, ParkbenchComms (pingpong and comms2),
# DerivedDatatypes (stride 64 bytes or 8 doubles, the same mode on both ranks),
# FortranPointers; the STREAM run of Stencil at 2 ranks (half the grid's doubles each, 5 reps).
# Stencil and FortranPointers size their grid from the last-level cache: this host's, as the
# checks' would be here.
STENCIL_TEST = ('--n', '48', '--steps', '10')
STENCIL_N = experiments.grid_n(host_last_level_cache())
STENCIL_CHECK = ('--n', str(STENCIL_N), '--steps', str(experiments.grid_steps(STENCIL_N)))
PINGPONG_TEST = ('--sizes', '1:4096', '--iters', '20', '--warmup', '2')
PINGPONG_CHECK = experiments.kernel_options('PingPong', 'sizes', 'iters', 'warmup')
COMMS_CHECK = experiments.kernel_options('ParkbenchComms', 'sizes', 'iters', 'warmup')
COMMS2_TEST = ('--sizes', '8,64,1k', '--iters', '20', '--warmup', '2')
DTYPE_TEST = ('--type', 'double', '--sizes', '64:1024', '--iters', '10', '--warmup', '1')
DTYPE_CHECK = experiments.kernel_options('DerivedDatatypes', 'sizes', 'iters', 'warmup')
STREAM_TEST = ('--n', '100000', '--reps', '2')
STREAM_CHECK = ('--n', str((STENCIL_N + 2) ** 2 // 2), '--reps', '5')
FPTR_TEST = ('--n', '64', '--steps', '2')
FPTR_CHECK = STENCIL_CHECK                 # the same grid, sized from the same cache


def stencil(variant: str, *ranks_and_sizes: tuple[int, tuple[str, ...]], node_size=None):
    """Runs of one stencil variant: (ranks, sizes) pairs."""
    extra = ('--node-size', str(node_size)) if node_size else ()
    return tuple((r, ('--variant', variant, *sizes, *extra)) for r, sizes in ranks_and_sizes)


def dtype_modes(*modes: str) -> tuple[Run, ...]:
    """The test's sizes with the given modes on both ranks, and the check's for both types."""
    runs = [(2, (*DTYPE_TEST, '--send-mode', m, '--recv-mode', m)) for m in modes]
    for element, stride in (('double', '8'), ('byte', '64')):
        runs += [(2, ('--type', element, '--stride', stride, '--send-mode', m, '--recv-mode', m,
                      *DTYPE_CHECK)) for m in modes]
    return tuple(runs)


# Where a halo mutant must be caught: the test's size (4 ranks) and the check's (2 ranks: a
# 2 x 1 process grid with north/south neighbours only; 4 ranks: 2 x 2). Rows are exchanged on
# both grids, columns on the 2 x 2 one only.
ANY_GRID = ((4, STENCIL_TEST), (2, STENCIL_CHECK))
BOTH_GRIDS = ((4, STENCIL_TEST), (2, STENCIL_CHECK), (4, STENCIL_CHECK))
SQUARE_GRID = ((4, STENCIL_TEST), (4, STENCIL_CHECK))


@dataclass(frozen=True)
class Mutant:
    name: str
    kernel: str
    lang: str                   # 'c' or 'f'
    bug: str
    edits: tuple[Edit, ...]
    runs: tuple[Run, ...]

    @property
    def program(self) -> str:
        return f'{self.kernel}-{self.lang}'


# ---- stencil, C --------------------------------------------------------------------------
C_SR_ROWS = (
    '    shift(&AT(b, a, bx, 1), nbr[SOUTH], &AT(b, a, 0, 1), nbr[NORTH], by, MPI_DOUBLE, '
    'pi % 2 == 0, SOUTH);\n'
    '    shift(&AT(b, a, 1, 1), nbr[NORTH], &AT(b, a, bx + 1, 1), nbr[SOUTH], by, MPI_DOUBLE, '
    'pi % 2 == 0, NORTH);\n')
C_SR_COLUMNS = (
    '    shift(&AT(b, a, 1, by), nbr[EAST], &AT(b, a, 1, 0), nbr[WEST], 1, column, '
    'pj % 2 == 0, EAST);\n'
    '    shift(&AT(b, a, 1, 1), nbr[WEST], &AT(b, a, 1, by + 1), nbr[EAST], 1, column, '
    'pj % 2 == 0, WEST);\n')

# ---- stencil, Fortran --------------------------------------------------------------------
F_SR_ROWS = (
    '    call shift(aold, bx, 1, nbr(SOUTH), 0, 1, nbr(NORTH), 1, row, mod(pi, 2) == 0, SOUTH)\n'
    '    call shift(aold, 1, 1, nbr(NORTH), bx + 1, 1, nbr(SOUTH), 1, row, mod(pi, 2) == 0, '
    'NORTH)\n')
F_SR_COLUMNS = (
    '    call shift(aold, 1, by, nbr(EAST), 1, 0, nbr(WEST), bx, MPI_DOUBLE_PRECISION, &\n'
    '               mod(pj, 2) == 0, EAST)\n'
    '    call shift(aold, 1, 1, nbr(WEST), 1, by + 1, nbr(EAST), bx, MPI_DOUBLE_PRECISION, &\n'
    '               mod(pj, 2) == 0, WEST)\n')
C_EXCHANGE, F_HALO = 'stencil/exchange.c', 'stencil/stencil_halo.F90'
C_MAIN, F_MAIN = 'stencil/stencil.c', 'stencil/stencil.F90'
# The floor's pairs, as the check runs them (every rank count, --baseline yes)
FLOOR_PAIRED = (stencil('sr', (4, (*STENCIL_TEST, '--baseline', 'yes')),
                        (2, (*STENCIL_CHECK, '--baseline', 'yes')))
                + stencil('shm', (4, (*STENCIL_TEST, '--baseline', 'yes')),
                          (1, (*STENCIL_CHECK, '--baseline', 'yes'))))

STENCIL_MUTANTS = [
    # no halo exchange at all
    Mutant('sr-no-exchange', 'stencil', 'c', 'exchange_sr returns at once',
           ((C_EXCHANGE, '    int bx = b->bx, by = b->by;\n    /* rows:',
             '    int bx = b->bx, by = b->by;\n    return;\n    /* rows:'),),
           stencil('sr', *ANY_GRID)),
    Mutant('sr-no-exchange', 'stencil', 'f', 'exchange_sr returns at once',
           ((F_HALO, '    ! rows: my last row', '    return\n    ! rows: my last row'),),
           stencil('sr', *ANY_GRID)),
    Mutant('nb-no-exchange', 'stencil', 'c', 'exchange_nb returns at once',
           ((C_EXCHANGE, '    MPI_Request req[8];\n', '    MPI_Request req[8];\n    return;\n'),),
           stencil('nb', *ANY_GRID)),
    Mutant('nb-no-exchange', 'stencil', 'f', 'exchange_nb returns at once',
           ((F_HALO, '    CC_REQUEST :: req(8)\n    integer :: ierr\n',
             '    CC_REQUEST :: req(8)\n    integer :: ierr\n    return\n'),),
           stencil('nb', *ANY_GRID)),
    # one direction only; on 2 ranks the grid is 2 x 1, so east/west is tested on 4
    Mutant('sr-no-north-south', 'stencil', 'c', 'exchange_sr skips the two row shifts',
           ((C_EXCHANGE, C_SR_ROWS, ''),), stencil('sr', *BOTH_GRIDS)),
    Mutant('sr-no-north-south', 'stencil', 'f', 'exchange_sr skips the two row shifts',
           ((F_HALO, F_SR_ROWS, ''),), stencil('sr', *BOTH_GRIDS)),
    Mutant('sr-no-east-west', 'stencil', 'c', 'exchange_sr skips the two column shifts',
           ((C_EXCHANGE, C_SR_COLUMNS, ''),), stencil('sr', *SQUARE_GRID)),
    Mutant('sr-no-east-west', 'stencil', 'f', 'exchange_sr skips the two column shifts',
           ((F_HALO, F_SR_COLUMNS, ''),), stencil('sr', *SQUARE_GRID)),
    # shared windows: a stale neighbour
    Mutant('shm-reads-new-array', 'stencil', 'c',
           "the ghosts are loaded from the neighbour's new array, not its old one",
           ((C_MAIN, 'r->shm->nbase[d] + *cur * nd', 'r->shm->nbase[d] + (1 - *cur) * nd'),),
           stencil('shm', (4, STENCIL_TEST), (2, STENCIL_CHECK))
           + stencil('shmnc', (4, STENCIL_TEST), (4, STENCIL_CHECK))),
    Mutant('shm-reads-new-array', 'stencil', 'f',
           "the ghosts are loaded from the neighbour's new array, not its old one",
           ((F_MAIN, 'call halo_shm(a(:, :, cur), bx, by, peer, cur)',
             'call halo_shm(a(:, :, cur), bx, by, peer, 1 - cur)'),),
           stencil('shm', (4, STENCIL_TEST), (2, STENCIL_CHECK))
           + stencil('shmnc', (4, STENCIL_TEST), (4, STENCIL_CHECK))),
    # hybrid without its Send/Recv part: only neighbours in other (emulated) nodes notice
    Mutant('hybrid-no-send-recv', 'stencil', 'c', 'hybrid skips the exchange between nodes',
           ((C_MAIN, 'if (v == V_SR || v == V_HYBRID)', 'if (v == V_SR)'),),
           stencil('hybrid', (4, STENCIL_TEST), (4, STENCIL_CHECK), node_size=2)
           + stencil('hybrid', (2, STENCIL_TEST), node_size=1)),
    Mutant('hybrid-no-send-recv', 'stencil', 'f', 'hybrid skips the exchange between nodes',
           ((F_MAIN, "    case ('sr', 'hybrid')\n", "    case ('sr')\n"),),
           stencil('hybrid', (4, STENCIL_TEST), (4, STENCIL_CHECK), node_size=2)
           + stencil('hybrid', (2, STENCIL_TEST), node_size=1)),
    # the floor (--baseline yes, every rank count of the check): its compute-only runs do no
    # steps, so it would time nothing; at 1 rank the sequential field differs from the
    # variant's, at more each block differs from the block's own reference
    Mutant('floor-no-steps', 'stencil', 'c', "the floor's (the twin's) runs do none of the steps",
           ((C_MAIN, '    for (int t = 1; t <= r->o->steps; t++) {',
             '    for (int t = 1; t <= (v == V_SEQ ? 0 : r->o->steps); t++) {'),),
           FLOOR_PAIRED),
    Mutant('floor-no-steps', 'stencil', 'f', "the floor's (the twin's) runs do none of the steps",
           ((F_MAIN, '    do t = 1, o%steps\n',
             "    do t = 1, merge(0_int64, o%steps, run_variant == 'seq')\n"),),
           FLOOR_PAIRED),
]

# ---- pingpong and comms2: one bad message in the middle of the timed loop ------------------
# The C steps do not see the iteration count, so the C mutants also record it (`mid`).
PINGPONG_RUNS = ((2, PINGPONG_TEST), (2, PINGPONG_CHECK), (2, COMMS_CHECK))
COMMS2_RUNS = ((2, COMMS2_TEST), (2, COMMS_CHECK))


def c_mid(kernel: str, stamp: str, bad: str) -> tuple[Edit, ...]:
    """C edits: remember iters/2 in `mid`, and replace the stamping line `stamp` by `bad`."""
    path = f'{kernel}/{kernel}.c'
    step = 'round_trip' if kernel == 'pingpong' else 'exchange'
    parse = f'    cc_sweep_args(argc, argv, "{kernel}", usage, &sw);\n'
    return ((path, f'static void {step}(', f'static long long mid;\nstatic void {step}('),
            (path, parse, parse + '    mid = sw.iters / 2;\n'),
            (path, stamp, bad))


PP_STAMP_C = '    cc_payload_stamp(sbuf, size, rank, seq(it));\n'
PP_STAMP_F = '    call cc_payload_stamp(sbuf, nbytes, rank, seq(it))\n'
C2_STAMP_C = '        cc_payload_stamp(sbuf, size, rank, seq(it, round));\n'
C2_STAMP_F = '      call cc_payload_stamp(sbuf, nbytes, rank, seq(it, round))\n'

MESSAGE_MUTANTS = [
    Mutant('stale-message', 'pingpong', 'c',
           'at timed iteration iters/2 rank 0 sends without re-stamping (the previous message)',
           c_mid('pingpong', PP_STAMP_C,
                 '    if (rank == 1 || it != mid)\n    ' + PP_STAMP_C),
           PINGPONG_RUNS),
    Mutant('stale-message', 'pingpong', 'f',
           'at timed iteration iters/2 rank 0 sends without re-stamping (the previous message)',
           (('pingpong/pingpong.F90', PP_STAMP_F,
             '    if (rank == 1 .or. it /= sw%iters / 2) ' + PP_STAMP_F.lstrip(' ')),),
           PINGPONG_RUNS),
    Mutant('corrupt-byte', 'pingpong', 'c',
           "at timed iteration iters/2 rank 1's answer has a wrong last byte (stamped region)",
           c_mid('pingpong', PP_STAMP_C,
                 PP_STAMP_C + '    if (rank == 1 && it == mid)\n        sbuf[size - 1] ^= 0x20;\n'),
           PINGPONG_RUNS),
    Mutant('corrupt-byte', 'pingpong', 'f',
           "at timed iteration iters/2 rank 1's answer has a wrong last byte (stamped region)",
           (('pingpong/pingpong.F90', PP_STAMP_F,
             PP_STAMP_F + '    if (rank == 1 .and. it == sw%iters / 2) '
                          'sbuf(nbytes - 1) = not(sbuf(nbytes - 1))\n'),),
           PINGPONG_RUNS),
    Mutant('stale-message', 'comms2', 'c',
           'at timed iteration iters/2 rank 0 sends round 1 without re-stamping',
           c_mid('comms2', C2_STAMP_C,
                 '        if (rank == 1 || it != mid || round == 0)\n    ' + C2_STAMP_C),
           COMMS2_RUNS),
    Mutant('stale-message', 'comms2', 'f',
           'at timed iteration iters/2 rank 0 sends round 1 without re-stamping',
           (('comms2/comms2.F90', C2_STAMP_F,
             '      if (rank == 1 .or. it /= sw%iters / 2 .or. round == 0) &\n    '
             + C2_STAMP_F),),
           COMMS2_RUNS),
    Mutant('corrupt-byte', 'comms2', 'c',
           'at timed iteration iters/2 rank 1 sends a wrong first byte (stamped region)',
           c_mid('comms2', C2_STAMP_C,
                 C2_STAMP_C
                 + '        if (rank == 1 && it == mid)\n            sbuf[0] ^= 0x20;\n'),
           COMMS2_RUNS),
    Mutant('corrupt-byte', 'comms2', 'f',
           'at timed iteration iters/2 rank 1 sends a wrong first byte (stamped region)',
           (('comms2/comms2.F90', C2_STAMP_F,
             C2_STAMP_F
             + '      if (rank == 1 .and. it == sw%iters / 2) sbuf(0) = not(sbuf(0))\n'),),
           COMMS2_RUNS),
]

# ---- the hardware floor (common/cc_floor.c), shared by the C and Fortran sweeps --------------
# Floor messages are numbered across sizes: with the test's sizes (1:4096, floor at 1, 8, 1 KiB
# and 4 KiB, 22 round trips each) message 30 is a timed round trip of the 8 B floor.
FLOOR_STAMP = '    cc_payload_stamp(f->mine + LINE, size, f->rank, seq);\n'
FLOOR_PUBLISH = '    atomic_store_explicit(flag(f->mine), seq, memory_order_release);\n'
FLOOR_TCP_STAMP = '    cc_payload_stamp(f->sbuf, size, f->rank, seq);\n'
FLOOR_RUNS = ((2, PINGPONG_TEST), (2, PINGPONG_CHECK))
FLOOR_TCP_RUNS = ((2, (*PINGPONG_TEST, '--floor', 'tcp')),)
FLOOR_MUTANTS = [
    mutant for lang in ('c', 'f') for mutant in (
        Mutant('floor-stale-message', 'pingpong', lang,
               'shared-memory floor: message 30 is published without re-stamping it',
               (('common/cc_floor.c', FLOOR_STAMP, '    if (seq != 30)\n    ' + FLOOR_STAMP),),
               FLOOR_RUNS),
        Mutant('floor-wrong-flag', 'pingpong', lang,
               'shared-memory floor: message 30 is published with the next number',
               (('common/cc_floor.c', FLOOR_PUBLISH, FLOOR_PUBLISH.replace(
                   'seq, memory', 'seq == 30 ? seq + 1 : seq, memory')),),
               FLOOR_RUNS),
        Mutant('floor-tcp-stale-message', 'pingpong', lang,
               'TCP floor: message 30 is sent without re-stamping it',
               (('common/cc_floor.c', FLOOR_TCP_STAMP,
                 '    if (seq != 30)\n    ' + FLOOR_TCP_STAMP),),
               FLOOR_TCP_RUNS))]

# ---- dtype, stream, fptr -----------------------------------------------------------------
OTHER_MUTANTS = [
    Mutant('recv-vector-stride', 'dtype', 'c',
           "the receiving rank's vector type has stride S-1: blocks land in gaps",
           (('dtype/dtype.c',
             'MPI_Type_vector(l->nblocks, l->blocklen, l->stride, l->elem, &l->type)',
             'MPI_Type_vector(l->nblocks, l->blocklen, l->stride - (rank == 1), l->elem, '
             '&l->type)'),),
           dtype_modes('stride', 'pack')),
    Mutant('recv-vector-stride', 'dtype', 'f',
           "the receiving rank's vector type has stride S-1: blocks land in gaps",
           (('dtype/dtype.F90',
             'call MPI_Type_vector(l%nblocks, l%blocklen, l%stride, l%elem, l%dtype, ierr)',
             'call MPI_Type_vector(l%nblocks, l%blocklen, l%stride - merge(1, 0, rank == 1), '
             '&\n        l%elem, l%dtype, ierr)'),),
           dtype_modes('stride', 'pack')),
    Mutant('copy-misses-last', 'stream', 'c', 'the copy loop stops one element short',
           (('stream/stream.c',
             '        for (size_t k = 0; k < len; k++)\n            c[k] = a[k];',
             '        for (size_t k = 0; k + 1 < len; k++)\n            c[k] = a[k];'),),
           ((2, STREAM_TEST), (2, STREAM_CHECK))),
    Mutant('copy-back-misses-row', 'fptr', 'f',
           "alloc (and the allocatable baseline of a paired run): the copy back from anew "
           "misses the last row",
           (('fptr/fptr.F90', '        do i = 1, n\n          a(i, j) = anew(i, j)',
             '        do i = 1, n - 1\n          a(i, j) = anew(i, j)'),),
           ((1, ('--variant', 'alloc', *FPTR_TEST)), (1, ('--variant', 'alloc', *FPTR_CHECK)),
            (1, ('--variant', 'cptr', '--baseline', 'yes', *FPTR_CHECK)))),
]

MUTANTS = STENCIL_MUTANTS + MESSAGE_MUTANTS + FLOOR_MUTANTS + OTHER_MUTANTS
CHECK_SIZED_TIMEOUT, TEST_SIZED_TIMEOUT = 300, 120


@dataclass
class Outcome:
    program: str
    ranks: int
    args: tuple[str, ...]
    returncode: int | None      # None: timed out
    error: str                  # the first ERROR: line of stderr, or its tail
    passed: bool                # a PASS record was printed
    seconds: float

    @property
    def killed(self) -> bool:
        return (self.returncode not in (0, None)
                and self.error.startswith('ERROR: validation failed') and not self.passed)

    @property
    def clean_pass(self) -> bool:
        return self.returncode == 0 and self.passed

    def describe(self) -> str:
        return (f'{self.program} -n {self.ranks} {" ".join(self.args)}: exit {self.returncode}, '
                f'{self.seconds:.1f} s: {self.error or "(no ERROR line)"}')


CHECK_SIZES = (STENCIL_CHECK, PINGPONG_CHECK, COMMS_CHECK, DTYPE_CHECK, STREAM_CHECK, FPTR_CHECK)


def check_sized(args: tuple[str, ...]) -> bool:
    words = '\0'.join(args) + '\0'
    return any('\0'.join(sizes) + '\0' in words for sizes in CHECK_SIZES)


def run_program(stack, binary: Path, ranks: int, args: tuple[str, ...]) -> Outcome:
    timeout = CHECK_SIZED_TIMEOUT if check_sized(args) else TEST_SIZED_TIMEOUT
    start = time.monotonic()
    try:
        done = kbuild.launch(stack, ranks, binary, *args, timeout=timeout)
    except Exception as err:   # a hang is not a kill
        return Outcome(binary.name, ranks, args, None, f'{type(err).__name__}: {err}', False,
                       time.monotonic() - start)
    errors = [line for line in done.stderr.splitlines() if line.startswith('ERROR:')]
    error = errors[0] if errors else done.stderr.strip()[-300:]
    try:
        passed = bool(kernel_records.parse(done.stdout)['PASS'])
    except kernel_records.RecordError:
        passed = False
    return Outcome(binary.name, ranks, args, done.returncode, error, passed,
                   time.monotonic() - start)


class Workspace:
    """One stack's copy of src/kernels and its one configured build tree."""

    def __init__(self, stack, root: Path):
        self.stack, self.root = stack, root
        self.src, self.build = root / 'src', root / 'build'
        shutil.copytree(paths.KERNELS_SRC, self.src)

    def build_program(self, program: str, dest: Path) -> Path:
        """Builds one program from the copy as it is now; keeps it under dest."""
        bin_dir = kbuild.cmake_build(self.stack, self.build, source=self.src, targets=[program])
        dest.mkdir(parents=True, exist_ok=True)
        return Path(shutil.copy2(bin_dir / program, dest / program))

    @contextmanager
    def patched(self, edits: tuple[Edit, ...]):
        """The copy with the edits applied in order; every old text must occur exactly once."""
        originals: dict[Path, str] = {}
        try:
            for rel, old, new in edits:
                path = self.src / rel
                text = path.read_text()
                originals.setdefault(path, text)
                count = text.count(old)
                assert count == 1, f'{rel}: the mutant\'s old text occurs {count} times: {old!r}'
                path.write_text(text.replace(old, new))
            yield
        finally:
            for path, text in originals.items():
                path.write_text(text)


@dataclass
class Built:
    """One stack's programs: the unpatched ones (the control) and every mutant's."""
    stack: object
    control: dict[str, Path]
    mutants: list[tuple[Mutant, Path]]
    seconds: float
    slowest: list[tuple[float, str]]    # (seconds, what) of the slowest builds


@dataclass
class StackResults:
    stack: str
    control: list[Outcome]
    mutants: list[tuple[Mutant, list[Outcome]]]
    build_seconds: float
    slowest_builds: list[tuple[float, str]]


@dataclass
class Results:
    stacks: dict[str, StackResults]
    wall_seconds: float


def mutants_for(stack) -> list[Mutant]:
    return [m for m in MUTANTS if m.lang == 'c' or stack.has_fortran]


def build_stack(stack, root: Path) -> Built:
    """Configures once, builds the control, then each mutant: patch, build its program, keep
    the binary, restore the sources."""
    start = time.monotonic()
    work = Workspace(stack, root)
    mutants = mutants_for(stack)
    programs = sorted({m.program for m in mutants})
    kbuild.cmake_build(stack, work.build, source=work.src, targets=programs)
    control = {p: work.build_program(p, root / 'control') for p in programs}
    built, times = [], [(time.monotonic() - start, 'configure and all programs')]
    for mutant in mutants:
        began = time.monotonic()
        with work.patched(mutant.edits):
            dest = root / 'mutants' / mutant.program / mutant.name
            built.append((mutant, work.build_program(mutant.program, dest)))
        times.append((time.monotonic() - began, f'{mutant.program} {mutant.name}'))
    return Built(stack, control, built, time.monotonic() - start, sorted(times)[::-1][:3])


def control_runs(mutants: list[Mutant], program: str) -> list[Run]:
    """The control of a program: every run its mutants make at the tests' sizes, and one at
    a check's size, the first with the most ranks and the fewest iterations (a check-sized
    run costs seconds: the mutants die early, the control runs to the end)."""
    def cost(run: Run) -> tuple[int, int]:
        ranks, args = run
        return -ranks, int(dict(zip(args, args[1:])).get('--iters', 0))

    runs = list(dict.fromkeys(run for m in mutants if m.program == program for run in m.runs))
    checks = [r for r in runs if check_sized(r[1])]
    return [r for r in runs if not check_sized(r[1])] + sorted(checks, key=cost)[:1]


def run_stack(built: Built) -> StackResults:
    stack, mutants = built.stack, [m for m, _ in built.mutants]
    control = [run_program(stack, binary, ranks, args) for program, binary in built.control.items()
               for ranks, args in control_runs(mutants, program)]
    results = [(m, [run_program(stack, binary, r, a) for r, a in m.runs])
               for m, binary in built.mutants]
    return StackResults(stack.name, control, results, built.seconds, built.slowest)


@pytest.fixture(scope='module')
def mutation_results(tmp_path_factory) -> Results:
    """Builds for every stack in parallel (a compiler uses one core), then runs one stack
    at a time: ranks of two jobs on two cores wait for each other's time slices, and a
    ping-pong then takes many times longer."""
    start = time.monotonic()
    roots = [tmp_path_factory.mktemp(f'mut-{s.name}') for s in MUTATION_STACKS]
    with ThreadPoolExecutor(max_workers=len(MUTATION_STACKS)) as pool:
        built = list(pool.map(build_stack, MUTATION_STACKS, roots))
    stacks = {b.stack.name: run_stack(b) for b in built}
    return Results(stacks, time.monotonic() - start)


def summary(results: Results) -> str:
    lines = ['', 'mutation tests: mutants killed / tried (runs killed / run)',
             f'{"stack":<14} {"lang":<5} {"kernel":<10} {"mutants":>9} {"runs":>9}']
    for name, res in results.stacks.items():
        table: dict[tuple[str, str], list[int]] = {}
        for mutant, outcomes in res.mutants:
            row = table.setdefault((mutant.lang, mutant.kernel), [0, 0, 0, 0])
            row[0] += all(o.killed for o in outcomes)
            row[1] += 1
            row[2] += sum(o.killed for o in outcomes)
            row[3] += len(outcomes)
        for (lang, kernel), (killed, tried, rk, rt) in sorted(table.items()):
            lines.append(f'{name:<14} {lang:<5} {kernel:<10} {f"{killed}/{tried}":>9} '
                         f'{f"{rk}/{rt}":>9}')
        clean = sum(o.clean_pass for o in res.control)
        runs = res.control + [o for _, outs in res.mutants for o in outs]
        lines.append(f'{name:<14} control: {clean}/{len(res.control)} unpatched runs passed; '
                     f'builds {res.build_seconds:.0f} s, {len(runs)} runs '
                     f'{sum(o.seconds for o in runs):.0f} s; the slowest:')
        for seconds, what in res.slowest_builds:
            lines.append(f'    {seconds:5.1f} s build {what}')
        for o in sorted(runs, key=lambda o: -o.seconds)[:4]:
            lines.append(f'    {o.seconds:5.1f} s {o.program} -n {o.ranks} {" ".join(o.args)}')
    for name, res in results.stacks.items():
        for mutant, outcomes in res.mutants:
            # the ERROR line of a check-sized run if there is one: the sizes that matter most
            shown = sorted(outcomes, key=lambda o: (not o.killed, not check_sized(o.args)))[0]
            lines.append(f'  {name} {mutant.program} {mutant.name}: '
                         f'{sum(o.killed for o in outcomes)}/{len(outcomes)} runs killed; '
                         f'-n {shown.ranks} {" ".join(shown.args)}: {shown.error[:400]}')
    lines.append(f'wall time of the mutation runs: {results.wall_seconds:.0f} s')
    return '\n'.join(lines)


@pytest.fixture(scope='module')
def printed_summary(mutation_results, request):
    """The summary, shown with the test output (not captured)."""
    capture = request.config.pluginmanager.getplugin('capturemanager')
    text = summary(mutation_results)
    if capture is None:         # -p no:capture
        print(text, flush=True)
    else:
        with capture.global_and_fixture_disabled():
            print(text, flush=True)
    return text


def test_every_mutant_applies_exactly_once():
    """Each mutant's old texts occur once in the pristine sources (else it is a stale mutant)."""
    for mutant in MUTANTS:
        texts: dict[str, str] = {}
        for rel, old, new in mutant.edits:
            text = texts.setdefault(rel, (paths.KERNELS_SRC / rel).read_text())
            assert text.count(old) == 1, (mutant.program, mutant.name, rel, old)
            texts[rel] = text.replace(old, new)
    names = [(m.program, m.name) for m in MUTANTS]
    assert len(names) == len(set(names)), 'two mutants with one name'


@pytest.mark.parametrize('stack', MUTATION_STACKS, ids=[s.name for s in MUTATION_STACKS])
def test_unpatched_kernels_pass_the_same_harness(mutation_results, printed_summary, stack):
    """The control: every run the mutants make, with the unpatched programs, passes."""
    control = mutation_results.stacks[stack.name].control
    failed = [o.describe() for o in control if not o.clean_pass]
    assert not failed, '\n'.join(failed)


CASES = [(s, lang) for s in MUTATION_STACKS for lang in ('c', 'f') if lang == 'c' or s.has_fortran]


@pytest.mark.parametrize('stack,lang', CASES, ids=[f'{s.name}-{lang}' for s, lang in CASES])
def test_every_mutant_is_killed(mutation_results, printed_summary, stack, lang):
    """Every mutant fails validation (exit 3) in every one of its runs."""
    res = mutation_results.stacks[stack.name]
    mutants = [(m, outs) for m, outs in res.mutants if m.lang == lang]
    assert mutants
    survivors = [f'{m.program} {m.name} ({m.bug}): {o.describe()}'
                 for m, outs in mutants for o in outs if not o.killed]
    assert not survivors, 'mutants not killed:\n' + '\n'.join(survivors) + printed_summary
