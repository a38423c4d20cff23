"""MPJ Express (Debian ``libmpj-java``) for the Java kernels: an MPJ_HOME, the compiled
kernels and their launch line.

What was found on MPJ Express 0.44 (see ``src/kernels/README.md``, Java and Python kernels):

- Debian's documented start, ``java -jar $MPJ_HOME/lib/starter.jar -np N -dev multicore
  [-cp CLASSPATH] Main args``, needs an MPJ_HOME whose ``lib/`` holds the package's jars and
  ``log4j-1.2.jar`` and the commons jars as real files (the jars' manifests name them
  relatively). It starts a second JVM (``runtime.starter.MulticoreStarter``) with the ranks as
  threads and relays that JVM's output line by line: its stderr is merged into stdout and its
  exit code is dropped (always 0).
- ``Comm.Abort`` is an empty method; an exception escaping ``main`` ends the JVM with 0.
- So the kernels end a failed run with ``System.exit(code)``, which ends every rank of the
  multicore JVM, and :func:`launch_command` starts that JVM directly, as the starter would:
  exit codes and stderr reach the caller unchanged.

Nothing is written when this module is imported; :func:`mpj_home` and :func:`compile_kernels`
write only under the directories they are given.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from commcheck import experiments, paths
from commcheck.site.kbuild import step_main

DEBIAN_MPJ = Path('/usr/share/mpj')     # libmpj-java
DEBIAN_JAVA = Path('/usr/share/java')   # its dependencies: liblog4j1.2-java, libcommons-*-java
DEPENDENCY_JARS = ('log4j-1.2.jar', 'commons-cli.jar', 'commons-codec.jar', 'commons-io.jar')
# The class path MPJRun gives the multicore JVM (MulticoreDaemon, MPJ Express 0.44).
MULTICORE_JARS = ('smpdev.jar', 'xdev.jar', 'mpjbuf.jar', 'loader2.jar', 'starter.jar',
                  'mpiExp.jar')
MULTICORE_MAIN = 'runtime.starter.MulticoreStarter'

JAVA_SOURCES = paths.KERNELS_SRC / 'java'
#: The Java kernels' package and main classes, as the table of experiments names them.
PACKAGE = 'cc'
PROGRAMS = tuple(c.split('.')[-1] for c in experiments.JAVA_CLASSES.values())
JAR_NAME = 'commcheck-kernels.jar'


class MpjError(RuntimeError):
    """MPJ Express or the JDK is missing, or the Java kernels do not compile."""


def _inputs(share: Path, java_dir: Path) -> list[Path]:
    starter = share / 'lib' / 'starter.jar'
    if not starter.exists():
        raise MpjError(f'MPJ Express is not installed ({starter} is missing): on Debian, '
                       f'apt-get install libmpj-java')
    jars = sorted(share.glob('lib/*.jar'))
    missing = [name for name in DEPENDENCY_JARS if not (java_dir / name).exists()]
    if missing:
        raise MpjError(f'MPJ Express needs {", ".join(missing)} in {java_dir}: on Debian, '
                       f'apt-get install --reinstall libmpj-java (it depends on them)')
    return jars + [java_dir / name for name in DEPENDENCY_JARS]


def _fingerprint(files: list[Path]) -> str:
    lines = []
    for f in files:
        st = f.stat()   # follows links: the file that is copied
        lines.append(f'{f}\t{st.st_size}\t{st.st_mtime_ns}')
    return '\n'.join(lines) + '\n'


@contextlib.contextmanager
def _locked(path: Path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, 'w') as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def mpj_home(state_dir: str | os.PathLike, share: Path = DEBIAN_MPJ,
             java_dir: Path = DEBIAN_JAVA) -> Path:
    """``<state_dir>/mpj``: an MPJ_HOME made of copies of the installed package's jars, its
    dependencies and its ``conf/``. Made again only when the installed files change."""
    home = Path(state_dir) / 'mpj'
    inputs = _inputs(share, java_dir)
    stamp = _fingerprint(inputs)
    marker = home / '.installed-from'
    if marker.exists() and marker.read_text() == stamp:
        return home
    with _locked(Path(state_dir) / '.mpj.lock'):
        if marker.exists() and marker.read_text() == stamp:
            return home
        fresh = Path(state_dir) / f'.mpj-{os.getpid()}'
        shutil.rmtree(fresh, ignore_errors=True)
        (fresh / 'lib').mkdir(parents=True)
        for jar in inputs:
            shutil.copyfile(jar, fresh / 'lib' / jar.name)   # real files, links resolved
        if (share / 'conf').is_dir():
            shutil.copytree(share / 'conf', fresh / 'conf', symlinks=False)
        (fresh / '.installed-from').write_text(stamp)
        shutil.rmtree(home, ignore_errors=True)
        fresh.rename(home)
    return home


def _tool(name: str, beside: str | None = None) -> str:
    if beside:
        candidate = Path(beside).resolve().parent / name
        if os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which(name)
    if not found:
        raise MpjError(f'{name} not found: the Java kernels need a JDK (on Debian, '
                       f'apt-get install default-jdk-headless)')
    return found


def java_sources(source_dir: Path = JAVA_SOURCES) -> list[Path]:
    return sorted((source_dir / PACKAGE).glob('*.java'))


def compile_kernels(build_dir: str | os.PathLike, home: Path,
                    source_dir: Path = JAVA_SOURCES) -> Path:
    """Compiles the Java kernels with ``javac`` against MPJ Express's ``mpj.jar`` into
    ``<build_dir>/commcheck-kernels.jar`` and returns it; unchanged sources are not rebuilt."""
    javac = _tool('javac')
    jar_tool = _tool('jar', beside=javac)
    mpj_jar = Path(home) / 'lib' / 'mpj.jar'
    if not mpj_jar.exists():
        raise MpjError(f'{mpj_jar} is missing: make the MPJ_HOME with mpj_home() first')
    sources = java_sources(source_dir)
    if not sources:
        raise MpjError(f'no Java sources in {source_dir / PACKAGE}')
    digest = hashlib.sha256()
    for path in [*sources, mpj_jar]:
        digest.update(path.name.encode() + b'\0' + path.read_bytes())
    build = Path(build_dir)
    jar, marker = build / JAR_NAME, build / '.sources-sha256'
    if jar.exists() and marker.exists() and marker.read_text() == digest.hexdigest():
        return jar
    classes = build / 'classes'
    shutil.rmtree(classes, ignore_errors=True)
    classes.mkdir(parents=True)
    steps = ([javac, '-Xlint:all', '-Werror', '-encoding', 'UTF-8', '-cp', str(mpj_jar),
              '-d', str(classes), *map(str, sources)],
             [jar_tool, '--create', '--file', str(jar), '-C', str(classes), '.'])
    for cmd in steps:
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode:
            raise MpjError(f'{Path(cmd[0]).name} failed for the Java kernels:\n'
                           f'{done.stdout[-3000:]}{done.stderr[-3000:]}')
    marker.write_text(digest.hexdigest())
    return jar


def main_class(program: str) -> str:
    """``PingPong`` or ``cc.PingPong`` -> ``cc.PingPong``."""
    return program if '.' in program else f'{PACKAGE}.{program}'


def _check_program(jar: Path, program: str) -> str:
    # MulticoreStarter prints a trace and exits 0 for a class it cannot load: refuse it here.
    cls = main_class(program)
    with zipfile.ZipFile(jar) as archive:
        if cls.replace('.', '/') + '.class' not in archive.namelist():
            raise MpjError(f'{jar} has no class {cls} (programs: {", ".join(PROGRAMS)})')
    return cls


def launch_command(home: Path, ranks: int, jar: Path, program: str, *args: str,
                   jvm_args: tuple[str, ...] = ()) -> list[str]:
    """The command that runs `program` of `jar` on `ranks` ranks of the multicore device:
    the JVM that ``starter.jar -dev multicore`` would start, started directly, so that its
    exit code and stderr are the kernel's. Run it with :func:`launch_env`."""
    cls = _check_program(Path(jar), program)
    return [*launch_prefix(home, ranks, jar, jvm_args, java=_tool('java')), cls, *args]


def launch_prefix(home, ranks: int, jar, jvm_args: tuple[str, ...] = (),
                  java: str = 'java') -> list[str]:
    """The words before the main class: MulticoreStarter's arguments are the working dir (put
    on the class path), ranks, device, loader, class path; then main class, its arguments."""
    classpath = os.pathsep.join(str(Path(home) / 'lib' / name) for name in MULTICORE_JARS)
    return [java, *jvm_args, '-cp', classpath, MULTICORE_MAIN, str(jar), str(ranks),
            'smpdev', 'useLocalLoader', str(jar)]


def starter_command(home: Path, ranks: int, jar: Path, program: str, *args: str) -> list[str]:
    """Debian's documented start through ``starter.jar``, for comparison: it runs the same JVM
    but always exits 0 and merges the kernel's stderr into stdout."""
    return [_tool('java'), '-jar', str(Path(home) / 'lib' / 'starter.jar'), '-np', str(ranks),
            '-dev', 'multicore', '-cp', str(jar), _check_program(Path(jar), program), *args]


def launch_env(home: Path, base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a launch: MPJ_HOME is where MPJ finds mpi.jar and its conf."""
    return dict(os.environ if base is None else base, MPJ_HOME=str(home))


def run(home: Path, ranks: int, jar: Path, program: str, *args: str,
        timeout: float = 120) -> subprocess.CompletedProcess:
    """Runs a Java kernel (:func:`launch_command`) and returns the finished process."""
    return subprocess.run(launch_command(home, ranks, jar, program, *args), capture_output=True,
                          text=True, timeout=timeout, env=launch_env(home))


def main(argv: list[str]) -> int:
    """``python -m commcheck.site.mpj STATE_DIR BUILD_DIR``: the MPJ_HOME and the kernels' jar, as
    the build fixture of a Java environment makes them."""
    return step_main('commcheck.site.mpj STATE_DIR BUILD_DIR', len(argv) == 2,
                     lambda: f'Java kernels in {compile_kernels(argv[1], mpj_home(argv[0]))}',
                     (MpjError,))


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
