"""One report section per experiment; each returns (markdown, machine-readable tables)."""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib.pyplot as plt

from commcheck import seeds
from commcheck.results import Case

SIZE_VAR = re.compile(r'^(latency|bw|bibw)_(\d+)B$')
KEY_VALUES = ('latency_8B', 'latency_1024B', 'bw_1048576B', 'bibw_1048576B')


def _table(header, rows):
    from commcheck.report import md_table
    return md_table(header, rows)


def _series(case: Case, metric: str) -> dict[int, float]:
    """size -> value of the ``<metric>_<n>B`` perf variables of a case."""
    out = {}
    for name, pv in case.perf.items():
        m = SIZE_VAR.match(name)
        if m and m.group(1) == metric:
            out[int(m.group(2))] = pv.value
    return dict(sorted(out.items()))


def _value(case: Case, name: str):
    pv = case.perf.get(name)
    return pv.value if pv else None


def _label(case: Case) -> str:
    variant = case.get('lang') or case.get('benchmark') or ''
    return f'{case.environ} {variant}'.strip()


def _plot_sweeps(cases: list[Case], metric: str, ylabel: str, path: Path) -> None:
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for case in cases:
        series = _series(case, metric)
        if series:
            ax.plot(list(series), list(series.values()), marker='o', ms=3, label=_label(case))
    ax.set_xscale('log', base=2)
    ax.set_yscale('log')
    ax.set_xlabel('message size (bytes)')
    ax.set_ylabel(ylabel)
    ax.grid(True, which='both', alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def pingpong(cases: list[Case], plots: Path) -> tuple[str, dict]:
    runs = [c for c in cases if c.check in ('PingPong', 'OsuPt2Pt') and c.perf]
    if not runs:
        return '## Ping-pong (seeds 000/004, 001)\n\nNo ping-pong results in this run.', {}
    _plot_sweeps([c for c in runs if c.check == 'PingPong' or c.get('benchmark') ==
                  'osu_latency'], 'latency', 'one-way latency (µs)', plots / 'latency.png')
    _plot_sweeps([c for c in runs if c.check == 'PingPong' or c.get('benchmark') == 'osu_bw'],
                 'bw', 'bandwidth (MB/s)', plots / 'bandwidth.png')
    pp = [c for c in runs if c.check == 'PingPong']
    header = ['size (B)', 'seed 001 RTT (µs)'] + [_label(c) for c in pp]
    rows, data = [], {}
    for size, published in seeds.SEED001_RTT_US.items():
        today = [2 * _series(c, 'latency').get(size, float('nan')) for c in pp]
        rows.append([size, published] + today)
        data[size] = {'seed001_rtt_us': published,
                      **{_label(c): v for c, v in zip(pp, today)}}
    key = [[_label(c)] + [_value(c, k) for k in KEY_VALUES] for c in runs]
    text = '\n'.join([
        '## Ping-pong (seeds 000/004, 001)', '',
        'Seed 001 published the mean round-trip time on one node (Open MPI shared memory); '
        "today's round trip is twice the measured one-way latency.", '',
        _table(header, rows), '',
        '### Key values', '',
        _table(['run', 'latency 8 B (µs)', 'latency 1 KiB (µs)', 'bw 1 MiB (MB/s)',
                'bibw 1 MiB (MB/s)'], key), '',
        '![latency](plots/latency.png)', '', '![bandwidth](plots/bandwidth.png)'])
    return text, {'seed001_vs_today': data}


def _param(case: Case, name: str):
    """A parameter's value, from the case's attributes or its display name (forked fixtures)."""
    if case.get(name) is not None:
        return case.get(name)
    m = re.search(rf'%(?:\w+\.)?{name}=(\S+)', case.display_name)
    return m.group(1) if m else None


def parkbench(cases: list[Case], plots: Path) -> tuple[str, dict]:
    runs = [c for c in cases if c.check == 'ParkbenchComms' and c.perf]
    title = '## Parkbench COMMS1 / COMMS2: Hockney fits (seed 003, Table 1)'
    if not runs:
        return f'{title}\n\nNo Parkbench results in this run.', {}
    pub = [[f'{b} {lang} (published)', v['r_inf'], v['n_half'], v['t0'], None, None, None, None]
           for (b, lang), v in seeds.SEED003_HOCKNEY.items()]
    rows, data = [], []
    for c in sorted(runs, key=lambda c: (c.get('benchmark'), c.environ, c.get('lang'))):
        row = [f"{c.get('benchmark')} {c.environ} {c.get('lang')}"] + [
            _value(c, k) for k in ('r_inf', 'n_half', 't0', 'breakpoint', 't0_small',
                                   'r_inf_large', 't0_large')]
        rows.append(row)
        data.append(dict(zip(['run', 'r_inf_MBps', 'n_half_B', 't0_us', 'breakpoint_B',
                              't0_small_us', 'r_inf_large_MBps', 't0_large_us'], row)))
    header = ['run', 'r_inf (MB/s)', 'n_1/2 (B)', 't0 (µs)', 'breakpoint (B)',
              't0 small (µs)', 'r_inf large (MB/s)', 't0 large (µs)']
    text = '\n'.join([
        title, '',
        'One Hockney line over the whole sweep (as Parkbench), then the piecewise fit: '
        'segments split at the breakpoint found from the data (0: one line fits).', '',
        _table(header, pub + rows)])
    return text, {'today': data, 'published': {f'{b} {l}': v for (b, l), v in
                                               seeds.SEED003_HOCKNEY.items()}}


def datatypes(cases: list[Case], plots: Path) -> tuple[str, dict]:
    runs = [c for c in cases if c.check == 'DerivedDatatypes' and c.perf]
    title = '## Derived datatypes (seed 003, Table 2)'
    if not runs:
        return f'{title}\n\nNo derived-datatype results in this run.', {}
    rows, data = [], []
    for (lang, elem, mode), (r_inf, t0) in seeds.SEED003_DATATYPES.items():
        contig = seeds.SEED003_DATATYPES[(lang, elem, 'contig')][0]
        rows.append([f'{lang} (published)', elem, mode, r_inf, t0, contig / r_inf])
    for c in sorted(runs, key=lambda c: (c.environ, c.get('lang'), c.get('element'),
                                         c.get('mode'))):
        row = [f'{c.environ} {c.get("lang")}', c.get('element'), c.get('mode'),
               _value(c, 'r_inf'), _value(c, 't0'), _value(c, 'slowdown')]
        rows.append(row)
        data.append(dict(zip(['run', 'element', 'mode', 'r_inf_MBps', 't0_us', 'slowdown'], row)
                         ) | {'r_inf_contig_MBps': _value(c, 'r_inf_contig')})
    verdicts = []
    for c in runs:
        if c.get('mode') != 'stride':
            continue
        loop = [o for o in runs if o.get('mode') == 'loop' and o.environ == c.environ and
                o.get('lang') == c.get('lang') and o.get('element') == c.get('element')]
        if loop:
            better = _value(c, 'r_inf') > _value(loop[0], 'r_inf')
            verdicts.append(f'{c.environ} {c.get("lang")} {c.get("element")}: STRIDE '
                            f'{"beats" if better else "does not beat"} LOOP')
    text = '\n'.join([
        title, '', '`slowdown` = r_inf(contiguous) / r_inf(mode); seed 003 found STRIDE 14.7x '
        '(bytes) and 21.8x (doubles) slower than contiguous, and STRIDE faster than LOOP.', '',
        _table(['run', 'element', 'mode', 'r_inf (MB/s)', 't0 (µs)', 'slowdown'], rows), '',
        *[f'- {v}' for v in sorted(verdicts)]])
    return text, {'today': data, 'stride_vs_loop': sorted(verdicts)}


def stencil(cases: list[Case], plots: Path) -> tuple[str, dict]:
    runs = [c for c in cases if c.check == 'Stencil' and c.perf]
    title = '## MPI-3 shared-memory stencil (seed 002, Tables 1 and 2)'
    if not runs:
        return f'{title}\n\nNo stencil results in this run.', {}
    parts, data = [title, '',
                   'Speedup and efficiency are against the sequential run of the same size and '
                   'language; `bw frac` is the stencil\'s 16 B/update traffic over the node\'s '
                   'STREAM copy bandwidth. `*` = oversubscribed (more ranks than cores): '
                   'measured, not gated. The published figures are for 4800 x 4800, 500 steps.',
                   ''], []
    for lang in ('c', 'fortran'):
        mine = [c for c in runs if _param(c, 'lang') == lang]
        if not mine:
            continue
        rows = []
        for variant, times in seeds.SEED002_TIME_S[lang].items():
            if variant == 'seq':
                continue
            seq = seeds.SEED002_TIME_S[lang]['seq']
            rows += [[f'published {variant}', r, t, seq / t, seq / t / r, None]
                     for r, t in zip(seeds.SEED002_RANKS, times)]
        for c in sorted(mine, key=lambda c: (c.environ, c.get('variant'), int(c.get('ranks')))):
            mark = '*' if c.get('oversubscribed') else ''
            row = [f'{c.environ} {c.get("variant")}', f'{c.get("ranks")}{mark}',
                   _value(c, 'time'), _value(c, 'speedup'), _value(c, 'efficiency'),
                   _value(c, 'bw_fraction')]
            rows.append(row)
            data.append({'lang': lang, 'run': row[0], 'ranks': int(c.get('ranks')),
                         'oversubscribed': bool(mark), 'time_s': row[2], 'speedup': row[3],
                         'efficiency': row[4], 'bw_fraction': row[5],
                         'glups': _value(c, 'glups'), 'halo_share': _value(c, 'halo_share')})
        parts += [f'### {lang}', '', _table(['run', 'ranks', 'time (s)', 'speedup', 'efficiency',
                                             'bw frac'], rows), '']
    _plot_speedup(data, plots / 'stencil_speedup.png')
    parts.append('![stencil speedup](plots/stencil_speedup.png)')
    return '\n'.join(parts), {'today': data, 'published': seeds.SEED002_TIME_S}


def _plot_speedup(data: list[dict], path: Path) -> None:
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for run in sorted({(d['lang'], d['run']) for d in data}):
        pts = sorted((d['ranks'], d['speedup']) for d in data
                     if (d['lang'], d['run']) == run)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker='o', label=' '.join(run))
    ax.set_xlabel('ranks')
    ax.set_ylabel('speedup over sequential')
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def pointers(cases: list[Case], plots: Path) -> tuple[str, dict]:
    runs = [c for c in cases if c.check == 'FortranPointers' and c.perf]
    title = '## Fortran pointer study (seed 002, Table 3)'
    if not runs:
        return f'{title}\n\nNo pointer-study results in this run.', {}
    rows = [[f'published {v}', *p.values()] for v, p in seeds.SEED002_POINTER_S.items()]
    data = []
    for c in sorted(runs, key=lambda c: (c.environ, c.get('variant'))):
        row = [f'{c.environ} {c.get("variant")}'] + [_value(c, k) for k in
                                                     ('init', 'read', 'write', 'total')]
        rows.append(row)
        data.append(dict(zip(['run', 'init_s', 'read_s', 'write_s', 'total_s'], row)))
    text = '\n'.join([title, '', 'Published: 10000 x 10000, 100 steps; today: the check\'s '
                      'size (default 2000 x 2000, 20 steps).', '',
                      _table(['run', 'init (s)', 'read (s)', 'write (s)', 'total (s)'], rows)])
    return text, {'today': data, 'published': seeds.SEED002_POINTER_S}


SECTIONS = [pingpong, parkbench, datatypes, stencil, pointers]
