"""Build the kernels of one stack with CMake, outside ReFrame (benchmarks, kernel tests), and
the cache of built kernels the ReFrame fixture reuses across sessions.

A build is kept under ``<cache>/kernels/<stack>-<key>``, the key a hash of everything the
programs depend on (:func:`build_inputs`): the sources' content, the C and Fortran wrappers
(path, what they run, the compiler's version), the settings that choose the compiler behind
them, the CMake options and CMake's version. A changed input is another key, built afresh; an
unchanged one is reused. A build is copied beside its place and renamed into it when complete,
so a directory there is always whole (two sessions storing one key: the first one's stays).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from commcheck import paths
from commcheck.site import Stack, flavours

#: Written last into a stored build: its presence means the build is complete.
DONE = '.commcheck-kernels.json'
#: Parts of src/kernels the CMake build does not read (built or run elsewhere).
NOT_COMPILED = ('python', 'java', '__pycache__')


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
    opts = cmake_options(stack)
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


def cmake_options(stack: Stack) -> list[str]:
    """The CMake options of a stack's build: its wrappers, Fortran or not."""
    opts = [f'-DCMAKE_C_COMPILER={stack.mpi.c_wrapper}',
            f'-DCOMMCHECK_FORTRAN={"ON" if stack.has_fortran else "OFF"}']
    if stack.has_fortran:
        opts.append(f'-DCMAKE_Fortran_COMPILER={stack.fortran_wrapper}')
    return opts


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


def sources_digest(source: Path | None = None) -> str:
    """sha256 over the compiled kernels' sources: every file's path and content."""
    source = Path(source) if source else paths.KERNELS_SRC
    digest = hashlib.sha256()
    for path in sorted(p for p in source.rglob('*') if p.is_file()):
        rel = path.relative_to(source)
        if rel.parts[0] in NOT_COMPILED or '__pycache__' in rel.parts:
            continue
        digest.update(f'{rel.as_posix()}\0{path.stat().st_size}\0'.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _said(cmd: Sequence[str], env: Mapping[str, str]) -> str:
    try:
        done = subprocess.run(list(cmd), capture_output=True, text=True, timeout=60,
                              env=dict(env), stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.SubprocessError) as err:
        return f'({type(err).__name__})'
    return (done.stdout + done.stderr).strip()


def build_inputs(wrappers: Mapping[str, str], flavour: str, env: Mapping[str, str],
                 options: Sequence[str], source: Path | None = None) -> dict:
    """What a build of the kernels depends on: ``wrappers`` (language -> wrapper), the MPI
    ``flavour`` (how its wrapper shows its command), the job's ``env`` (all of it, as ReFrame
    sets it: which compiler is behind the wrapper), the CMake ``options``."""
    run_env = {**os.environ, **env}
    show = flavours.flavour(flavour).show_flag if flavour in flavours.FLAVOURS else '-show'
    tools = {lang: {'path': cc, 'real': os.path.realpath(shutil.which(cc) or cc),
                    'runs': _said([cc, show], run_env),
                    'version': _said([cc, '--version'], run_env).splitlines()[:1]}
             for lang, cc in sorted(wrappers.items()) if cc}
    return {'sources': sources_digest(source), 'wrappers': tools,
            'env': dict(sorted(env.items())), 'options': list(options),
            'cmake': _said(['cmake', '--version'], run_env).splitlines()[:1]}


def build_key(name: str, inputs: Mapping) -> str:
    """The directory name of a build: the stack's name and a hash of its inputs."""
    text = json.dumps(inputs, sort_keys=True)
    return f'{name}-{hashlib.sha256(text.encode()).hexdigest()[:16]}'


def cache_root() -> Path:
    return paths.CACHE_DIR / 'kernels'


def stored(key: str, root: Path | None = None) -> Path | None:
    """A complete stored build of this key, or None."""
    target = (root or cache_root()) / key
    return target if (target / DONE).exists() else None


def store(install: Path, key: str, inputs: Mapping, root: Path | None = None) -> Path:
    """Keep an installed build (``install`` with its bin/) under its key; returns where it is.
    A build already stored under the key (another session's) is kept and this one dropped."""
    root = root or cache_root()
    root.mkdir(parents=True, exist_ok=True)
    target = root / key
    if stored(key, root):
        return target
    scratch = root / f'.{key}.{os.getpid()}'
    shutil.rmtree(scratch, ignore_errors=True)
    shutil.copytree(install, scratch, symlinks=True)
    (scratch / DONE).write_text(json.dumps({'key': key, **inputs}, indent=1) + '\n')
    try:
        scratch.rename(target)
    except OSError:                 # stored meanwhile by another session: theirs stays
        shutil.rmtree(scratch, ignore_errors=True)
    return target


def cached_cmake_build(stack: Stack, work: Path, source: Path | None = None,
                       root: Path | None = None) -> tuple[Path, str]:
    """The stack's installed kernels (bin/) from the cache, or built in ``work`` and stored:
    (bin directory, ``reused`` or ``built``)."""
    wrappers = {'c': stack.mpi.c_wrapper or ''}
    if stack.has_fortran:
        wrappers['fortran'] = stack.fortran_wrapper or ''
    env = {k: os.path.expandvars(v) for k, v in stack.job_env(as_root=os.geteuid() == 0).items()}
    inputs = build_inputs(wrappers, stack.mpi.flavour, env, cmake_options(stack), source)
    key = build_key(stack.id, inputs)
    found = stored(key, root)
    if found:
        return found / 'bin', 'reused'
    built = cmake_build(stack, Path(work), source)
    return store(built.parent, key, inputs, root) / 'bin', 'built'


def step_main(usage: str, fits: bool, step: Callable[[], str],
              errors: tuple[type[Exception], ...], failed: str = 'ERROR: {err}',
              failed_code: int = 1) -> int:
    """A build step run as ``python -m commcheck.site.<module>`` by a ReFrame build fixture:
    ``usage`` and exit 2 when the arguments do not fit; else ``step()``, its line printed
    after ``commcheck:`` (exit 0), or one of ``errors`` said as ``failed`` (exit
    ``failed_code``)."""
    if not fits:
        print(f'usage: python -m {usage}', file=sys.stderr)
        return 2
    try:
        said = step()
    except errors as err:
        print(failed.format(err=err), file=sys.stderr)
        return failed_code
    print(f'commcheck: {said}')
    return 0


def main(argv: list[str]) -> int:
    """``python -m commcheck.site.kbuild store INSTALL_DIR KEY INPUTS_JSON CACHE_ROOT``: as the
    ReFrame build fixture runs it after installing the kernels, to keep them for the next
    session."""
    def keep() -> str:
        inputs = json.loads(Path(argv[3]).read_text())
        target = store(Path(argv[1]), argv[2], inputs, Path(argv[4]))
        return f'kernels kept for the next session in {target}'

    # A store that fails leaves the build good: this session uses it from its stage, the next
    # rebuilds (exit 0).
    return step_main('commcheck.site.kbuild store INSTALL_DIR KEY INPUTS_JSON CACHE_ROOT',
                     len(argv) == 5 and argv[0] == 'store', keep, (OSError, ValueError),
                     'commcheck: kernels not kept for the next session: {err}', 0)


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
