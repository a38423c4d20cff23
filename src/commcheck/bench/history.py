"""Benchmark, not a test: what the gate's data path costs as the stored history grows.

For each size, a history of N nightly sessions is made from one real session
(:mod:`commcheck.results.history_gen`: new uuids, noise, drifts, two planted upgrades) into a
ReFrame results database, and each command a site runs is timed in its own process, with its peak
memory (the child's ``ru_maxrss`` from ``wait4``):

- ``baseline --last 20``: decodes the last 20 sessions, in a process per core, keeping only
  the samples the gate judges (it never reads the index, which holds every variable);
- ``compare``: the newest session against that baseline (decodes one session);
- ``history`` cold (builds the sample index from every session) and warm (index up to date);
- ``history`` after one more session was stored (the index adds it, nothing else);
- ``report`` of the newest session (its history section from the index);
- the peer: ReFrame's own ``reframe --performance-compare`` of the newest session against the
  20 sessions before it (median), which decodes every session of both windows, and
  ``reframe --list-stored-sessions`` (it reads every session's record to list them).

``--clusters K`` makes K clusters' histories in the one database (``c1``, ``c2``, ...; each
step reads the first, ``--cluster c1``). ``--store URL`` (the owner role of an empty shared
store) pushes the same database into the store with ``commcheck push`` and times the same steps
on it (``--db URL``: baseline, compare, history of the cluster, report of its newest session)
and the push of one more session, beside the SQLite path in the same run; the store is emptied
again after each size.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from rich.table import Table

from commcheck import console as textconsole
from commcheck import paths
from commcheck.bench import machine
from commcheck.results import history_gen, store

console = textconsole.make()
#: Seconds between nightly sessions.
DAY = history_gen.DAY
#: The command each timed step runs, in a process of its own.
CC = [sys.executable, '-m', 'commcheck.cli']
#: The real session the histories are made from (the report tests' fixture), by default.
SOURCE = paths.REPO_ROOT / 'tests' / 'report' / 'fixtures' / 'session-main.json.gz'
#: Sessions the baseline takes: ``baseline --last``, and the peer's window before the newest.
BASELINE_SESSIONS = 20


def timed(cmd: list[str], env: dict) -> tuple[str, float, int]:
    """('wall s (CPU s)', peak MB, exit code) of one command run in its own process: on a
    shared machine the CPU time is the steadier figure."""
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        proc.returncode = code = os.waitstatus_to_exitcode(status)
        if code:                   # said, whatever it is: a bench must not time a refusal
            err.seek(0)
            tail = err.read().decode(errors='replace').strip()[-400:]
            console.print(f'[red]{" ".join(cmd[2:5])} exited {code}[/red]: {tail}')
    cpu = usage.ru_utime + usage.ru_stime
    return f'{seconds:.1f} s ({cpu:.1f})', usage.ru_maxrss / 1024, code


def _stamp(unix: float) -> str:
    return datetime.fromtimestamp(unix, timezone.utc).strftime('%Y%m%dT%H%M%S')


def cluster_names(clusters: int) -> list[str | None]:
    """The clusters of a generated history: the source session's own system when one, else
    ``c1``, ``c2``, ...; the first is the one the steps time."""
    return [None] if clusters == 1 else [f'c{k + 1}' for k in range(clusters)]


def generate(report: dict, n: int, repeat: int, widen: int, clusters: int, db: Path,
             start: float) -> list[history_gen.Generator]:
    """``n`` nightly sessions of each cluster into ``db``, the clusters' sessions of one
    night a minute apart; the generators (the first's next session is the one added)."""
    gens = [history_gen.Generator(report, n, repeat=repeat, widen=widen, seed=k,
                                  start=start + 60 * k, cluster=name)
            for k, name in enumerate(cluster_names(clusters))]
    history_gen.write_db(db, (g.session(i) for i in range(n) for g in gens))
    return gens


def one_size(report: dict, n: int, args, root: Path) -> dict[str, tuple]:
    repeat, widen, clusters = args.repeat, args.widen, args.clusters
    where = root / f'{n}x{repeat}x{widen}x{clusters}'
    db = where / 'results.db'
    began = time.perf_counter()
    gens = generate(report, n, repeat, widen, clusters, db, time.time() - (n + 1) * DAY)
    made = time.perf_counter() - began
    env = {**os.environ, 'COMMCHECK_REPORTS': str(where), 'COMMCHECK_STATE': str(where / 'state'),
           'RFM_REFERENCE_PREFIX': str(where / 'refs'), 'RFM_SQLITE_DB_FILE': str(db)}
    env.pop('COMMCHECK_HISTORY', None)          # the local steps read the file
    cluster = cluster_names(clusters)[0]
    one = ['--cluster', cluster] if cluster else []
    stored = store.ResultsDB(db).stored(cluster=cluster)
    newest, window = stored[-1], stored[-1 - BASELINE_SESSIONS:-1] or stored[:1]
    peer = f'{_stamp(window[0].time_start)}:{_stamp(newest.time_start)}/{newest.uuid}/median:/'
    per_session = sum(len(r['testcases']) for r in gens[0].session(0)['runs'])
    out = {'sessions': (n * clusters, None, None), 'clusters': (clusters, None, None),
           'test cases a session': (per_session, None, None),
           'test cases': (per_session * n * clusters, None, None),
           'database MB': (db.stat().st_size / 1e6, None, None),
           'generate': (f'{made:.1f} s', None, 0)}
    if args.store:
        out.update(store_steps(args.store, db, where, env, one, newest.uuid, gens[0]))
    baseline = [*CC, 'baseline', '--last', str(BASELINE_SESSIONS), *one]
    out['baseline --last 20'] = timed(baseline, env)
    out['compare'] = timed([*CC, 'compare', *one, '--json', str(where / 'gate.json')], env)
    out['history (cold index)'] = timed([*CC, 'history', *one], env)
    out['history (warm)'] = timed([*CC, 'history', *one], env)
    history_gen.write_db(db, [gens[0].session(n)])     # the next night's session
    out['history (+1 session)'] = timed([*CC, 'history', *one], env)
    out['report'] = timed([*CC, 'report', newest.uuid, '--out', str(where / 'out')], env)
    rfm = [str(Path(sys.executable).with_name('reframe')), '-C',
           str(paths.CONFIG_DIR / 'local.py'), f'--performance-compare={peer}']
    out['reframe --performance-compare'] = timed(rfm, env)
    out['reframe --list-stored-sessions'] = timed([*rfm[:3], '--list-stored-sessions=all'], env)
    out['index MB'] = (sum(p.stat().st_size for p in where.glob('*.index.db')) / 1e6, None,
                       None)
    return out


def store_steps(url: str, db: Path, where: Path, env: dict, one: list[str], newest: str,
                gen: history_gen.Generator) -> dict[str, tuple]:
    """The same history pushed into the store (through ``commcheck push``), the same
    commands timed on it, and the push of one more session; the store emptied after (it
    held nothing before: :func:`empty_store`)."""
    env = {**env, 'RFM_REFERENCE_PREFIX': str(where / 'store-refs')}
    db_ = ['--db', url]
    out = {'store: push every session': timed([*CC, 'push', *db_, str(db)], env)}
    out['store: baseline --last 20'] = timed(
        [*CC, 'baseline', *db_, '--last', str(BASELINE_SESSIONS), *one], env)
    out['store: compare'] = timed(
        [*CC, 'compare', *db_, *one, '--json', str(where / 'store-gate.json')], env)
    out['store: history'] = timed([*CC, 'history', *db_, *one], env)
    out['store: report'] = timed(
        [*CC, 'report', *db_, newest, '--out', str(where / 'store-out')], env)
    report = where / 'next-session.json'
    report.write_text(json.dumps(gen.session(gen.n + 1)), encoding='utf-8')
    out['store: push one session'] = timed([*CC, 'push', *db_, str(report)], env)
    empty_store(url, after=True)
    return out


def empty_store(url: str, after: bool = False) -> None:
    """Before: the store must hold no session (the bench deletes what it pushed, and
    nothing else may be lost). After: every session deleted (as the store's owner)."""
    from commcheck import dburl
    from commcheck.results import pgstore
    with pgstore.connect(url, 'bench') as conn:
        pgstore.ensure_schema(conn, url)
        if after:
            conn.execute(f'DELETE FROM {pgstore.SCHEMA}.sessions')
            return
        held = conn.execute(f'SELECT count(*) FROM {pgstore.SCHEMA}.sessions').fetchone()[0]
    if held:
        raise store.HistoryError(f'--store {dburl.redact(url)} holds {held} session(s): the '
                                 f'bench needs an empty store (it deletes what it pushes)')


def table(results: dict[str, dict], repeat: int, widen: int, clusters: int = 1) -> Table:
    sizes = list(results)
    t = Table(title=f'commcheck bench history: nightly sessions of the source session, '
                    f'--repeat {repeat} --widen {widen} --clusters {clusters} (the steps read '
                    f'the first; "store:" on the shared store): wall seconds (CPU seconds) / '
                    f'peak MB; '
                    f'exit code if not 0',
              header_style='bold')
    t.add_column('step')
    for n in sizes:
        t.add_column(f'{n} sessions', justify='right')
    for step in results[sizes[0]]:
        cells = []
        for n in sizes:
            value, peak, code = results[n][step]
            if peak is None and code is None:
                cells.append(f'{value:,}' if isinstance(value, int) else f'{value:,.1f}')
            else:
                cells.append(value + (f' / {peak:.0f} MB' if peak else '')
                             + (f' (exit {code})' if code else ''))
        t.add_row(step, *cells)
    return t


def main(args) -> int:
    source = Path(args.source) if args.source else SOURCE
    try:
        report = history_gen.source_report(source)
    except (OSError, ValueError) as err:
        raise store.HistoryError(f'{source}: not a readable run report ({err})') from None
    sizes = args.sessions or [30, 120, 365]
    if args.store:
        empty_store(args.store)
    results = {}
    with tempfile.TemporaryDirectory(prefix='commcheck-bench-history-',
                                     dir=args.keep) as tmp:
        for n in sizes:
            console.print(f'{n} sessions, --repeat {args.repeat} --widen {args.widen}: '
                          f'generating and timing...')
            results[n] = one_size(report, n, args, Path(tmp))
            console.print(table(results, args.repeat, args.widen, args.clusters))
    console.print(f'source session: {source}; machine: {machine.describe()}; '
                  f'{time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}')
    return 0
