"""The names a ReFrame configuration speaks to commcheck's checks: environment features and
extras, partition extras. One place: the generated configuration (:mod:`commcheck.site.rfmconfig`)
writes them, the checks select and read by them, and docs/own-config.md lists them.

A site's own configuration needs none of the extras: what they say is learned from the
environment where they are missing (:mod:`commcheck.site.probe`), and a given extra overrides
what is learned.
"""

from __future__ import annotations

from commcheck import experiments

#: Features that mark an MPI environment in sites' own vocabulary (CSCS's configurations use
#: ``mpi`` and ``cuda-aware-mpi``). An environment with one of them, and no language feature,
#: is measured in the languages learned from it.
MPI_FEATURES = ('mpi', 'cuda-aware-mpi')

#: Features that name the languages an environment builds (commcheck's generated environments
#: carry them): such an environment runs only the variants of those languages.
LANGUAGE_FEATURES = tuple(dict.fromkeys(lang.feature for lang in experiments.LANGUAGES.values()))

#: Feature of an environment where the OSU Micro-Benchmarks can be found.
OSU = 'osu'

#: Every check's ``valid_prog_environs`` until ``-S`` names others: any MPI environment, narrowed
#: per test to the environments that can run its language (:func:`environments_for`).
ANY_MPI = [f'+{feature}' for feature in MPI_FEATURES]

# Environment extras (all optional in a site's own configuration).
#: The MPI flavour (a name in :data:`commcheck.site.flavours.FLAVOURS`) and its version.
MPI, MPI_VERSION = 'mpi', 'mpi_version'
#: The compiler family behind the wrappers and its version.
COMPILER, COMPILER_VERSION = 'compiler', 'compiler_version'
#: The languages the environment builds kernels in (``c``, ``fortran``, ``python``, ``java``).
LANGUAGES = 'languages'
#: ``srun --mpi=`` plugin of the environment's MPI (else Slurm's ``MpiDefault`` or
#: ``SLURM_MPI_TYPE``).
SRUN_MPI = 'srun_mpi'
#: A site install of the OSU Micro-Benchmarks: its prefix, or a module that puts it on PATH.
OSU_ROOT, OSU_MODULE = 'osu_root', 'osu_module'

# Partition extras (all optional).
#: Cores of one node a job may use; nodes a job may use.
CORES, NODES = 'cores', 'nodes'
#: Where a pair of ranks goes: ``same-node`` or ``different-nodes``.
PLACEMENT = 'placement'
#: Process binding: ``core`` or ``none``.
BINDING = 'binding'
#: Whether more ranks than cores may run on a node (such runs are never gated).
OVERSUBSCRIBE = 'oversubscribe'
#: Whether a job has its nodes to itself (``true``/``false``).
EXCLUSIVE = 'exclusive'

#: The partition's launcher (also an environment extra: its MPI's own launcher command).
LAUNCHER = 'launcher'
#: Whether a job has its nodes to itself because of the scheduler's setting or the site's word.
EXCLUSIVE_BASIS = 'exclusive_basis'

# Environment extras of commcheck's generated configuration only (its build fixtures read them).
#: The stack's id and how its kernels are built (``cmake`` or ``spack``).
STACK, BUILD = 'stack', 'build'
#: The MPI library a stack's programs must load, and whether it builds Fortran.
MPI_LIBRARY, HAS_FORTRAN = 'mpi_library', 'has_fortran'
#: The MPI compiler wrappers (C, Fortran) and the MPI's install prefix.
MPI_CC, MPI_FC, MPI_PREFIX = 'mpi_cc', 'mpi_fc', 'mpi_prefix'
#: The stack's Spack environment and view (``build: spack``; else empty).
SPACK_ENV, SPACK_VIEW = 'spack_env', 'spack_view'
#: The Python that runs commcheck's build steps, MPJ Express's home, the Java kernels' build.
PYTHON_EXE, MPJ_HOME, JAVA_BUILD = 'python_exe', 'mpj_home', 'java_build'
#: The commcheck that generated the configuration.
COMMCHECK_VERSION = 'commcheck_version'
#: The stack's declaration and the site's Spack settings, for the fixtures that materialise
#: them (Spack, mpi4py, MPJ).
DECLARATION, SPACK_SETTINGS = 'declaration', 'spack_settings'

#: The extras a complete (commcheck-generated) environment carries: with all of them nothing
#: is learned.
DECLARED = (STACK, COMPILER, COMPILER_VERSION, MPI, MPI_VERSION, BUILD, LANGUAGES, LAUNCHER)


def environments_for(needs: tuple[str, ...]) -> list[str]:
    """``valid_prog_environs`` of a test that needs the features ``needs`` (its language,
    ``osu``): the MPI environments that declare them, and those that declare no language at all
    (their languages are learned when the kernels are built)."""
    declared = ' '.join(f'+{f}' for f in needs)
    no_language = ' '.join(f'-{f}' for f in LANGUAGE_FEATURES)
    return [*(f'+{mpi} {declared}' for mpi in MPI_FEATURES),
            *(f'+{mpi} {no_language}' for mpi in MPI_FEATURES)]
