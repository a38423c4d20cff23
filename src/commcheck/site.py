"""A site's facts, declared once: compilers x MPI stacks, partitions, build path.

Everything else is generated from a :class:`Site`: the ReFrame configuration
(:meth:`Site.reframe_configuration`), the ReFrame environments with the ``extras`` the checks
read, and the Spack environments (:mod:`commcheck.spack_env`). A site file in ``config/`` builds a
``Site`` (by hand, or by discovery for the embedded local site) and exports its configuration.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from commcheck import paths

BUILD_BACKENDS = ('cmake', 'spack')
MPI_FLAVOURS = ('mpich', 'openmpi', 'cray-mpich', 'intel-mpi')

# Keys of ``environment.extras`` the checks rely on (validated by commcheck.rfm.mixins).
REQUIRED_EXTRAS = ('stack', 'compiler', 'compiler_version', 'mpi', 'mpi_version', 'build',
                   'has_fortran')


# `reframe --mode seeds`: the source documents' full sizes and repetitions (hours, not minutes).
SEED_MODE_OPTIONS = (
    '-S', 'PingPong.iters=2000', '-S', 'ParkbenchComms.iters=2000',
    '-S', 'DerivedDatatypes.sizes=8:1048576', '-S', 'DerivedDatatypes.iters=2000',
    '-S', 'Stencil.n=4800', '-S', 'Stencil.steps=500', '-S', 'Stencil.max_ranks=36',
    '-S', 'StencilSequential.n=4800', '-S', 'StencilSequential.steps=500',
    '-S', 'FortranPointers.n=10000', '-S', 'FortranPointers.steps=100',
)


class SiteError(Exception):
    """A site declaration is wrong or incomplete; the message says what to fix."""


@dataclasses.dataclass(frozen=True)
class Compiler:
    family: str                 # ReFrame-style short family name: gnu, clang, cray, intel
    version: str
    cc: str
    cxx: str | None = None
    fc: str | None = None
    spack_name: str = 'gcc'     # the compiler's Spack package name


@dataclasses.dataclass(frozen=True)
class MpiStack:
    """One MPI implementation, addressed by its own wrappers (never a shared alternatives link)."""

    flavour: str                # one of MPI_FLAVOURS
    version: str
    cc: str                     # C wrapper, absolute path
    fc: str | None              # Fortran wrapper, absolute path, None without Fortran
    launcher_cmd: str           # the stack's own mpiexec/mpirun, absolute path
    prefix: str = '/usr'
    env_vars: tuple[tuple[str, str], ...] = ()

    def __post_init__(self):
        if self.flavour not in MPI_FLAVOURS:
            raise SiteError(f'unknown MPI flavour {self.flavour!r}; use one of {MPI_FLAVOURS}')


@dataclasses.dataclass(frozen=True)
class Stack:
    """A compiler x MPI pair: one ReFrame environment, one Spack environment."""

    compiler: Compiler
    mpi: MpiStack
    build: str = 'cmake'        # how the checks get their programs: one of BUILD_BACKENDS
    osu_root: str | None = None  # site-provided OSU Micro-Benchmarks install, if any
    osu_module: str | None = None  # or a module that puts OSU's programs on PATH
    modules: tuple[str, ...] = ()  # modules that make this stack (Lmod/Tcl names)

    def __post_init__(self):
        if self.build not in BUILD_BACKENDS:
            raise SiteError(f'stack {self.name}: build must be one of {BUILD_BACKENDS}, '
                            f'got {self.build!r}')

    @property
    def name(self) -> str:
        return f'{self.compiler.family}-{self.mpi.flavour}'

    @property
    def has_fortran(self) -> bool:
        return bool(self.mpi.fc and self.compiler.fc)


@dataclasses.dataclass(frozen=True)
class Partition:
    name: str
    scheduler: str = 'local'
    launcher: str = 'mpiexec'
    cores: int = 1               # cores one job may use on a node
    oversubscribe: bool = False  # may checks place more ranks than cores (results are marked)
    access: tuple[str, ...] = ()
    max_jobs: int = 1


@dataclasses.dataclass(frozen=True)
class Site:
    name: str
    description: str
    hostnames: tuple[str, ...]
    partitions: tuple[Partition, ...]
    stacks: tuple[Stack, ...]
    state_dir: Path = paths.STATE_DIR
    osu_spec: str = 'osu-micro-benchmarks@7.3'
    spack_command: str | None = None   # the site's `spack`, for Spack-built stacks

    def __post_init__(self):
        if not self.stacks:
            raise SiteError(f'site {self.name}: no compiler x MPI stack declared or found')
        names = [s.name for s in self.stacks]
        if len(set(names)) != len(names):
            raise SiteError(f'site {self.name}: stack names repeat: {names}')

    def stack(self, name: str) -> Stack:
        for stack in self.stacks:
            if stack.name == name:
                return stack
        raise SiteError(f'site {self.name} has no stack {name!r}')

    def spack_env_dir(self, stack: Stack) -> Path:
        return paths.SPACK_ENV_DIR / self.name / stack.name

    def spack_install_tree(self) -> Path:
        """Outside any ReFrame stage, so installs persist between runs (ReFrame's Spack build
        system leaves a user environment's install_tree alone)."""
        return Path(env_flag('COMMCHECK_SPACK_INSTALL_TREE') or self.state_dir / 'spack' / 'opt')

    def stack_bindir(self, stack: Stack) -> Path:
        """A directory whose mpicc/mpifort/mpiexec are this stack's, put first on PATH.

        Launchers and build systems call plain ``mpiexec``/``mpicc``; on a machine with several
        stacks under one prefix those names are whichever the alternatives system chose, so each
        environment gets a directory of links to its own stack's commands.
        """
        return self.state_dir / 'stacks' / self.name / stack.name / 'bin'

    # -- ReFrame configuration ---------------------------------------------------------------
    def reframe_configuration(self) -> dict:
        paths.REPORTS_DIR.mkdir(parents=True, exist_ok=True)   # ReFrame opens its log there
        return {
            'systems': [self._system()],
            'environments': [self._environment(s) for s in self.stacks],
            'general': [{
                'check_search_path': [str(paths.CHECKS_DIR)],
                'report_file': str(paths.RUNS_DIR / 'run-report-{sessionid}.json'),
                'perf_info_level': 'info',
            }],
            'storage': [{'enable': True, 'sqlite_db_file': str(paths.RESULTS_DB)}],
            'modes': [{'name': 'seeds', 'options': list(SEED_MODE_OPTIONS)}],
            'logging': [self._logging()],
        }

    def _system(self) -> dict:
        return {
            'name': self.name,
            'descr': self.description,
            'hostnames': list(self.hostnames),
            'stagedir': str(self.state_dir / 'stage'),
            'outputdir': str(self.state_dir / 'output'),
            'partitions': [self._partition(p) for p in self.partitions],
        }

    def _partition(self, part: Partition) -> dict:
        return {
            'name': part.name,
            'scheduler': part.scheduler,
            'launcher': part.launcher,
            'access': list(part.access),
            'environs': [s.name for s in self.stacks],
            'max_jobs': part.max_jobs,
            'processor': {'num_cpus': part.cores},
            'extras': {'cores': part.cores, 'oversubscribe': part.oversubscribe},
        }

    def _environment(self, stack: Stack) -> dict:
        path = [str(self.stack_bindir(stack))]
        if stack.build == 'spack' and self.spack_command:
            path.append(os.path.dirname(self.spack_command))
        env_vars = [['PATH', ':'.join(path + ['$PATH'])], *map(list, stack.mpi.env_vars)]
        return {
            'name': stack.name,
            'modules': list(stack.modules) + ([stack.osu_module] if stack.osu_module else []),
            'cc': stack.mpi.cc,
            'cxx': '',
            'nvcc': '',
            'ftn': stack.mpi.fc or '',
            'env_vars': env_vars,
            'features': ['mpi', f'build_{stack.build}']
                        + (['fortran'] if stack.has_fortran else [])
                        + (['osu'] if stack.build == 'spack' or stack.osu_root or stack.osu_module
                           else []),
            'extras': self.environment_extras(stack),
        }

    def environment_extras(self, stack: Stack) -> dict:
        return {
            'stack': stack.name,
            'compiler': stack.compiler.family,
            'compiler_version': stack.compiler.version,
            'mpi': stack.mpi.flavour,
            'mpi_version': stack.mpi.version,
            'build': stack.build,
            'has_fortran': stack.has_fortran,
            'spack_env': str(self.spack_env_dir(stack)) if stack.build == 'spack' else '',
            'spack_view': str(self.state_dir / 'spack-views' / self.name / stack.name)
                          if stack.build == 'spack' else '',
            'osu_root': stack.osu_root or '',
            'osu_module': stack.osu_module or '',
        }

    def _logging(self) -> dict:
        return {
            'handlers': [{
                'type': 'file', 'name': str(paths.REPORTS_DIR / 'reframe.log'),
                'level': 'debug', 'append': True,
                'format': '[%(asctime)s] %(levelname)s: %(check_info)s: %(message)s',
            }, {
                'type': 'stream', 'name': 'stdout', 'level': 'info', 'format': '%(message)s',
            }],
            'handlers_perflog': [{
                'type': 'filelog', 'prefix': '%(check_system)s/%(check_partition)s',
                'basedir': str(paths.PERFLOG_DIR), 'level': 'info', 'append': True,
                'format': '%(check_job_completion_time)s|reframe %(version)s|'
                          '%(check_display_name)s|%(check_system)s:%(check_partition)s|'
                          '%(check_environ)s|%(check_result)s|%(check_reference_status)s|'
                          '%(check_perfvalues)s',
                'format_perfvars': '%(check_perf_value)s|%(check_perf_unit)s|'
                                   '%(check_perf_ref)s|%(check_perf_lower_thres)s|'
                                   '%(check_perf_upper_thres)s|',
            }],
        }


def env_flag(name: str, default: str = '') -> str:
    return os.environ.get(name, default).strip()
