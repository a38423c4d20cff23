"""``write_report``: one new directory per report, never a file of an earlier one overwritten.

    <out_root>/<YYYY-MM-DD>-<session uuid[:8]>[-N]/
        index.html      the page (self-contained: local PNGs, inline CSS, no script)
        summary.md      the verdict in Markdown, for a ticket or a CI log
        data.json       every number the page shows, by section
        plots/*.png

Every problem met on the way (unreadable data, a section that cannot be built) is one warning,
passed to ``warn`` and listed under the verdict; the report is written regardless.
"""

from __future__ import annotations

import datetime
import itertools
import json
import math
import re
import time
from pathlib import Path

from commcheck import __version__
from commcheck.report import inputs, render
from commcheck.report.context import Context, Section
from commcheck.report.model import Measurements, cases_of, environments
from commcheck.report.plots import Plotter
from commcheck.report.sections import SECTIONS
from commcheck.results import store
from commcheck.results.history import HistoryUnavailable
from commcheck.results.store import Session, Warn


def _date(session: Session | None) -> str:
    if session is not None:
        start = str(session.info.get('time_start') or '')
        try:
            return datetime.datetime.strptime(start[:8], '%Y%m%d').date().isoformat()
        except ValueError:
            pass
        if session.time_start > 0:
            return datetime.datetime.fromtimestamp(session.time_start,
                                                   datetime.timezone.utc).date().isoformat()
    return datetime.date.today().isoformat()


def new_directory(out_root: Path, session: Session | None) -> Path:
    """A directory that did not exist: ``<date>-<uuid8>``, else ``-2``, ``-3``..."""
    uuid = re.sub(r'[^0-9A-Za-z]', '', session.uuid)[:8] if session else ''
    stem = f'{_date(session)}-{uuid or "nosession"}'
    out_root.mkdir(parents=True, exist_ok=True)
    for n in itertools.count(1):
        path = out_root / (stem if n == 1 else f'{stem}-{n}')
        try:
            path.mkdir()
        except FileExistsError:
            continue
        return path
    raise AssertionError('unreachable')


_LEAVES = frozenset((str, int, bool, type(None)))


def jsonable(value):
    """Plain JSON: non-finite numbers as null, tuples as lists, keys as text. Exact types
    first, leaves without a call (a year of history is over a million values)."""
    kind = type(value)
    if kind is float:
        return value if value - value == 0 else None            # inf - inf, nan: nan
    if kind in _LEAVES:
        return value
    if kind is dict:
        return {k if type(k) is str else str(k):
                v if type(v) in _LEAVES else jsonable(v) for k, v in value.items()}
    if kind is list or kind is tuple:
        return [v if type(v) in _LEAVES else jsonable(v) for v in value]
    if isinstance(value, float):                                # numpy's, say
        return float(value) if math.isfinite(value) else None
    if isinstance(value, dict):
        return jsonable(dict(value))
    if isinstance(value, (list, tuple, set)):
        return [jsonable(v) for v in value]
    if isinstance(value, (str, int, bool)):
        return value
    return str(value)


def _build_sections(ctx: Context) -> list[dict]:
    built = []
    for sid, title, module in SECTIONS:
        try:
            section = module.build(ctx)
        except HistoryUnavailable:      # the shared store went away: no page on part of it
            raise
        except Exception as err:  # noqa: BLE001 - the report is written whatever one section meets
            ctx.warn(f'section "{title}" could not be built ({type(err).__name__}: {err}); '
                     f'the rest of the report is complete')
            section = Section({'error': f'{type(err).__name__}: {err}'}, 'error.html.j2')
        built.append({'id': sid, 'title': title, 'section': section})
    return built


def _render_sections(env, built: list[dict], meta: dict, warn: Warn) -> list[dict]:
    out = []
    for item in built:
        section = item['section']
        try:
            html = env.get_template(f'sections/{section.template}').render(
                s=item, d=section.data, plots=section.plots, meta=meta)
        except Exception as err:  # noqa: BLE001 - same: one section never stops the page
            warn(f'section "{item["title"]}" could not be rendered ({type(err).__name__}: '
                 f'{err})')
            html = env.get_template('sections/error.html.j2').render(
                s=item, d={'error': f'{type(err).__name__}: {err}'}, plots=[], meta=meta)
        out.append({**item, 'html': html})
    return out


def _incomplete(session: Session) -> str | None:
    """A session whose record held fewer readable test cases than ReFrame ran."""
    ran = session.info.get('num_cases')
    if isinstance(ran, int) and not isinstance(ran, bool) and len(session.cases) < ran:
        return (f'session {session.uuid}: ReFrame ran {ran} test case(s), {len(session.cases)} '
                f'could be read (damaged or truncated record); the counts show those read')
    return None


def write_report(sessions: list[Session], out_root: Path, *,
                 history_sessions=(), gate: dict | None = None,
                 warn: Warn = store.warn_stderr, notes: list[str] = (),
                 upgrade: dict | None = None) -> Path:
    """Write the report of ``sessions`` into a new directory under ``out_root``; returns the
    path of its ``index.html``. ``notes``: problems already met (and warned) while reading the
    inputs, listed on the page with those met here. ``history_sessions``: stored sessions, or
    a :class:`commcheck.report.inputs.StoredHistory` read one variable at a time."""
    started = time.perf_counter()
    warnings: list[str] = list(notes)

    def note(message: str) -> None:
        warnings.append(message)
        warn(message)

    sessions = sorted({s.uuid: s for s in sessions if isinstance(s, Session)}.values(),
                      key=lambda s: s.time_start)
    if not sessions:
        note('no session could be read: the report has nothing to show')
    for session in sessions:
        problem = _incomplete(session)
        if problem:
            note(problem)
    out_dir = new_directory(Path(out_root), sessions[-1] if sessions else None)
    cases = cases_of(sessions)
    envs = environments(cases)
    systems = sorted({c.system for c in cases if c.system})
    ctx = Context(
        sessions=sessions, cases=cases,
        values=Measurements(s for sess in sessions for s in sess.samples),
        environments=envs, gate=gate if isinstance(gate, dict) else None,
        history=inputs.shown_history(history_sessions),
        baselines=inputs.load_baselines(systems, note), plots=Plotter(out_dir, envs), warn=note,
        upgrade=upgrade if isinstance(upgrade, dict) else None)
    built = _build_sections(ctx)
    failed = ctx.plots.finish(note)
    for item in built:
        item['section'].plots = [p for p in item['section'].plots if p['file'] not in failed]
    verdict = built[0]['section'].data
    verdict['warnings'] = warnings           # the same list: later warnings show up too
    meta = {'sessions': [s.uuid for s in sessions], 'systems': systems,
            'environments': envs, 'generated': datetime.datetime.now(datetime.timezone.utc)
            .isoformat(timespec='seconds'), 'commcheck': __version__,
            'directory': out_dir.name}
    return _write_files(out_dir, built, meta, verdict, note, started)


def _write_files(out_dir: Path, built: list[dict], meta: dict, verdict: dict, note,
                 started: float) -> Path:
    """``index.html``, ``summary.md`` and ``data.json`` of the built sections."""
    env = render.html_environment()
    rendered = _render_sections(env, built, meta, note)
    page = env.get_template('index.html.j2').render(sections=rendered, meta=meta,
                                                    verdict=verdict)
    (out_dir / 'index.html').write_text(page, encoding='utf-8')
    summary = render.markdown_environment().get_template('summary.md.j2').render(
        d=verdict, meta=meta)
    (out_dir / 'summary.md').write_text(summary, encoding='utf-8')
    meta['seconds'] = round(time.perf_counter() - started, 3)
    data = {'meta': meta,
            'sections': {item['id']: {'title': item['title'], 'plots': item['section'].plots,
                                      **item['section'].data} for item in built}}
    # one line: the indenting encoder is pure Python, 10x slower on a year of history
    (out_dir / 'data.json').write_text(json.dumps(jsonable(data), allow_nan=False) + '\n',
                                       encoding='utf-8')
    return out_dir / 'index.html'
