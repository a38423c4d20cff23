"""7. Provenance: what was measured with, per environment, and how the session was run."""

from __future__ import annotations

from collections import Counter

from commcheck import __version__
from commcheck.report.context import Context, Section
from commcheck.report.model import finite, text

#: Provenance fields shown per environment, in this order (``env.*`` settings follow).
FIELDS = ('system', 'partition', 'mpi', 'mpi_version', 'compiler', 'compiler_version', 'build',
          'languages', 'binding', 'placement', 'cores', 'affinity_cpus', 'scheduler',
          'launcher', 'host', 'reframe', 'commcheck')
SESSION_FIELDS = ('uuid', 'hostname', 'time_start', 'time_end', 'time_elapsed', 'version',
                  'cmdline', 'workdir', 'config_files')


def _distinct(values: list[str]) -> str:
    """One value, or every value seen with its count when the tests disagree."""
    found = Counter(v for v in values if v)
    if len(found) <= 1:
        return next(iter(found), '')
    return ', '.join(f'{v} ({n})' for v, n in found.most_common())


def _environment(ctx: Context, env: str) -> dict:
    cases = [c for c in ctx.cases if c.environ == env]
    tests = [c for c in cases if not c.fixture and c.provenance]
    fields = {f: _distinct([c.provenance.get(f, '') for c in tests]) for f in FIELDS}
    settings = sorted({k for c in tests for k in c.provenance if k.startswith('env.')})
    locks = _distinct([text(c.raw.get('spack_lock')) for c in cases if c.fixture])
    return {'environ': env, 'fields': fields,
            'settings': {k[4:]: _distinct([c.provenance.get(k, '') for c in tests])
                         for k in settings},
            'spack_lock': locks, 'recorded': bool(tests)}


def _session(s) -> dict:
    info = {f: s.info.get(f) for f in SESSION_FIELDS}
    files = info.get('config_files')
    info['config_files'] = ', '.join(text(f) for f in files) if isinstance(files, list) else ''
    info['time_elapsed'] = finite(info.get('time_elapsed'))
    return {k: v if isinstance(v, (int, float)) and not isinstance(v, bool) else text(v)
            for k, v in info.items()}


def build(ctx: Context) -> Section:
    return Section({
        'sessions': [_session(s) for s in ctx.sessions],
        'environments': [_environment(ctx, env) for env in ctx.environments],
        'fields': list(FIELDS), 'report_commcheck': __version__}, 'provenance.html.j2')
