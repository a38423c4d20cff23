"""``commcheck mirror DIR``: the Spack source mirror an air-gapped site needs.

For every stack of the site that builds with Spack, its environment is rendered as a run would
render it (in a scratch directory: the run's own environments and lock files are not touched),
concretized, and ``spack -e <env> mirror create -d DIR --all`` copies the sources of every spec
Spack would build there into ``DIR``. Compilers, MPI and build tools are externals and need no
source; the kernels are built from the checkout (``develop:``). What is left is OSU and
anything it needs that the site does not provide.

A configured mirror (``COMMCHECK_SPACK_MIRROR``, ``spack.mirror``) that exists is read from, so
a mirror can be refreshed or copied without network access; one that does not exist is left
out. On the compute side: ``export COMMCHECK_SPACK_MIRROR=DIR``.
"""

from __future__ import annotations

import os
import tempfile

from commcheck.site import spack_env

#: Spack could need an hour to index its repository and concretize on a slow machine.
TIMEOUT = 3600


def mirror_stack(spack: str, stack, spack_settings: dict, directory: str, scratch: str) -> str:
    """Put the sources one stack's environment builds into ``directory``; returns its env dir."""
    configured = spack_env.mirror_of(spack_settings)
    source = configured if configured and not spack_env.mirror_problem(configured) else None
    env_dir = os.path.join(scratch, 'spack-env', stack.id)
    text = spack_env.stack_env_text(
        stack, spack_settings=spack_settings, view=os.path.join(scratch, 'view', stack.id),
        state_dir=scratch, mirror=source)
    spack_env.write_env(env_dir, text)
    spack_env.run_spack(spack, ['-e', env_dir, 'concretize'], timeout=TIMEOUT)
    spack_env.run_spack(spack, ['-e', env_dir, 'mirror', 'create', '-d', directory, '--all',
                                '--exclude-specs', spack_env.KERNELS_PACKAGE], timeout=TIMEOUT)
    return env_dir


def main(args) -> int:
    """Make (or add to) the mirror ``args.dir`` for the site ``args.site``; 0 when every Spack
    stack's sources are in it. Errors are :class:`commcheck.site.SiteError` (one line)."""
    from commcheck.site import sitefile
    site = sitefile.load_named(args.site)
    spack = spack_env.find_spack()
    if spack is None:
        raise spack_env.SpackSetupError('commcheck mirror needs Spack: set SPACK_ROOT to a '
                                        'Spack checkout (or put spack on PATH)')
    stacks = [s for s in site.stacks if s.build == 'spack' and spack_env.has_spack_environment(s)]
    if not stacks:
        raise spack_env.SpackSetupError(
            f'site {site.name} has no stack built with Spack: nothing to mirror (the local site '
            f'builds with Spack when SPACK_ROOT is set, or with COMMCHECK_BUILD=spack)')
    directory = os.path.abspath(args.dir)
    os.makedirs(directory, exist_ok=True)
    settings = site.spack.model_dump()
    with tempfile.TemporaryDirectory(prefix='commcheck-mirror-') as scratch:
        for stack in stacks:
            print(f'commcheck: mirror: {stack.id}: {spack_env.osu_spec(settings)} and what it '
                  f'needs', flush=True)
            mirror_stack(spack, stack, settings, directory, scratch)
    missing = spack_env.mirror_problem(directory, spack_env.osu_spec(settings))
    if missing:
        raise spack_env.SpackSetupError(missing)
    print(f'commcheck: mirror {directory} holds the sources of {len(stacks)} Spack '
          f'environment(s); on the site: export COMMCHECK_SPACK_MIRROR={directory}')
    return 0
