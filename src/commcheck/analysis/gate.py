"""The gate: did the MPI (or compiler, or library) get slower, or is the machine different today?

Model. A launch's figure is the product of the machine's state in its session (placement,
frequency, neighbours: it comes in regimes, so launches of one session are not independent
samples of the machine) and of the software's own cost. The C and Fortran ping-pong and COMMS2
kernels measure, in every launch, by the same two ranks on the same cores, the hardware floor
(src/kernels/common/cc_floor.h: a message through shared memory, or TCP between nodes, without
MPI). MPI's own cost is the figure over its floor (``latency / floor_latency``, ``floor_bw /
bw``: :attr:`Settings.adjust` ``ratio``, the default), or adjusted by its floor as a measured
covariate (``slope``, issue 44): per launch, on log values with worse up,
``y - theta (x - mean x)``, ``x`` the floor, ``theta`` the Theil-Sen slope of the baseline's
launches (:func:`adjusted`, clipped to [0, 2]), the interval widened by the floor's move times
the slope's own interval. The ratio is theta = 1. Between sessions that widening is large
where the floor flips regimes between launches (the 8 B floor: 0.07 or 0.28 us), so the slope
is the paired rule's default (:mod:`commcheck.analysis.paired`) and the gate's option
(docs/gate.md).

For a key variable with a floor the gate judges two quantities, each baseline against new:
MPI's own cost and the floor. Each comparison has three outcomes (as Chromium's Pinpoint):

- DIFFERENT (``worse`` / ``better``): the confidence interval of the change of the median lies
  wholly beyond the threshold (and, on launches, a rank test agrees);
- SAME: the interval lies wholly inside +/- the threshold;
- UNKNOWN: the interval straddles the threshold. Then ``launches_needed`` says how many
  launches a side (sessions, where sessions are the unit) would decide if the spread stays as
  observed: ``n * (half-width / margin)^2``, margin the distance of the estimate from the
  threshold, never fewer than the rank test needs.

The verdict (:func:`verdict`): ``MPI regressed`` (own cost worse, floor not, and worse by more
than the floor's estimated move where that move is undecided), ``machine changed`` (floor
moved, own cost not worse by more than that move: :func:`beyond_the_floor`), ``both``,
``improved``, ``unchanged``, ``cannot tell``. A floor that moved beyond doubt makes
the verdict "machine changed" also where MPI's own cost cannot be told (its interval not
beyond the floor's move): the node is different today, which is what such a session shows.
A variable that cannot be told, or an MPI regressed whose own floor held, while another floor
of the same launches moved says so in its note (:func:`machine_notes`). Variables without a
floor are judged on the raw value by the same rule (``regressed``). Two more facts of the
launches bound what MPI's own cost can say: a floor that is an MPI figure itself (the
datatypes' contiguous send) never makes "machine changed" (its move may be the MPI's:
"cannot tell"); and launches whose ranks waited for a CPU well beyond the baseline's
(:func:`contended`: busy loops on their cores) read "machine changed", as where a floor
moved (a pipelined transport slows more than its floor there: :func:`contention`).

Intervals, on log values (so a change is a ratio), at the family-wise level 1 - alpha/m for m
variables compared together (Bonferroni):

- baseline of >= 3 sessions: sessions are the unit; the spread is that of the baseline's session
  medians (robust: 1.4826 MAD), half-width z * sigma * sqrt(1/k_base + 1/k_new), never narrower
  than the launch-level bootstrap;
- baseline of 1 or 2 sessions: launch-level, percentile bootstrap of the difference of medians
  (a median is what a bimodal placement does not fool), and a DIFFERENT also needs the
  Mann-Whitney rank test at p < alpha/m (with 3 launches a side it cannot: cannot tell).

Threshold (minimum effect), unless ``min_effect`` is given: from >= 3 baseline sessions,
max(5 %, 3 x the robust between-session CV); from fewer, max(10 %, 2 x the robust CV of the
baseline's launches). ``detectable`` is the smallest worsening the samples at hand could flag:
threshold + half-width. Samples measured with another binding or placement are not compared.
"""

from __future__ import annotations

import dataclasses
import math
import os
import statistics
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from commcheck import experiments
from commcheck.analysis import robust, stats
from commcheck.analysis.stats import BETTER, SAME, UNKNOWN, WORSE, Outcome, decide
from commcheck.results.store import Sample, SampleKey, key_label

MPI_REGRESSED, BOTH, REGRESSED = 'MPI regressed', 'both', 'regressed'
MACHINE_CHANGED, CANNOT_TELL = 'machine changed', 'cannot tell'
IMPROVED, UNCHANGED, NO_BASELINE, NOT_COMPARABLE = (
    'improved', 'unchanged', 'no baseline', 'not comparable')
VERDICTS = (MPI_REGRESSED, BOTH, REGRESSED, MACHINE_CHANGED, CANNOT_TELL, IMPROVED, UNCHANGED,
            NO_BASELINE, NOT_COMPARABLE)
SLOPE, RATIO = 'slope', 'ratio'     #: how a floor adjusts its variable (Settings.adjust)
#: Verdicts that mean the software got slower: ``commcheck compare`` exits 1 on them.
SOFTWARE_REGRESSED = (MPI_REGRESSED, BOTH, REGRESSED)
#: Verdicts that decided something (``commcheck compare`` exits 3 when it has none).
DECIDED = (MPI_REGRESSED, BOTH, REGRESSED, MACHINE_CHANGED, IMPROVED, UNCHANGED)
#: Verdicts that decide nothing: the samples cannot tell, or there is nothing to compare with.
UNDECIDED = tuple(v for v in VERDICTS if v not in DECIDED)


def fails(verdict: str, fail_on_machine_change: bool = False) -> bool:
    """Whether a verdict fails the gate (``commcheck compare`` exits 1, its JUnit test case
    fails): the software regressed, or the machine changed and the site asked to fail on it."""
    return verdict in SOFTWARE_REGRESSED or (fail_on_machine_change and
                                             verdict == MACHINE_CHANGED)
#: Provenance fields that must match for two samples to measure the same thing.
SAME_SETUP = ('binding', 'placement')


@dataclasses.dataclass(frozen=True)
class Settings:
    min_effect: float | None = None  #: the threshold; None: derived from the data (see above)
    alpha: float = 0.05         #: family-wise false-alarm rate over the variables compared
    min_samples: int = 3        #: launches a side below which nothing is computed
    #: the derived threshold: max(floor, factor x robust CV), sessions or launches
    session_floor: float = 0.05
    session_factor: float = 3.0
    launch_floor: float = 0.10
    launch_factor: float = 2.0
    min_sessions: int = 3       #: baseline sessions from which sessions are the unit
    max_needed: int = 1000      #: launches needed above which "more than" is said
    n_boot: int = 2000          #: bootstrap resamples
    seed: int = 20261122        #: fixed, so the same samples give the same interval
    #: how a floor adjusts its key variable: ``ratio`` (over the floor: slope 1) or ``slope``
    #: (the baseline's, fitted: docs/gate.md says why it is not the default between sessions)
    adjust: str = 'ratio'

    def threshold(self, between: float | None, within: float) -> float:
        """The minimum effect as a log ratio: given, or from the spread between sessions
        (``between``, when the baseline has enough) or between launches (``within``)."""
        if self.min_effect is not None:
            return math.log1p(self.min_effect)
        if between is not None:
            return max(math.log1p(self.session_floor), self.session_factor * between)
        return max(math.log1p(self.launch_floor), self.launch_factor * within)


@dataclasses.dataclass
class Series:
    """A judged quantity's launches, as log values with worse up, with their sessions."""
    values: list[float]
    sessions: list[str]

    def by_session(self) -> list[float]:
        groups: dict[str, list[float]] = {}
        for v, s in zip(self.values, self.sessions):
            groups.setdefault(s, []).append(v)
        return [statistics.median(g) for g in groups.values()]


def _min_rank_launches(alpha: float) -> int:
    """Launches a side (equal sides) at which Mann-Whitney can reach p < alpha at all."""
    n = 1
    while 2 / math.comb(2 * n, n) >= alpha:
        n += 1
    return n


def _boot_interval(base: list[float], new: list[float], level: float, settings: Settings):
    """(low, high) of the percentile bootstrap of median(new) - median(base), each side
    resampled on its own (unpaired). The same resampling and percentiles as
    ``scipy.stats.bootstrap(method='percentile', paired=False)`` with the same generator
    (``tests/unit/test_gate.py`` holds the two equal), without its per-call checks: the gate
    computes one or two per key variable, some hundreds for a suite."""
    rng = np.random.default_rng(settings.seed)
    medians = []
    for side in (np.asarray(new), np.asarray(base)):
        picks = rng.integers(0, len(side), (settings.n_boot, len(side)))
        medians.append(np.median(side[picks], axis=-1))
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(medians[0] - medians[1], [tail, 100 - tail])
    return float(low), float(high)


def _rank_p(base: list[float], new: list[float]) -> float:
    """Two-sided Mann-Whitney U p-value (1 where every value is equal)."""
    from scipy import stats  # here: scipy.stats costs a second to import; sessions need none
    if len(set(base) | set(new)) == 1:
        return 1.0
    return float(stats.mannwhitneyu(new, base, alternative='two-sided').pvalue)


def judge(base: Series, new: Series, m: int = 1, settings: Settings = Settings(),
          between: float | None = None, widen: float = 0.0) -> Outcome:
    """The three-outcome comparison of one quantity (see the module's docstring).
    ``between``: the spread of session medians (log), where more sessions than the baseline's
    tell it (a long series: :mod:`commcheck.analysis.trend`); else from the baseline's.
    ``widen``: what the interval carries beyond the samples' spread, either side (the floor's
    slope's uncertainty: :func:`adjusted`)."""
    level = 1 - settings.alpha / max(m, 1)
    change = statistics.median(new.values) - statistics.median(base.values)
    # sorted: the same launches give the same interval in whatever order they were read
    low, high = _boot_interval(sorted(base.values), sorted(new.values), level, settings)
    medians = base.by_session()
    if between is None and len(medians) >= settings.min_sessions:
        between = robust.sigma(medians)
    threshold = settings.threshold(between, robust.sigma(base.values))
    n = min(len(base.values), len(new.values))
    if between is not None:
        below, above = change - low, high - change         # the launch-level half-widths
        change = statistics.median(new.by_session()) - statistics.median(medians)
        half = statistics.NormalDist().inv_cdf(1 - (1 - level) / 2) * between * math.sqrt(
            1 / len(medians) + 1 / len(new.by_session()))
        low, high = change - max(half, below), change + max(half, above)
        out = Outcome(UNKNOWN, change, low, high, threshold, 'sessions')
        n = max(len(medians), len(new.by_session()))
        rank_ok, rank_n = True, 0
    else:
        out = Outcome(UNKNOWN, change, low, high, threshold, 'launches',
                      p=_rank_p(base.values, new.values))
        rank_n = _min_rank_launches(1 - level)
        rank_ok = out.p < 1 - level
    out.low, out.high = low, high = low - widen, high + widen
    out.outcome = decide(low, high, threshold, rank_ok)
    if out.outcome == UNKNOWN:
        need = stats.needed(n, (high - low) / 2, stats.distance(change, threshold),
                            settings.max_needed)
        out.needed = None if need is None else max(need, rank_n)
    return out


def beyond_the_floor(cost: Outcome, floor: Outcome) -> bool:
    """Whether MPI's figure moved by more than a move of the floor can explain.

    MPI's figure is not proportional to the floor (measured: docs/gate.md#the-model): a
    machine whose floor moved by d (log) can move MPI's figure by anywhere from 0 to 2d
    (:data:`stats.MAX_SLOPE`). ``cost`` is the figure adjusted by theta times the floor's
    move (``cost.slope``; over the floor: 1), so the machine alone can leave up to
    (2 - theta) d of a worse floor's move in it, and up to theta |d| of a better one's: only
    the part of the cost's interval beyond that is the software's. Over the floor (theta 1)
    both are |d|, the rule before the slope was fitted."""
    theta = 1.0 if cost.slope is None else cost.slope
    move = floor.change
    return cost.low > (stats.MAX_SLOPE - theta) * move if move > 0 else cost.low > -theta * move


def verdict(cost: Outcome, floor: Outcome | None, mpi_floor: bool = False,
            undecided_bounds: bool = True) -> str:
    """The verdict from MPI's own cost (or the raw value, without a floor) and the floor.
    ``mpi_floor``: the floor is an MPI figure itself (:func:`experiments.mpi_floor`): its move
    is the MPI's or the machine's, so what a hardware floor's move makes ``machine changed``
    is ``cannot tell``, and a cost beyond a worse floor is ``MPI regressed``, not ``both``.
    ``undecided_bounds``: a floor's move that is not decided bounds what is the software's
    too (between sessions; the paired rule with a fitted slope leaves that to the slope, see
    :mod:`commcheck.analysis.paired`)."""
    said = _verdict(cost, floor, undecided_bounds)
    if mpi_floor:
        return {MACHINE_CHANGED: CANNOT_TELL, BOTH: MPI_REGRESSED}.get(said, said)
    return said


def _verdict(cost: Outcome, floor: Outcome | None, undecided_bounds: bool = True) -> str:
    if floor is None:
        return {WORSE: REGRESSED, BETTER: IMPROVED, SAME: UNCHANGED,
                UNKNOWN: CANNOT_TELL}[cost.outcome]
    moved = floor.outcome in (WORSE, BETTER)
    if cost.outcome == WORSE:
        # Unless the floor held, its move bounds what is the software's, decided or not: an
        # undecided one too (a measured case: docs/gate.md#verdicts).
        bounds = moved or (undecided_bounds and floor.outcome == UNKNOWN)
        if bounds and not beyond_the_floor(cost, floor):
            return MACHINE_CHANGED if moved else CANNOT_TELL
        return BOTH if floor.outcome == WORSE else MPI_REGRESSED
    if cost.outcome == UNKNOWN:
        # The floor moved for sure; whatever MPI's own cost did within that move is the
        # machine's by the same bound: "machine changed" (the note gives the cost's interval).
        return MACHINE_CHANGED if moved and not beyond_the_floor(cost, floor) else CANNOT_TELL
    if moved:
        return MACHINE_CHANGED
    return IMPROVED if cost.outcome == BETTER else UNCHANGED


@dataclasses.dataclass
class Comparison:
    key: SampleKey
    unit: str
    direction: str | None
    base: list[float]
    new: list[float]
    verdict: str = CANNOT_TELL
    ratio: float | None = None          #: median(new) / median(base), the raw figure
    cost: Outcome | None = None         #: MPI's own cost (value over floor), or the raw value
    floor: Outcome | None = None        #: the floor, where the variable has one
    floor_variable: str | None = None
    note: str = ''
    provenance_changes: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        self.key = SampleKey._make(self.key)     # a plain 5-tuple (from JSON, say) is typed

    @property
    def check(self) -> str:
        return self.key.check

    @property
    def variable(self) -> str:
        return self.key.variable

    @property
    def change(self) -> float | None:
        return None if self.ratio is None else self.ratio - 1.0

    @property
    def launches_needed(self) -> int | None:
        return self.cost.needed if self.cost and self.verdict == CANNOT_TELL else None

    def judged(self) -> str:
        """What was judged: the value, over its floor, or adjusted by its floor's slope."""
        if not self.floor:
            return 'value'
        if self.cost and self.cost.slope is not None:
            return f'MPI cost (value adjusted by its floor, slope {self.cost.slope:.2f})'
        return 'MPI cost (value over floor)'

    def as_dict(self) -> dict:
        system, partition, environ, test, variable = self.key
        return {'system': system, 'partition': partition, 'environ': environ, 'test': test,
                'check': self.check, 'variable': variable, 'unit': self.unit,
                'direction': self.direction, 'verdict': self.verdict,
                'n_base': len(self.base), 'n_new': len(self.new),
                'median_base': _median(self.base), 'median_new': _median(self.new),
                'change': self.change, 'floor_variable': self.floor_variable,
                'judged': self.judged(),
                'cost': self.cost.as_dict() if self.cost else None,
                'floor': self.floor.as_dict() if self.floor else None,
                'detectable': self.cost.detectable if self.cost else None,
                'launches_needed': self.launches_needed, 'note': self.note,
                'provenance_changes': self.provenance_changes}


def _median(values):
    return statistics.median(values) if values else None


def _setup(provenances: list[tuple]) -> dict[str, str]:
    """The most common value of each provenance field over launches' provenances."""
    fields: dict[str, Counter] = {}
    for provenance, n in Counter(provenances).items():          # few distinct
        for k, v in provenance:
            fields.setdefault(k, Counter())[v] += n
    return {k: c.most_common(1)[0][0] for k, c in fields.items()}


def provenance_changes(base: list[Sample], new: list[Sample]) -> dict[str, tuple[str, str]]:
    """The setup fields that differ between two sets of sessions' samples."""
    return setup_changes([s.provenance for s in base], [s.provenance for s in new])


def setup_changes(base: list[tuple], new: list[tuple]) -> dict[str, tuple[str, str]]:
    """The setup fields that differ between two sets of launches' provenances (nodes only
    where the host differs too, and only where both sides know them)."""
    before, after = _setup(base), _setup(new)
    ignore = {'host', 'nodelist'} if before.get('host') == after.get('host') else set()
    if '' in (before.get('nodelist', ''), after.get('nodelist', '')):
        ignore.add('nodelist')
    return {k: (before.get(k, ''), after.get(k, '')) for k in sorted(set(before) | set(after))
            if before.get(k, '') != after.get(k, '') and k not in ignore}


def pair(values: list[Sample], floors: list[Sample]) -> list[tuple[Sample, Sample]]:
    """Each launch's value with the floor measured in the same launch (same session and job
    completion time; in stored order where times do not tell launches apart)."""
    by_launch = {(f.session, f.time): f for f in floors}
    if len(by_launch) == len(floors) == len({(v.session, v.time) for v in values}):
        return [(v, by_launch[(v.session, v.time)]) for v in values
                if (v.session, v.time) in by_launch]
    return list(zip(values, floors)) if len(values) == len(floors) else []


def adjusted(then: list[tuple[Sample, Sample]], now: list[tuple[Sample, Sample]],
             directions: tuple[str, str], floor: Outcome, m: int, settings: Settings) -> Outcome:
    """The value adjusted by its floor (the module's docstring): per launch
    ``y - theta (x - mean x)``, log values worse up, ``theta`` the Theil-Sen slope of the
    baseline's launches (clipped to [0, 2]); its interval widened by the floor's move times
    the slope's (Sen's interval at the family's level): how far the slope's uncertainty can
    carry the adjustment where the floor moved."""
    way, fway = directions
    xs = [stats.worse_up(f.value, fway) for _, f in then]
    ys = [stats.worse_up(v.value, way) for v, _ in then]
    theta, low, high = stats.theil_sen(xs, ys, 1 - settings.alpha / max(m, 1))
    centre = statistics.fmean(xs)

    def shifted(pairs: list[tuple[Sample, Sample]]) -> Series:
        return Series([stats.worse_up(v.value, way) - theta * (stats.worse_up(f.value, fway)
                                                               - centre) for v, f in pairs],
                      [v.session for v, _ in pairs])
    out = judge(shifted(then), shifted(now), m, settings,
                widen=abs(floor.change) * max(high - theta, theta - low))
    out.slope = theta
    return out


def series(samples: list[Sample], direction: str) -> Series:
    return Series([stats.worse_up(s.value, direction) for s in samples],
                  [s.session for s in samples])


def cost_series(pairs: list[tuple[Sample, Sample]], direction: str) -> Series:
    """MPI's own cost per launch, log(value / floor) with worse up for either direction."""
    return Series([stats.worse_up(v.value / f.value, direction) for v, f in pairs],
                  [v.session for v, _ in pairs])


def _unjudgeable(comp: Comparison, then: list[Sample], now: list[Sample],
                 settings: Settings) -> bool:
    """Sets the verdict of a comparison that cannot be made (and says why); False otherwise."""
    if not then:
        comp.verdict = NO_BASELINE
        return True
    comp.provenance_changes = provenance_changes(then, now)
    differ = [f for f in SAME_SETUP if f in comp.provenance_changes]
    if comp.direction is None:
        comp.verdict, comp.note = NOT_COMPARABLE, 'no direction (not a performance figure)'
    elif differ:
        comp.verdict = NOT_COMPARABLE
        comp.note = '; '.join(f'{f} {comp.provenance_changes[f][0]} -> '
                              f'{comp.provenance_changes[f][1]}' for f in differ)
    elif min(comp.base + comp.new) <= 0:
        comp.verdict, comp.note = NOT_COMPARABLE, 'a value not positive'
    elif min(len(comp.base), len(comp.new)) < settings.min_samples:
        comp.verdict = CANNOT_TELL
    else:
        return False
    return True


def _judge_one(comp: Comparison, then, now, base, new, m: int, settings: Settings) -> None:
    """Judges one key variable: MPI's own cost and the floor where both sides have floors of
    the same launches, else the raw value."""
    comp.floor_variable = experiments.floor_of(comp.check, comp.variable)
    fkey = comp.key.of(comp.floor_variable) if comp.floor_variable else None
    pairs_then = pair(then, base.get(fkey, [])) if comp.floor_variable else []
    pairs_now = pair(now, new.get(fkey, [])) if comp.floor_variable else []
    if min(len(pairs_then), len(pairs_now)) >= settings.min_samples:
        fdir = experiments.direction(comp.check, comp.floor_variable)
        comp.floor = judge(series([f for _, f in pairs_then], fdir),
                           series([f for _, f in pairs_now], fdir), m, settings)
        if settings.adjust == RATIO:
            comp.cost = judge(cost_series(pairs_then, comp.direction),
                              cost_series(pairs_now, comp.direction), m, settings)
        else:
            comp.cost = adjusted(pairs_then, pairs_now, (comp.direction, fdir), comp.floor, m,
                                 settings)
    else:
        if comp.floor_variable:
            comp.note = f'no {comp.floor_variable} on both sides: judged on the value'
            comp.floor_variable = None
        comp.cost = judge(series(then, comp.direction), series(now, comp.direction), m,
                          settings)
    mpi_floor = experiments.mpi_floor(comp.check) if comp.floor else ''
    comp.verdict = verdict(comp.cost, comp.floor, bool(mpi_floor))
    _explain(comp, mpi_floor, settings)


def _explain(comp: Comparison, mpi_floor: str, settings: Settings) -> None:
    """The verdict's note (and a ratio of two MPI figures' wording): what decided it, or what
    would."""
    if comp.verdict == REGRESSED and experiments.is_own_ratio(comp.check, comp.variable):
        comp.verdict = MPI_REGRESSED
        comp.note = ('a ratio of two MPI figures of the same job and ranks, which a slower '
                     'machine moves alike')
    elif mpi_floor and _floor_moved(comp):
        # said first: what decided the verdict (the launches-needed note follows it)
        comp.note = (f"its floor {comp.floor_variable} is {mpi_floor}: its move "
                     f"({comp.floor.interval(0)} worse-positive) is the MPI's or the "
                     f"machine's, not told apart here (the ping-pong's hardware floors in the "
                     f"same session tell whether the machine moved); MPI's own cost over it "
                     f"{comp.cost.interval(0)}")
    elif comp.verdict == MACHINE_CHANGED and comp.cost.outcome == WORSE:
        comp.note = (f"MPI's own cost {math.expm1(comp.cost.change):+.0%} too, within what the "
                     f"floor's move ({math.expm1(comp.floor.change):+.0%}) can explain")
    elif comp.verdict == MACHINE_CHANGED and comp.cost.outcome == UNKNOWN:
        comp.note = (f"MPI's own cost {comp.cost.interval(0)} cannot be told apart, and is "
                     f"within what the floor's move ({math.expm1(comp.floor.change):+.0%}) "
                     f"can explain")
    elif comp.verdict == CANNOT_TELL and comp.cost.outcome == WORSE:
        comp.note = (f"MPI's own cost {comp.cost.interval(0)} is within what the floor's move, "
                     f"itself undecided ({comp.floor.interval(0)}), can explain")
    if comp.verdict == CANNOT_TELL and not (mpi_floor and _floor_moved(comp)):
        # what would decide: MPI's own cost, or where that is decided, the floor's move (an
        # MPI floor's decided move: no number of launches, the note above says what would)
        told = comp.cost if comp.cost.outcome == UNKNOWN or not comp.floor else comp.floor
        need = told.needed
        unit = told.level
        said = (f'about {need} {unit} a side would decide' if need and
                need <= settings.max_needed else f'more than {settings.max_needed} '
                f'{unit} a side would be needed' if need else 'on the threshold')
        comp.note = '; '.join(x for x in (said, comp.note) if x)


def machine_notes(comparisons: list[Comparison]) -> None:
    """Notes where another floor of the same launches (same system, partition, environment and
    test) moved: on each variable that cannot be told, and on each MPI regressed whose own
    floor did not move. A floor measures one size's path: on this project's 2-core VM the 8 B
    floor rose 4x in some stretches (0.07 to 0.26-0.31 us) while the 1 MiB floor held, and
    Intel MPI's 1 MiB bandwidth fell about 12x in them; the verdict stays the rule's, and the
    note puts the machine's move beside it."""
    moved: dict[tuple, dict[str, str]] = {}
    for c in comparisons:
        if _floor_moved(c) and not experiments.mpi_floor(c.check):   # an MPI figure's move
            # may be the MPI's: not "the machine changed"
            moved.setdefault(c.key.launches, {})[c.floor_variable] = (
                f'{c.floor_variable} {c.floor.interval(0)} worse-positive')
    for c in comparisons:
        floors = moved.get(c.key.launches, {})
        if c.verdict == CANNOT_TELL and floors:
            said = 'the machine changed in these launches: ' + '; '.join(floors.values())
        elif c.verdict == MPI_REGRESSED and floors and not _floor_moved(c):
            said = ('its own floor held, but the machine changed in these launches: '
                    + '; '.join(floors.values()))
        else:
            continue
        c.note = '; '.join(x for x in (c.note, said) if x)


def _floor_moved(c: Comparison) -> bool:
    return c.floor is not None and c.floor.outcome in (WORSE, BETTER)


def compare(base: dict[tuple, list[Sample]], new: dict[tuple, list[Sample]],
            settings: Settings = Settings()) -> list[Comparison]:
    """One :class:`Comparison` per variable of ``new`` (floor variables and own costs are judged
    with the variable they are the floor or cost of, not on their own); keys absent from
    ``base`` say so."""
    out, todo = [], []
    for key in map(SampleKey._make, sorted(new)):
        if (experiments.is_floor(key.check, key.variable)
                or experiments.own_cost_of(key.check, key.variable)):
            continue        # judged with the variable they are the floor or the cost of
        now, then = new[key], base.get(key, [])
        comp = Comparison(key=key, unit=now[0].unit,
                          direction=experiments.direction(key.check, key.variable, now[0].unit),
                          base=[s.value for s in then], new=[s.value for s in now])
        out.append(comp)
        if _unjudgeable(comp, then, now, settings):
            if comp.verdict == CANNOT_TELL:
                comp.note = (f'{len(comp.base)} baseline and {len(comp.new)} new launches; '
                             f'need {settings.min_samples} each (reframe --repeat N)')
            continue
        comp.ratio = _median(comp.new) / _median(comp.base)
        todo.append((comp, then, now))
    # Each judgement seeds its own resampling, so the order they run in changes nothing; the
    # bootstrap's medians run in numpy without the GIL, so threads use every core.
    with ThreadPoolExecutor(max(1, min(len(todo), os.cpu_count() or 1))) as pool:
        list(pool.map(lambda job: _judge_one(*job, base, new, len(todo), settings), todo))
    contention(out, base, new)
    machine_notes(out)
    return out


#: How much more of its measuring time (a share) the new launches' ranks must have waited for
#: a CPU than the baseline's (:data:`experiments.CPU_WAIT`, upper quartiles: :func:`waited`)
#: to be contended. On this project's 2-core VM (docs/floors.md#cpu-contention), upper
#: quartiles of a session's launches: quiet ping-pong under 1 %, quiet datatypes 3-7 %, the
#: datatypes with Open MPI's CMA off 4-9 %; beside busy loops on both cores, the ping-pong
#: 32-51 %, the datatypes 20-38 %.
CONTENDED = 0.10


def waited(waits: list[float]) -> float:
    """The launches' CPU wait as the gate reads it: their upper quartile. A short sweep can fit
    between a busy loop's time slices and show none, so contended sessions are bimodal; a
    quiet one's rare hiccup stays above it."""
    return float(np.percentile(waits, 75))


def contended(base_waits: list[float], new_waits: list[float]) -> bool:
    """Whether the new launches' ranks waited for a CPU more than the baseline's by over
    :data:`CONTENDED` of the time (:func:`waited`; a baseline without the figure counts as
    none)."""
    if not new_waits:
        return False
    before = waited(base_waits) if base_waits else 0.0
    return waited(new_waits) - before > CONTENDED


def contention(comparisons: list[Comparison], base: dict, new: dict) -> None:
    """Where the new launches were contended for their CPUs (:func:`contended`), the machine
    changed, as where a floor moved: a transport that waits on its peer's time slice once per
    chunk slows more than its floor's one copy, so MPI's own cost grows without the software
    changing. Every judged verdict of those launches reads ``machine changed``, saying how
    long the ranks waited, and what the rule alone had said."""
    for c in comparisons:
        if c.verdict in (NO_BASELINE, NOT_COMPARABLE):
            continue
        wkey = c.key.of(experiments.CPU_WAIT)
        then = [s.value for s in base.get(wkey, [])]
        now = [s.value for s in new.get(wkey, [])]
        if not contended(then, now):
            continue
        said = (f'the ranks waited for a CPU {waited(now):.0%} of the measuring time (upper '
                f'quartile)' + (f', baseline {waited(then):.0%}' if then else '')
                + f': CPU contention, MPI not judged (without it: {c.verdict})')
        # what would have decided an undecided verdict no longer applies
        kept = '' if c.verdict == CANNOT_TELL else c.note
        c.verdict = MACHINE_CHANGED
        c.note = '; '.join(x for x in (said, kept) if x)


def counts(comparisons: list[Comparison]) -> dict[str, int]:
    found = Counter(c.verdict for c in comparisons)
    return {v: found.get(v, 0) for v in VERDICTS}


def describe(comp: Comparison) -> str:
    change = f' {comp.change:+.1%}' if comp.change is not None else ''
    cost = ''
    if comp.cost:
        what = 'MPI cost' if comp.floor else 'value'
        cost = (f' ({what} {math.expm1(comp.cost.change):+.1%} [{math.expm1(comp.cost.low):+.1%},'
                f' {math.expm1(comp.cost.high):+.1%}] worse-positive)')
    return f'{comp.verdict:>15}  {key_label(comp.key)}{change}{cost}'
