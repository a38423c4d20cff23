"""Build the kernels of one stack with CMake, outside ReFrame (benchmarks, kernel tests)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

from commcheck import paths
from commcheck.site import Stack


def cmake_build(stack: Stack, build_dir: Path, source: Path | None = None,
                targets: Sequence[str] = ()) -> Path:
    """Configures, builds and installs ``source`` (default ``src/kernels``) with the stack's
    wrappers; returns the installed bin/.

    With ``targets`` (program names such as ``stencil-c``), only those are built, in a tree
    configured on the first call and reused after that, and the directory they land in,
    ``<build_dir>/bin``, is returned: rebuilding one program after editing its sources then
    costs one compile and one link (the mutation tests do that).
    """
    source, build_dir = Path(source) if source else paths.KERNELS_SRC, Path(build_dir)
    opts = [f'-DCMAKE_C_COMPILER={stack.mpi.c_wrapper}',
            f'-DCOMMCHECK_FORTRAN={"ON" if stack.has_fortran else "OFF"}']
    if stack.has_fortran:
        opts.append(f'-DCMAKE_Fortran_COMPILER={stack.fortran_wrapper}')
    configure = ['cmake', '-S', str(source), '-B', str(build_dir), *opts]
    build = ['cmake', '--build', str(build_dir), f'-j{os.cpu_count() or 1}']
    if targets:
        steps = [build + ['--target', *targets]]
        if not (build_dir / 'CMakeCache.txt').exists():
            steps.insert(0, configure)
    else:
        steps = [configure, build,
                 ['cmake', '--install', str(build_dir), '--prefix', str(build_dir / 'install')]]
    env = stack_environment(stack)     # e.g. MPICH_CC: the compiler behind the wrapper
    for cmd in steps:
        done = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if done.returncode:
            raise RuntimeError(f'{" ".join(cmd[:2])} failed for {stack.id}:\n'
                               f'{done.stdout[-2000:]}{done.stderr[-2000:]}')
    return build_dir / 'bin' if targets else build_dir / 'install' / 'bin'


def stack_environment(stack: Stack) -> dict[str, str]:
    """This process's environment with the stack's job settings (``Stack.job_env``) on top;
    ``$VAR`` references in them (``...:$LD_LIBRARY_PATH``) are expanded here, as a shell would."""
    env = dict(os.environ)
    for key, value in stack.job_env(as_root=os.geteuid() == 0).items():
        env[key] = os.path.expandvars(value)
    return env


def launch(stack: Stack, ranks: int, program: str, *args: str, timeout: int = 300,
           binding: str = 'none'):
    """Run a program on `ranks` ranks of a stack with the site's settings for that stack."""
    record = stack.mpi.record
    cmd = record.launch_prefix(stack.mpi.launcher_command, ranks, binding=binding,
                               oversubscribe=ranks > (os.cpu_count() or 1))
    return subprocess.run([*cmd, str(program), *args], capture_output=True, text=True,
                          timeout=timeout, env=stack_environment(stack))
