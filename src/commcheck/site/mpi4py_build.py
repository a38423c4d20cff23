"""mpi4py built against one MPI stack, for the Python kernels.

A wheel from PyPI carries its own MPI, not the stack under test, so mpi4py is built from its
PyPI source distribution with the stack's C wrapper (``MPICC=<wrapper>``) into a directory of
its own, one per wrapper path x MPI version x mpi4py version x Python, kept under
``<state_dir>/mpi4py/``. The Python kernels run with that directory on ``PYTHONPATH``.
Nothing is written when this module is imported.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

MPI4PY_VERSION = '4.1.2'
DONE = '.commcheck-build.json'   # written last: its presence means the build is complete


class Mpi4pyBuildError(RuntimeError):
    """mpi4py could not be built for a stack; the message names the stack and pip's output."""


def build_key(cc: str, mpi_version: str, mpi4py_version: str = MPI4PY_VERSION) -> str:
    """Directory name of one build: readable, plus a hash of everything it depends on."""
    what = '\n'.join((cc, os.path.realpath(cc), mpi_version, mpi4py_version,
                      sys.implementation.cache_tag or 'python', platform.machine()))
    digest = hashlib.sha256(what.encode()).hexdigest()[:12]
    return (f'mpi4py-{mpi4py_version}-{Path(cc).name}-{mpi_version}-'
            f'{sys.implementation.cache_tag}-{digest}')


@contextlib.contextmanager
def _locked(path: Path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, 'w') as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)   # a second session waits for the first's build
        yield


def build_info(target: Path) -> dict:
    """What :func:`ensure_mpi4py` recorded about a finished build (wrapper, seconds ...)."""
    return json.loads((Path(target) / DONE).read_text())


def library_version(target: Path) -> str:
    """First line of MPI_Get_library_version of the library a build loads (no MPI_Init)."""
    code = ('import mpi4py; mpi4py.rc.initialize = False; from mpi4py import MPI; '
            'print(MPI.Get_library_version().replace("\\0", "").strip().splitlines()[0])')
    env = dict(os.environ, PYTHONPATH=str(target))
    done = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, env=env)
    if done.returncode:
        return f'(import failed: {done.stderr.strip().splitlines()[-1:]})'
    return done.stdout.strip()


def ensure_mpi4py(cc: str, mpi_version: str, state_dir: str | os.PathLike,
                  mpi4py_version: str = MPI4PY_VERSION) -> Path:
    """The directory to put on PYTHONPATH for mpi4py built with the C wrapper `cc` of an MPI
    stack at `mpi_version`; built with pip on first use (minutes), then reused."""
    root = Path(state_dir) / 'mpi4py'
    key = build_key(cc, mpi_version, mpi4py_version)
    target = root / key
    if (target / DONE).exists():
        return target
    stack = f'the MPI stack of {cc} (MPI {mpi_version})'
    if not (os.path.isabs(cc) and os.access(cc, os.X_OK)) and not shutil.which(cc):
        raise Mpi4pyBuildError(f'cannot build mpi4py for {stack}: {cc} is not an executable')
    with _locked(root / f'.{key}.lock'):
        if (target / DONE).exists():
            return target
        scratch = root / f'.{key}.{os.getpid()}'
        shutil.rmtree(scratch, ignore_errors=True)
        cmd = [sys.executable, '-m', 'pip', 'install', '--quiet', '--no-input', '--no-deps',
               '--no-cache-dir', '--no-binary', 'mpi4py', '--target', str(scratch),
               f'mpi4py=={mpi4py_version}']
        start = time.monotonic()
        done = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, MPICC=cc))
        seconds = time.monotonic() - start
        if done.returncode:
            shutil.rmtree(scratch, ignore_errors=True)
            raise Mpi4pyBuildError(f'mpi4py {mpi4py_version} could not be built for {stack} '
                                   f'(pip exited {done.returncode}):\n'
                                   f'{(done.stdout + done.stderr)[-3000:]}')
        library = library_version(scratch)
        if mpi_version not in library:
            raise Mpi4pyBuildError(f'mpi4py {mpi4py_version} built for {stack} loads another '
                                   f'MPI library: {library} (the build is left in {scratch})')
        info = {'mpicc': cc, 'mpi_version': mpi_version, 'library': library,
                'mpi4py': mpi4py_version, 'python': sys.version.split()[0],
                'build_seconds': round(seconds, 1)}
        (scratch / DONE).write_text(json.dumps(info, indent=1) + '\n')
        shutil.rmtree(target, ignore_errors=True)
        scratch.rename(target)
    return target


def main(argv: list[str]) -> int:
    """``python -m commcheck.site.mpi4py_build MPICC MPI_VERSION STATE_DIR``: as the build
    fixture of an environment with Python runs it; prints the directory for PYTHONPATH."""
    if len(argv) != 3:
        print('usage: python -m commcheck.site.mpi4py_build MPICC MPI_VERSION STATE_DIR',
              file=sys.stderr)
        return 2
    try:
        target = ensure_mpi4py(*argv)
    except Mpi4pyBuildError as err:
        print(f'ERROR: {err}', file=sys.stderr)
        return 1
    print(f'commcheck: mpi4py for {argv[0]} in {target} ({build_info(target)["library"]})')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
