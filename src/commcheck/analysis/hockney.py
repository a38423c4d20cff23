"""Hockney-model fits of message time versus message size (Parkbench COMMS1/COMMS2).

The Hockney model describes one link by two numbers::

    t(n) = (n + n_half) / r_inf  =  t0 + n / r_inf,     t0 = n_half / r_inf

with ``t`` the time per message in microseconds, ``n`` the message size in bytes,
``r_inf`` the asymptotic bandwidth in MB/s (10^6 B/s, which is exactly bytes/µs) and
``n_half`` the size that reaches half of ``r_inf``.  Parkbench fitted one straight line by
least squares.  Modern MPI stacks switch protocol (eager -> rendezvous) at some size, so
one line no longer fits; :func:`fit_piecewise` fits two independent lines split at a
breakpoint that is either given or found from the data.

Weighting.  Latencies span four or more decades (1 B to 1 MiB), and timing noise is roughly
proportional to the time measured.  An unweighted fit would be decided by the largest sizes
alone and would leave the startup time t0 (a fraction of a microsecond) almost
unconstrained.  Every fit therefore minimises the sum of squared *relative* residuals,
``sum(((t_i - model_i) / t_i) ** 2)``, i.e. weights 1/t_i on the residuals.  Under
multiplicative noise these residuals have roughly constant variance, which is also what the
F-test used for model selection assumes.  The weights use the observed times; the bias this
introduces is of order (relative noise)^2 and negligible for timing data.

Model selection.  See :func:`fit_piecewise`: the best split is kept only if an F-test of
two lines against one, Bonferroni-corrected for the number of splits tried, rejects the
single line at ``SPLIT_ALPHA`` = 0.01.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats

SPLIT_ALPHA = 0.01
"""Family-wise false-split rate accepted by the automatic breakpoint search."""

_EXACT_RMS_REL = 1e-9
"""Relative RMS residual below which one line is a perfect fit (far below any timer)."""


@dataclass(frozen=True)
class Segment:
    """One Hockney line fitted over the sizes ``lo_bytes..hi_bytes`` (inclusive).

    ``r_inf_MBps`` is ``inf`` (and ``n_half_bytes`` too) when the time does not grow with
    size within that range: the bandwidth term is then not measurable there.
    ``r2`` is the weighted coefficient of determination and ``rms_rel`` the RMS relative
    residual, both in the same relative metric the fit minimises.
    """

    lo_bytes: float
    hi_bytes: float
    r_inf_MBps: float
    n_half_bytes: float
    t0_us: float
    r2: float
    rms_rel: float
    npoints: int

    def predict(self, n: Any) -> Any:
        """Time in µs for size(s) ``n`` in bytes on this line (numpy broadcasting)."""
        return self.t0_us + np.asarray(n, dtype=float) / self.r_inf_MBps


@dataclass(frozen=True)
class HockneyFit:
    """One or two Hockney segments; sizes ``<= breakpoint_bytes`` belong to the first.

    ``split_p_value`` is the Bonferroni-corrected F-test p-value of the best split found by
    the automatic search (``None`` when a breakpoint was given or no split could be tried);
    it lets a report say why the data were, or were not, split.
    """

    segments: list[Segment]
    breakpoint_bytes: float | None = None
    split_p_value: float | None = field(default=None, compare=False)

    def predict(self, n: Any) -> Any:
        """Time in µs for size(s) ``n``: a float for a scalar, an array otherwise."""
        arr = np.asarray(n, dtype=float)
        out = self.segments[0].predict(arr)
        if self.breakpoint_bytes is not None and len(self.segments) > 1:
            out = np.where(arr <= self.breakpoint_bytes, out, self.segments[1].predict(arr))
        return float(out) if np.ndim(out) == 0 else np.asarray(out)


def _as_bytes(x: float) -> float:
    """Show integral sizes as ``int`` (sizes are byte counts) without losing fractions."""
    return int(x) if float(x).is_integer() else float(x)


def _first_bad(mask: np.ndarray) -> int:
    """Index of the first offending value, so an error message can point at it."""
    return int(np.flatnonzero(mask)[0])


def _clean(sizes: Any, times_us: Any) -> tuple[np.ndarray, np.ndarray]:
    """Validate the inputs once, up front, and return them as float arrays sorted by size.

    Every later step (weights 1/t, log-spaced sizes, splits by size) relies on positive,
    finite, paired values; checking here gives one clear message instead of a numpy warning.
    """
    try:
        n = np.asarray(sizes, dtype=float)
        t = np.asarray(times_us, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"sizes and times must be numeric sequences ({exc})") from None
    if n.ndim != 1 or t.ndim != 1:
        raise ValueError("sizes and times must be one-dimensional sequences")
    if n.size != t.size:
        raise ValueError(f"mismatched lengths: {n.size} sizes but {t.size} times")
    bad = ~np.isfinite(n) | (n <= 0)
    if bad.any():
        i = _first_bad(bad)
        raise ValueError(f"message sizes must be finite and > 0 bytes; got {n[i]!r} at index {i}")
    bad = ~np.isfinite(t) | (t <= 0)
    if bad.any():
        i = _first_bad(bad)
        raise ValueError(f"times must be finite and > 0 µs; got {t[i]!r} at index {i}")
    order = np.argsort(n, kind="stable")
    return n[order], t[order]


def _require_distinct(n: np.ndarray, what: str = "fit a line") -> None:
    """A line has two parameters, so it needs two distinct sizes to be determined."""
    k = np.unique(n).size
    if k < 2:
        raise ValueError(f"need at least 2 distinct message sizes to {what}; got {k}")


def _solve(n: np.ndarray, t: np.ndarray) -> tuple[float, float, float]:
    """Weighted least squares for ``t = t0 + slope * n``; returns (t0, slope, SSE).

    The SSE is the sum of squared relative residuals (see the module docstring).  Sizes are
    scaled by their maximum so the two columns have comparable magnitude.  A negative slope
    (time falling with size) is unphysical noise: the fit is then constrained to slope 0,
    whose optimum is the weighted mean time; for this convex problem that is the exact
    constrained least-squares solution.
    """
    scale = float(n.max())
    design = np.column_stack([1.0 / t, (n / scale) / t])
    coef, *_ = np.linalg.lstsq(design, np.ones_like(t), rcond=None)
    t0, slope = float(coef[0]), float(coef[1]) / scale
    if slope < 0.0:
        t0, slope = float(np.sum(1.0 / t) / np.sum(t**-2.0)), 0.0
    resid = 1.0 - (t0 + slope * n) / t
    return t0, slope, float(resid @ resid)


def _segment(n: np.ndarray, t: np.ndarray) -> tuple[Segment, float]:
    """Fit one line and express it in Hockney terms; also return its SSE for model tests."""
    _require_distinct(n)
    t0, slope, sse = _solve(n, t)
    w2 = t**-2.0
    tbar = float(np.sum(w2 * t) / np.sum(w2))
    sst = float(np.sum(w2 * (t - tbar) ** 2))
    r_inf = 1.0 / slope if slope > 0.0 else math.inf
    seg = Segment(
        lo_bytes=_as_bytes(n.min()),
        hi_bytes=_as_bytes(n.max()),
        r_inf_MBps=r_inf,
        n_half_bytes=t0 / slope if slope > 0.0 else math.inf,
        t0_us=t0,
        r2=1.0 - sse / sst if sst > 0.0 else 1.0,
        rms_rel=math.sqrt(sse / n.size),
        npoints=int(n.size),
    )
    return seg, sse


def fit_line(sizes: Iterable[float], times_us: Iterable[float]) -> Segment:
    """Fit one Hockney line (relative-error weighted least squares) to time vs size.

    ``sizes`` in bytes, ``times_us`` per message in µs; repeated sizes are allowed.
    Raises ValueError for bad input or fewer than 2 distinct sizes.
    """
    n, t = _clean(sizes, times_us)
    return _segment(n, t)[0]


def _split_at(n: np.ndarray, t: np.ndarray, bp: float) -> tuple[Segment, Segment, float]:
    """Fit both sides of a split (``n <= bp`` left); return the segments and total SSE."""
    left = n <= bp
    for side, mask in (("at or below", left), ("above", ~left)):
        k = np.unique(n[mask]).size
        if k < 2:
            raise ValueError(
                f"breakpoint {bp:g} B leaves {k} distinct size(s) {side} it; each side needs >= 2"
            )
    (s1, e1), (s2, e2) = _segment(n[left], t[left]), _segment(n[~left], t[~left])
    return s1, s2, e1 + e2


def _best_split(n: np.ndarray, t: np.ndarray, min_points: int) -> tuple[float, float, int] | None:
    """Try every split between measured sizes leaving >= min_points sizes on each side.

    Returns (breakpoint, SSE, number of splits tried) for the smallest total SSE, or None if
    no split is admissible.  The breakpoint is the largest size of the first segment, so
    passing it back as ``breakpoint=`` reproduces the same split.
    """
    u = np.unique(n)
    candidates = u[min_points - 1 : u.size - min_points]
    if candidates.size == 0:
        return None
    sses = [_solve(n[n <= bp], t[n <= bp])[2] + _solve(n[n > bp], t[n > bp])[2]
            for bp in candidates]
    k = int(np.argmin(sses))
    return float(candidates[k]), float(sses[k]), int(candidates.size)


def _split_p_value(sse1: float, sse2: float, npts: int, ntried: int) -> float | None:
    """F-test of two independent lines (4 parameters) against one (2), Bonferroni-corrected.

    The residuals are relative, so under multiplicative noise they are close to the
    homoscedastic errors the F-test assumes.  Picking the best of ``ntried`` splits makes
    the raw p-value optimistic; multiplying by ``ntried`` bounds the chance of splitting a
    true single line at ``SPLIT_ALPHA``.  Returns None when no residual degree of freedom
    is left.
    """
    df2 = npts - 4
    if df2 <= 0:
        return None
    if sse2 <= 0.0:
        return 0.0
    f_stat = max(sse1 - sse2, 0.0) / 2.0 / (sse2 / df2)
    return min(1.0, float(stats.f.sf(f_stat, 2, df2)) * ntried)


def fit_piecewise(
    sizes: Iterable[float],
    times_us: Iterable[float],
    breakpoint: float | None = None,
    min_points: int = 3,
) -> HockneyFit:
    """Fit one or two Hockney lines; two model e.g. an eager and a rendezvous protocol.

    With ``breakpoint`` given, sizes ``<= breakpoint`` form segment 1 and the rest
    segment 2 (each side needs >= 2 distinct sizes).  Without it, every split between
    measured sizes with >= ``min_points`` distinct sizes per side is tried and the one with
    the smallest total relative SSE is taken; it is kept only if the F-test in
    :func:`_split_p_value` rejects one line at ``SPLIT_ALPHA`` (0.01), else one segment is
    returned.  Data that one line fits to within rounding are never split.
    """
    n, t = _clean(sizes, times_us)
    if breakpoint is not None:
        bp = float(breakpoint)
        if not math.isfinite(bp) or bp <= 0.0:
            raise ValueError(f"breakpoint must be a finite size > 0 bytes; got {breakpoint!r}")
        s1, s2, _ = _split_at(n, t, bp)
        return HockneyFit([s1, s2], _as_bytes(bp))
    if int(min_points) != min_points or min_points < 2:
        raise ValueError(f"min_points must be an integer >= 2; got {min_points!r}")
    single, sse1 = _segment(n, t)
    best = _best_split(n, t, int(min_points))
    if best is None or sse1 <= n.size * _EXACT_RMS_REL**2:
        return HockneyFit([single], None)
    bp, sse2, ntried = best
    p = _split_p_value(sse1, sse2, n.size, ntried)
    if p is None or p >= SPLIT_ALPHA:
        return HockneyFit([single], None, p)
    s1, s2, _ = _split_at(n, t, bp)
    return HockneyFit([s1, s2], _as_bytes(bp), p)


def _number(rec: Mapping[str, Any], key: str, index: int) -> float:
    """Read one numeric field of a parsed record; DATA values arrive as strings."""
    try:
        value = rec[key]
    except (KeyError, TypeError):
        raise ValueError(f"record {index} has no {key!r} field") from None
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ValueError(f"record {index}: {key}={value!r} is not a number") from None


#: Distinct sizes below which a sweep cannot support a Hockney fit worth reporting.
MIN_FIT_SIZES = 4


def size_text(nbytes: float) -> str:
    """A message size as people write it: ``8 B``, ``32 KiB``, ``1 MiB`` (``1.5 KiB``)."""
    for unit, scale in (('MiB', 1 << 20), ('KiB', 1 << 10)):
        if nbytes >= scale:
            return f'{nbytes / scale:.3g} {unit}'
    return f'{nbytes:.0f} B'


def refusal(seg: Segment) -> str | None:
    """Why a fitted line cannot be reported, or None when its parameters are physical.

    A startup time below zero or a bandwidth that is not positive is what the least-squares
    line says, not what the link does (a line through a curved stretch of the sweep): the fit
    is refused, never shown as a value.
    """
    over = f'{size_text(seg.lo_bytes)}-{size_text(seg.hi_bytes)}'
    values = {'r_inf': seg.r_inf_MBps, 'n_1/2': seg.n_half_bytes, 't0': seg.t0_us}
    bad = [name for name, v in values.items() if not math.isfinite(v)]
    if bad:
        return f'{", ".join(bad)} not finite: the time does not grow with size over {over}'
    if seg.r_inf_MBps <= 0:
        return f'r_inf <= 0: fit not physical over {over}'
    if seg.t0_us < 0:
        return f't0 < 0: fit not physical over {over}'
    return None


def fit_records(
    records: Iterable[Mapping[str, Any]],
    time_key: str,
    size_key: str = "size",
    breakpoint: float | None = None,
    min_points: int = 3,
) -> HockneyFit:
    """Fit :func:`fit_piecewise` to parsed kernel DATA records (dicts, values may be str).

    ``time_key`` names the per-message time in µs (e.g. ``oneway_us``), ``size_key`` the
    size in bytes.
    """
    pairs = [(_number(r, size_key, i), _number(r, time_key, i)) for i, r in enumerate(records)]
    if not pairs:
        raise ValueError("no records to fit")
    sizes, times = zip(*pairs)
    return fit_piecewise(sizes, times, breakpoint=breakpoint, min_points=min_points)
