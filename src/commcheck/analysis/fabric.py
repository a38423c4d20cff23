"""Fabric acceptance without a baseline: which node or link of a node-pair sweep is an outlier.

The pair sweep (``src/kernels/fabric/pairsweep.c``) prints one DATA record per node pair:
one-way latency and the streaming bandwidth in each direction. Here the pairs are judged
against their own population, no baseline needed:

- per node, the median over the node's pairs (a bad node spoils all its pairs; a healthy node
  meets the bad one in only one of its N-1 pairs, which the median ignores from N = 4 on);
- across the nodes (or the pairs), the median and the MAD (scaled by 1.4826, so it estimates a
  standard deviation for normal data) of the OTHER nodes (pairs): leave-one-out, so that in a
  small population an outlier does not widen the spread it is measured against; a value's
  robust z-score is its distance from that median on the worse side, in scaled MADs (the MAD
  taken at least 1 % of the median);
- a node is named when its z-score is at least ``Settings.z`` AND it is worse than the median
  by at least ``Settings.min_effect`` (relative): a quiet cluster with a tiny MAD does not name
  its noise. A pair is named as a link when it is an outlier among the pairs and neither of
  its nodes is named for the same metric.

With earlier sweeps (history), a pair worse than its own past median by ``min_effect`` is named
too (:func:`against_history`).
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Iterable, Mapping, Sequence

from commcheck.analysis.robust import sigma

#: The metrics judged: name -> (pair field, unit, worse direction).
METRICS = {'latency': ('latency_us', 'us', 'higher'), 'bandwidth': ('bw_MBps', 'MB/s', 'lower')}
#: Nodes needed to name a node: each then has >= 3 pairs, and one bad peer cannot move its median.
MIN_NODES = 4
#: Pairs needed to name a link.
MIN_PAIRS = 3


class FabricError(ValueError):
    """Sweep records that cannot be judged (missing fields, duplicates, non-physical values)."""


@dataclasses.dataclass(frozen=True)
class Settings:
    #: Robust z-score (in scaled MADs) from which a value is an outlier.
    z: float = 5.0
    #: Minimum relative effect: worse than the median by at least this fraction (0.5: a
    #: latency 1.5 x the median, a bandwidth below median / 1.5).
    min_effect: float = 0.5
    #: The metrics that name outliers (both are always measured and shown).
    metrics: tuple[str, ...] = ('latency', 'bandwidth')


@dataclasses.dataclass(frozen=True)
class Pair:
    a: str
    b: str
    latency_us: float
    bw_ab_MBps: float       #: a -> b
    bw_ba_MBps: float       #: b -> a

    @property
    def bw_MBps(self) -> float:
        """The pair's bandwidth: the worse direction."""
        return min(self.bw_ab_MBps, self.bw_ba_MBps)

    @property
    def key(self) -> tuple[str, str]:
        return (self.a, self.b) if self.a <= self.b else (self.b, self.a)


@dataclasses.dataclass(frozen=True)
class Outlier:
    kind: str               #: 'node', 'link' or 'history'
    name: str               #: the node, or 'a<->b'
    metric: str             #: 'latency' or 'bandwidth'
    value: float
    reference: float        #: the population's median (or the pair's past median)
    unit: str
    z: float                #: robust z-score on the worse side
    effect: float           #: how much worse, relative (0.5: 50 %)
    nodes: tuple[str, ...]  #: the nodes to rerun

    def describe(self) -> str:
        where = {'node': 'node', 'link': 'link', 'history': 'link vs its past'}[self.kind]
        z = 'inf' if math.isinf(self.z) else f'{self.z:.1f}'
        return (f'{where} {self.name}: {self.metric} {self.value:.4g} {self.unit} against '
                f'median {self.reference:.4g} {self.unit} ({self.effect:+.0%} worse, robust z '
                f'{z})')


@dataclasses.dataclass
class Judgement:
    nodes: list[str]
    pairs: list[Pair]
    node_values: dict[str, dict[str, float]]     #: metric -> node -> median over its pairs
    medians: dict[str, float]                    #: metric -> median over the nodes
    spread: dict[str, float]                     #: metric -> scaled MAD over the nodes
    node_z: dict[str, dict[str, float]]          #: metric -> node -> robust z (worse side)
    outliers: list[Outlier]
    notes: list[str]

    @property
    def named_nodes(self) -> list[str]:
        return sorted({n for o in self.outliers for n in o.nodes})


#: Which of the kernel's figures a sweep is judged on: the median batch (default: a sustained
#: problem, jitter included) or the best batch (nodes that share CPUs, as the emulated cluster's:
#: contention only ever slows a batch, while a slow link slows every one).
STATISTICS = {'median': ('latency_us', 'bw_ab_MBps', 'bw_ba_MBps'),
              'best': ('latency_best_us', 'bw_ab_best_MBps', 'bw_ba_best_MBps')}


def pairs_from_records(rows: Iterable[Mapping], statistic: str = 'median') -> list[Pair]:
    """The sweep's DATA records as pairs, validated: every field present, finite and positive,
    two distinct nodes, no pair twice in one pass. Hosts that appear under several ranks (ranks
    sharing a node) are told apart as ``host#rank``. ``statistic``: see STATISTICS. A pair
    measured in several passes (``pass=``) is combined: the median over the passes of its
    medians, or the best of its best batches (a transient slows one pass, a slow link all)."""
    if statistic not in STATISTICS:
        raise FabricError(f'statistic {statistic!r}: expected one of {", ".join(STATISTICS)}')
    fields = STATISTICS[statistic]
    rows = list(rows)
    ranks: dict[str, set] = {}
    for row in rows:
        for end in ('a', 'b'):
            ranks.setdefault(str(row.get(end)), set()).add(row.get(f'r{end}'))
    shared = {host for host, seen in ranks.items() if len(seen) > 1}
    passes: dict[tuple[str, str], dict] = {}
    for i, row in enumerate(rows, 1):
        pair = _pair(i, {**row, **{k: row.get(f) for k, f in zip(STATISTICS['median'], fields)
                                   if f in row}}, shared)
        if (pair.a, pair.b) != pair.key:
            pair = Pair(pair.b, pair.a, pair.latency_us, pair.bw_ba_MBps, pair.bw_ab_MBps)
        seen = passes.setdefault(pair.key, {})
        number = row.get('pass', 0)
        if number in seen:
            raise FabricError(f'sweep record {i}: pair {pair.a}<->{pair.b} measured twice'
                              f'{f" in pass {number}" if "pass" in row else ""}')
        seen[number] = pair
    return [_combine(list(p.values()), statistic) for p in passes.values()]


def _combine(pairs: list[Pair], statistic: str) -> Pair:
    if len(pairs) == 1:
        return pairs[0]
    pick_lat, pick_bw = ((min, max) if statistic == 'best'
                         else (statistics.median, statistics.median))
    return Pair(pairs[0].a, pairs[0].b, pick_lat([p.latency_us for p in pairs]),
                pick_bw([p.bw_ab_MBps for p in pairs]), pick_bw([p.bw_ba_MBps for p in pairs]))


def _pair(i: int, row: Mapping, shared: set) -> Pair:
    missing = [k for k in ('a', 'b', 'latency_us', 'bw_ab_MBps', 'bw_ba_MBps') if k not in row]
    if missing:
        raise FabricError(f'sweep record {i}: missing {", ".join(missing)}')
    names = [str(row[e]) if str(row[e]) not in shared else f'{row[e]}#{row.get("r" + e)}'
             for e in ('a', 'b')]
    if names[0] == names[1]:
        raise FabricError(f'sweep record {i}: a node paired with itself ({names[0]})')
    values = []
    for key in ('latency_us', 'bw_ab_MBps', 'bw_ba_MBps'):
        value = row[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                not math.isfinite(value) or value <= 0:
            raise FabricError(f'sweep record {i}: {key}={value!r} is not a positive number')
        values.append(float(value))
    return Pair(names[0], names[1], *values)


#: The spread is never taken below this fraction of the median (timing resolution): a
#: population of equal values gives finite z-scores.
MIN_SPREAD = 0.01


def robust(values: Sequence[float]) -> tuple[float, float]:
    """(median, scaled MAD) of the values, the MAD at least MIN_SPREAD x the median."""
    med = statistics.median(values)
    mad = sigma(values, med)
    return med, max(mad, MIN_SPREAD * abs(med))


#: Up to this population, each member is judged against the others (leave-one-out); above,
#: one outlier hardly moves the median and MAD, which are then computed once (a 1024-node
#: sweep has 523,776 pairs).
LEAVE_ONE_OUT = 64


def others(values: Mapping, key, whole: tuple[float, float] | None = None) -> tuple[float, float]:
    """(median, spread) of the population without ``key`` (leave-one-out): in a small
    population the outlier itself would widen the MAD it is measured in (4 nodes, one 100 x
    slower: its own z-score would stay near 4). Large populations: ``whole``, their own."""
    if len(values) > LEAVE_ONE_OUT:
        return whole or robust(list(values.values()))
    rest = [v for k, v in values.items() if k != key]
    return robust(rest) if rest else robust(list(values.values()))


def worse_by(value: float, reference: float, metric: str) -> float:
    """How much worse ``value`` is than ``reference``, relative (negative: better)."""
    if METRICS[metric][2] == 'higher':
        return value / reference - 1
    return reference / value - 1


def z_score(value: float, med: float, spread: float, metric: str) -> float:
    """Distance from the median on the worse side, in scaled MADs (0 on the better side)."""
    gap = value - med if METRICS[metric][2] == 'higher' else med - value
    if gap <= 0:
        return 0.0
    return math.inf if spread == 0 else gap / spread


def pair_value(pair: Pair, metric: str) -> float:
    return pair.latency_us if metric == 'latency' else pair.bw_MBps


def per_node(pairs: Sequence[Pair], metric: str) -> dict[str, float]:
    """Each node's median over its pairs."""
    by_node: dict[str, list[float]] = {}
    for pair in pairs:
        for node in (pair.a, pair.b):
            by_node.setdefault(node, []).append(pair_value(pair, metric))
    return {node: statistics.median(v) for node, v in sorted(by_node.items())}


def _named(value, med, spread, metric, settings) -> tuple[bool, float, float]:
    z, effect = z_score(value, med, spread, metric), worse_by(value, med, metric)
    return z >= settings.z and effect >= settings.min_effect, z, effect


def judge(pairs: Sequence[Pair], settings: Settings = Settings()) -> Judgement:
    """Per node and per pair, the outliers of one sweep (see the module's description)."""
    pairs = list(pairs)
    nodes = sorted({n for p in pairs for n in (p.a, p.b)})
    out = Judgement(nodes, pairs, {}, {}, {}, {}, [], [])
    if len(nodes) < MIN_NODES:
        out.notes.append(f'{len(nodes)} nodes: a node is named from {MIN_NODES} nodes on '
                         f'(each needs 3 pairs so that one bad peer cannot move its median)')
    if len(pairs) < MIN_PAIRS:
        out.notes.append(f'{len(pairs)} pair(s): a link is named from {MIN_PAIRS} pairs on')
    for metric, (_, unit, _) in METRICS.items():
        values = per_node(pairs, metric)
        med, spread = robust(list(values.values())) if values else (math.nan, math.nan)
        out.node_values[metric], out.medians[metric], out.spread[metric] = values, med, spread
        out.node_z[metric] = {}
        named = set()
        for node, value in values.items():
            ref, ref_spread = others(values, node, (med, spread))
            hit, z, effect = _named(value, ref, ref_spread, metric, settings)
            out.node_z[metric][node] = z
            if hit and len(nodes) >= MIN_NODES and metric in settings.metrics:
                named.add(node)
                out.outliers.append(Outlier('node', node, metric, value, ref, unit, z, effect,
                                            (node,)))
        if metric in settings.metrics:
            out.outliers += _links(pairs, metric, named, settings)
    out.outliers.sort(key=lambda o: (-o.effect, o.name))
    return out


def _links(pairs: Sequence[Pair], metric: str, named: set, settings: Settings) -> list[Outlier]:
    if len(pairs) < MIN_PAIRS:
        return []
    unit = METRICS[metric][1]
    values = {pair.key: pair_value(pair, metric) for pair in pairs}
    whole = robust(list(values.values()))
    found = []
    for pair in pairs:
        if pair.a in named or pair.b in named:
            continue
        med, spread = others(values, pair.key, whole)
        hit, z, effect = _named(values[pair.key], med, spread, metric, settings)
        if hit:
            found.append(Outlier('link', f'{pair.a}<->{pair.b}', metric, pair_value(pair, metric),
                                 med, unit, z, effect, (pair.a, pair.b)))
    return found


def against_history(pairs: Sequence[Pair], past: Sequence[Sequence[Pair]],
                    settings: Settings = Settings()) -> list[Outlier]:
    """Pairs worse than their own past: the median of the same pair over earlier sweeps, by at
    least ``min_effect`` (with fewer than 3 earlier values of a pair, it is not judged; the
    z-score is against the spread of its past values)."""
    history: dict[tuple[str, str], list[Pair]] = {}
    for sweep in past:
        for pair in sweep:
            history.setdefault(pair.key, []).append(pair)
    found = []
    for pair in pairs:
        earlier = history.get(pair.key, [])
        if len(earlier) < 3:
            continue
        for metric, (_, unit, _) in METRICS.items():
            med, spread = robust([pair_value(p, metric) for p in earlier])
            hit, z, effect = _named(pair_value(pair, metric), med, spread, metric, settings)
            if hit:
                found.append(Outlier('history', f'{pair.a}<->{pair.b}', metric,
                                     pair_value(pair, metric), med, unit, z, effect,
                                     (pair.a, pair.b)))
    return found


def matrix(pairs: Sequence[Pair], nodes: Sequence[str], metric: str) -> list[list[float]]:
    """Node x node: latency (symmetric) or bandwidth row -> column (the sender's row); NaN on
    the diagonal and where a pair was not measured."""
    index = {n: i for i, n in enumerate(nodes)}
    grid = [[math.nan] * len(nodes) for _ in nodes]
    for p in pairs:
        i, j = index[p.a], index[p.b]
        if metric == 'latency':
            grid[i][j] = grid[j][i] = p.latency_us
        else:
            grid[i][j], grid[j][i] = p.bw_ab_MBps, p.bw_ba_MBps
    return grid


def safe_name(node: str) -> str:
    """A node name as part of a perf variable name (letters, digits and _)."""
    return ''.join(c if c.isalnum() else '_' for c in node)


def rerun_command(judgement: Judgement, check: str = 'FabricSweep', healthy: int = 3) -> str:
    """The command that reruns the sweep on the named nodes and ``healthy`` unnamed ones (the
    population a node is judged against: at least MIN_NODES nodes in all)."""
    named = judgement.named_nodes
    if not named:
        return ''
    others = [n for n in judgement.nodes if n not in named]
    keep = max(healthy, MIN_NODES - len(named))
    nodes = sorted(named + sorted(others, key=lambda n: _node_rank(judgement, n))[:keep])
    return (f'commcheck run -- -n {check} -S {check}.num_nodes={len(nodes)} '
            f'-J nodelist={",".join(nodes)}')


def _node_rank(judgement: Judgement, node: str) -> float:
    """Healthiest first: the node's largest z-score over the metrics."""
    return max(judgement.node_z[m].get(node, 0.0) for m in METRICS)
