"""One record per MPI flavour: everything commcheck knows about an MPI implementation.

Discovery, the launcher, the Spack environments, the benchmark and the site-file validation all
read these records and nothing else; adding a flavour is adding one :class:`Flavour`.
"""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess


@dataclasses.dataclass(frozen=True)
class Flavour:
    name: str                       # the value of ``mpi.flavour`` in a site file
    title: str                      # how people write it
    spack_package: str              # Spack package providing ``mpi``
    launcher: str                   # its launcher under <prefix>/bin
    #: Variants of its Spack external: cray-mpich's compilers are the PrgEnv drivers (cc, CC,
    #: ftn) themselves, not mpicc under its prefix (``~wrappers``).
    spack_variants: str = ''
    #: Debian installs several stacks under /usr: ``mpicc.<suffix>``, ``mpiexec.<suffix>``.
    debian_suffix: str | None = None
    debian_launcher: str | None = None
    #: How to print the version: (command, relative to the C wrapper's folder, or absolute;
    #: arguments; regex whose group 1 is the version).
    version_probe: tuple[str, tuple[str, ...], str] | None = None
    show_flag: str = '-show'        # the wrapper's "print the command line" flag
    #: Its Spack recipe takes the wrappers from ``<prefix>/bin`` under their plain names
    #: (mpicc, ...): a stack whose wrappers are named otherwise (Debian's ``mpicc.mpich``) is
    #: given a linked prefix; its external spec says ``+fortran`` or ``~fortran``.
    spack_plain_wrappers: bool = False
    #: Its Spack recipe looks for the install under ``<prefix>/<component>/<major.minor>``
    #: (oneAPI's layout); its external spec says ``+generic-names~envmods``.
    oneapi_component: str | None = None
    #: How its C wrapper says what it is: (arguments, regex whose group 1 is the version);
    #: another flavour's wrapper does not match (``commcheck site check`` finds a prefix whose
    #: ``mpicc`` is another flavour's, e.g. a Debian alternatives link).
    wrapper_probe: tuple[tuple[str, ...], str] | None = None
    #: The first line of ``MPI_Get_library_version`` (a kernel's ``META mpi=``): regex whose
    #: group 1 is the version. A launch whose library does not match its label fails.
    library_pattern: str | None = None
    #: Environment variables choosing the wrappers' underlying compilers, per language, set
    #: only for a compiler family other than the one the wrappers use by default.
    compiler_env: dict = dataclasses.field(default_factory=dict)
    wrapper_family: str = 'gnu'
    #: Launcher options per declared binding (``core`` / ``none``), and to place ranks per node.
    bind_options: dict = dataclasses.field(default_factory=dict)
    per_node_options: tuple[str, ...] = ()    # ``{n}`` is the ranks per node
    #: Options that let the launcher start more ranks than it sees cores (kept out of gating).
    oversubscribe_options: tuple[str, ...] = ()
    #: Settings the launcher needs to run as root, and ones every install needs to find itself
    #: (``{prefix}`` is the stack's prefix; a relocated install may need more, in its ``env``).
    root_env: tuple[tuple[str, str], ...] = ()
    prefix_env: tuple[tuple[str, str], ...] = ()
    srun_mpi: str = 'pmi2'          # ``srun --mpi=`` plugin under Slurm
    netpipe: str | None = None      # Debian's NetPIPE program for this flavour
    languages: tuple[str, ...] = ('c', 'fortran', 'python')  # what it can run
    #: Not an MPI library behind C wrappers but a Java runtime of its own (MPJ Express).
    java: bool = False
    #: mpi4py's binary wheel (:mod:`commcheck.site.mpi4py_build`): the library its extension
    #: for this flavour's ABI needs (``libmpi.so.12``: MPICH's ABI, ``libmpi.so.40``: Open
    #: MPI's), found beside the stack's wrapper and loaded by path (``MPI4PY_LIBMPI``), so a
    #: kernel loads that stack's library and no other; empty: never tried, mpi4py is built
    #: from source against the stack.
    mpi4py_wheel_library: str = ''
    #: The same ABI's library under other names (Debian's MPICH 4.0.2 ships libmpich.so.12 and
    #: no libmpi.so.12): when only one of these is found, it is linked under the wheel's name
    #: in the stack's mpi4py directory, which the kernels get on ``LD_LIBRARY_PATH``.
    mpi4py_wheel_aliases: tuple[str, ...] = ()
    #: Where the wheel does not serve a stack of this flavour, and why: the source build then.
    mpi4py_wheel_note: str = ''

    def probe_version(self, cc: str | None, launcher: str | None) -> str | None:
        """The version of the stack behind ``cc``/``launcher``, or None if it cannot tell."""
        if not self.version_probe:
            return None
        command, args, pattern = self.version_probe
        if command == '{launcher}':
            command = launcher or ''
        elif not os.path.isabs(command) and cc:
            command = os.path.join(os.path.dirname(cc), command)
        try:
            done = subprocess.run([command, *args], capture_output=True, text=True, timeout=30,
                                  check=False)
        except (OSError, subprocess.SubprocessError):
            return None
        match = re.search(pattern, done.stdout + done.stderr)
        return match.group(1) if match else None

    def probe_wrapper(self, cc: str) -> str | None:
        """The version this flavour's C wrapper ``cc`` reports, or None if it is not one."""
        if not self.wrapper_probe:
            return None
        args, pattern = self.wrapper_probe
        try:
            done = subprocess.run([cc, *args], capture_output=True, text=True, timeout=30,
                                  check=False, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.SubprocessError):
            return None
        match = re.search(pattern, done.stdout + done.stderr)
        return match.group(1) if match else None

    def launch_prefix(self, launcher: str, ranks: int, *, binding: str = 'none',
                      per_node: int | None = None, oversubscribe: bool = False) -> list[str]:
        """The command line that starts ``ranks`` ranks of a program with this stack."""
        argv = [launcher, '-n', str(ranks)]
        argv += list(self.bind_options.get('none' if oversubscribe else binding, ()))
        if per_node:
            argv += [o.format(n=per_node) for o in self.per_node_options]
        if oversubscribe:
            argv += list(self.oversubscribe_options)
        return argv


FLAVOURS: dict[str, Flavour] = {f.name: f for f in (
    Flavour(
        name='mpich', title='MPICH', spack_package='mpich', launcher='mpiexec',
        spack_plain_wrappers=True,
        debian_suffix='mpich', debian_launcher='mpiexec.mpich',
        version_probe=('mpichversion', (), r'Version:\s+(\S+)'),
        wrapper_probe=(('-v',), r'for MPICH version (\S+)'),
        library_pattern=r'^MPICH Version:\s*(\S+)',
        compiler_env={'c': 'MPICH_CC', 'fortran': 'MPICH_FC'},
        bind_options={'core': ('-bind-to', 'core'), 'none': ('-bind-to', 'none')},
        per_node_options=('-ppn', '{n}'),
        srun_mpi='pmi2', netpipe='NPmpich2',
        mpi4py_wheel_library='libmpi.so.12', mpi4py_wheel_aliases=('libmpich.so.12',)),
    Flavour(
        name='openmpi', title='Open MPI', spack_package='openmpi', launcher='mpirun',
        spack_plain_wrappers=True,
        debian_suffix='openmpi', debian_launcher='mpirun.openmpi',
        version_probe=('{launcher}', ('--version',), r'\((?:Open MPI|OpenRTE)\)\s+(\S+)'),
        show_flag='--showme',
        wrapper_probe=(('--showme:version',), r'Open MPI (\S+)'),
        library_pattern=r'^Open MPI v(\d[^,\s]*)',
        compiler_env={'c': 'OMPI_CC', 'fortran': 'OMPI_FC'},
        # overload-allowed: a job confined to fewer cores than ranks (a cpuset) still runs,
        # and is measured and flagged, instead of refusing to start.
        bind_options={'core': ('--bind-to', 'core:overload-allowed'),
                      'none': ('--bind-to', 'none')},
        per_node_options=('--map-by', 'ppr:{n}:node'),
        oversubscribe_options=('--oversubscribe',),
        root_env=(('OMPI_ALLOW_RUN_AS_ROOT', '1'), ('OMPI_ALLOW_RUN_AS_ROOT_CONFIRM', '1')),
        srun_mpi='pmix', netpipe='NPopenmpi',
        mpi4py_wheel_library='libmpi.so.40'),
    Flavour(
        name='intel-mpi', title='Intel MPI', spack_package='intel-oneapi-mpi',
        launcher='mpiexec', oneapi_component='mpi',
        version_probe=('{launcher}', ('-V',), r'Version (\d+\.\d+(?:\.\d+)?)'),
        wrapper_probe=(('-v',), r'Intel\(R\) MPI Library (\d+(?:\.\d+)*)'),
        library_pattern=r'^Intel\(R\) MPI Library (\d+(?:\.\d+)*)',
        compiler_env={'c': 'I_MPI_CC', 'fortran': 'I_MPI_F90'},
        bind_options={'core': ('-bind-to', 'core'), 'none': ('-bind-to', 'none')},
        per_node_options=('-ppn', '{n}'),
        prefix_env=(('I_MPI_ROOT', '{prefix}'), ('LD_LIBRARY_PATH', '{prefix}/lib')),
        srun_mpi='pmi2', mpi4py_wheel_library='libmpi.so.12'),
    Flavour(
        # MPICH-derived (MVAPICH2 2.x, MVAPICH 3.x): MPICH's ABI and Hydra's mpiexec options.
        name='mvapich', title='MVAPICH', spack_package='mvapich2', launcher='mpiexec',
        spack_plain_wrappers=True,
        wrapper_probe=(('-v',), r'for MVAPICH2? version (\S+)'),
        library_pattern=r'^MVAPICH2? Version\s*:\s*(\S+)',
        compiler_env={'c': 'MPICH_CC', 'fortran': 'MPICH_FC'},
        bind_options={'core': ('-bind-to', 'core'), 'none': ('-bind-to', 'none')},
        per_node_options=('-ppn', '{n}'),
        srun_mpi='pmi2', mpi4py_wheel_library='libmpi.so.12'),
    Flavour(
        name='cray-mpich', title='Cray MPICH', spack_package='cray-mpich', launcher='srun',
        spack_variants='~wrappers',
        library_pattern=r'CRAY MPICH version (\d+(?:\.\d+)*)',
        compiler_env={},            # the PrgEnv module chooses the compiler behind cc/ftn
        bind_options={'core': ('-bind-to', 'core'), 'none': ('-bind-to', 'none')},
        per_node_options=('-ppn', '{n}'),
        srun_mpi='cray_shasta',
        mpi4py_wheel_note='not measured on a Cray system: mpi4py is built from source'),
    Flavour(
        name='mpj-express', title='MPJ Express', spack_package='', launcher='starter.jar',
        library_pattern=r'^MPJ Express (\S+)',
        languages=('java',), java=True),
)}


def by_spack_package(package: str) -> Flavour | None:
    """The flavour a Spack package provides (``intel-oneapi-mpi`` -> Intel MPI), or None."""
    return next((f for f in FLAVOURS.values() if package and f.spack_package == package), None)


def identify_library(text: str) -> tuple[str, str] | None:
    """(flavour, version) of an ``MPI_Get_library_version`` line, or None if no flavour's
    ``library_pattern`` matches."""
    for record in FLAVOURS.values():
        match = record.library_pattern and re.search(record.library_pattern, text)
        if match:
            return record.name, match.group(1)
    return None


def identify_wrapper(cc: str) -> tuple[str, str] | None:
    """(flavour, version) of the MPI whose C wrapper ``cc`` is, or None if none answers."""
    for record in FLAVOURS.values():
        version = record.probe_wrapper(cc)
        if version:
            return record.name, version
    return None


def versions_agree(declared: str, found: str) -> bool:
    """``4.0.2`` and ``4.0`` agree (one names fewer components), ``4.0.2`` and ``4.1.4`` not."""
    a, b = str(declared).split('.'), str(found).split('.')
    return a[:len(b)] == b[:len(a)]


class UnknownFlavour(ValueError):
    pass


def flavour(name: str) -> Flavour:
    try:
        return FLAVOURS[name]
    except KeyError:
        raise UnknownFlavour(f'unknown MPI flavour {name!r}; known: '
                             f'{", ".join(sorted(FLAVOURS))}') from None
