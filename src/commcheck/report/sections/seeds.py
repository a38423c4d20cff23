"""6. The seeds: the documents' published tables beside today's values on each stack, and each
published finding judged on today's data."""

from __future__ import annotations

from commcheck.analysis import seeds
from commcheck.experiments import POINTER_PHASES, sized_name
from commcheck.report import findings
from commcheck.report.context import Context, Section
from commcheck.report.model import checks
from commcheck.report.render import num
from commcheck.report.sections import datatypes, stencil
from commcheck.report.sections.p2p import physical_fit, stack_label

#: The published tables name Fortran 77 'f77'; today's Fortran kernels are 'fortran'.
PUBLISHED_LANG = {'f77': 'Fortran 77', 'java': 'Java'}


def interval(ctx: Context, test, variable: str, scale: float = 1.0) -> str:
    """Today's value's interval over launches, to print beside the median: `` [lo-hi]``, or
    `` (one launch)``; empty where nothing was measured."""
    spread = ctx.values.spread(test, variable)
    if spread is None:
        return ''
    lo, hi, launches = spread
    if launches == 1:
        return ' (one launch)'
    return f' [{num(lo * scale)}-{num(hi * scale)}]'


def _seed001(ctx: Context) -> dict:
    tests = ctx.values.tests(checks('p2p', peer=False))
    stacks = [(stack_label(t), ctx.values.sweep(t, 'latency'), t) for t in tests]
    return {'stacks': [label for label, _, _ in stacks],
            'rows': [{'size': size, 'published': rtt,
                      'today': [2 * sweep[size] if size in sweep else None
                                for _, sweep, _ in stacks],
                      'ranges': [interval(ctx, t, sized_name('latency', size), 2.0)
                                 for _, _, t in stacks]}
                     for size, rtt in seeds.SEED001_RTT_US.items()]}


def _seed003_hockney(ctx: Context) -> list[dict]:
    rows = []
    for bench in dict.fromkeys(b for b, _ in seeds.SEED003_HOCKNEY):
        for (b, lang), v in seeds.SEED003_HOCKNEY.items():
            if b == bench:
                rows.append({'benchmark': bench, 'source': f'published {PUBLISHED_LANG[lang]}',
                             'published': True, **v})
        for t in ctx.values.tests(checks('hockney'), benchmark=bench):
            rows.append({'benchmark': bench, 'source': stack_label(t), 'published': False,
                         **physical_fit({k: ctx.values.value(t, k)
                                         for k in ('r_inf', 'n_half', 't0')}),
                         'ranges': {k: interval(ctx, t, k) for k in ('r_inf', 'n_half', 't0')}})
    return rows


def _seed003_datatypes(ctx: Context) -> list[dict]:
    today = datatypes.rows_of(ctx)
    rows = []
    for element in seeds.SEED003_STRIDES:
        for mode in dict.fromkeys(m for _, _, m in seeds.SEED003_DATATYPES):
            for (lang, elem, m), (r_inf, t0) in seeds.SEED003_DATATYPES.items():
                if (elem, m) == (element, mode):
                    rows.append({'element': element, 'mode': mode, 'published': True,
                                 'source': f'published {PUBLISHED_LANG[lang]}',
                                 'r_inf': r_inf, 't0': t0})
            for r in today:
                if r['element'] != element:
                    continue
                if mode == 'contig' and r['mode'] == 'stride':
                    rows.append({'element': element, 'mode': mode, 'published': False,
                                 'source': r['label'], 'r_inf': r['r_inf_contig'],
                                 't0': r['t0_contig']})
                elif r['mode'] == mode:
                    rows.append({'element': element, 'mode': mode, 'published': False,
                                 'source': r['label'], 'r_inf': r['r_inf'], 't0': r['t0']})
    return rows


def _seed002_times(ctx: Context) -> list[dict]:
    today = stencil.rows_of(ctx)
    tables = []
    for lang, published in seeds.SEED002_TIME_S.items():
        mine = [r for r in today if r['lang'] == lang]
        envs = list(dict.fromkeys(r['environ'] for r in mine))
        rows = []
        for variant, times in published.items():
            if variant == 'seq':
                continue
            for ranks, t in zip(seeds.SEED002_RANKS, times):
                cells = []
                for env in envs:
                    r = next((r for r in mine if (r['environ'], r['variant'], r['ranks']) ==
                              (env, variant, ranks)), None)
                    cells.append(None if r is None else {
                        'time': r['time'], 'speedup': r['speedup'],
                        'oversubscribed': r['oversubscribed']})
                rows.append({'variant': variant, 'ranks': ranks, 'time': t,
                             'speedup': published['seq'] / t, 'today': cells})
        extra = sorted({r['ranks'] for r in mine} - set(seeds.SEED002_RANKS))
        tables.append({'lang': lang, 'sequential': published['seq'], 'environments': envs,
                       'rows': rows, 'other_ranks': extra})
    return tables


def _seed002_pointers(ctx: Context) -> list[dict]:
    today = stencil.pointer_rows(ctx)
    rows = []
    tests = {(t.environ, t.param('variant')): t for t in ctx.values.tests(checks('pointers'))}
    for variant, phases in seeds.SEED002_POINTER_S.items():
        rows.append({'variant': variant, 'source': 'published', 'published': True, **phases})
        for r in today:
            if r['variant'] == variant:
                t = tests[(r['environ'], variant)]
                rows.append({'variant': variant, 'source': r['environ'], 'published': False,
                             **{p: r[p] for p in POINTER_PHASES},
                             'ranges': {p: interval(ctx, t, p) for p in POINTER_PHASES}})
    return rows


def build(ctx: Context) -> Section:
    return Section({
        'documents': findings.DOCUMENTS,
        'findings': findings.judge_all(ctx),
        'seed001': _seed001(ctx),
        'seed003_hockney': _seed003_hockney(ctx),
        'seed003_datatypes': _seed003_datatypes(ctx),
        'seed002_times': _seed002_times(ctx),
        'seed002_grid': seeds.SEED002_GRID,
        'stencil_grid': stencil.grid(ctx, checks('stencil')),
        'seed002_pointers': _seed002_pointers(ctx),
        'seed002_pointer_grid': seeds.SEED002_POINTER_GRID,
        'pointer_grid': stencil.grid(ctx, checks('pointers'))}, 'seeds.html.j2')
