"""Where a check's programs come from: one fixture, two real build paths.

The environment's ``extras['build']`` chooses the path, never the check:

- ``cmake``: ReFrame's CMake build system compiles ``src/kernels`` with the environment's MPI
  wrappers (``cc``/``ftn``) and installs the programs into the stage's ``install/bin``.
- ``spack``: ReFrame's Spack build system installs the stack's Spack environment
  (``extras['spack_env']``, used in place so its lock file and install tree persist between
  runs); the kernels (package ``commcheck-kernels``) and the OSU Micro-Benchmarks land in the
  environment's view (``extras['spack_view']``).

OSU programs come from the Spack view, else from a site-provided install (``extras['osu_root']``)
or a site module that puts them on PATH (``extras['osu_module']``).
"""

from __future__ import annotations

import glob
import os

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import run_after, run_before, sanity_function, variable

from commcheck import paths

C_PROGRAMS = ('pingpong-c', 'comms2-c', 'dtype-c', 'stencil-c', 'stream-c')
FORTRAN_PROGRAMS = ('pingpong-f', 'comms2-f', 'dtype-f', 'stencil-f', 'fptr-f')


class KernelsBuild(rfm.CompileOnlyRegressionTest):
    """Builds (or installs through Spack) the kernels of one environment; shared by its checks."""

    descr = 'commcheck kernels for one compiler x MPI stack'
    valid_systems = ['*']
    valid_prog_environs = ['+mpi']
    build_locally = True
    build_timeout = variable(str, value='60m')
    local_prefix = variable(str, value='install')

    @run_after('setup')
    def choose_build_path(self):
        extras = self.current_environ.extras
        self.backend = extras.get('build', 'cmake')
        if self.backend == 'spack':
            self._use_spack(extras)
        else:
            self._use_cmake(extras)

    def _use_cmake(self, extras):
        self.sourcesdir = str(paths.KERNELS_SRC)
        self.build_system = 'CMake'
        self.build_system.builddir = 'build'
        self.build_system.max_concurrency = os.cpu_count() or 1
        fortran = 'ON' if extras.get('has_fortran') else 'OFF'
        self.build_system.config_opts = [f'-DCOMMCHECK_FORTRAN={fortran}',
                                         '-DCMAKE_BUILD_TYPE=Release']
        self.postbuild_cmds = [f'cmake --install build --prefix {self.local_prefix}']

    def _use_spack(self, extras):
        self.sourcesdir = None
        self.build_system = 'Spack'
        self.build_system.environment = extras['spack_env']
        self.build_system.emit_load_cmds = False
        self.build_system.install_opts = ['--fail-fast']

    @run_before('compile')
    def set_build_timeout(self):
        self.build_job.time_limit = self.build_timeout

    @property
    def prefix_dir(self) -> str:
        if self.backend == 'spack':
            return self.current_environ.extras['spack_view']
        return os.path.join(self.stagedir, self.local_prefix)

    def program(self, name: str) -> str:
        """Absolute path of one of the project's programs (``pingpong-c``, ``stencil-f``, ...)."""
        return os.path.join(self.prefix_dir, 'bin', name)

    @sanity_function
    def programs_installed(self):
        """Every program the checks may ask for exists: a partial build fails here, not later."""
        wanted = C_PROGRAMS + (FORTRAN_PROGRAMS if self.current_environ.extras.get('has_fortran')
                               else ())
        return sn.all(sn.assert_true(os.access(self.program(p), os.X_OK),
                                     msg=f'{p} was not built: not in {self.prefix_dir}/bin')
                      for p in wanted)


def osu_program(environ_extras: dict, name: str) -> str | None:
    """Path of an OSU point-to-point program for this environment, or None where there is none.

    With an OSU module, the bare name: the module is loaded in the job, which finds it on PATH.
    """
    if environ_extras.get('osu_module'):
        return name
    roots = []
    if environ_extras.get('build') == 'spack':
        roots.append(environ_extras['spack_view'])
    if environ_extras.get('osu_root'):
        roots.append(environ_extras['osu_root'])
    for root in roots:
        found = sorted(glob.glob(os.path.join(root, '**', name), recursive=True))
        found = [f for f in found if os.access(f, os.X_OK) and not os.path.isdir(f)]
        if found:
            return found[0]
    return None

