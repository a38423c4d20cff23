"""Build the kernels of one stack with CMake, outside ReFrame (benchmarks, kernel tests)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from commcheck import paths
from commcheck.site import Stack


def cmake_build(stack: Stack, build_dir: Path) -> Path:
    """Configures, builds and installs ``src/kernels`` with the stack's wrappers; returns bin/."""
    opts = [f'-DCMAKE_C_COMPILER={stack.mpi.cc}',
            f'-DCOMMCHECK_FORTRAN={"ON" if stack.has_fortran else "OFF"}']
    if stack.has_fortran:
        opts.append(f'-DCMAKE_Fortran_COMPILER={stack.mpi.fc}')
    steps = (['cmake', '-S', str(paths.KERNELS_SRC), '-B', str(build_dir), *opts],
             ['cmake', '--build', str(build_dir), f'-j{os.cpu_count() or 1}'],
             ['cmake', '--install', str(build_dir), '--prefix', str(build_dir / 'install')])
    for cmd in steps:
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f'{" ".join(cmd[:2])} failed for {stack.name}:\n'
                               f'{done.stdout[-2000:]}{done.stderr[-2000:]}')
    return build_dir / 'install' / 'bin'


def launch(stack: Stack, ranks: int, program: str, *args: str, timeout: int = 300):
    """Run a program on `ranks` ranks of a stack with the site's settings for that stack."""
    env = dict(os.environ, **dict(stack.mpi.env_vars))
    cmd = [stack.mpi.launcher_cmd, '-n', str(ranks), str(program), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
