"""5. History: each key (gated) variable over the stored sessions, against its baseline band,
with the change points :mod:`commcheck.analysis.trend` finds."""

from __future__ import annotations

import dataclasses
import statistics

from commcheck import experiments
from commcheck.analysis import trend
from commcheck.report.context import Context, Section
from commcheck.report.model import finite
from commcheck.report.plots import Painter
from commcheck.report.render import short_when
from commcheck.results.store import key_label


def _sessions(ctx: Context) -> list:
    seen, out = set(), []
    for s in sorted([*ctx.history.sessions(), *ctx.sessions], key=lambda s: s.time_start):
        if s.uuid not in seen:
            seen.add(s.uuid)
            out.append(s)
    return out


def _baseline(ctx: Context, key: tuple) -> dict | None:
    record = ctx.baselines.get(key.system)
    if record is None:
        return None
    for v in record.variables:
        if v.key == key:
            median, tol = finite(v.median), finite(v.tolerance)
            if median is None or tol is None:
                return None
            lower = v.direction == experiments.LOWER_IS_BETTER
            return {'median': median, 'tolerance': tol, 'direction': v.direction,
                    'bound': median * (1 + tol) if lower else median * (1 - tol)}
    return None


def _outside(value: float, base: dict | None) -> bool | None:
    if base is None:
        return None
    if base['direction'] == experiments.LOWER_IS_BETTER:
        return value > base['bound']
    return value < base['bound']


def _series(ctx: Context, sessions: list, keys: set):
    """(key, points) of each key, one at a time: the stored history's points with those of
    reported sessions that are not stored (a run report read before it was stored)."""
    stored = {s.uuid for s in ctx.history.sessions()}
    extra = trend.series([s for s in ctx.sessions if s.uuid not in stored])
    order = {s.uuid: i for i, s in enumerate(sessions)}
    for key in sorted(keys):
        pts = [*ctx.history.points(key), *extra.get(key, [])]
        yield key, sorted(pts, key=lambda p: order.get(p.session, -1))


def _trends(ctx: Context, sessions: list, keys: set):
    """(series, change points) of the keys (:func:`trend.search`: a process per core on a
    long history), each process through its own connection to the index."""
    def run(part: list[tuple]):
        with ctx.history.reopened() as mine:
            return trend.stream(_series(dataclasses.replace(ctx, history=mine), sessions,
                                        set(part)), len(keys))
    return trend.search(keys, run)


def _rows(ctx: Context, sessions: list) -> list[dict]:
    keys = {s.key for sess in ctx.sessions for s in sess.samples
            if not s.oversubscribed and s.variable in experiments.key_variables(s.check)}
    series, points = _trends(ctx, sessions, keys)
    found: dict[tuple, list] = {}
    for cp in points:
        found.setdefault(cp.key, []).append(cp)
    index = {s.uuid: i for i, s in enumerate(sessions)}
    rows = []
    for key, pts in sorted(series.items()):
        base = _baseline(ctx, key)
        values = [finite(p.value) for p in pts]
        latest = values[-1]
        rows.append({
            'key': list(key), 'label': key_label(key), 'environ': key.environ, 'test': key.test,
            'check': key.check, 'variable': key.variable,
            'unit': pts[-1].unit,
            'points': [{'session': p.session[:8], 'when': p.when, 'index': index[p.session],
                        'value': v} for p, v in zip(pts, values)],
            'first': values[0], 'latest': latest, 'baseline': base,
            'outside': _outside(latest, base) if latest is not None else None,
            'change_points': [{'session': cp.session[:8], 'when': cp.when,
                               'index': index.get(cp.session), 'change': finite(cp.change),
                               'worse': cp.worse,
                               'changes': [{'field': k, 'before': a, 'after': b}
                                           for k, (a, b) in cp.provenance_changes.items()]}
                              for cp in found.get(key, [])]})
    return rows


def _plot(p: Painter, check: str, rows: list[dict], labels: list[str]):
    variables = [v for v in experiments.key_variables(check)
                 if any(r['variable'] == v and len(r['points']) > 1 for r in rows)]
    if not variables:
        return None
    fig, axes = p.figure(min(16.0, 4.2 * len(variables)), 3.4, ncols=len(variables),
                         bottom=0.95)
    for ax, variable in zip(axes[0], variables):
        mine = [r for r in rows if r['variable'] == variable and len(r['points']) > 1]
        for r in mine:
            xs = [p['index'] for p in r['points'] if p['value'] is not None]
            ys = [p['value'] for p in r['points'] if p['value'] is not None]
            if not ys:
                continue
            scale = (r['baseline'] or {}).get('median') or statistics.median(ys)
            flagged = bool(r['change_points']) or bool(r['outside'])
            color = p.color(r['environ']) if flagged else '#b0b0b0'
            ax.plot(xs, [y / scale for y in ys], '-o' if flagged else '-', ms=2.5,
                    lw=1.3 if flagged else 0.7, color=color, zorder=3 if flagged else 2,
                    label=f"{r['environ']} {r['test']}" if flagged else None)
            if flagged and r['baseline']:
                tol = r['baseline']['tolerance']
                low, high = ((1.0, 1 + tol) if r['baseline']['direction'] ==
                             experiments.LOWER_IS_BETTER else (1 - tol, 1.0))
                ax.axhspan(low, high, color=color, alpha=0.10, lw=0)
            for cp in r['change_points']:
                at = next((p for p in r['points'] if p['index'] == cp['index']), None)
                if at and at['value'] is not None:
                    ax.plot([cp['index']], [at['value'] / scale], 'v', ms=9, color=color,
                            markeredgecolor='black', zorder=4)
        ax.axhline(1.0, color='black', lw=0.6)
        ax.set_title(variable, fontsize=10)
        ax.set_ylabel('value / baseline median', fontsize=8)
        ticks = list(range(len(labels)))
        step = max(1, len(ticks) // 8)
        ax.set_xticks(ticks[::step], labels[::step], rotation=45, fontsize=7)
        ax.set_xlim(-0.5, len(labels) - 0.5)
        ax.grid(True, alpha=0.3)
        handles, _ = ax.get_legend_handles_labels()
        if handles:
            ax.legend(fontsize=6)
    return fig


def build(ctx: Context) -> Section:
    sessions = _sessions(ctx)
    data = {'sessions': [{'uuid': s.uuid[:8], 'when': s.when} for s in sessions],
            'baseline_files': sorted(ctx.baselines), 'rows': [], 'checks': []}
    if len(sessions) < 2:
        data['note'] = (f'{len(sessions)} stored session(s): no history yet (the history '
                        f'section needs two or more sessions in the results database).')
        return Section(data, 'history.html.j2')
    rows = _rows(ctx, sessions)
    data['rows'] = rows
    data['flagged'] = [r for r in rows if r['change_points'] or r['outside']]
    plots, data['first_time'] = [], []
    labels = [short_when(s.when) or s.uuid[:8] for s in sessions]
    for exp in experiments.EXPERIMENTS:
        mine = [r for r in rows if r['check'] == exp.check]
        if not mine:
            continue
        data['checks'].append(exp.check)
        if any(len(r['points']) > 1 for r in mine):
            plots.append(ctx.plots.draw(_plot, f'history-{exp.check}', f'History of the key '
                                        f'variables of {exp.check} over the stored sessions',
                                        exp.check, mine, labels))
        else:
            data['first_time'].append(exp.check)
    if not rows:
        data['note'] = 'No key variable of this session was measured in the stored sessions.'
    return Section(data, 'history.html.j2', plots)
