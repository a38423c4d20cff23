"""The statistical gate: is a change of a performance variable real, and large enough to matter?

For every variable (system, partition, environment, test, variable) the samples are launches:
the baseline's and the run's. A change is flagged when both hold:

- it is significant: two-sided Mann-Whitney U test on the launch samples (scipy), with the
  p-values of all variables compared together adjusted by Benjamini-Hochberg (false discovery
  rate ``alpha``; in a session where nothing changed this bounds the chance that *any* variable
  is flagged by ``alpha``);
- it is large: the ratio of the medians is worse by more than ``min_effect`` (20 % by default),
  so a significant small shift does not flag. Launches of one session share that session's
  machine state, so two sessions of an unchanged stack differ by more than their launches
  suggest: on the 2-core CI VM, a clean rerun one minute after the baseline moved the median
  1 KiB latency by +11.6 % (p_adj 0.013) and 1 MiB bandwidth by -12.7 %. A site on quiet,
  exclusive nodes lowers it (``--min-effect 0.05``).

Direction comes from the table of experiments (latency and time up is worse, bandwidth down is
worse). Each comparison carries a bootstrap 95 % confidence interval of the ratio of medians.
Samples measured with another binding or placement than the baseline's are not compared.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections import Counter

import numpy as np
from scipy import stats

from commcheck import experiments
from commcheck.history import Sample, key_label

REGRESSED, IMPROVED, UNCHANGED = 'regressed', 'improved', 'unchanged'
NO_BASELINE, TOO_FEW, NOT_COMPARABLE = 'no baseline', 'too few samples', 'not comparable'
VERDICTS = (REGRESSED, IMPROVED, UNCHANGED, NO_BASELINE, TOO_FEW, NOT_COMPARABLE)
#: Provenance fields that must match for two samples to measure the same thing.
SAME_SETUP = ('binding', 'placement')


@dataclasses.dataclass(frozen=True)
class Settings:
    min_effect: float = 0.20    #: relative change of the median below which nothing is flagged
    alpha: float = 0.05         #: false discovery rate over the variables compared together
    min_samples: int = 5        #: launches per side below which nothing is decided (with 4
    #: a side the rank test cannot reach p < 0.05 once adjusted over a few variables)
    n_boot: int = 4000          #: bootstrap resamples for the confidence interval
    seed: int = 20261122        #: fixed, so the same samples give the same interval


@dataclasses.dataclass
class Comparison:
    key: tuple
    unit: str
    direction: str | None
    base: list[float]
    new: list[float]
    verdict: str = UNCHANGED
    ratio: float | None = None          #: median(new) / median(base)
    ci: tuple[float, float] | None = None
    p: float | None = None
    p_adj: float | None = None
    note: str = ''
    provenance_changes: dict = dataclasses.field(default_factory=dict)

    @property
    def check(self) -> str:
        return self.key[3].split()[0]

    @property
    def variable(self) -> str:
        return self.key[4]

    @property
    def change(self) -> float | None:
        return None if self.ratio is None else self.ratio - 1.0

    def as_dict(self) -> dict:
        system, partition, environ, test, variable = self.key
        return {'system': system, 'partition': partition, 'environ': environ, 'test': test,
                'check': self.check, 'variable': variable, 'unit': self.unit,
                'direction': self.direction, 'verdict': self.verdict,
                'n_base': len(self.base), 'n_new': len(self.new),
                'median_base': _median(self.base), 'median_new': _median(self.new),
                'change': self.change, 'ci_low': self.ci[0] - 1 if self.ci else None,
                'ci_high': self.ci[1] - 1 if self.ci else None, 'p': self.p,
                'p_adj': self.p_adj, 'note': self.note,
                'provenance_changes': self.provenance_changes}


def _median(values):
    return statistics.median(values) if values else None


def bh_adjust(pvalues: list[float]) -> list[float]:
    """Benjamini-Hochberg adjusted p-values (step-up, monotone, capped at 1)."""
    if not pvalues:
        return []
    return list(stats.false_discovery_control(np.asarray(pvalues, dtype=float), method='bh'))


def ratio_ci(base: list[float], new: list[float], settings: Settings) -> tuple[float, float]:
    """Percentile bootstrap 95 % interval of median(new) / median(base)."""
    def ratio(a, b, axis=-1):
        return np.median(a, axis=axis) / np.median(b, axis=axis)
    res = stats.bootstrap((np.asarray(new, float), np.asarray(base, float)), ratio,
                          n_resamples=settings.n_boot, method='percentile', vectorized=True,
                          paired=False, rng=np.random.default_rng(settings.seed))
    low, high = res.confidence_interval
    return float(low), float(high)


def _setup(samples: list[Sample]) -> dict[str, str]:
    """The most common value of each provenance field over samples."""
    fields: dict[str, Counter] = {}
    for s in samples:
        for k, v in s.provenance:
            fields.setdefault(k, Counter())[v] += 1
    return {k: c.most_common(1)[0][0] for k, c in fields.items()}


def provenance_changes(base: list[Sample], new: list[Sample]) -> dict[str, tuple[str, str]]:
    before, after = _setup(base), _setup(new)
    ignore = {'host', 'nodelist'} if before.get('host') == after.get('host') else set()
    return {k: (before.get(k, ''), after.get(k, '')) for k in sorted(set(before) | set(after))
            if before.get(k, '') != after.get(k, '') and k not in ignore}


def compare(base: dict[tuple, list[Sample]], new: dict[tuple, list[Sample]],
            settings: Settings = Settings()) -> list[Comparison]:
    """One :class:`Comparison` per variable of ``new``; keys absent from ``base`` say so."""
    out, tested = [], []
    for key in sorted(new):
        now, then = new[key], base.get(key, [])
        unit = now[0].unit
        comp = Comparison(key=key, unit=unit,
                          direction=experiments.direction(now[0].check, key[4], unit),
                          base=[s.value for s in then], new=[s.value for s in now])
        out.append(comp)
        if not then:
            comp.verdict = NO_BASELINE
            continue
        comp.provenance_changes = provenance_changes(then, now)
        differ = [f for f in SAME_SETUP if f in comp.provenance_changes]
        if comp.direction is None:
            comp.verdict, comp.note = NOT_COMPARABLE, 'no direction (not a performance figure)'
            continue
        if differ:
            comp.verdict = NOT_COMPARABLE
            comp.note = '; '.join(f'{f} {comp.provenance_changes[f][0]} -> '
                                  f'{comp.provenance_changes[f][1]}' for f in differ)
            continue
        if min(len(comp.base), len(comp.new)) < settings.min_samples:
            comp.verdict = TOO_FEW
            comp.note = (f'{len(comp.base)} baseline and {len(comp.new)} new launches; '
                         f'need {settings.min_samples} each (reframe --repeat N)')
            continue
        mb, mn = _median(comp.base), _median(comp.new)
        if mb <= 0 or mn <= 0:
            comp.verdict, comp.note = NOT_COMPARABLE, 'median not positive'
            continue
        comp.ratio = mn / mb
        if len(set(comp.base) | set(comp.new)) == 1:
            comp.p = 1.0
        else:
            comp.p = float(stats.mannwhitneyu(comp.new, comp.base,
                                              alternative='two-sided').pvalue)
        comp.ci = ratio_ci(comp.base, comp.new, settings)
        tested.append(comp)
    for comp, p_adj in zip(tested, bh_adjust([c.p for c in tested])):
        comp.p_adj = float(p_adj)
        worse = comp.ratio if comp.direction == experiments.LOWER_IS_BETTER else 1 / comp.ratio
        if comp.p_adj < settings.alpha and worse > 1 + settings.min_effect:
            comp.verdict = REGRESSED
        elif comp.p_adj < settings.alpha and worse < 1 / (1 + settings.min_effect):
            comp.verdict = IMPROVED
        else:
            comp.verdict = UNCHANGED
    return out


def counts(comparisons: list[Comparison]) -> dict[str, int]:
    found = Counter(c.verdict for c in comparisons)
    return {v: found.get(v, 0) for v in VERDICTS}


def describe(comp: Comparison) -> str:
    ci = f' [{comp.ci[0] - 1:+.1%}, {comp.ci[1] - 1:+.1%}]' if comp.ci else ''
    change = f' {comp.change:+.1%}{ci}' if comp.change is not None else ''
    return f'{comp.verdict:>15}  {key_label(comp.key)}{change}'
