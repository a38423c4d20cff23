"""3. Derived datatypes: the slowdown of each mode against contiguous, per element type and
stack."""

from __future__ import annotations

import numpy as np

from commcheck.report.context import Context, Section
from commcheck.report.model import checks
from commcheck.report.plots import Painter, error_bars, spread_caption
from commcheck.report.sections.p2p import stack_label

VARIABLES = ('r_inf', 't0', 'r_inf_contig', 't0_contig', 'slowdown', 'osu_diff')


def rows_of(ctx: Context) -> list[dict]:
    rows = []
    for t in ctx.values.tests(checks('datatypes')):
        row = {'environ': t.environ, 'lang': t.param('lang'), 'label': stack_label(t),
               'element': t.param('element'), 'mode': t.param('mode')}
        row.update({v: ctx.values.value(t, v) for v in VARIABLES})
        spread = ctx.values.spread(t, 'slowdown')
        row['slowdown_spread'] = list(spread[:2]) if spread else None
        rows.append(row)
    return rows


def _plot(p: Painter, rows: list[dict]):
    drawn = [r for r in rows if r['slowdown'] is not None]
    elements = list(dict.fromkeys(r['element'] for r in drawn))
    if not elements:
        return None
    stacks = list(dict.fromkeys(r['label'] for r in drawn))
    modes = list(dict.fromkeys(r['mode'] for r in drawn))
    per_panel = max(4.5, 1.5 + 0.3 * len(modes) * len(stacks))
    fig, axes = p.figure(min(15.0, per_panel * len(elements)), 4.0,
                         ncols=len(elements), sharey=True, wspace=0.25, bottom=0.45)
    width = 0.8 / len(stacks)
    for ax, element in zip(axes[0], elements):
        for i, label in enumerate(stacks):
            mine = {r['mode']: r for r in drawn if r['element'] == element and r['label'] == label}
            xs = [k + (i - (len(stacks) - 1) / 2) * width for k, m in enumerate(modes)
                  if m in mine]
            ys = [mine[m]['slowdown'] for m in modes if m in mine]
            if not xs:
                continue
            env = next(iter(mine.values()))['environ']
            ax.bar(xs, ys, width * 0.92, color=p.color(env), label=label,
                   hatch='//' if next(iter(mine.values()))['lang'] not in ('', 'c') else None,
                   edgecolor='white', linewidth=0.4)
            error_bars(ax, xs, ys, [mine[m]['slowdown_spread'] for m in modes if m in mine],
                       'black')
        ax.axhline(1.0, color='black', lw=0.7)
        ax.set_xticks(np.arange(len(modes)), modes)
        ax.set_title(f'{element}', fontsize=10)
        if ax is axes[0][0]:
            ax.set_ylabel('slowdown vs contiguous (x)')
        ax.grid(True, axis='y', alpha=0.3)
    if max(r['slowdown'] for r in drawn) / max(min(r['slowdown'] for r in drawn), 1e-9) > 30:
        for ax in axes[0]:
            ax.set_yscale('log')
    axes[0][-1].legend(fontsize=7)
    return fig


def build(ctx: Context) -> Section:
    rows = rows_of(ctx)
    plots = []
    if any(r['slowdown'] is not None for r in rows):
        caption = spread_caption(ctx.values.launch_counts(ctx.values.tests(checks('datatypes'))))
        plots.append(ctx.plots.draw(_plot, 'datatypes', 'Slowdown of each derived-datatype mode '
                                    'against contiguous, per element type and stack' + caption,
                                    rows))
    return Section({'rows': rows}, 'datatypes.html.j2', plots)
