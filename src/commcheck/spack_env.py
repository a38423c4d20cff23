"""Per-stack Spack environments: one ``spack.yaml`` for one compiler x MPI stack.

Compilers, the MPI stack and the build tools are non-buildable externals, so Spack builds only
the commcheck kernels (from the checkout, via ``develop:``) and OSU Micro-Benchmarks (from a
source mirror). Each environment has its own install tree and view.

Several MPI stacks may share one prefix (Debian puts MPICH and Open MPI both under ``/usr``, and
``/usr/bin/mpicc`` is whichever one the alternatives system chose). Spack's ``mpich`` and
``openmpi`` recipes hand dependents ``<prefix>/bin/mpicc``, so for such a stack the external's
prefix is a directory of links made here, ``bin/mpicc -> /usr/bin/mpicc.mpich`` and so on.
Open MPI's wrappers find their settings by the name they are called by, which these links keep.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import yaml

KERNELS_PACKAGE = 'commcheck-kernels'

# Providers whose Spack recipe takes the wrappers from <prefix>/bin under their plain names.
LINKED_PREFIX_PACKAGES = ('mpich', 'openmpi')
C_WRAPPERS = ('mpicc', 'mpicxx', 'mpic++', 'mpiexec', 'mpirun')
FORTRAN_WRAPPERS = ('mpifort', 'mpif90', 'mpif77')
# How each of those providers' wrappers print the command they would run.
SHOW_FLAGS = {'mpich': '-show', 'openmpi': '--showme'}

# Build tools that Spack would otherwise try to build: package -> (command, version regex).
BUILD_TOOLS = {
    'cmake': ('cmake', r'cmake version (\S+)'),
    'gmake': ('make', r'GNU Make (\S+)'),
}


def find_spack(environ=os.environ) -> str | None:
    """The ``spack`` command: ``$SPACK_ROOT/bin/spack`` if it exists, else ``spack`` on PATH."""
    root = environ.get('SPACK_ROOT')
    if root:
        candidate = os.path.join(root, 'bin', 'spack')
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return shutil.which('spack', path=environ.get('PATH', ''))


def _siblings(wrapper: str, base: str, names) -> dict[str, str]:
    """Wrappers next to ``wrapper`` with its suffix: mpicc.mpich -> mpicxx.mpich, ..."""
    folder, name = os.path.split(wrapper)
    suffix = name[len(base):] if name.startswith(base) else ''
    found = {n: os.path.join(folder, n + suffix) for n in names}
    return {n: path for n, path in found.items() if os.path.exists(path)}


def stack_wrappers(mpi: dict) -> dict[str, str]:
    """Plain wrapper name -> the stack's own executable (``mpicc`` -> ``/usr/bin/mpicc.mpich``)."""
    links = _siblings(mpi['cc'], 'mpicc', C_WRAPPERS)
    links['mpicc'] = mpi['cc']
    if mpi.get('cxx'):
        links['mpicxx'] = mpi['cxx']
    if mpi.get('fc'):
        links.update(_siblings(mpi['fc'], 'mpifort', FORTRAN_WRAPPERS))
        links['mpifort'] = mpi['fc']
    return links


def needs_linked_prefix(mpi: dict) -> bool:
    """True when Spack would not find this stack's own wrappers as ``<prefix>/bin/mpicc``."""
    own_cc = os.path.join(mpi['prefix'], 'bin', 'mpicc')
    return mpi['package'] in LINKED_PREFIX_PACKAGES and mpi['cc'] != own_cc


def stack_prefix_path(mpi: dict, state_dir: str) -> str:
    """The prefix Spack is given for this stack (the real one, or the linked one)."""
    if not needs_linked_prefix(mpi):
        return mpi['prefix']
    return os.path.join(state_dir, 'mpi-prefix', f"{mpi['package']}-{mpi['version']}")


def _link(target: str, link: str) -> None:
    if os.path.islink(link) and os.readlink(link) == target:
        return
    if os.path.lexists(link):
        os.remove(link)
    os.symlink(target, link)


def wrapper_dirs(mpi: dict, run=subprocess.run) -> dict[str, str]:
    """The stack's header and library folders, from its C wrapper's first ``-I`` and ``-L``."""
    command = [mpi['cc'], SHOW_FLAGS[mpi['package']]]
    out = run(command, capture_output=True, text=True, check=False).stdout
    dirs = {}
    for token in out.split():
        for flag, key in (('-I', 'include'), ('-L', 'lib')):
            if token.startswith(flag) and len(token) > len(flag):
                dirs.setdefault(key, token[len(flag):])
    return dirs


def make_stack_prefix(mpi: dict, state_dir: str, run=subprocess.run) -> str:
    """Create (idempotently) the linked prefix if the stack needs one; return the prefix.

    Besides ``bin/``, ``include`` and ``lib`` link to the stack's own folders: Spack looks for
    ``mpi.h`` under an external's prefix (the openmpi recipe fails without it) and adds these
    folders to its compiler wrapper's include, link and rpath lists.
    """
    prefix = stack_prefix_path(mpi, state_dir)
    if prefix == mpi['prefix']:
        return prefix
    bindir = os.path.join(prefix, 'bin')
    os.makedirs(bindir, exist_ok=True)
    _link_all(bindir, stack_wrappers(mpi))
    _link_all(prefix, wrapper_dirs(mpi, run), keep=('bin',))
    return prefix


def _link_all(folder: str, links: dict[str, str], keep=()) -> None:
    """Make ``folder`` hold exactly ``links`` (name -> target), plus the names in ``keep``."""
    for name, target in links.items():
        _link(target, os.path.join(folder, name))
    for name in set(os.listdir(folder)) - set(links) - set(keep):
        os.remove(os.path.join(folder, name))


def detect_build_tools(which=shutil.which, run=subprocess.run) -> list[dict]:
    """cmake and GNU make found on PATH, as ``{"package", "version", "prefix"}``."""
    tools = []
    for package, (command, pattern) in BUILD_TOOLS.items():
        path = which(command)
        if not path:
            continue
        out = run([path, '--version'], capture_output=True, text=True, check=False).stdout
        match = re.search(pattern, out)
        if match:
            prefix = os.path.dirname(os.path.dirname(path))
            tools.append({'package': package, 'version': match.group(1), 'prefix': prefix})
    return tools


def _external(spec: str, prefix: str, **extra) -> dict:
    entry = {'spec': spec, 'prefix': prefix}
    if extra:
        entry['extra_attributes'] = extra
    return {'externals': [entry], 'buildable': False}


def compiler_packages(compiler: dict) -> dict:
    """The compiler as a non-buildable external, its executables keyed by language."""
    paths = {'c': compiler['cc'], 'cxx': compiler.get('cxx'), 'fortran': compiler.get('fc')}
    paths = {lang: path for lang, path in paths.items() if path}
    languages = ','.join(lang.replace('cxx', 'c++') for lang in paths)
    spec = f"{compiler['name']}@{compiler['version']} languages='{languages}'"
    prefix = os.path.dirname(os.path.dirname(compiler['cc']))
    return {compiler['name']: _external(spec, prefix, compilers=paths)}


def mpi_packages(mpi: dict, prefix: str) -> dict:
    """The MPI stack as the only, non-buildable provider of ``mpi``."""
    spec = f"{mpi['package']}@{mpi['version']}"
    if mpi['package'] in LINKED_PREFIX_PACKAGES:
        spec += '+fortran' if mpi.get('fc') else '~fortran'
    return {'mpi': {'require': [mpi['package']], 'buildable': False},
            mpi['package']: _external(spec, prefix)}


def tool_packages(tools: list[dict]) -> dict:
    return {t['package']: _external(f"{t['package']}@{t['version']}", t['prefix'])
            for t in tools}


def develop_stage_link(state_dir: str) -> str:
    """Where Spack links a develop build's stage; by default it would be inside the sources."""
    folder = os.path.join(state_dir, 'spack-develop')
    os.makedirs(folder, exist_ok=True)
    return os.path.join(folder, 'build-{name}-{arch}-{hash:7}')


def render_spack_yaml(*, compiler: dict, mpi: dict, specs: list[str], install_root: str,
                      view: str, package_repo: str, develop_path: str, mirror: str | None,
                      state_dir: str, build_tools: list[dict] | None = None) -> str:
    """spack.yaml text for one stack. Creates the stack's linked prefix and the develop-stage
    folder in ``state_dir``; ``build_tools`` defaults to :func:`detect_build_tools`."""
    tools = detect_build_tools() if build_tools is None else build_tools
    packages = {**tool_packages(tools), **compiler_packages(compiler),
                **mpi_packages(mpi, make_stack_prefix(mpi, state_dir))}
    env = {
        'specs': list(specs),
        'view': view,
        'concretizer': {'unify': True},
        'config': {'install_tree': {'root': install_root},
                   'develop_stage_link': develop_stage_link(state_dir)},
        'repos': {'commcheck': package_repo},
        'develop': {KERNELS_PACKAGE: {'spec': f'{KERNELS_PACKAGE}@=main', 'path': develop_path}},
        'packages': packages,
    }
    if mirror:
        env['mirrors:'] = {'commcheck-site': mirror}    # 'mirrors::' replaces every other mirror
    return yaml.safe_dump({'spack': env}, sort_keys=False, default_flow_style=False)


def write_env(env_dir: str, text: str) -> str:
    """Write ``spack.yaml`` into ``env_dir`` if it changed, and then drop ``spack.lock``.

    Spack re-concretizes an environment only for new root specs, not for changed externals or
    settings, so a stale lock would keep the old stack. An unchanged file keeps its lock.
    """
    os.makedirs(env_dir, exist_ok=True)
    path = os.path.join(env_dir, 'spack.yaml')
    if os.path.exists(path):
        with open(path, encoding='utf-8') as handle:
            if handle.read() == text:
                return path
    with open(path, 'w', encoding='utf-8') as handle:
        handle.write(text)
    lock = os.path.join(env_dir, 'spack.lock')
    if os.path.exists(lock):
        os.remove(lock)
    return path


# commcheck's MPI flavour -> the Spack package providing it
SPACK_MPI_PACKAGES = {'mpich': 'mpich', 'openmpi': 'openmpi', 'cray-mpich': 'cray-mpich',
                      'intel-mpi': 'intel-oneapi-mpi'}


def stack_env_text(site, stack, *, mirror: str | None = None) -> str:
    """spack.yaml of one stack of a :class:`commcheck.site.Site`: the declaration, rendered."""
    from commcheck import paths
    fortran = '+fortran' if stack.has_fortran else '~fortran'
    state = str(site.state_dir / 'spack')
    compiler, mpi = stack.compiler, stack.mpi
    return render_spack_yaml(
        compiler={'name': compiler.spack_name, 'version': compiler.version, 'cc': compiler.cc,
                  'cxx': compiler.cxx, 'fc': compiler.fc},
        mpi={'package': SPACK_MPI_PACKAGES[mpi.flavour], 'version': mpi.version,
             'prefix': mpi.prefix, 'cc': mpi.cc, 'fc': mpi.fc},
        specs=[f'{KERNELS_PACKAGE}{fortran}', site.osu_spec],
        install_root=str(site.spack_install_tree()),
        view=site.environment_extras(stack)['spack_view'],
        package_repo=str(paths.SPACK_PACKAGE_REPO / 'spack_repo' / 'commcheck'),
        develop_path=str(paths.KERNELS_SRC), mirror=mirror, state_dir=state)


def write_site_envs(site, mirror: str | None = None) -> list[str]:
    """Writes (only when changed) the Spack environment of every Spack-built stack of a site."""
    return [write_env(str(site.spack_env_dir(stack)), stack_env_text(site, stack, mirror=mirror))
            for stack in site.stacks if stack.build == 'spack']

