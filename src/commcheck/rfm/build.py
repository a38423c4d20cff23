"""Where a check's programs come from: one fixture, two real build paths.

The environment's ``extras['build']`` chooses the path, never the check:

- ``cmake``: ReFrame's CMake build system compiles ``src/kernels`` with the environment's MPI
  wrappers (``cc``/``ftn``) and installs the programs into the stage's ``install/bin``.
- ``spack``: the stack's Spack environment is written (only when its text changed) under the
  state directory, then ReFrame's Spack build system installs it there, in place, so its lock
  file and install tree persist between runs; the kernels (package ``commcheck-kernels``) and
  the OSU Micro-Benchmarks land in the environment's view (``extras['spack_view']``).
  The first Spack stack of a session is concretized before its build job starts (that indexes
  Spack's package repository once, before the stacks install in parallel). The kernels and OSU
  are two installs: a failed OSU install (a fetch, a mirror that is not there) is recorded in
  ``osu_error`` and fails the OSU checks only; a failed kernels install fails the fixture.

Builds never run beside a measurement: on a partition whose scheduler is local (the jobs run
on this node), the build counts against the partition's own job limit (``max_jobs``, 1 by
default) instead of ReFrame's separate limit for local builds, so a build and a measurement
never hold the node's cores at once; ReFrame's dependency order (every fixture before the tests
that use it, all builds first) then starts the builds before any measurement. On a scheduler
partition the build runs on this node (the login node) and the measurements on the partition's
nodes, exclusive or not as the partition declares (recorded in every test's provenance).

OSU programs come from the Spack view, else from a site-provided install (``extras['osu_root']``)
or a site module that puts them on PATH (``extras['osu_module']``).
"""

from __future__ import annotations

import glob
import json
import os
import re
import shlex
from pathlib import Path

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import run_after, run_before, sanity_function, variable

from commcheck import experiments, paths
from commcheck.rfm import learned
from commcheck.rfm.plugin import Plugin
from commcheck.site import Stack, kbuild, spack_env
from commcheck.site import vocabulary as vocab

BUILD_TIME = re.compile(r'^BUILD (started|ended)=(\d+(?:\.\d+)?)', re.MULTILINE)

#: The build's inputs, written into its stage and stored with it (kbuild.store).
INPUTS_FILE = 'kernels-inputs.json'

#: Spack state directories whose first stack this ReFrame session concretized up front.
_CONCRETIZED_FIRST: set[str] = set()


def say(line: str) -> None:
    """A progress line among ReFrame's (plain text, flushed: a log, a pipe or no terminal)."""
    try:
        print(f'commcheck: {line}', flush=True)
    except OSError:             # the reader went away: progress is not worth a failure
        pass


class KernelsBuild(rfm.CompileOnlyRegressionTest):
    """Builds (or installs through Spack) the kernels of one environment; shared by its checks."""

    descr = 'commcheck kernels for one compiler x MPI stack'
    valid_systems = ['*']
    valid_prog_environs = ['+c', '+java']
    build_locally = True
    build_timeout = variable(str, value='60m')
    local_prefix = variable(str, value='install')

    #: sha256 of the Spack environment's lock file after the build (Spack path), for provenance
    #: (:func:`commcheck.site.spack_env.lock_digest`; empty without one).
    spack_lock = variable(str, value='')

    #: Why OSU is not installed for this stack (Spack path), empty when it is.
    osu_error = variable(str, value='')

    #: How the compiled kernels came (CMake path): ``built`` in this session (then kept in
    #: the cache), ``reused`` from the cache (a build of the same inputs), or empty (Spack,
    #: a managed language only): in every dependent test's provenance.
    kernels_build = variable(str, value='')

    #: The cache key of the compiled kernels (:func:`commcheck.site.kbuild.build_key`).
    kernels_key = variable(str, value='')

    #: The stored build a reused one comes from (empty unless reused).
    reused_from = variable(str, value='')

    #: When the build job started and ended (Unix seconds, the job's own clock; 0 if unknown):
    #: shows in the run report that builds ended before the measurements started.
    build_started = variable(float, value=0.0)
    build_ended = variable(float, value=0.0)

    #: What this environment is (the generated configuration's extras, or learned from the
    #: environment: :func:`commcheck.rfm.learned.environment_facts`); every check of the
    #: environment reads it as ``self.kernels.stack``.
    #:
    #: :type: :class:`dict`
    #: :default: set at setup
    stack = variable(dict, value={})

    @run_after('setup')
    def learn_the_stack(self):
        """The environment's facts, before anything reads them (first of the setup hooks)."""
        self.stack = learned.environment_facts(self.current_environ, self.current_partition,
                                               Path(self.stagedir) / 'probe')

    @run_after('setup')
    def share_the_partitions_job_limit(self):
        """A local partition's build is one of its jobs (see the module's docstring).

        ReFrame created the build job in setup with the local scheduler either way; only the
        executor's accounting reads ``build_locally`` after this point.
        """
        if self.current_partition.scheduler.is_local:
            self.build_locally = False

    @run_after('setup')
    def choose_build_path(self):
        extras = self.stack
        self.backend = extras.get(vocab.BUILD, 'cmake')
        if 'c' not in extras[vocab.LANGUAGES]:
            self._use_managed_only(extras)
        elif self.backend == 'spack':
            self._use_spack(extras)
        else:
            self._use_cmake(extras)

    def _use_cmake(self, extras):
        fortran = 'ON' if 'fortran' in extras[vocab.LANGUAGES] else 'OFF'
        options = [f'-DCOMMCHECK_FORTRAN={fortran}', '-DCMAKE_BUILD_TYPE=Release']
        environ = self.current_environ
        # A learned environment's compilers are the ones its probe built MPI programs with.
        cc, ftn = extras.get(vocab.MPI_CC) or environ.cc, extras.get(vocab.MPI_FC) or environ.ftn
        self.kernels_inputs = kbuild.build_inputs(
            {'c': cc, 'fortran': ftn if fortran == 'ON' else ''}, extras[vocab.MPI],
            {k: os.path.expandvars(str(v)) for k, v in environ.env_vars.items()},
            [*options, *environ.cflags, *environ.fflags, *environ.ldflags])
        self.kernels_key = kbuild.build_key(extras[vocab.STACK], self.kernels_inputs)
        found = kbuild.stored(self.kernels_key)
        if found:
            self.kernels_build, self.reused_from = 'reused', str(found)
            self.sourcesdir = None
            self.build_system = 'CustomBuild'
            self.build_system.commands = [
                f'echo "commcheck: kernels of {extras[vocab.STACK]} reused from {found}"']
            return
        self.kernels_build = 'built'
        self.sourcesdir = str(paths.KERNELS_SRC)
        self.build_system = 'CMake'
        self.build_system.builddir = 'build'
        self.build_system.max_concurrency = os.cpu_count() or 1
        self.build_system.config_opts = options
        self.build_system.cc, self.build_system.ftn = cc, ftn
        self.postbuild_cmds = [
            # back in the stage: ReFrame before 4.8 leaves the build in its build directory
            f'cd {shlex.quote(self.stagedir)}',
            f'cmake --install build --prefix {self.local_prefix}',
            f'{shlex.quote(extras[vocab.PYTHON_EXE])} -m commcheck.site.kbuild store '
            f'{self.local_prefix} {self.kernels_key} {INPUTS_FILE} '
            f'{shlex.quote(str(kbuild.cache_root()))}']

    @run_before('compile')
    def write_kernels_inputs(self):
        """What the build is keyed by, beside it in the stage: stored with it."""
        if self.kernels_build == 'built' and not self.is_dry_run():
            with open(os.path.join(self.stagedir, INPUTS_FILE), 'w', encoding='utf-8') as out:
                json.dump(self.kernels_inputs, out, indent=1)

    def _use_spack(self, extras):
        self.sourcesdir = None
        self.build_system = 'Spack'
        self.build_system.environment = extras[vocab.SPACK_ENV]
        self.build_system.emit_load_cmds = False
        # The kernels only: OSU is installed on its own after them (write_spack_environment).
        self.build_system.install_opts = ['--fail-fast', spack_env.KERNELS_PACKAGE]

    def _use_managed_only(self, extras):
        """An environment of a managed language only (MPJ Express): no compiled kernels."""
        self.backend = 'managed'
        self.sourcesdir = None
        self.build_system = 'CustomBuild'
        self.build_system.commands = []

    @run_before('compile', always_last=True)
    def build_managed_kernels(self):
        """The Java kernels (javac against MPJ Express) and mpi4py for this stack (the binary
        wheel where it serves the stack, else built with its wrapper): build commands of this
        fixture's job, after the compiled kernels."""
        extras = self.stack
        python, state = shlex.quote(extras[vocab.PYTHON_EXE]), shlex.quote(str(paths.STATE_DIR))
        commands = []
        if 'java' in extras[vocab.LANGUAGES]:
            commands.append(f'{python} -m commcheck.site.mpj {state} '
                            f'{shlex.quote(extras[vocab.JAVA_BUILD])}')
        if 'python' in extras[vocab.LANGUAGES]:
            commands.append(f'{python} -m commcheck.site.mpi4py_build '
                            f'{shlex.quote(extras[vocab.MPI_CC])} '
                            f'{shlex.quote(str(extras[vocab.MPI_VERSION]))} '
                            f'{shlex.quote(str(paths.CACHE_DIR))} {shlex.quote(extras[vocab.MPI])}')
        if self.backend == 'managed':
            self.build_system.commands = commands
        else:
            self.postbuild_cmds = list(self.postbuild_cmds) + commands
        self.prebuild_cmds = ['echo "BUILD started=$(date +%s.%N)"', *self.prebuild_cmds]
        self.postbuild_cmds = [*self.postbuild_cmds, 'echo "BUILD ended=$(date +%s.%N)"']

    def _parts(self, done: bool) -> list[tuple[str, str, bool]]:
        """(part, state, made in this session) of what this fixture provides: the compiled
        kernels, mpi4py, the Java kernels; ``done``: as the finished build left them."""
        extras, parts = self.stack, []
        if self.kernels_build:
            fresh = self.kernels_build != 'reused'
            parts.append(('kernels', ('built' if done else 'building') if fresh else 'reused',
                          fresh))
        elif self.backend == 'spack':
            parts.append(('Spack environment', 'installed' if done else 'installing', True))
        if 'python' in extras[vocab.LANGUAGES]:
            from commcheck.site import mpi4py_build
            target = mpi4py_build.stack_dir(paths.CACHE_DIR, extras[vocab.MPI_CC],
                                            str(extras[vocab.MPI_VERSION]))
            made = (target / mpi4py_build.DONE).exists()
            fresh = getattr(self, '_mpi4py_fresh', not made)
            self._mpi4py_fresh = fresh
            how = mpi4py_build.build_info(target)['source'] if made else ''
            parts.append(('mpi4py', (how if fresh else f'{how}, reused') if made else
                          'building (the wheel, or from source: minutes)', fresh))
        if 'java' in extras[vocab.LANGUAGES]:
            parts.append(('Java kernels', 'built' if done else 'building', True))
        return parts

    def _say(self, state: str, parts: list[tuple[str, str, bool]], extra: str = '') -> None:
        say(f'build {self.current_environ.name}: {state}{extra} '
            f'({"; ".join(f"{part} {how}" for part, how, _ in parts)})')

    @run_before('compile', always_last=True)
    def say_building(self):
        """One line per stack as its build starts: what is reused and what is built."""
        if not self.is_dry_run():
            parts = self._parts(done=False)
            self._say('building' if any(fresh for *_, fresh in parts) else 'reused', parts)

    @run_before('sanity')
    def read_build_times(self):
        if self.is_dry_run():
            return
        try:
            with open(os.path.join(self.stagedir, str(self.build_stdout)), errors='replace') as fp:
                found = dict(BUILD_TIME.findall(fp.read()))
        except OSError:
            return
        self.build_started = float(found.get('started', 0.0))
        self.build_ended = float(found.get('ended', 0.0))

    @run_before('sanity')
    def say_built(self):
        """One line per stack as its build ended (a failed one: commcheck run says so)."""
        if not self.is_dry_run():
            parts = self._parts(done=True)
            built = any(fresh for *_, fresh in parts)
            took = self.build_ended - self.build_started if self.build_started > 0 else 0
            self._say('built' if built else 'reused', parts,
                      f' in {took:.0f} s' if built and took > 0 else '')

    def command(self, kernel: str, lang: str) -> tuple[str, list[str], dict[str, str]]:
        """How to start a kernel in a language here: (executable, leading options, settings).

        Compiled kernels are programs of this build; Java kernels are classes the launcher's
        JVM starts (commcheck.site.launch); Python kernels are scripts run by the venv's Python
        with this stack's mpi4py on PYTHONPATH (and ``MPI4PY_LIBMPI`` where it is the wheel).
        """
        program = experiments.program(kernel, lang)
        language = experiments.LANGUAGES[lang]
        extras = self.stack
        if language.feature == 'java':
            return program, [], {}
        if language.feature == 'python':
            from commcheck.site import mpi4py_build
            settings = mpi4py_build.kernel_settings(paths.CACHE_DIR, extras[vocab.MPI_CC],
                                                    str(extras[vocab.MPI_VERSION]))
            script = str(paths.KERNELS_SRC / 'python' / program)
            return extras[vocab.PYTHON_EXE], [script, *language.options], settings
        return self.program(program), [], {}

    @run_before('compile')
    def set_build_timeout(self):
        # build_time_limit, not build_job.time_limit: compile() sets the job's limit from it
        # (or else from the partition's time_limit, 10 minutes on the local site, which a cold
        # Spack build of six stacks at once exceeds).
        self.build_time_limit = self.build_timeout

    @run_before('compile')
    def write_spack_environment(self):
        """The materialising step of the Spack path: the declaration becomes spack.yaml.

        Then, for the session's first Spack stack only, a concretization now, in ReFrame's own
        process (it waits): on a cold cache that indexes Spack's package repository, which the
        stacks' parallel installs would otherwise race for. A Spack that cannot work (no
        clingo, no package repository) fails here with one line saying what to set.
        """
        if self.backend != 'spack' or self.is_dry_run():
            return
        extras = self.stack
        spack = spack_env.find_spack()
        if spack is None:
            raise spack_env.SpackSetupError(
                f'{extras[vocab.STACK]} builds with Spack but no Spack is found: set SPACK_ROOT '
                f'to a Spack checkout, or COMMCHECK_BUILD=cmake')
        stack = Stack.model_validate(extras[vocab.DECLARATION])
        settings = extras[vocab.SPACK_SETTINGS]
        text = spack_env.stack_env_text(stack, spack_settings=settings,
                                        view=extras[vocab.SPACK_VIEW],
                                        state_dir=str(paths.STATE_DIR))
        env_dir = extras[vocab.SPACK_ENV]
        spack_env.write_env(env_dir, text)
        self.prebuild_cmds = [f'export PATH={shlex.quote(os.path.dirname(spack))}:"$PATH"']
        osu = spack_env.osu_spec(settings)
        self.postbuild_cmds = spack_env.osu_install_commands(
            env_dir, osu, extras[vocab.STACK],
            spack_env.mirror_problem(spack_env.mirror_of(settings), osu))
        state = str(paths.STATE_DIR / 'spack')
        if state not in _CONCRETIZED_FIRST:
            spack_env.concretize_once(spack, env_dir, state)
            _CONCRETIZED_FIRST.add(state)

    @run_after('compile')
    def record_spack_lock(self):
        if self.backend != 'spack':
            return
        env_dir = self.stack.get('spack_env') or ''
        self.spack_lock = spack_env.lock_digest(env_dir)
        marker = spack_env.osu_failure_marker(env_dir)
        if os.path.isfile(marker):
            with open(marker, encoding='utf-8') as handle:
                self.osu_error = handle.read().strip()

    @property
    def prefix_dir(self) -> str:
        if self.backend == 'spack':
            return self.stack['spack_view']
        if self.reused_from:
            return self.reused_from
        return os.path.join(self.stagedir, self.local_prefix)

    def build_provenance(self) -> dict[str, str]:
        """How this environment's programs came, for the provenance of the tests using them."""
        extras, found = self.stack, {}
        if self.kernels_build:
            found.update(kernels_build=self.kernels_build, kernels_key=self.kernels_key)
        if 'python' in extras[vocab.LANGUAGES]:
            from commcheck.site import mpi4py_build
            target = mpi4py_build.stack_dir(paths.CACHE_DIR, extras[vocab.MPI_CC],
                                            str(extras[vocab.MPI_VERSION]))
            if os.path.exists(os.path.join(target, mpi4py_build.DONE)):
                found['mpi4py'] = mpi4py_build.build_info(target)['source']
        return found

    def program(self, name: str) -> str:
        """Absolute path of one of the project's programs (``pingpong-c``, ``stencil-f``, ...)."""
        return os.path.join(self.prefix_dir, 'bin', name)

    @sanity_function
    def programs_installed(self):
        """Every program the checks may ask for exists: a partial build fails here, not later."""
        extras = self.stack
        wanted = [(self.program(p), f'{p} was not built: not in {self.prefix_dir}/bin')
                  for p in experiments.compiled_programs(extras[vocab.LANGUAGES])]
        if 'java' in extras[vocab.LANGUAGES]:
            from commcheck.site import mpj
            jar = os.path.join(extras[vocab.JAVA_BUILD], mpj.JAR_NAME)
            wanted.append((jar, f'the Java kernels were not built: no {jar}'))
        if 'python' in extras[vocab.LANGUAGES]:
            from commcheck.site import mpi4py_build
            target = str(mpi4py_build.stack_dir(paths.CACHE_DIR, extras[vocab.MPI_CC],
                                                str(extras[vocab.MPI_VERSION])))
            wanted.append((os.path.join(target, mpi4py_build.DONE),
                           f'mpi4py was not built for {extras[vocab.STACK]} in {target}'))
        return sn.all(sn.assert_true(os.path.exists(path), msg=msg) for path, msg in wanted)


def osu_program(environ_extras: dict, name: str) -> str | None:
    """Path of an OSU point-to-point program for this environment, or None where there is none.

    With an OSU module, the bare name: the module is loaded in the job, which finds it on PATH.
    """
    if environ_extras.get(vocab.OSU_MODULE):
        return name
    roots = []
    if environ_extras.get(vocab.BUILD) == 'spack' and not os.path.isfile(
            spack_env.osu_failure_marker(environ_extras.get(vocab.SPACK_ENV) or '')):
        roots.append(environ_extras[vocab.SPACK_VIEW])
    if environ_extras.get(vocab.OSU_ROOT):
        roots.append(environ_extras[vocab.OSU_ROOT])
    for root in roots:
        found = sorted(glob.glob(os.path.join(root, '**', name), recursive=True))
        found = [f for f in found if os.access(f, os.X_OK) and not os.path.isdir(f)]
        if found:
            return found[0]
    return None


class OsuProgram(Plugin):
    """Mixed into the OSU checks: finds the program named by the check's ``benchmark``
    parameter, or skips saying why. Precondition: the check has a ``benchmark`` (an OSU
    program name) and the StackCheck's ``skip_because``."""

    @run_after('setup')
    def find_program(self):
        # The fixture has not run yet when Spack provides OSU; the view path is already known.
        self.osu_path = osu_program(self.stack, self.benchmark)
        self.skip_because(
            self.osu_path is None and self.stack.get("build") != "spack",
            f'{self.benchmark}: OSU Micro-Benchmarks need Spack or a site install (OSU_ROOT or '
            f'a module); {self.current_environ.name} has neither')

    @run_before('run')
    def set_osu_executable(self):
        self.executable = self.osu_path or osu_program(self.stack,
                                                       self.benchmark)
