"""4. The shared-memory stencil: time, speedup, efficiency and the fraction of the memory
bandwidth bound per variant and rank count (oversubscribed points drawn apart), and the Fortran
pointer study."""

from __future__ import annotations

from commcheck.experiments import LEFT_OUT, POINTER_PHASES, POINTER_RATIOS
from commcheck.report.context import Context, Section
from commcheck.report.model import checks, text
from commcheck.report.plots import Painter, error_bars, spread_caption

VARIABLES = ('time', 'speedup', 'efficiency', 'bw_fraction', 'glups', 'stream_copy',
             'halo_share')
#: Rows of the stencil figure (efficiency is speedup against the ideal line; the table has it).
PANELS = (('time', 'time (s)'), ('speedup', 'speedup over sequential'),
          ('bw_fraction', 'fraction of memory bound'))


def grid(ctx: Context, check_names) -> dict:
    """The problem size the tests ran (their n and steps variables), as recorded; the
    oversubscribed runs' small grid apart (:func:`small_grids`)."""
    found = {}
    for case in ctx.cases:
        if case.check in check_names and not case.fixture and not case.raw.get('small_grid'):
            for key in ('n', 'steps'):
                value = case.raw.get(key)
                if isinstance(value, int) and not isinstance(value, bool):
                    found.setdefault(key, set()).add(value)
    return {k: sorted(v) for k, v in found.items()}


def small_grids(ctx: Context) -> list[dict]:
    """The oversubscribed runs on the small grid: rank count, n and steps."""
    found = {(c.raw.get('ranks'), c.raw.get('n'), c.raw.get('steps')) for c in ctx.cases
             if c.check in checks('stencil') and c.raw.get('small_grid') and
             c.result not in ('skip', 'fail_deps')}
    return [{'ranks': r, 'n': n, 'steps': s} for r, n, s in sorted(found, key=str)]


def left_out(ctx: Context) -> dict:
    """The stencil's test cases the run left out as never judged, and how to have them."""
    cases = [c for c in ctx.cases if c.check in checks('stencil') and c.result == 'skip'
             and LEFT_OUT in c.skip_reason]
    ranks = sorted({text(c.raw.get('ranks')) for c in cases}, key=lambda r: (len(r), r))
    return {'cases': len(cases), 'ranks': ranks, 'how': LEFT_OUT} if cases else {}


def rows_of(ctx: Context) -> list[dict]:
    rows = []
    for t in ctx.values.tests(checks('stencil')):
        ranks = t.param('ranks')
        if not ranks.isdigit():
            continue
        row = {'environ': t.environ, 'lang': t.param('lang'), 'variant': t.param('variant'),
               'ranks': int(ranks), 'oversubscribed': ctx.values.oversubscribed(t)}
        row.update({v: ctx.values.value(t, v) for v in VARIABLES})
        row['spread'] = {v: (ctx.values.spread(t, v) or (None, None, 0))[:2]
                         for v, _ in PANELS}
        row['launches'] = (ctx.values.spread(t, 'time') or (0, 0, 0))[2]
        rows.append(row)
    order = {e: i for i, e in enumerate(ctx.environments)}
    variants = {v: i for i, v in enumerate(dict.fromkeys(r['variant'] for r in rows))}
    return sorted(rows, key=lambda r: (r['lang'], order.get(r['environ'], 99),
                                       variants[r['variant']], r['ranks']))


def _plot(p: Painter, rows: list[dict], lang: str):
    mine = [r for r in rows if r['lang'] == lang]
    variants = list(dict.fromkeys(r['variant'] for r in mine))
    if not variants:
        return None
    fig, axes = p.figure(min(16.0, 0.9 + 3.0 * len(variants)), 1.7 + 1.9 * len(PANELS),
                         ncols=len(variants), nrows=len(PANELS), sharex=True,
                         sharey='row', bottom=1.2, wspace=0.2, hspace=0.2)
    envs = list(dict.fromkeys(r['environ'] for r in mine))
    drawn_over = False
    for col, variant in enumerate(variants):
        for row_i, (var, ylabel) in enumerate(PANELS):
            ax = axes[row_i][col]
            for env in envs:
                pts = [r for r in mine if r['variant'] == variant and r['environ'] == env
                       and r[var] is not None]
                drawn_over = _draw_stack(ax, pts, var, env, p.color(env)) or drawn_over
            if var == 'speedup':
                ranks = sorted({r['ranks'] for r in mine})
                ax.plot(ranks, ranks, color='grey', lw=0.6, linestyle='--', label='ideal')
            if row_i == 0:
                ax.set_title(variant, fontsize=10)
            if col == 0:
                ax.set_ylabel(ylabel, fontsize=8)
            if row_i == len(PANELS) - 1:
                ax.set_xlabel('ranks')
                ax.set_xticks(sorted({r['ranks'] for r in mine}))
            ax.grid(True, alpha=0.3)
    if drawn_over:
        axes[0][0].plot([], [], 'X', ms=7, markerfacecolor='white', markeredgecolor='grey',
                        linestyle=':', color='grey', label='oversubscribed (not gated)')
    handles, labels = axes[0][0].get_legend_handles_labels()
    for ax in axes.flat:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    if handles:
        fig.legend(handles, labels, loc='lower center', ncols=min(4, len(labels)), fontsize=7,
                   frameon=False)
    return fig


def _draw_stack(ax, pts: list[dict], var: str, env: str, color) -> bool:
    """One stack's line of one panel, with its spread; oversubscribed points dotted and
    crossed. True when there were such points."""
    if not pts:
        return False
    normal = [r for r in pts if not r['oversubscribed']]
    over = [r for r in pts if r['oversubscribed']]
    ax.plot([r['ranks'] for r in normal], [r[var] for r in normal], '-o', ms=4,
            color=color, label=env)
    error_bars(ax, [r['ranks'] for r in pts], [r[var] for r in pts],
               [r['spread'][var] if r['spread'][var][0] is not None else None
                for r in pts], color)
    if over:
        joined = normal[-1:] + over
        ax.plot([r['ranks'] for r in joined], [r[var] for r in joined], ':', color=color, lw=1)
        ax.plot([r['ranks'] for r in over], [r[var] for r in over], 'X', ms=7,
                markerfacecolor='white', markeredgecolor=color)
    return bool(over)


def pointer_rows(ctx: Context) -> list[dict]:
    rows = []
    for t in ctx.values.tests(checks('pointers')):
        row = {'environ': t.environ, 'variant': t.param('variant')}
        row.update({p: ctx.values.value(t, p) for p in POINTER_PHASES})
        row.update({v: ctx.values.value(t, v) for v in POINTER_RATIOS.values()})
        row['spread'] = {p: (ctx.values.spread(t, p) or (None, None, 0))[:2]
                         for p in POINTER_PHASES}
        rows.append(row)
    return rows


def _plot_pointers(p: Painter, rows: list[dict]):
    drawn = [r for r in rows if any(r[p] is not None for p in POINTER_PHASES)]
    if not drawn:
        return None
    variants = list(dict.fromkeys(r['variant'] for r in drawn))
    envs = list(dict.fromkeys(r['environ'] for r in drawn))
    phases = ('read', 'write', 'total')
    fig, axes = p.figure(min(14.0, 3.6 * len(phases)), 3.4, ncols=len(phases),
                         left=0.95, wspace=1.05, bottom=0.45)
    width = 0.8 / len(envs)
    for ax, phase in zip(axes[0], phases):
        for i, env in enumerate(envs):
            mine = {r['variant']: r[phase] for r in drawn if r['environ'] == env}
            xs = [k + (i - (len(envs) - 1) / 2) * width for k, v in enumerate(variants)
                  if mine.get(v) is not None]
            ys = [mine[v] for v in variants if mine.get(v) is not None]
            ax.bar(xs, ys, width * 0.92, color=p.color(env), label=env)
            spreads = {r['variant']: r['spread'][phase] for r in drawn if r['environ'] == env}
            error_bars(ax, xs, ys, [spreads[v] if spreads[v][0] is not None else None
                                    for v in variants if mine.get(v) is not None], 'black')
        ax.set_xticks(range(len(variants)), variants)
        ax.set_title(phase, fontsize=10)
        ax.set_ylabel('seconds')
        ax.grid(True, axis='y', alpha=0.3)
    axes[0][-1].legend(fontsize=7)
    return fig


def build(ctx: Context) -> Section:
    rows = rows_of(ctx)
    langs = list(dict.fromkeys(r['lang'] for r in rows))
    pointers = pointer_rows(ctx)
    caption = spread_caption(ctx.values.launch_counts(ctx.values.tests(checks('stencil'))))
    plots = [ctx.plots.draw(_plot, f'stencil-{lang}', f'Stencil ({lang}): time, speedup (against '
                            f'the ideal line) and fraction of the memory bound per variant and '
                            f'rank count' + caption, rows, lang) for lang in langs]
    if pointers:
        caption = spread_caption(ctx.values.launch_counts(ctx.values.tests(checks('pointers'))))
        plots.append(ctx.plots.draw(_plot_pointers, 'pointers', 'Fortran pointer study: read, '
                                    'write and total time per variant and stack (each launch '
                                    'the median of its runs)' + caption, pointers))
    over = sorted({(r['environ'], r['ranks']) for r in rows if r['oversubscribed']})
    cores = sorted({text(c.provenance.get('cores')) for c in ctx.cases
                    if c.check in checks('stencil') and c.provenance.get('cores')})
    bounds = sorted({c.raw['bound'] for c in ctx.cases if c.check in checks('stencil') and
                     not c.fixture and isinstance(c.raw.get('bound'), str) and c.raw['bound']})
    return Section({
        'rows': rows, 'languages': langs, 'grid': grid(ctx, checks('stencil')), 'bounds': bounds,
        'oversubscribed': [{'environ': e, 'ranks': n} for e, n in over],
        'small_grids': small_grids(ctx), 'left_out': left_out(ctx),
        'pointers': pointers, 'pointer_grid': grid(ctx, checks('pointers')), 'cores': cores},
        'stencil.html.j2', plots)
