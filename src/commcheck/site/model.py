"""The site model: partitions and compiler x MPI stacks, declared once (re-exported by
:mod:`commcheck.site`, which says what is generated from it).

The models validate themselves (pydantic): unknown keys, wrong types, wrappers that are not
executable, prefixes that do not exist, a stack declared with a language it cannot build.
"""
from __future__ import annotations

import os
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from commcheck import dburl
from commcheck.errors import UserError
from commcheck.site import flavours

COMPILER_FAMILIES = ('gnu', 'clang', 'cray', 'intel', 'oneapi', 'nvidia', 'aocc', 'openjdk')
# The Spack package of each compiler family (Spack 1.x: compilers are packages).
SPACK_COMPILERS = {'gnu': 'gcc', 'clang': 'llvm', 'cray': 'cce', 'intel': 'intel-oneapi-compilers',
                   'oneapi': 'intel-oneapi-compilers', 'nvidia': 'nvhpc', 'aocc': 'aocc'}
Language = Literal['c', 'fortran', 'python', 'java']


class SiteError(UserError):
    """A site declaration is wrong or incomplete; the message says what to fix."""


class _Model(BaseModel):
    model_config = ConfigDict(extra='forbid', frozen=True)


def _check_program(value: str | None, what: str) -> str | None:
    """An absolute path must be an executable file; a bare name is looked up when used
    (a module may put it on PATH, as Cray's ``cc``)."""
    if value and os.path.isabs(value):
        if not os.path.exists(value):
            raise ValueError(f'{what} {value} does not exist')
        if not (os.path.isfile(value) and os.access(value, os.X_OK)):
            raise ValueError(f'{what} {value} is not an executable file')
    return value


class Compiler(_Model):
    """The compilers behind the MPI wrappers."""

    #: gnu, clang, cray, intel, oneapi, nvidia, aocc; ``openjdk`` for a Java stack.
    family: str
    version: str
    cc: str | None = None        #: C compiler (path, or a name a module puts on PATH)
    cxx: str | None = None
    fc: str | None = None        #: Fortran compiler; none: the stack builds no Fortran
    java: str | None = None      #: ``javac``, for a Java stack
    spack: str | None = None     #: Spack package of this compiler (default by family)

    @field_validator('family')
    @classmethod
    def _known_family(cls, value):
        if value not in COMPILER_FAMILIES:
            raise ValueError(f'unknown compiler family {value!r}; use one of '
                             f'{", ".join(COMPILER_FAMILIES)}')
        return value

    @field_validator('cc', 'cxx', 'fc', 'java')
    @classmethod
    def _executable(cls, value, info):
        return _check_program(value, f'compiler.{info.field_name}')

    @property
    def spack_package(self) -> str:
        return self.spack or SPACK_COMPILERS.get(self.family, self.family)


class Mpi(_Model):
    """One MPI implementation, addressed by its own wrappers (never an alternatives link)."""

    flavour: str                    #: mpich, openmpi, intel-mpi, cray-mpich, mpj-express
    version: str
    prefix: str | None = None    #: install prefix (default: two levels above ``cc``)
    cc: str | None = None        #: C wrapper (default ``<prefix>/bin/mpicc``)
    fc: str | None = None        #: Fortran wrapper (default ``<prefix>/bin/mpifort``)
    launcher: str | None = None  #: its own mpiexec/mpirun (default ``<prefix>/bin/...``)
    srun_mpi: str | None = None  #: ``srun --mpi=`` plugin (default: the flavour's)
    module: str | None = None    #: a module that provides it (Lmod/Tcl name)
    #: A Spack spec that Spack builds (``mpich@4.2.3 netmod=ofi``) instead of an external.
    spack_spec: str | None = None
    #: What the library reports when that is not the flavour's own (an emulation, a vendor
    #: rebuild): ``<flavour> <version>``, e.g. ``mpich 4.0.2``. Every launch is checked
    #: against it (default: ``flavour`` and ``version``).
    library: str | None = None

    @field_validator('flavour')
    @classmethod
    def _known_flavour(cls, value):
        flavours.flavour(value)
        return value

    @field_validator('cc', 'fc', 'launcher')
    @classmethod
    def _executable(cls, value, info):
        return _check_program(value, f'mpi.{info.field_name}')

    @field_validator('prefix')
    @classmethod
    def _prefix_exists(cls, value):
        if value and os.path.isabs(value) and not os.path.isdir(value):
            raise ValueError(f'mpi.prefix {value} is not a directory')
        return value

    @field_validator('library')
    @classmethod
    def _flavour_and_version(cls, value):
        if value is None:
            return value
        parts = value.split()
        if len(parts) != 2:
            raise ValueError(f'mpi.library {value!r} is not "<flavour> <version>"')
        flavours.flavour(parts[0])
        return value

    @property
    def record(self) -> flavours.Flavour:
        return flavours.flavour(self.flavour)

    @property
    def expected_library(self) -> tuple[str, str]:
        """(flavour, version) that every launch's MPI library must report."""
        if self.library:
            flavour, version = self.library.split()
            return flavour, version
        return self.flavour, str(self.version)

    def _in_prefix(self, name: str) -> str | None:
        if not self.prefix:
            return None
        path = os.path.join(self.prefix, 'bin', name)
        return path if os.access(path, os.X_OK) else None

    @property
    def c_wrapper(self) -> str | None:
        return self.cc or self._in_prefix('mpicc')

    @property
    def fortran_wrapper(self) -> str | None:
        return self.fc or self._in_prefix('mpifort')

    @property
    def launcher_command(self) -> str:
        return self.launcher or self._in_prefix(self.record.launcher) or self.record.launcher

    @property
    def install_prefix(self) -> str | None:
        if self.prefix:
            return self.prefix
        if self.cc and os.path.isabs(self.cc):
            return os.path.dirname(os.path.dirname(self.cc))
        return None


class Osu(_Model):
    """Where a stack's OSU Micro-Benchmarks come from when Spack does not build them."""

    root: str | None = None      #: a site install (searched for osu_latency ...)
    module: str | None = None    #: or a module that puts them on PATH


class Stack(_Model):
    """A compiler x MPI pair: one ReFrame environment, one Spack environment."""

    name: str | None = None      #: default ``<compiler family>-<flavour>``
    compiler: Compiler
    mpi: Mpi
    #: What to test on this stack (default: every language the compiler and MPI can build).
    languages: tuple[Language, ...] | None = None
    build: Literal['cmake', 'spack'] = 'cmake'   #: how the checks get their programs
    modules: tuple[str, ...] = ()   #: modules that make this stack (PrgEnv-gnu, cray-mpich ...)
    env: dict[str, str] = Field(default_factory=dict)   #: settings every job of it needs
    osu: Osu | None = None
    partitions: tuple[str, ...] | None = None   #: restrict it to these partitions

    @model_validator(mode='after')
    def _languages_buildable(self):
        record = self.mpi.record
        missing = {'c': not (self.mpi.c_wrapper or self.compiler.cc),
                   'fortran': not (self.fortran_wrapper and (self.compiler.fc or self.modules)),
                   'java': not record.java, 'python': not self.mpi.c_wrapper}
        for lang in self.languages or ():
            if lang not in record.languages:
                raise ValueError(f'{record.title} cannot run {lang} kernels (it runs '
                                 f'{", ".join(record.languages)}): drop {lang} from languages')
            if missing[lang]:
                fix = {'c': 'give mpi.cc (the C wrapper)',
                       'fortran': 'give compiler.fc and mpi.fc, or drop fortran',
                       'python': 'give mpi.cc (mpi4py is built with it)',
                       'java': 'use an mpj-express stack'}[lang]
                raise ValueError(f'stack declares {lang} but cannot build it: {fix}')
        return self

    @property
    def id(self) -> str:
        return self.name or f'{self.compiler.family}-{self.mpi.flavour}'

    @property
    def fortran_wrapper(self) -> str | None:
        return self.mpi.fortran_wrapper

    @property
    def tested_languages(self) -> tuple[str, ...]:
        if self.languages is not None:
            return tuple(self.languages)
        if self.mpi.record.java:
            return ('java',)
        langs = ['c']
        if self.fortran_wrapper and self.compiler.fc:
            langs.append('fortran')
        return tuple(langs)

    @property
    def has_fortran(self) -> bool:
        return 'fortran' in self.tested_languages

    def job_env(self, as_root: bool) -> dict[str, str]:
        """Every setting a job of this stack needs: the flavour's (root, prefix, compiler
        choice behind the wrappers), then the site's own (``env``), which win."""
        record, env = self.mpi.record, {}
        if as_root:
            env.update(record.root_env)
        prefix = self.mpi.install_prefix
        if prefix:
            for key, value in record.prefix_env:
                value = value.format(prefix=prefix)
                env[key] = f'{value}:${key}' if key.endswith('PATH') else value
        if self.compiler.family != record.wrapper_family:
            for lang, var in record.compiler_env.items():
                compiler = {'c': self.compiler.cc, 'fortran': self.compiler.fc}[lang]
                if compiler:
                    env[var] = compiler
        env.update(self.env)
        return env


class Partition(_Model):
    """Where jobs run, and how ranks are placed and bound there."""

    name: str
    scheduler: Literal['local', 'slurm', 'squeue'] = 'local'
    #: ``mpiexec``: the stack's own launcher; ``srun``: Slurm's, with the stack's plugin.
    launcher: Literal['mpiexec', 'srun'] = 'mpiexec'
    cores: int = Field(ge=1)         #: cores of one node a job may use
    nodes: int = Field(default=1, ge=1)   #: nodes a job may use
    #: Last-level cache of one node in MiB, all its instances (2 x 64-core EPYC 9534: 2 x 256):
    #: what the grid checks size their grids from; none: the host ReFrame runs on.
    llc_mib: int | None = Field(default=None, ge=1)
    #: Where the two ranks of a pair go: one node, or one rank on each of two nodes.
    placement: Literal['same-node', 'different-nodes'] = 'same-node'
    binding: Literal['core', 'none'] = 'core'   #: process binding of every launch
    oversubscribe: bool = False      #: more ranks than cores allowed (results never gated)
    access: tuple[str, ...] = ()     #: scheduler options (``-p batch``, ``--account=x``)
    max_jobs: int = Field(default=1, ge=1)
    time_limit: str | None = None
    env: dict[str, str] = Field(default_factory=dict)   #: settings of every job here
    prepare_cmds: tuple[str, ...] = ()   #: shell lines at the top of every job script

    @model_validator(mode='after')
    def _two_nodes_for_pairs(self):
        if self.placement == 'different-nodes' and self.nodes < 2:
            raise ValueError(f'partition {self.name}: placement different-nodes needs nodes >= 2')
        return self

    @property
    def exclusivity(self) -> tuple[bool, str]:
        """Whether a measurement here has its node's cores to itself, and on what grounds."""
        if self.scheduler == 'local':
            if self.max_jobs == 1:
                return True, 'local: one job at a time, builds included (max_jobs 1)'
            return False, f'local: up to {self.max_jobs} jobs at once (max_jobs {self.max_jobs})'
        if any(a == '--exclusive' or a.startswith('--exclusive=') for a in self.access):
            return True, f'{self.scheduler}: --exclusive in the access options'
        return False, (f'{self.scheduler}: no --exclusive in the access options '
                       f'(nodes may be shared)')

    @property
    def ranks_per_node_of_pair(self) -> int:
        return 1 if self.placement == 'different-nodes' else 2


class SpackSettings(_Model):
    osu_spec: str = 'osu-micro-benchmarks@7.3'
    mirror: str | None = None     #: a source mirror, used as the only one (air-gapped)
    install_tree: str | None = None


class UpgradePair(_Model):
    """The two stacks ``commcheck upgrade`` compares when not told: names of ``stacks``."""
    old: str                         #: the stack in service
    new: str                         #: the stack that would replace it


class Site(_Model):
    name: str                        #: the ReFrame system name
    description: str = ''
    hostnames: tuple[str, ...] = ('.*',)
    modules_system: Literal['nomod', 'lmod', 'tmod', 'tmod4', 'envmod', 'spack'] = 'nomod'
    partitions: tuple[Partition, ...]
    stacks: tuple[Stack, ...]
    spack: SpackSettings = SpackSettings()
    #: the shared history store (a libpq URL or key=value string, no password; see
    #: docs/shared-history.md); default None: the local results database only.
    #: ``COMMCHECK_HISTORY`` overrides it.
    history: str | None = None

    @field_validator('history')
    @classmethod
    def _no_password(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError('an empty history store address (leave the key out instead)')
        problem = value and dburl.password_problem(value.strip())
        if problem:
            raise ValueError(problem)
        return value.strip() if value else value
    upgrade: UpgradePair | None = None  #: the pair ``commcheck upgrade`` runs by default

    @model_validator(mode='after')
    def _consistent(self):
        if not self.stacks:
            raise ValueError('no compiler x MPI stack declared')
        for kind, names in (('stack', [s.id for s in self.stacks]),
                            ('partition', [p.name for p in self.partitions])):
            dupes = sorted({n for n in names if names.count(n) > 1})
            if dupes:
                raise ValueError(f'{kind} names repeat: {", ".join(dupes)} (give each a '
                                 f'distinct name)')
        known = {p.name for p in self.partitions}
        for stack in self.stacks:
            unknown = set(stack.partitions or ()) - known
            if unknown:
                raise ValueError(f'stack {stack.id} names unknown partitions '
                                 f'{", ".join(sorted(unknown))}; known: {", ".join(sorted(known))}')
        self._upgrade_consistent()
        return self

    def _upgrade_consistent(self) -> None:
        if not self.upgrade:
            return
        names = [s.id for s in self.stacks]
        for side in ('old', 'new'):
            if getattr(self.upgrade, side) not in names:
                raise ValueError(f'upgrade: {side}: no stack {getattr(self.upgrade, side)!r}; '
                                 f'stacks: {", ".join(names)}')
        if self.upgrade.old == self.upgrade.new:
            raise ValueError(f'upgrade: old and new are the same stack ({self.upgrade.old}); '
                             f'an A/A check declares the stack twice under two names')

    def stack(self, name: str) -> Stack:
        for stack in self.stacks:
            if stack.id == name:
                return stack
        raise SiteError(f'site {self.name} has no stack {name!r}')

    def partition(self, name: str) -> Partition:
        for part in self.partitions:
            if part.name == name:
                return part
        raise SiteError(f'site {self.name} has no partition {name!r}')

    def stacks_of(self, partition: Partition) -> list[Stack]:
        return [s for s in self.stacks if s.partitions is None or partition.name in s.partitions]


def env_flag(name: str, default: str = '') -> str:
    return os.environ.get(name, default).strip()


def env_int(name: str, default: int) -> int:
    """A whole number from the environment, or one clear error naming the variable."""
    text = env_flag(name)
    if not text:
        return default
    if not text.isdigit() or int(text) < 1:
        raise SiteError(f'{name}={text!r}: expected a whole number >= 1')
    return int(text)
