"""2. Stacks side by side: latency and bandwidth against message size, the peer benchmark beside
ours, Hockney fits over the measured points, COMMS2/COMMS1, and large-message bandwidth as a
share of the node's own memory-copy bandwidth."""

from __future__ import annotations

import numpy as np

from commcheck import experiments
from commcheck.analysis import hockney, seeds
from commcheck.report.context import Context, Section
from commcheck.report.model import Test, checks
from commcheck.report.plots import Painter, error_bars, legend, log_sizes, spread_caption
from commcheck.report.render import num

FIT_VARIABLES = ('r_inf', 'n_half', 't0', 'fit_rms_rel', 'breakpoint')
SEGMENT_VARIABLES = ('r_inf', 'n_half', 't0')
#: Hockney benchmarks whose time per message is the one-way latency our ping-pong records, so
#: the ping-pong sweep of the same environment and language is their measured points.
ONE_WAY = {'comms1'}


def stack_label(test: Test) -> str:
    return ' '.join(x for x in (test.environ, test.param('lang')) if x)


def _curves(ctx: Context) -> list[dict]:
    """One curve per (environment, language) of our ping-pong, one per environment of each
    peer benchmark (its tests merged: latency from one, bandwidth from another)."""
    out = []
    for t in ctx.values.tests(checks('p2p', peer=False)):
        out.append({'environ': t.environ, 'lang': t.param('lang'), 'check': t.check,
                    'peer': False, 'label': stack_label(t),
                    'latency_us': ctx.values.sweep(t, 'latency'),
                    'bw_MBps': ctx.values.sweep(t, 'bw'),
                    'bibw_MBps': ctx.values.sweep(t, 'bibw'),
                    'spread': {'latency_us': ctx.values.sweep_spread(t, 'latency'),
                               'bw_MBps': ctx.values.sweep_spread(t, 'bw')},
                    'key': {v: ctx.values.value(t, v) for v in experiments.key_variables(t.check)}})
    peers: dict[tuple, dict] = {}
    for t in ctx.values.tests(checks('p2p', peer=True)):
        curve = peers.setdefault((t.environ, t.check), {
            'environ': t.environ, 'lang': '', 'check': t.check, 'peer': True,
            'label': f'{t.environ} {t.check}', 'latency_us': {}, 'bw_MBps': {},
            'bibw_MBps': {}, 'key': {v: None for v in experiments.key_variables(t.check)}})
        for name, field in (('latency', 'latency_us'), ('bw', 'bw_MBps'), ('bibw', 'bibw_MBps')):
            curve[field].update(ctx.values.sweep(t, name))
        for v in curve['key']:
            if curve['key'][v] is None:
                curve['key'][v] = ctx.values.value(t, v)
    return out + list(peers.values())


SWEEPS = (('latency_us', 'one-way latency (µs)'), ('bw_MBps', 'bandwidth (MB/s)'))


def _plot_sweeps(p: Painter, curves: list[dict]):
    panels = [(field, label) for field, label in SWEEPS if any(c[field] for c in curves)]
    if not panels:
        return None
    fig, axes = p.figure(6.2 * len(panels), 4.4, ncols=len(panels), top=0.15)
    for ax, (field, ylabel) in zip(axes[0], panels):
        for c in (c for c in curves if c[field]):
            sizes, values = list(c[field]), list(c[field].values())
            if c['peer']:
                ax.plot(sizes, values, color=p.color(c['environ']),
                        linestyle=(0, (1, 1.5)), marker='+', ms=5, lw=1.2, label=c['label'])
            else:
                ax.plot(sizes, values, color=p.color(c['environ']),
                        linestyle=p.style(c['lang']), marker='o', ms=2.5, lw=1.3,
                        label=c['label'])
                spread = c.get('spread', {}).get(field, {})
                error_bars(ax, sizes, values, [spread.get(n) for n in sizes],
                           p.color(c['environ']))
        log_sizes(ax)
        ax.set_ylabel(ylabel)
        legend(ax, ncols=2 if len(curves) > 6 else 1)
    return fig


def _fit_rows(ctx: Context) -> list[dict]:
    rows = []
    for t in ctx.values.tests(checks('hockney')):
        row = {'environ': t.environ, 'lang': t.param('lang'), 'benchmark': t.param('benchmark'),
               'label': stack_label(t), 'oversubscribed': ctx.values.oversubscribed(t)}
        row.update(physical_fit({v: ctx.values.value(t, v) for v in FIT_VARIABLES}))
        for part in ('small', 'large'):
            row[part] = physical_fit({v: ctx.values.value(t, f'{v}_{part}')
                                   for v in SEGMENT_VARIABLES})
        rows.append(row)
    return sorted(rows, key=lambda r: (r['benchmark'], ctx.environments.index(r['environ'])
                                       if r['environ'] in ctx.environments else 99, r['lang']))


def physical_fit(values: dict) -> dict:
    """A stored fit with t0 < 0 or r_inf <= 0 (sessions before fits were refused) is shown as
    not measured, never as a value."""
    r_inf, t0 = values.get('r_inf'), values.get('t0')
    if (r_inf is not None and r_inf <= 0) or (t0 is not None and t0 < 0):
        return {k: None for k in values}
    return values


def _segment(part: dict) -> hockney.Segment | None:
    r_inf, t0 = part.get('r_inf'), part.get('t0')
    if r_inf is None or t0 is None or r_inf <= 0 or t0 < 0:
        return None
    return hockney.Segment(lo_bytes=1, hi_bytes=1, r_inf_MBps=r_inf, n_half_bytes=t0 * r_inf,
                           t0_us=t0, r2=1.0, rms_rel=0.0, npoints=0)


def curve_of(row: dict) -> hockney.HockneyFit | None:
    """The fitted model of a row: piecewise where the check split the sweep, else one line."""
    single = _segment(row)
    small, large = _segment(row['small']), _segment(row['large'])
    if row.get('breakpoint') and small and large:
        return hockney.HockneyFit([small, large], row['breakpoint'])
    return hockney.HockneyFit([single], None) if single else None


def _pieces(fit: hockney.HockneyFit, lo: float, hi: float,
            points: dict[int, float]) -> list[np.ndarray]:
    """Sizes to draw a fit over: each segment over the sizes it was fitted to (the first
    measured size above the breakpoint starts the second; sweeps double, so 2 x breakpoint
    where the points are not known), never across the jump between them."""
    bp = fit.breakpoint_bytes
    if not bp or len(fit.segments) < 2 or not lo < bp < hi:
        return [np.geomspace(lo, hi, 160)]
    start = min((n for n in points if n > bp), default=2 * bp)
    return [np.geomspace(lo, bp, 80), np.geomspace(min(start, hi), hi, 80)]


def _plot_fits(p: Painter, rows: list[dict], curves: list[dict]):
    benchmarks = list(dict.fromkeys(r['benchmark'] for r in rows if curve_of(r)))
    if not benchmarks:
        return None
    fig, axes = p.figure(5.2 * len(benchmarks), 4.4, ncols=len(benchmarks))
    for ax, bench in zip(axes[0], benchmarks):
        for row in (r for r in rows if r['benchmark'] == bench):
            fit = curve_of(row)
            if not fit:
                continue
            color, style = p.color(row['environ']), p.style(row['lang'])
            points = {}
            if bench in ONE_WAY:
                points = next((c['latency_us'] for c in curves if not c['peer'] and
                               c['environ'] == row['environ'] and c['lang'] == row['lang']), {})
            if points:
                ax.plot(list(points), list(points.values()), 'o', ms=3, color=color, alpha=0.7)
            lo, hi = (min(points), max(points)) if points else (1, 2 ** 20)
            label = (f"{row['label']}: r_inf {num(row['r_inf'])} MB/s" if row['r_inf']
                     else row['label'])
            for sizes in _pieces(fit, lo, hi, points):
                times = fit.predict(sizes)
                # a segment's own line can fall below zero outside its sizes: not drawn
                ax.plot(sizes, np.where(times > 0, times, np.nan), color=color,
                        linestyle=style, lw=1.4, label=label)
                label = None
            if fit.breakpoint_bytes:
                ax.axvline(fit.breakpoint_bytes, color=color, lw=0.6, alpha=0.5, linestyle=':')
        log_sizes(ax)
        ax.set_ylabel('time per message (µs)')
        ax.set_title(bench + ('' if bench in ONE_WAY else ' (fit only: per-size times not '
                                                          'recorded)'), fontsize=9)
        legend(ax)
    return fig


def _comms_ratio(rows: list[dict]) -> list[dict]:
    out = {}
    for r in rows:
        out.setdefault((r['environ'], r['lang']), {'environ': r['environ'], 'lang': r['lang']})[
            r['benchmark']] = r['r_inf']
    result = []
    for row in out.values():
        one, two = row.get('comms1'), row.get('comms2')
        result.append({'environ': row['environ'], 'lang': row['lang'], 'comms1': one,
                       'comms2': two, 'ratio': two / one if one and two else None})
    return result


def published_comms_ratio() -> list[dict]:
    langs = dict.fromkeys(lang for _, lang in seeds.SEED003_HOCKNEY)
    return [{'lang': lang, 'comms1': seeds.SEED003_HOCKNEY[('comms1', lang)]['r_inf'],
             'comms2': seeds.SEED003_HOCKNEY[('comms2', lang)]['r_inf'],
             'ratio': seeds.SEED003_HOCKNEY[('comms2', lang)]['r_inf'] /
             seeds.SEED003_HOCKNEY[('comms1', lang)]['r_inf']} for lang in langs]


def memory_copy(ctx: Context, environ: str) -> tuple[float | None, str]:
    """The node's memory-copy bandwidth (GB/s) measured in this session on an environment: the
    highest STREAM copy of its stencil jobs that were not oversubscribed."""
    best, source = None, ''
    for t in ctx.values.tests(checks('stencil')):
        if t.environ != environ or ctx.values.oversubscribed(t):
            continue
        value = ctx.values.value(t, 'stream_copy')
        if value is not None and (best is None or value > best):
            best, source = value, t.test
    return best, source


def _memory_fraction(ctx: Context, curves: list[dict]) -> list[dict]:
    out = []
    for c in curves:
        if not c['bw_MBps']:
            continue
        size = max(c['bw_MBps'])
        bw = c['bw_MBps'][size]
        copy, source = memory_copy(ctx, c['environ'])
        out.append({'label': c['label'], 'environ': c['environ'], 'size': size, 'bw_MBps': bw,
                    'copy_GBps': copy, 'copy_source': source,
                    'fraction': bw / (copy * 1000) if copy else None})
    return out


def build(ctx: Context) -> Section:
    curves = _curves(ctx)
    fits = _fit_rows(ctx)
    plots = []
    if any(c['latency_us'] or c['bw_MBps'] for c in curves):
        counts = ctx.values.launch_counts(ctx.values.tests(checks('p2p', peer=False)))
        plots.append(ctx.plots.draw(_plot_sweeps, 'sweeps', 'Latency and bandwidth against '
                                    'message size, per stack and language' +
                                    spread_caption(counts), curves))
    if any(curve_of(r) for r in fits):
        plots.append(ctx.plots.draw(_plot_fits, 'hockney', 'Hockney fits per stack drawn over '
                                    'the measured one-way times', fits, curves))
    key_names = list(dict.fromkeys(v for c in curves for v in c['key']))
    ran_peers = {c['check'] for c in curves if c['peer']}
    peers_missing = []
    for peer in checks('p2p', peer=True):
        if peer in ran_peers:
            continue
        cases = [c for c in ctx.cases if c.check == peer]
        skipped = sum(c.result in ('skip', 'fail_deps') for c in cases)
        peers_missing.append({'check': peer, 'why': (
            f'{skipped} test case(s) skipped (the verdict lists why)' if skipped else
            'failed (see the verdict)' if cases else
            'not selected in this session (no environment offers it, or the selection '
            'left it out)')})
    return Section({
        'curves': curves, 'key_variables': key_names, 'fits': fits,
        'comms_ratio': _comms_ratio(fits), 'comms_ratio_published': published_comms_ratio(),
        'memory_fraction': _memory_fraction(ctx, curves),
        'peers_missing': peers_missing,
        'one_way': sorted(ONE_WAY)}, 'p2p.html.j2', plots)
