"""Per-stack Spack environments: one ``spack.yaml`` for one compiler x MPI stack.

Compilers, the MPI stack and the build tools are non-buildable externals, so Spack builds only
the commcheck kernels (from the checkout, via ``develop:``) and OSU Micro-Benchmarks (from a
source mirror). Each environment has its own install tree and view.

Several MPI stacks may share one prefix (Debian puts MPICH and Open MPI both under ``/usr``, and
``/usr/bin/mpicc`` is whichever one the alternatives system chose). Spack's ``mpich`` and
``openmpi`` recipes hand dependents ``<prefix>/bin/mpicc``, so for such a stack the external's
prefix is a directory of links made here, ``bin/mpicc -> /usr/bin/mpicc.mpich`` and so on.
Open MPI's wrappers find their settings by the name they are called by, which these links keep.
The linked prefix is per stack: two stacks on one MPI (gcc with Fortran, clang without) each get
their own, so neither rewrites the other's links while the other builds.

Intel MPI (``intel-oneapi-mpi``) is looked for by Spack's recipe under
``<prefix>/mpi/<major.minor>`` (the oneAPI "v2" layout); a flat install such as the PyPI wheel is
given to Spack through a prefix holding only that link. Its wrappers are then the generic ones
(``+generic-names``: ``mpicc``, ``mpifc``), and ``~envmods``: a wheel has no ``env/vars.sh``.

Everything that can go wrong before Spack builds anything (no Spack at ``SPACK_ROOT``, a
``SPACK_PYTHON`` that is not there, a source mirror that is not there, Spack unable to import its
concretizer) is one :class:`SpackSetupError` line that says what to set.
"""

from __future__ import annotations

import fcntl
import os
import re
import shlex
import shutil
import subprocess
from urllib.parse import urlparse

import yaml

from commcheck.site import SiteError, SpackSettings, flavours

KERNELS_PACKAGE = 'commcheck-kernels'


C_WRAPPERS = ('mpicc', 'mpicxx', 'mpic++', 'mpiexec', 'mpirun')
FORTRAN_WRAPPERS = ('mpifort', 'mpif90', 'mpif77')

# Build tools that Spack would otherwise try to build: package -> (command, version regex).
BUILD_TOOLS = {
    'cmake': ('cmake', r'cmake version (\S+)'),
    'gmake': ('make', r'GNU Make (\S+)'),
}


class SpackSetupError(SiteError):
    """Spack cannot be used as set up; the message is one line saying what to set."""


def find_spack(environ=os.environ) -> str | None:
    """The ``spack`` command: ``$SPACK_ROOT/bin/spack``, else ``spack`` on PATH, else None.

    A ``SPACK_ROOT`` that is set but holds no Spack is an error, not a quiet fall-back to the
    CMake path (``COMMCHECK_BUILD=cmake`` chooses CMake without asking for Spack at all).
    """
    root = environ.get('SPACK_ROOT', '').strip()
    if root:
        candidate = os.path.join(root, 'bin', 'spack')
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
        raise SpackSetupError(
            f'SPACK_ROOT={root} is not a Spack installation (no executable {candidate}): set '
            f'SPACK_ROOT to a Spack checkout (git clone of spack, v1.x), or unset it and set '
            f'COMMCHECK_BUILD=cmake to build with CMake')
    return shutil.which('spack', path=environ.get('PATH', ''))


def spack_python_problem(environ=os.environ) -> str | None:
    """A ``SPACK_PYTHON`` that is set but cannot run: what to do about it, else None."""
    python = environ.get('SPACK_PYTHON', '').strip()
    if python and not (os.path.isfile(python) and os.access(python, os.X_OK)):
        return (f'SPACK_PYTHON={python} is not an executable Python: set it to a Python that '
                f"can import clingo (e.g. .venv/bin/python after pip install -e '.[spack]')")
    return None


#: Spack's words for a failure we can say more about -> the one line to show.
KNOWN_FAILURES = (
    ('bootstrapping is currently disabled',
     "Spack cannot import clingo (its concretizer) and its bootstrapping is disabled: set "
     "SPACK_PYTHON to a Python that has clingo (pip install -e '.[spack]' into .venv, then "
     "SPACK_PYTHON=$PWD/.venv/bin/python)"),
    ('Timed out waiting for a write lock',
     'Spack timed out on a lock in its cache (another Spack process was indexing or '
     'installing): run again, or give each concurrent run its own SPACK_USER_CACHE_PATH'),
    ('Failed to clone repository',
     "Spack could not clone its package repository (no network?): point repos.yaml's builtin "
     'at a local copy of spack-packages (spack-env/README.md)'),
    ('Failed to update repository',
     "Spack could not update its package repository (no network?): point repos.yaml's builtin "
     'at a local copy of spack-packages (spack-env/README.md)'),
)


def explain_failure(output: str) -> str | None:
    """One line for a Spack failure we recognise in its output, else None."""
    for words, line in KNOWN_FAILURES:
        if words in output:
            return line
    return None


def mirror_problem(mirror: str | None, osu_spec: str | None = None) -> str | None:
    """What is wrong with a configured source mirror, else None.

    Spack does not notice a mirror that is not there: it takes a tarball it already has from its
    source cache, and otherwise falls back to the package's upstream URL, which behind a
    firewall hangs. A local mirror (a path or ``file://``) must exist, and where it has Spack's
    by-name layout (``spack mirror create`` writes one), hold the OSU version asked for.
    """
    if not mirror:
        return None
    parsed = urlparse(mirror)
    if parsed.scheme not in ('', 'file'):
        return None                     # http(s)://, s3:// ...: Spack checks it when fetching
    path = parsed.path if parsed.scheme == 'file' else mirror
    if not os.path.isdir(path):
        return (f'the Spack source mirror {mirror} does not exist: set COMMCHECK_SPACK_MIRROR '
                f'(or spack.mirror in the site file) to the directory `commcheck mirror DIR` made')
    if osu_spec:
        name, _, version = osu_spec.partition('@')
        by_name = os.path.join(path, name.strip())
        if version and os.path.isdir(by_name) and not any(
                entry.startswith(f'{name.strip()}-{version.strip()}.')
                for entry in os.listdir(by_name)):
            return (f'the Spack source mirror {mirror} has no {osu_spec}: add it with '
                    f'`commcheck mirror {path}` on a machine with network access')
    return None


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


def oneapi_version_dir(version: str) -> str:
    """The ``<major.minor>`` folder of a oneAPI component (the recipe's v2 layout)."""
    return '.'.join(version.split('.')[:2])


def _flavour(mpi: dict) -> flavours.Flavour:
    """The flavour record of the stack's Spack package (what its recipe expects)."""
    found = flavours.by_spack_package(mpi['package'])
    if found is None:
        raise SiteError(f"no MPI flavour is provided by the Spack package {mpi['package']!r}")
    return found


def needs_linked_prefix(mpi: dict) -> bool:
    """True when Spack would not find this stack's own wrappers where its recipe looks."""
    flavour = _flavour(mpi)
    if flavour.oneapi_component:
        component = os.path.join(mpi['prefix'], flavour.oneapi_component,
                                 oneapi_version_dir(mpi['version']))
        return not os.path.isdir(component)
    own_cc = os.path.join(mpi['prefix'], 'bin', 'mpicc')
    return flavour.spack_plain_wrappers and mpi['cc'] != own_cc


def stack_prefix_path(mpi: dict, state_dir: str) -> str:
    """The prefix Spack is given for this stack (the real one, or the stack's linked one)."""
    if not needs_linked_prefix(mpi):
        return mpi['prefix']
    name = mpi.get('stack') or f"{mpi['package']}-{mpi['version']}"
    return os.path.join(state_dir, 'mpi-prefix', name)


def _link(target: str, link: str) -> None:
    if os.path.islink(link) and os.readlink(link) == target:
        return
    if os.path.lexists(link):
        os.remove(link)
    os.symlink(target, link)


def wrapper_dirs(mpi: dict, run=subprocess.run) -> dict[str, str]:
    """The stack's header and library folders, from its C wrapper's first ``-I`` and ``-L``."""
    command = [mpi['cc'], _flavour(mpi).show_flag]
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
    component = _flavour(mpi).oneapi_component
    if component:
        component = os.path.join(prefix, component)
        os.makedirs(component, exist_ok=True)
        _link_all(component, {oneapi_version_dir(mpi['version']): mpi['prefix']})
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
    """The compiler as a non-buildable external, its executables keyed by language. Where it
    is declared by modules with driver names (a Cray PrgEnv: ``cc``, ``ftn``), the external is
    the modules, as Cray sites declare it."""
    paths = {'c': compiler['cc'], 'cxx': compiler.get('cxx'), 'fortran': compiler.get('fc')}
    paths = {lang: path for lang, path in paths.items() if path}
    languages = ','.join(lang.replace('cxx', 'c++') for lang in paths)
    spec = f"{compiler['name']}@{compiler['version']} languages='{languages}'"
    if compiler.get('modules') and not os.path.isabs(compiler['cc']):
        entry = {'spec': spec, 'modules': list(compiler['modules']),
                 'extra_attributes': {'compilers': paths}}
        return {compiler['name']: {'externals': [entry], 'buildable': False}}
    prefix = os.path.dirname(os.path.dirname(compiler['cc']))
    return {compiler['name']: _external(spec, prefix, compilers=paths)}


def spack_built_mpi_packages(mpi: dict) -> dict:
    """An MPI that Spack builds (``mpi['spec']``, e.g. ``mpich@4.2.3 netmod=ofi``): the only
    provider of ``mpi``, required as declared; its sources must then be in the mirror too."""
    return {'mpi': {'require': [mpi['package']]}, mpi['package']: {'require': [mpi['spec']]}}


def module_mpi_packages(mpi: dict) -> dict:
    """An MPI declared by its module (``cray-mpich``, external-only in Spack): the only,
    non-buildable provider of ``mpi``, an external by module, with its prefix where one is
    declared (Spack 1.1 concretizes a module-only external but installs its dependents with
    no prefix for it: declare ``mpi.prefix`` too, as Cray sites do)."""
    entry = {'spec': f"{mpi['package']}@{mpi['version']}{mpi.get('variants', '')}",
             'modules': [mpi['module']]}
    if mpi.get('prefix'):
        entry['prefix'] = mpi['prefix']
    return {'mpi': {'require': [mpi['package']], 'buildable': False},
            mpi['package']: {'externals': [entry], 'buildable': False}}


def mpi_packages(mpi: dict, prefix: str) -> dict:
    """The MPI stack as the only, non-buildable provider of ``mpi``."""
    spec = f"{mpi['package']}@{mpi['version']}{mpi.get('variants', '')}"
    flavour = _flavour(mpi)
    if flavour.spack_plain_wrappers:
        spec += '+fortran' if mpi.get('fc') else '~fortran'
    if flavour.oneapi_component:
        # mpicc/mpifc (the recipe's default names are mpiicx/mpiifx, the Intel compilers'),
        # and no vars.sh to source.
        spec += '+generic-names~envmods'
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
    if mpi.get('spec'):
        mpi_entries = spack_built_mpi_packages(mpi)
    elif mpi.get('module'):
        mpi_entries = module_mpi_packages(mpi)
    else:
        mpi_entries = mpi_packages(mpi, make_stack_prefix(mpi, state_dir))
    packages = {**tool_packages(tools), **compiler_packages(compiler), **mpi_entries}
    env = {
        'specs': list(specs),
        'view': view,
        'concretizer': {'unify': True},
        # The build stage is the state's own: Spack keeps a develop spec's build directory
        # there between installs and reuses it (no new CMake configure) for the same hash, so
        # a shared stage would install a second state's kernels into the first one's prefix.
        'config': {'install_tree': {'root': install_root},
                   'build_stage': [os.path.join(state_dir, 'stage')],
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


def osu_spec(spack_settings: dict) -> str:
    """The OSU spec: ``COMMCHECK_OSU_SPEC``, else the site's ``spack.osu_spec``, else the
    site model's default (:class:`commcheck.site.SpackSettings`)."""
    from commcheck.site import env_flag
    return (env_flag('COMMCHECK_OSU_SPEC') or spack_settings.get('osu_spec')
            or SpackSettings().osu_spec)


def mirror_of(spack_settings: dict) -> str | None:
    """The source mirror: ``COMMCHECK_SPACK_MIRROR``, else the site's ``spack.mirror``."""
    from commcheck.site import env_flag
    return env_flag('COMMCHECK_SPACK_MIRROR') or spack_settings.get('mirror') or None


#: Hex digits of a sha256 kept to name what was built (environment texts, locks): 48 bits.
DIGEST_DIGITS = 12


def lock_digest(env_dir: str | None) -> str:
    """sha256 (DIGEST_DIGITS hex digits) of a Spack environment's lock (what was built, down to
    every dependency's hash); '' where there is no lock (not concretized, or a CMake build)."""
    import hashlib
    try:
        with open(os.path.join(env_dir, 'spack.lock') if env_dir else '', 'rb') as handle:
            return hashlib.sha256(handle.read()).hexdigest()[:DIGEST_DIGITS]
    except OSError:
        return ''


def repo_digest(folder: str) -> str:
    """sha256 (DIGEST_DIGITS hex digits) of the ``*.py`` and ``*.yaml`` files under a package
    repository.

    It heads each environment's text: a changed recipe changes the text, so the lock is dropped
    and Spack concretizes anew (a kept lock would keep the old spec and, for the kernels built
    in place, the old CMake configuration).
    """
    import hashlib
    digest = hashlib.sha256()
    for root, dirs, files in sorted(os.walk(folder)):
        dirs[:] = sorted(d for d in dirs if d != '__pycache__')
        for name in sorted(files):
            if name.endswith(('.py', '.yaml')):
                path = os.path.join(root, name)
                digest.update(os.path.relpath(path, folder).encode())
                with open(path, 'rb') as handle:
                    digest.update(handle.read())
    return digest.hexdigest()[:DIGEST_DIGITS]


def stack_env_text(stack, *, spack_settings: dict, view: str, state_dir: str,
                   mirror: str | None | bool = True) -> str:
    """spack.yaml of one stack (:class:`commcheck.site.Stack`): the declaration, rendered.

    Settings from the environment win over the site file's: ``COMMCHECK_OSU_SPEC``,
    ``COMMCHECK_SPACK_MIRROR``, ``COMMCHECK_SPACK_INSTALL_TREE``. ``mirror`` True takes the
    configured mirror; a string or None replaces it.
    """
    from commcheck import paths
    from commcheck.site import env_flag
    fortran = '+fortran' if stack.has_fortran else '~fortran'
    compiler, mpi = stack.compiler, stack.mpi
    install_root = (env_flag('COMMCHECK_SPACK_INSTALL_TREE') or spack_settings.get('install_tree')
                    or os.path.join(state_dir, 'spack', 'opt'))
    package_repo = str(paths.SPACK_PACKAGE_REPO / 'spack_repo' / 'commcheck')
    head = (f'# Generated by commcheck for stack {stack.id}; rewritten when the declaration or '
            f'the\n# commcheck package recipes (digest {repo_digest(package_repo)}) change.\n')
    return head + render_spack_yaml(
        compiler={'name': compiler.spack_package, 'version': compiler.version, 'cc': compiler.cc,
                  'cxx': compiler.cxx, 'fc': compiler.fc, 'modules': stack.modules},
        mpi={'package': mpi.record.spack_package, 'variants': mpi.record.spack_variants,
             'version': mpi.version, 'stack': stack.id,
             'spec': mpi.spack_spec, 'module': mpi.module,
             'prefix': mpi.install_prefix, 'cc': mpi.c_wrapper, 'fc': stack.fortran_wrapper
             if stack.has_fortran else None},
        specs=[f'{KERNELS_PACKAGE}{fortran}', osu_spec(spack_settings)],
        install_root=install_root, view=view, package_repo=package_repo,
        develop_path=str(paths.KERNELS_SRC),
        mirror=mirror_of(spack_settings) if mirror is True else mirror,
        state_dir=os.path.join(state_dir, 'spack'))


def has_spack_environment(stack) -> bool:
    """Whether a stack can have a Spack environment: its MPI has a Spack package (MPJ Express,
    the Java stack, has none: it is always built locally)."""
    return bool(stack.mpi.record.spack_package) and 'c' in stack.tested_languages


# -- running Spack -----------------------------------------------------------------------------
def spack_environ(spack: str, environ=os.environ) -> dict:
    """The environment to run ``spack`` in: its ``bin`` first on PATH (ReFrame's Spack build
    system calls a bare ``spack``)."""
    env = dict(environ)
    env['PATH'] = os.path.dirname(spack) + os.pathsep + env.get('PATH', '')
    return env


def run_spack(spack: str, args: list[str], *, timeout: float, cwd: str | None = None,
              environ=os.environ) -> subprocess.CompletedProcess:
    """Run Spack; a failure Spack's own words do not make clear raises one
    :class:`SpackSetupError` line (with the end of Spack's output under it)."""
    problem = spack_python_problem(environ)
    if problem:
        raise SpackSetupError(problem)
    command = [spack, *args]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                              cwd=cwd, env=spack_environ(spack, environ), check=False)
    except subprocess.TimeoutExpired:
        raise SpackSetupError(f'`{" ".join(command)}` did not finish in {timeout:.0f} s '
                              f'(a package repository being cloned over a network that is not '
                              f'there? see spack-env/README.md)') from None
    if done.returncode != 0:
        output = done.stdout + done.stderr
        line = explain_failure(output) or f'`{" ".join(command)}` failed'
        tail = '\n'.join(output.strip().splitlines()[-15:])
        raise SpackSetupError(f'{line}\n{tail}')
    return done


def concretize_once(spack: str, env_dir: str, state_dir: str, *,
                    timeout: float = 3600) -> float:
    """Concretize one environment now, holding a lock of ours: returns the seconds it took.

    The first concretization on a cold cache indexes Spack's package repository (minutes),
    holding a lock in Spack's cache whose waiters give up after a fixed 120 s ("Timed out
    waiting for a write lock"). Run before the stacks' installs start in parallel, it indexes
    once; the concurrent installs then find the index made. Our lock (no time limit) keeps two
    commcheck processes sharing a state directory from indexing at once.
    """
    import time
    os.makedirs(state_dir, exist_ok=True)
    started = time.monotonic()
    with open(os.path.join(state_dir, 'spack-index.lock'), 'w') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            run_spack(spack, ['-e', env_dir, 'concretize'], timeout=timeout)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return time.monotonic() - started


def osu_failure_marker(env_dir: str) -> str:
    """The file a failed OSU install leaves in the environment, holding the reason."""
    return os.path.join(env_dir, 'commcheck-osu.failed')


def osu_install_commands(env_dir: str, spec: str, stack: str, problem: str | None) -> list[str]:
    """Shell lines installing OSU after the kernels, on their own: a failure (a fetch, a
    mirror that is not there) leaves its reason in the failure marker and fails the OSU checks,
    not the build that the stack's other checks need."""
    marker = osu_failure_marker(env_dir)
    quote = shlex.quote
    if problem:
        said = f'commcheck: OSU ({spec}) not installed for {stack}: {problem}'
        return [f'printf "%s\\n" {quote(said)} | tee {quote(marker)} >&2']
    said = (f'commcheck: OSU ({spec}) failed to install for {stack} (see the Spack output '
            f'above); the stack\'s other checks are not affected')
    return [f'rm -f {quote(marker)}',
            f'spack -e {quote(env_dir)} install --fail-fast {quote(spec)} || '
            f'printf "%s\\n" {quote(said)} | tee {quote(marker)} >&2']
