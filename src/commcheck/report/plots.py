"""Figures: matplotlib on the Agg canvas (no pyplot, no global state), saved as PNG.

A section asks for a figure with :meth:`Plotter.draw` and a module-level drawing function that
gets a :class:`Painter` and the section's data (numbers that are also in ``data.json``); the
function returns a figure, or None when it has nothing to draw, so no plot is ever empty.
Figures are drawn after every section is built, in parallel on the machine's cores (forked
workers; serially where forking is unavailable). Colours are per environment (a stack has the
same colour in every figure), line styles per language.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from commcheck.forks import fork_map

PALETTE = ('#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b', '#e377c2',
           '#17becf', '#bcbd22', '#7f7f7f')
LANG_STYLE = {'c': '-', 'fortran': '--', 'java': ':', 'python': '-.',
              'python-pickle': (0, (4, 1, 1, 1, 1, 1))}
DPI = 100


def slug(name: str) -> str:
    return re.sub(r'[^A-Za-z0-9_.-]+', '-', name).strip('-').lower() or 'plot'


class Painter:
    """What a drawing function needs: colours, styles and figures. Picklable."""

    def __init__(self, colors: dict[str, str]):
        self.colors = dict(colors)

    def color(self, environ: str) -> str:
        if environ not in self.colors:
            self.colors[environ] = PALETTE[len(self.colors) % len(PALETTE)]
        return self.colors[environ]

    @staticmethod
    def style(lang: str) -> str:
        return LANG_STYLE.get(lang, '-')

    @staticmethod
    def figure(width: float = 7.0, height: float = 4.2, ncols: int = 1, nrows: int = 1, *,
               left: float = 0.8, right: float = 0.15, bottom: float = 0.6, top: float = 0.35,
               wspace: float = 0.75, hspace: float = 0.45, **kw):
        """A figure with fixed margins (inches): no layout engine, which would draw every
        figure two extra times to measure it."""
        fig = Figure(figsize=(width, height))
        FigureCanvasAgg(fig)
        axes = fig.subplots(nrows, ncols, squeeze=False, **kw)
        panel_w = (width - left - right - wspace * (ncols - 1)) / ncols
        panel_h = (height - top - bottom - hspace * (nrows - 1)) / nrows
        fig.subplots_adjust(left=left / width, right=1 - right / width,
                            bottom=bottom / height, top=1 - top / height,
                            wspace=wspace / panel_w, hspace=hspace / panel_h)
        return fig, axes


def _warm_up() -> None:
    """Load the fonts once, before forking, so that no worker loads them again."""
    fig, axes = Painter.figure(1, 1)
    axes[0][0].set_title('µs 0123456789', fontsize=8)
    axes[0][0].set_xlabel('size', fontsize=7)
    fig.canvas.draw()


def _render(job) -> tuple[str, str | None]:
    """Draw and save one figure; returns (file, problem or None). Runs in a worker."""
    fn, path, painter, args = job
    try:
        fig = fn(painter, *args)
        if fig is None:
            return str(path), 'nothing to draw'
        fig.savefig(path, dpi=DPI)
        return str(path), None
    except Exception as err:  # noqa: BLE001 - one figure never stops the report
        return str(path), f'{type(err).__name__}: {err}'


class Plotter:
    def __init__(self, out_dir: Path, environments: list[str]):
        self.dir = out_dir / 'plots'
        self.painter = Painter({env: PALETTE[i % len(PALETTE)]
                                for i, env in enumerate(environments)})
        self._names: set[str] = set()
        self._jobs: list[tuple] = []
        self._plots: dict[str, dict] = {}

    def draw(self, fn: Callable, name: str, alt: str, *args) -> dict:
        """Queue a figure; returns what the page needs (its file, relative, and alt text).
        A figure that cannot be drawn is dropped from its section by :meth:`finish`."""
        base = slug(name)
        stem, n = base, 2
        while stem in self._names:
            stem, n = f'{base}-{n}', n + 1
        self._names.add(stem)
        plot = {'file': f'plots/{stem}.png', 'alt': alt}
        self._jobs.append((fn, self.dir / f'{stem}.png', self.painter, args))
        self._plots[str(self.dir / f'{stem}.png')] = plot
        return plot

    def finish(self, warn) -> set[str]:
        """Draw every queued figure; returns the files (relative) that could not be drawn."""
        if not self._jobs:
            return set()
        self.dir.mkdir(parents=True, exist_ok=True)
        _warm_up()
        results = fork_map(_render, self._jobs, on_fallback=lambda err: warn(
            f'figures drawn one by one ({type(err).__name__}: {err})'))
        failed = set()
        for path, problem in results:
            if problem:
                failed.add(self._plots[path]['file'])
                if problem != 'nothing to draw':
                    warn(f'figure {Path(path).name} could not be drawn ({problem})')
        self._jobs.clear()
        return failed


def byte_label(n: float) -> str:
    n = int(n)
    for unit, scale in (('MiB', 1 << 20), ('KiB', 1 << 10)):
        if n >= scale and n % scale == 0:
            return f'{n // scale} {unit}'
    return f'{n} B'


def log_sizes(ax, xlabel: str = 'message size') -> None:
    """Log-log axes over message sizes, ticked at powers of 8 bytes as the documents write
    them (1 B, 8 B, ... 1 MiB)."""
    ax.set_xscale('log', base=2)
    ax.set_yscale('log')
    lo, hi = ax.get_xlim()
    ticks = [8 ** k for k in range(8) if lo <= 8 ** k <= hi * 1.01] or [1, 1024, 1 << 20]
    ax.set_xticks(ticks, [byte_label(t) for t in ticks], fontsize=8)
    ax.minorticks_off()
    ax.set_xlabel(xlabel)
    ax.grid(True, which='major', alpha=0.3)


def legend(ax, **kw) -> None:
    handles, _ = ax.get_legend_handles_labels()
    if handles:
        ax.legend(fontsize=7, **kw)


def error_bars(ax, xs, ys, ranges, color, **kw) -> None:
    """Bars from the lowest to the highest launch around each drawn median, where several
    launches differ (``ranges``: (low, high) per point, or None)."""
    pts = [(x, y, r) for x, y, r in zip(xs, ys, ranges)
           if r is not None and y is not None and r[1] > r[0]]
    if not pts:
        return
    ax.errorbar([x for x, _, _ in pts], [y for _, y, _ in pts],
                yerr=[[max(y - r[0], 0.0) for _, y, r in pts],
                      [max(r[1] - y, 0.0) for _, y, r in pts]],
                fmt='none', ecolor=color, elinewidth=0.8, capsize=2, alpha=0.8, **kw)


def spread_caption(counts: tuple[int, int]) -> str:
    """What a figure's points are: the median of how many launches, and what the bars show."""
    low, high = counts
    if high == 0:
        return ''
    if high == 1:
        return '; one launch (no spread over launches to draw)'
    many = f'{low}-{high}' if low != high else str(high)
    one = ' (one launch where no bar)' if low == 1 else ''
    return f'; medians of {many} launches, bars from the lowest to the highest launch{one}'
