"""``commcheck history``: where did a shift start, and what changed with it?

Per variable, the stored sessions form a series (the median of each session's launches). Change
points are searched with ``ruptures`` (PELT, least squares on the log of the values scaled by a
robust noise estimate, BIC-like penalty); each candidate is then kept only if it is real and
large by the gate's own rules: the launches after it differ from the launches before it by a
Mann-Whitney U test (p < alpha) and by more than ``min_effect`` in median. A kept change point
names the session where the shift started, its size, and the provenance fields that changed
there (e.g. ``mpi_version 4.1.4 -> 5.0.11``).
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Callable, Iterable

import numpy as np

from commcheck import experiments
from commcheck.analysis import robust
from commcheck.analysis.gate import Settings, provenance_changes
from commcheck.forks import cores, fork_map
from commcheck.results.store import Sample, SampleKey, Session

TREND_MIN_EFFECT = 0.20     #: smallest shift of the median a change point must show


@dataclasses.dataclass
class Point:
    session: str
    when: str
    samples: list[Sample]
    value: float = math.nan     # the median of the samples (computed when not given)

    def __post_init__(self):
        if math.isnan(self.value):
            self.value = statistics.median(s.value for s in self.samples)

    def compact(self) -> Point:
        """The point without its launches (one kept for its unit): what a table or a plot
        needs once the change points are found, at a fraction of the memory."""
        return Point(self.session, self.when, self.samples[:1], self.value)


@dataclasses.dataclass
class ChangePoint:
    key: SampleKey
    at: int                     # index of the first session after the shift
    session: str
    when: str
    before: float
    after: float
    p: float
    worse: bool | None
    provenance_changes: dict

    @property
    def change(self) -> float:
        return self.after / self.before - 1

    def as_dict(self) -> dict:
        return {'key': list(self.key), 'session': self.session, 'when': self.when,
                'before': self.before, 'after': self.after, 'change': self.change,
                'p': self.p, 'worse': self.worse,
                'provenance_changes': {k: list(v) for k, v in self.provenance_changes.items()}}


def series(sessions: list[Session]) -> dict[tuple, list[Point]]:
    """Per variable, one point per session that measured it (oversubscribed runs left out)."""
    out: dict[tuple, list[Point]] = {}
    for sess in sessions:
        mine: dict[tuple, list[Sample]] = {}
        for s in sess.samples:
            if not s.oversubscribed and s.value > 0:
                mine.setdefault(s.key, []).append(s)
        for key, samples in mine.items():
            out.setdefault(key, []).append(Point(sess.uuid, sess.when, samples))
    return out


def pelt_l2(signal, pen: float) -> list[int]:
    """The breakpoints ``ruptures.Pelt(model='l2', min_size=1, jump=1).fit(signal)
    .predict(pen)`` finds (the same recursion, pruning and tie-breaking; the tests check it
    against ruptures), vectorised over the admissible set with cumulative sums: a year of
    nightly sessions segments in milliseconds instead of seconds, for every variable."""
    x = np.asarray(signal, float).reshape(-1)
    x = x - x.mean()
    n = len(x)
    sums = np.concatenate(([0.0], np.cumsum(x)))
    squares = np.concatenate(([0.0], np.cumsum(x * x)))
    best = np.zeros(n + 1)                  # optimal penalised cost of x[:t]
    last = np.zeros(n + 1, dtype=int)       # where its last segment starts
    admissible = np.zeros(0, dtype=int)
    for t in range(1, n + 1):
        admissible = np.append(admissible, t - 1)
        total = sums[t] - sums[admissible]
        cost = np.maximum(squares[t] - squares[admissible] - total * total / (t - admissible),
                          0.0)
        candidates = best[admissible] + (cost + pen)
        k = int(np.argmin(candidates))
        best[t], last[t] = candidates[k], admissible[k]
        admissible = admissible[candidates <= best[t] + pen]
    bkps, t = [], n
    while t > 0:
        bkps.append(t)
        t = last[t]
    return sorted(bkps)


def _candidates(values: list[float]) -> list[int]:
    signal = np.log(np.asarray(values, float))
    diffs = np.diff(signal)
    # a step's noise from successive differences (their sigma is sqrt(2) x the series')
    noise = robust.sigma(diffs) / math.sqrt(2) if len(diffs) else 0
    scale = noise if noise > 1e-12 else (np.std(signal) or 1.0)
    return [b for b in pelt_l2(signal / scale, 3 * math.log(len(values))) if b < len(values)]


def detect(points: list[Point], key: SampleKey | tuple, settings: Settings = Settings(),
           min_points: int = 4) -> list[ChangePoint]:
    if len(points) < min_points:
        return []
    key = SampleKey._make(key)
    from scipy import stats  # here: a second to import; compare reads trends rarely
    found, start = [], 0
    # The gate derives its threshold per comparison; change points keep a fixed one.
    min_effect = TREND_MIN_EFFECT if settings.min_effect is None else settings.min_effect
    bounds = _candidates([p.value for p in points]) + [len(points)]
    for cut, end in zip(bounds, bounds[1:]):
        before = [s for p in points[start:cut] for s in p.samples]
        after = [s for p in points[cut:end] for s in p.samples]
        b_med = statistics.median(s.value for s in before)
        a_med = statistics.median(s.value for s in after)
        ratio = a_med / b_med
        if abs(math.log(ratio)) <= math.log(1 + min_effect):
            continue            # too small to report: no need of the (costlier) rank test
        p = float(stats.mannwhitneyu([s.value for s in after], [s.value for s in before],
                                     alternative='two-sided').pvalue)
        if p < settings.alpha:
            direction = experiments.direction(key.check, key.variable, before[0].unit)
            worse = None if direction is None else (
                ratio > 1 if direction == experiments.LOWER_IS_BETTER else ratio < 1)
            found.append(ChangePoint(
                key=key, at=cut, session=points[cut].session, when=points[cut].when,
                before=b_med, after=a_med, p=p, worse=worse,
                provenance_changes=provenance_changes(points[cut - 1].samples,
                                                      points[cut].samples)))
            start = cut
    return found


def history(sessions: list[Session], keys=None, settings: Settings = Settings()):
    """(series, change points) for every variable, or those in ``keys``."""
    all_series = series(sessions)
    chosen = {k: v for k, v in all_series.items() if keys is None or k in keys}
    return chosen, [cp for key, pts in sorted(chosen.items()) for cp in detect(pts, key, settings)]


def points(samples: Iterable[Sample], when: dict[str, str]) -> list[Point]:
    """One variable's samples (ordered by session) as one point per session (oversubscribed
    runs left out); ``when`` gives each session's start text."""
    out: list[Point] = []
    mine: list[Sample] = []
    for s in samples:
        if s.oversubscribed or s.value <= 0:
            continue
        if mine and s.session != mine[0].session:
            out.append(Point(mine[0].session, when.get(mine[0].session, ''), mine))
            mine = []
        mine.append(s)
    if mine:
        out.append(Point(mine[0].session, when.get(mine[0].session, ''), mine))
    return out


#: Variables from which :func:`search` runs in several processes (a year of nightly sessions
#: of the suite: some hundreds of variables, 20-90 ms each).
PARALLEL_FROM = 64
Found = tuple[dict, list]       #: (series, change points), as :func:`stream` gives them


def search(keys: Iterable[tuple], run: Callable[[list[tuple]], Found]) -> Found:
    """``run(sorted keys)`` (which gives :func:`stream` of those variables), from
    :data:`PARALLEL_FROM` keys on in a process per core (at most 4) over contiguous runs of
    the sorted keys, merged in order: the same results (each variable is searched on its
    own). ``run`` opens what it reads itself: a forked process cannot share an SQLite
    connection."""
    ordered = sorted(keys)
    workers = cores(4)
    if workers < 2 or len(ordered) < PARALLEL_FROM:
        return run(ordered)
    step = -(-len(ordered) // (4 * workers))
    parts = fork_map(run, [ordered[i:i + step] for i in range(0, len(ordered), step)], workers)
    series: dict = {}
    for part_series, _ in parts:
        series.update(part_series)
    return series, [cp for _, found in parts for cp in found]


def stream(groups: Iterable[tuple[tuple, list[Point]]], settings: Settings = Settings()):
    """(series, change points) from one variable's points at a time (e.g. read
    from :mod:`commcheck.results.sample_index`): only the variable at hand keeps its launches
    in memory."""
    chosen, found = {}, []
    for key, pts in groups:
        if not pts:
            continue
        found.extend(detect(pts, key, settings))
        chosen[key] = [p.compact() for p in pts]
    return chosen, found
