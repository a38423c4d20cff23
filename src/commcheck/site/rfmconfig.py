"""The ReFrame configuration of a :class:`commcheck.site.Site`: pure, it writes nothing.

One system per site, one partition per declared partition, one environment per stack, with the
``extras`` every check reads and the ``features`` checks select environments by (``+c``,
``+fortran``, ``+python``, ``+java``, ``+osu``). What a run materialises (Spack environments,
MPJ Express home, mpi4py builds) is made by the fixtures that need it, when they run.
"""

from __future__ import annotations

import os
import sys

from commcheck import __version__, experiments, paths
from commcheck.site import Partition, Site, Stack, env_flag
from commcheck.site import vocabulary as vocab

#: One perflog line per performance variable (``perflog_multiline``): the header never depends
#: on which variables a test produced, so an aborted test cannot make ReFrame rotate the file.
PERFLOG_FIELDS = ('check_job_completion_time', 'version', 'check_display_name', 'check_system',
                  'check_partition', 'check_environ', 'check_result', 'check_reference_status',
                  'check_binding', 'check_placement', 'check_job_nodelist', 'check_perf_var',
                  'check_perf_value', 'check_perf_unit', 'check_perf_ref',
                  'check_perf_lower_thres', 'check_perf_upper_thres', 'check_perf_result')


def state_paths(site: Site) -> dict[str, str]:
    """Where a site's run state lives (nothing here is created by loading the configuration)."""
    state = paths.STATE_DIR
    return {'stage': str(state / 'stage'), 'output': str(state / 'output'),
            'spack_envs': str(state / 'spack-env' / site.name),
            'spack_views': str(state / 'spack-views' / site.name),
            'mpj_home': str(state / 'mpj'),
            'java_build': str(state / 'java')}


def features(stack: Stack) -> list[str]:
    """What checks select environments by: the languages it tests, and ``osu`` where OSU can
    come from. (ReFrame matches ``+name`` against extras keys too: no extras key may be one of
    these names.)"""
    feats = list(stack.tested_languages)
    if not stack.mpi.record.java and (stack.build == 'spack' or stack.osu):
        feats.append('osu')
    return feats


def environment(site: Site, stack: Stack) -> dict:
    where = state_paths(site)
    env = stack.job_env(as_root=os.geteuid() == 0)
    if stack.mpi.record.java:
        env['MPJ_HOME'] = where['mpj_home']
    extras = {
        vocab.STACK: stack.id, vocab.COMPILER: stack.compiler.family,
        vocab.COMPILER_VERSION: stack.compiler.version, vocab.MPI: stack.mpi.flavour,
        vocab.MPI_VERSION: stack.mpi.version, vocab.BUILD: stack.build,
        vocab.MPI_LIBRARY: list(stack.mpi.expected_library),
        vocab.LANGUAGES: list(stack.tested_languages), vocab.HAS_FORTRAN: stack.has_fortran,
        vocab.LAUNCHER: stack.mpi.launcher_command, vocab.SRUN_MPI: stack.mpi.srun_mpi or
        stack.mpi.record.srun_mpi, vocab.MPI_CC: stack.mpi.c_wrapper or '',
        vocab.MPI_PREFIX: stack.mpi.install_prefix or '',
        vocab.SPACK_ENV: os.path.join(where['spack_envs'], stack.id)
                         if stack.build == 'spack' else '',
        vocab.SPACK_VIEW: os.path.join(where['spack_views'], stack.id)
                      if stack.build == 'spack' else '',
        vocab.OSU_ROOT: (stack.osu.root if stack.osu else None) or '',
        vocab.OSU_MODULE: (stack.osu.module if stack.osu else None) or '',
        vocab.PYTHON_EXE: sys.executable,
        vocab.MPJ_HOME: where['mpj_home'] if stack.mpi.record.java else '',
        vocab.JAVA_BUILD: where['java_build'], vocab.COMMCHECK_VERSION: __version__,
        # The declaration itself, for the fixtures that materialise it (Spack, mpi4py, MPJ).
        vocab.DECLARATION: stack.model_dump(mode='json'),
        vocab.SPACK_SETTINGS: site.spack.model_dump(),
    }
    modules = list(stack.modules)
    if stack.mpi.module:
        modules.append(stack.mpi.module)
    if stack.osu and stack.osu.module:
        modules.append(stack.osu.module)
    targets = [f'{site.name}:{p}' for p in stack.partitions] if stack.partitions else [site.name]
    return {
        'name': stack.id, 'target_systems': targets, 'modules': modules,
        'cc': stack.mpi.c_wrapper or '', 'cxx': '', 'nvcc': '',
        'ftn': stack.fortran_wrapper or '' if stack.has_fortran else '',
        'env_vars': [[k, v] for k, v in env.items()],
        'features': features(stack), 'extras': extras,
    }


def partition(site: Site, part: Partition) -> dict:
    config = {
        'name': part.name, 'scheduler': part.scheduler, 'launcher': part.launcher,
        'access': list(part.access), 'environs': [s.id for s in site.stacks_of(part)],
        'max_jobs': part.max_jobs, 'processor': {'num_cpus': part.cores},
        'prepare_cmds': list(part.prepare_cmds),
        'env_vars': [[k, v] for k, v in part.env.items()],
        'extras': {vocab.CORES: part.cores, vocab.NODES: part.nodes,
                   vocab.PLACEMENT: part.placement,
                   vocab.BINDING: part.binding, vocab.OVERSUBSCRIBE: part.oversubscribe,
                   vocab.LAUNCHER: part.launcher, vocab.EXCLUSIVE: part.exclusivity[0],
                   vocab.EXCLUSIVE_BASIS: part.exclusivity[1]},
    }
    if part.llc_mib:        # ReFrame's processor topology: read by commcheck.rfm.caches
        config['processor']['topology'] = {'caches': [{'type': 'L3', 'size': part.llc_mib << 20}]}
    if part.time_limit:
        config['time_limit'] = part.time_limit
    return config


def logging_config() -> dict:
    handlers = [{'type': 'stream', 'name': 'stdout', 'level': 'info', 'format': '%(message)s'}]
    if paths.REPORTS_DIR.is_dir():      # `commcheck run` makes it; loading never does
        handlers.insert(0, {
            'type': 'file', 'name': str(paths.REPORTS_DIR / 'reframe.log'), 'level': 'debug',
            'append': True, 'format': '[%(asctime)s] %(levelname)s: %(check_info)s: %(message)s'})
    return {
        'perflog_multiline': True,
        'handlers': handlers,
        'handlers_perflog': [{
            'type': 'filelog', 'prefix': '%(check_system)s/%(check_partition)s',
            'basedir': str(paths.PERFLOG_DIR), 'level': 'info', 'append': True,
            'format': '|'.join(f'%({f})s' for f in PERFLOG_FIELDS),
        }],
    }


def reframe_configuration(site: Site) -> dict:
    where = state_paths(site)
    return {
        'systems': [{
            'name': site.name, 'descr': site.description or site.name,
            'hostnames': list(site.hostnames), 'modules_system': site.modules_system,
            'stagedir': where['stage'], 'outputdir': where['output'],
            'partitions': [partition(site, p) for p in site.partitions],
        }],
        'environments': [environment(site, s) for s in site.stacks],
        'general': [{
            'check_search_path': [str(paths.CHECKS_DIR)],
            'report_file': str(paths.RUNS_DIR / 'run-report-{sessionid}.json'),
            'perf_info_level': 'info',
        }],
        'storage': [{'enable': True, 'sqlite_db_file': str(paths.RESULTS_DB)}],
        'modes': [{'name': mode, 'options': experiments.mode_options(mode)}
                  for mode in experiments.MODES],
        'logging': [logging_config()],
    }


def site_from_environment() -> Site:
    """The site ``COMMCHECK_SITE`` names (a file in config/sites, a path, or ``local``)."""
    from commcheck.site import sitefile
    return sitefile.load_named(env_flag('COMMCHECK_SITE') or 'local')
