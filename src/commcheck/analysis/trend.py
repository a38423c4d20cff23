"""``commcheck history``: where did a shift start, and what changed with it?

Per variable, the stored sessions form a series (the median of each session's launches). Change
points are proposed by PELT (ruptures' least-squares model, on the log of the values scaled by a
robust noise estimate, BIC-like penalty; computed here for many variables at once, the same
breakpoints as ruptures); each candidate is then kept only where the gate's own rule
(:func:`commcheck.analysis.gate.judge`, its threshold and intervals, Bonferroni over the
variables searched together) calls the :data:`WINDOW` sessions after it different from the
:data:`WINDOW` sessions before it: the question ``commcheck compare`` would have answered at
that session with those baselines. A kept change point names the session where the shift
started, its size with the interval, and the provenance fields that changed there (e.g.
``mpi_version 4.1.4 -> 5.0.11``).
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Callable, Iterable

import numpy as np

from commcheck import experiments
from commcheck.analysis import gate, robust, stats
from commcheck.analysis.gate import Settings
from commcheck.forks import cores, fork_map
from commcheck.results.store import Sample, SampleKey, Session

#: Sessions a side of a proposed change point that the gate's rule judges: the baseline a
#: ``commcheck baseline --last 20`` would hold, and a bounded cost per judgement on any history.
WINDOW = 20


@dataclasses.dataclass
class Point:
    """One session of one variable's series: its measured launches (oversubscribed runs and
    non-positive values left out), by value and provenance."""
    session: str
    when: str
    values: list[float]
    unit: str
    provenances: list[tuple]    # each launch's provenance, as :class:`Sample` has it
    value: float = math.nan     # the median of the values (computed when not given)

    def __post_init__(self):
        if math.isnan(self.value):
            self.value = statistics.median(self.values)

    def compact(self) -> Point:
        """The point without its launches: what a table or a plot needs once the change
        points are found, at a fraction of the memory."""
        return Point(self.session, self.when, [], self.unit, [], self.value)


def point(session: str, when: str, samples: list[Sample]) -> Point:
    """The point of one session's samples of one variable (all measured)."""
    return Point(session, when, [s.value for s in samples], samples[0].unit,
                 [s.provenance for s in samples])


@dataclasses.dataclass
class ChangePoint:
    key: SampleKey
    at: int                     # index of the first session after the shift
    session: str
    when: str
    before: float               # the judged medians: of session medians, or of launches
    after: float
    judged: stats.Outcome        # the gate's judgement of the windows, on log values x ``up``
    up: int                     # -1 where higher is better (so that worse is up), else 1
    worse: bool | None
    provenance_changes: dict

    @property
    def change(self) -> float:
        return self.after / self.before - 1

    @property
    def interval(self) -> tuple[float, float]:
        """The gate's interval of :attr:`change`, as fractions in the value's own direction."""
        low, high = sorted((self.up * self.judged.low, self.up * self.judged.high))
        return math.expm1(low), math.expm1(high)

    @property
    def p(self) -> float | None:
        """The rank test's p-value, where launches were the unit."""
        return self.judged.p

    def as_dict(self) -> dict:
        return {'key': list(self.key), 'session': self.session, 'when': self.when,
                'before': self.before, 'after': self.after, 'change': self.change,
                'ci_low': self.interval[0], 'ci_high': self.interval[1],
                'threshold': math.expm1(self.judged.threshold), 'level': self.judged.level,
                'outcome': self.judged.outcome, 'p': self.p, 'worse': self.worse,
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
            out.setdefault(key, []).append(point(sess.uuid, sess.when, samples))
    return out


def pelt_l2(signal, pen: float) -> list[int]:
    """The breakpoints ``ruptures.Pelt(model='l2', min_size=1, jump=1).fit(signal)
    .predict(pen)`` finds (the tests check it against ruptures): :func:`pelt_l2_many` of
    one signal."""
    return pelt_l2_many([signal], pen)[0]


def pelt_l2_many(signals: list, pen: float) -> list[list[int]]:
    """:func:`pelt_l2` of signals of one length, all at once: the same recursion, pruning
    and tie-breaking (the lowest admissible start), one array row per signal, the pruned
    starts masked. Each step is then a few array operations for every variable together,
    not for each one: a year of nightly sessions of some hundreds of variables segments in
    a fraction of a second instead of seconds."""
    x = np.stack([np.asarray(s, float).reshape(-1) - np.mean(s) for s in signals])
    count, n = x.shape
    zeros = np.zeros((count, 1))
    sums = np.concatenate((zeros, np.cumsum(x, axis=1)), axis=1)
    squares = np.concatenate((zeros, np.cumsum(x * x, axis=1)), axis=1)
    best = np.zeros((count, n + 1))             # optimal penalised cost of x[:t]
    last = np.zeros((count, n + 1), dtype=int)  # where its last segment starts
    admissible = np.zeros((count, n + 1), dtype=bool)
    rows = np.arange(count)
    for t in range(1, n + 1):
        admissible[:, t - 1] = True
        total = sums[:, t:t + 1] - sums[:, :t]
        cost = np.maximum(squares[:, t:t + 1] - squares[:, :t]
                          - total * total / (t - np.arange(t)), 0.0)
        candidates = np.where(admissible[:, :t], best[:, :t] + (cost + pen), np.inf)
        k = candidates.argmin(axis=1)
        best[:, t], last[:, t] = candidates[rows, k], k
        admissible[:, :t] &= candidates <= (best[:, t] + pen)[:, None]
    out = []
    for row in last.tolist():
        bkps, t = [], n
        while t > 0:
            bkps.append(t)
            t = row[t]
        out.append(sorted(bkps))
    return out


def spread(logs) -> float:
    """The robust spread of a series of session values (log) from session to session, from
    successive differences (their sigma is sqrt(2) x the series'; about 0, as a steady series'
    differences are), so a shift or a slow drift does not inflate it."""
    diffs = np.diff(np.asarray(logs, float))
    return robust.sigma(diffs, 0.0) / math.sqrt(2) if len(diffs) else 0.0


def candidates(series: list[list[float]]) -> list[list[int]]:
    """Per series of session values, where PELT proposes a shift: on the log of the values
    scaled by a robust noise estimate, with a BIC-like penalty; series of one length are
    segmented together (:func:`pelt_l2_many`)."""
    scaled, by_length = [], {}
    for i, values in enumerate(series):
        signal = np.log(np.asarray(values, float))
        noise = spread(signal)
        scale = noise if noise > 1e-12 else (np.std(signal) or 1.0)
        scaled.append(signal / scale)
        by_length.setdefault(len(values), []).append(i)
    out: list[list[int]] = [[] for _ in series]
    for n, members in by_length.items():
        found = pelt_l2_many([scaled[i] for i in members], 3 * math.log(n))
        for i, bkps in zip(members, found):
            out[i] = [b for b in bkps if b < n]
    return out


MIN_POINTS = 4              #: sessions a series needs before change points are searched


def _judged(points: list[Point], up: int) -> gate.Series:
    """The points' launches as the gate judges them: log values, ``up`` (1 or -1) worse up."""
    return gate.Series([up * math.log(v) for p in points for v in p.values],
                       [p.session for p in points for _ in p.values])


def _medians(points: list[Point], level: str) -> float:
    """The median the gate judged: of the session medians, or of the launches."""
    if level == 'sessions':
        return statistics.median(p.value for p in points)
    return statistics.median(v for p in points for v in p.values)


def detect(points: list[Point], key: SampleKey | tuple, settings: Settings = Settings(),
           proposed: list[int] | None = None, m: int = 1) -> list[ChangePoint]:
    """The change points of one variable's series: each cut PELT proposes (``proposed``,
    when :func:`candidates` already gave them) kept where :func:`gate.judge` calls the
    sessions after it (at most :data:`WINDOW`, up to the next cut) worse or better than those
    before it (at most :data:`WINDOW`, from the last kept change point), ``m`` the variables
    judged together; the spread between sessions is the whole series' (:func:`spread`), not
    that of the few sessions a window may hold."""
    if len(points) < MIN_POINTS:
        return []
    key = SampleKey._make(key)
    direction = experiments.direction(key.check, key.variable, points[0].unit)
    up = -1 if direction == experiments.HIGHER_IS_BETTER else 1
    if proposed is None:
        proposed = candidates([[p.value for p in points]])[0]
    found, start = [], 0
    between = spread([math.log(p.value) for p in points])
    bounds = proposed + [len(points)]
    for cut, end in zip(bounds, bounds[1:]):
        before = points[max(start, cut - WINDOW):cut]
        after = points[cut:min(end, cut + WINDOW)]
        judged = gate.judge(_judged(before, up), _judged(after, up), m, settings, between)
        if judged.outcome not in (stats.WORSE, stats.BETTER):
            continue
        found.append(ChangePoint(
            key=key, at=cut, session=points[cut].session, when=points[cut].when,
            before=_medians(before, judged.level), after=_medians(after, judged.level),
            judged=judged, up=up,
            worse=None if direction is None else judged.outcome == stats.WORSE,
            provenance_changes=gate.setup_changes(points[cut - 1].provenances,
                                                  points[cut].provenances)))
        start = cut
    return found


def detect_all(groups: Iterable[tuple[tuple, list[Point]]], settings: Settings = Settings(),
               m: int = 1) -> list[ChangePoint]:
    """:func:`detect` of several variables, their PELT proposals computed together."""
    searchable = [(key, pts) for key, pts in groups if len(pts) >= MIN_POINTS]
    proposals = candidates([[p.value for p in pts] for _, pts in searchable])
    return [cp for (key, pts), proposed in zip(searchable, proposals)
            for cp in detect(pts, key, settings, proposed, m)]


def history(sessions: list[Session], keys=None, settings: Settings = Settings()):
    """(series, change points) for every variable, or those in ``keys``."""
    all_series = series(sessions)
    chosen = {k: v for k, v in all_series.items() if keys is None or k in keys}
    return chosen, detect_all(sorted(chosen.items()), settings, len(chosen))


def indexed_points(launches: Iterable[tuple[str, list[float], str, list[tuple]]],
                   when: dict[str, str]) -> list[Point]:
    """One variable's points from the sample index's measured launches, a session at a
    time (:meth:`commcheck.results.sample_index.SampleIndex.launches`)."""
    return [Point(uuid, when.get(uuid, ''), values, unit, provenances)
            for uuid, values, unit, provenances in launches]


#: Variables from which :func:`search` runs in several processes (a year of nightly sessions
#: of the suite: some hundreds of variables, 10-20 ms each to read from the index).
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


#: Variables whose launches :func:`stream` holds at once (segmented together).
STREAM_BATCH = 64


def stream(groups: Iterable[tuple[tuple, list[Point]]], m: int,
           settings: Settings = Settings()):
    """(series, change points) from the variables' points as they come (e.g. read from
    :mod:`commcheck.results.sample_index`): at most :data:`STREAM_BATCH` variables keep their
    launches in memory, the others only their session values; ``m``: the variables searched
    together (of which these may be a part)."""
    chosen, found, batch = {}, [], []

    def flush():
        found.extend(detect_all(batch, settings, m))
        for key, pts in batch:
            chosen[key] = [p.compact() for p in pts]
        batch.clear()

    for key, pts in groups:
        if pts:
            batch.append((key, pts))
        if len(batch) == STREAM_BATCH:
            flush()
    flush()
    return chosen, found
