"""mpi4py for one MPI stack, for the Python kernels: mpi4py's binary wheel where it serves the
stack, else a build from source against it.

mpi4py's wheel (4.1 and later) carries one extension per MPI ABI, ``MPI.mpich`` (linked to
``libmpi.so.12``) and ``MPI.openmpi`` (``libmpi.so.40``), and picks one at import from the
library ``MPI4PY_LIBMPI`` names (else from whichever ``libmpi.so`` the loader finds first, on
Debian the ``mpi`` alternative: possibly another stack's). So the wheel serves a stack whose
library of the flavour's name (:attr:`Flavour.mpi4py_wheel_library`) is found beside its
wrapper: the kernels get ``MPI4PY_LIBMPI=<that file>``, and the wheel is used only once a
probe with that setting reports the stack's flavour and version (``MPI_Get_library_version``,
the kernels' label check). Where it does not (the flavour's ``mpi4py_wheel_note`` says why),
mpi4py is built from its PyPI source with the stack's C wrapper (``MPICC=<wrapper>``), minutes.

Everything is kept under ``<cache>/mpi4py/``: the wheel once per mpi4py version and Python,
and per wrapper path x MPI version x mpi4py version x Python a directory for ``PYTHONPATH``
(the source build, or a link to the wheel's package) with a record of which it is and the
settings it needs. A directory appears only complete (built beside it, then renamed).
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

from commcheck.site import flavours
from commcheck.site.kbuild import step_main

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
    """What :func:`ensure_mpi4py` recorded about a stack's mpi4py: ``source`` (``wheel`` or
    ``source build``), ``pythonpath``, ``env`` (settings the kernels need), the library ..."""
    info = json.loads((Path(target) / DONE).read_text())
    return {'source': 'source build', 'pythonpath': str(target), 'env': {}, **info}


def stack_dir(cache_dir: str | os.PathLike, cc: str, mpi_version: str) -> Path:
    """Where the stack's mpi4py is (or will be): the directory for ``PYTHONPATH``."""
    return Path(cache_dir) / 'mpi4py' / build_key(cc, mpi_version)


def kernel_settings(cache_dir: str | os.PathLike, cc: str, mpi_version: str) -> dict[str, str]:
    """The settings a Python kernel of the stack runs with: ``PYTHONPATH`` (the stack's mpi4py
    directory, whether made yet or not) and what its record says the library needs."""
    target = stack_dir(cache_dir, cc, mpi_version)
    info = build_info(target) if (target / DONE).exists() else {'pythonpath': str(target)}
    return {'PYTHONPATH': info['pythonpath'], **info.get('env', {})}


def library_version(target: Path, env: dict | None = None) -> str:
    """First line of MPI_Get_library_version of the library a build loads (no MPI_Init)."""
    code = ('import mpi4py; mpi4py.rc.initialize = False; from mpi4py import MPI; '
            'print(MPI.Get_library_version().replace("\\0", "").strip().splitlines()[0])')
    env = {**os.environ, **(env or {}), 'PYTHONPATH': str(target)}
    done = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, env=env)
    if done.returncode:
        return f'(import failed: {done.stderr.strip().splitlines()[-1:]})'
    return done.stdout.strip()


def names_stack(library: str, mpi_version: str, flavour: str | None) -> bool:
    """The library line is the stack's: its flavour and version (the kernels' label check),
    or without a flavour, its version appears in it."""
    if not flavour:
        return mpi_version in library
    found = flavours.identify_library(library)
    return bool(found) and found[0] == flavour and flavours.versions_agree(mpi_version, found[1])


def wheel_library(cc: str, flavour: str | None) -> str | None:
    """The file of the library the wheel's extension for the stack's ABI needs, found in the
    directories the wrapper links from (and their ``libmpi.so``'s), or None."""
    record = flavours.FLAVOURS.get(flavour or '')
    if not record or not record.mpi4py_wheel_library:
        return None
    try:
        shown = subprocess.run([cc, record.show_flag], capture_output=True, text=True,
                               timeout=30, stdin=subprocess.DEVNULL).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    dirs = [word[2:] for word in shown.split() if word.startswith('-L') and len(word) > 2]
    dirs.append(os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(cc))), 'lib'))
    dirs += [os.path.dirname(os.path.realpath(os.path.join(d, 'libmpi.so'))) for d in dirs
             if os.path.exists(os.path.join(d, 'libmpi.so'))]
    for name in (record.mpi4py_wheel_library, *record.mpi4py_wheel_aliases):
        for folder in dict.fromkeys(dirs):
            candidate = os.path.join(folder, name)
            if os.path.exists(candidate):
                return candidate
    return None


def _library_settings(library_file: str, wanted: str, where: Path) -> dict[str, str]:
    """What a kernel needs to load ``library_file`` as the wheel's ``wanted`` library: its
    path, or, when it has another name (an alias), a link of the wanted name in ``where/lib``
    and that directory on ``LD_LIBRARY_PATH`` (the extension names ``wanted``)."""
    if os.path.basename(library_file) == wanted:
        return {'MPI4PY_LIBMPI': library_file}
    return {'MPI4PY_LIBMPI': str(where / 'lib' / wanted), 'LD_LIBRARY_PATH': str(where / 'lib')}


def _pip_into(target: Path, args: list[str], env: dict, what: str) -> float:
    """``pip install --target`` into a scratch directory beside ``target``, renamed to it when
    complete (the caller holds the lock); seconds taken."""
    scratch = target.parent / f'.{target.name}.{os.getpid()}'
    shutil.rmtree(scratch, ignore_errors=True)
    cmd = [sys.executable, '-m', 'pip', 'install', '--quiet', '--no-input', '--no-deps',
           '--no-cache-dir', '--target', str(scratch), *args]
    start = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if done.returncode:
        shutil.rmtree(scratch, ignore_errors=True)
        raise Mpi4pyBuildError(f'{what} (pip exited {done.returncode}):\n'
                               f'{(done.stdout + done.stderr)[-3000:]}')
    shutil.rmtree(target, ignore_errors=True)
    scratch.rename(target)
    return time.monotonic() - start


def ensure_wheel(root: Path, mpi4py_version: str = MPI4PY_VERSION) -> Path:
    """mpi4py's binary wheel, installed once per version and Python under ``root``."""
    target = root / (f'mpi4py-{mpi4py_version}-wheel-{sys.implementation.cache_tag}-'
                     f'{platform.machine()}')
    with _locked(root / f'.{target.name}.lock'):
        if not (target / 'mpi4py').is_dir():
            _pip_into(target, ['--only-binary', 'mpi4py', f'mpi4py=={mpi4py_version}'],
                      dict(os.environ), f'the mpi4py {mpi4py_version} wheel could not be '
                                        f'installed')
    return target


def _try_wheel(cc: str, mpi_version: str, flavour: str | None, root: Path, target: Path,
               mpi4py_version: str) -> tuple[dict | None, str]:
    """The record of the wheel serving this stack, linked into ``target``; or (None, why)."""
    record = flavours.FLAVOURS.get(flavour or '')
    if not record or not record.mpi4py_wheel_library:
        return None, (record.mpi4py_wheel_note if record else '') or 'no MPI flavour given'
    library_file = wheel_library(cc, flavour)
    if not library_file:
        return None, (f'no {record.mpi4py_wheel_library} where {cc} links from'
                      + (f' ({record.mpi4py_wheel_note})' if record.mpi4py_wheel_note else ''))
    try:
        wheel = ensure_wheel(root, mpi4py_version)
    except Mpi4pyBuildError as err:
        return None, str(err).splitlines()[0]
    scratch = root / f'.{target.name}.{os.getpid()}'
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    # tried in the scratch directory, which is renamed to the target when complete
    wanted = record.mpi4py_wheel_library
    tried = _library_settings(library_file, wanted, scratch)
    if 'LD_LIBRARY_PATH' in tried:                  # an alias: linked under the wanted name
        (scratch / 'lib').mkdir()
        (scratch / 'lib' / wanted).symlink_to(library_file)
    library = library_version(wheel, tried)
    if not names_stack(library, mpi_version, flavour):
        shutil.rmtree(scratch, ignore_errors=True)
        return None, f'with MPI4PY_LIBMPI={library_file} the wheel loads {library}'
    (scratch / 'mpi4py').symlink_to(wheel / 'mpi4py')
    env = _library_settings(library_file, wanted, target)
    return {'source': 'wheel', 'pythonpath': str(scratch), 'env': env,
            'library': library, 'build_seconds': 0.0}, ''


def _build_source(cc: str, mpi_version: str, flavour: str | None, target: Path,
                  mpi4py_version: str) -> dict:
    stack = f'the MPI stack of {cc} (MPI {mpi_version})'
    scratch = target.parent / f'.{target.name}.src'
    seconds = _pip_into(scratch, ['--no-binary', 'mpi4py', f'mpi4py=={mpi4py_version}'],
                        dict(os.environ, MPICC=cc),
                        f'mpi4py {mpi4py_version} could not be built for {stack}')
    library = library_version(scratch)
    if not names_stack(library, mpi_version, flavour):
        raise Mpi4pyBuildError(f'mpi4py {mpi4py_version} built for {stack} loads another '
                               f'MPI library: {library} (the build is left in {scratch})')
    return {'source': 'source build', 'pythonpath': str(scratch), 'env': {},
            'library': library, 'build_seconds': round(seconds, 1)}


def ensure_mpi4py(cc: str, mpi_version: str, state_dir: str | os.PathLike,
                  mpi4py_version: str = MPI4PY_VERSION, flavour: str | None = None) -> Path:
    """The directory to put on PYTHONPATH for mpi4py serving the MPI stack of the C wrapper
    `cc` at `mpi_version` (of `flavour`, else the one the wrapper says: the wheel is tried
    first); made on first use, then reused. :func:`build_info` of it says which it is and
    the settings the kernels need."""
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
        flavour = flavour or (flavours.identify_wrapper(cc) or (None,))[0]
        info, refused = _try_wheel(cc, mpi_version, flavour, root, target, mpi4py_version)
        if info is None:
            info = {**_build_source(cc, mpi_version, flavour, target, mpi4py_version),
                    'wheel_refused': refused}
        scratch = Path(info['pythonpath'])
        info.update(pythonpath=str(target), mpicc=cc, mpi_version=mpi_version,
                    mpi4py=mpi4py_version, python=sys.version.split()[0])
        (scratch / DONE).write_text(json.dumps(info, indent=1) + '\n')
        shutil.rmtree(target, ignore_errors=True)
        scratch.rename(target)
    return target


def describe(target: Path, reused: bool) -> str:
    """One line: which mpi4py a stack got, and why not the wheel where it was refused."""
    info = build_info(target)
    how = 'the binary wheel' if info['source'] == 'wheel' else (
        f'a source build ({info.get("build_seconds", "?")} s)')
    why = f'; not the wheel: {info["wheel_refused"]}' if info.get('wheel_refused') else ''
    return (f'mpi4py {info.get("mpi4py", "?")} for {info.get("mpicc", "?")}: {how}, '
            f'{"reused" if reused else "new"}, loads {info["library"]}{why}')


def main(argv: list[str]) -> int:
    """``python -m commcheck.site.mpi4py_build MPICC MPI_VERSION CACHE_DIR [FLAVOUR]``: as the
    build fixture of an environment with Python runs it; says which mpi4py the stack has."""
    def build() -> str:
        cc, version, cache = argv[:3]
        reused = (Path(cache) / 'mpi4py' / build_key(cc, version) / DONE).exists()
        flavour = argv[3] if len(argv) == 4 else None
        return describe(ensure_mpi4py(cc, version, cache, flavour=flavour), reused)

    return step_main('commcheck.site.mpi4py_build MPICC MPI_VERSION CACHE_DIR [FLAVOUR]',
                     len(argv) in (3, 4), build, (Mpi4pyBuildError,))


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
