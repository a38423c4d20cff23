"""What every section reads: the reported sessions' test cases and measurements, in one shape.

A :class:`Case` is one test case as ReFrame recorded it (fixtures included), read defensively:
a field of the wrong type reads as missing, never as an exception. :class:`Measurements` holds
the performance values (fixtures excluded, as :mod:`commcheck.results.store` samples them), one list
of launches per (environment, test, variable); sections show the median of the launches.

Checks are found through the table of experiments (:mod:`commcheck.experiments`) by report
section, never by name.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
import statistics
from collections.abc import Iterable

from commcheck import experiments
from commcheck.results.store import REPEAT, Sample, Session

PARAM = re.compile(r'%([\w.]+)=(\S+)')


def text(value) -> str:
    """A field as text: '' for missing values, never the string 'None'."""
    return '' if value is None else str(value)


def finite(value) -> float | None:
    """A number that can be shown and plotted, or None (missing, non-finite, not a number)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def params_of(name: str) -> dict[str, str]:
    """Parameters of a display name (``%lang=c %seq.lang=c``), fixture parameters by their own
    name; ReFrame's repeat counter is not a parameter."""
    return {key.split('.')[-1]: value for key, value in PARAM.findall(name)
            if not key.startswith('.')}


def test_name(display_name: str) -> str:
    return REPEAT.sub('', display_name)


@dataclasses.dataclass(frozen=True)
class Case:
    session: str
    raw: dict = dataclasses.field(compare=False, repr=False)

    def _get(self, key: str) -> str:
        return text(self.raw.get(key))

    @property
    def display_name(self) -> str:
        return self._get('display_name')

    @property
    def test(self) -> str:
        return test_name(self.display_name)

    @property
    def check(self) -> str:
        return experiments.check_of(self.display_name)

    @property
    def params(self) -> dict[str, str]:
        return params_of(self.display_name)

    @property
    def environ(self) -> str:
        return self._get('environ')

    @property
    def system(self) -> str:
        return self._get('system')

    @property
    def partition(self) -> str:
        return self._get('partition')

    @property
    def result(self) -> str:
        return self._get('result') or 'unknown'

    @property
    def fixture(self) -> bool:
        return bool(self.raw.get('fixture'))

    @property
    def unique_name(self) -> str:
        return self._get('unique_name') or self.display_name

    @property
    def skip_reason(self) -> str:
        return self._get('skip_reason').strip()

    @property
    def fail_reason(self) -> str:
        return self._get('fail_reason').strip()

    @property
    def fail_phase(self) -> str:
        return self._get('fail_phase')

    @property
    def oversubscribed(self) -> bool:
        return bool(self.raw.get('oversubscribed'))

    @property
    def provenance(self) -> dict[str, str]:
        prov = self.raw.get('provenance')
        return {str(k): text(v) for k, v in prov.items()} if isinstance(prov, dict) else {}

    @property
    def notes(self) -> list[str]:
        """What the test could not compute from good data (its ``notes`` variable)."""
        notes = self.raw.get('notes')
        return [text(n) for n in notes if text(n)] if isinstance(notes, list) else []

    @property
    def languages(self) -> tuple[str, ...]:
        langs = self.provenance.get('languages')
        return tuple(x for x in langs.split(',') if x) if langs else ()

    @property
    def dependencies(self) -> list[tuple[str, str]]:
        """(unique name, environment) of the test cases this one depended on."""
        deps = self.raw.get('dependencies_actual')
        out = []
        for dep in deps if isinstance(deps, list) else []:
            if isinstance(dep, (list, tuple)) and len(dep) >= 3:
                out.append((text(dep[0]), text(dep[2])))
        return out

    @property
    def label(self) -> str:
        return f'{self.test} on {self.environ}' if self.environ else self.test


def cases_of(sessions: Iterable[Session]) -> list[Case]:
    return [Case(s.uuid, raw) for s in sessions for raw in s.cases if isinstance(raw, dict)]


def checks(section: str, peer: bool | None = None) -> tuple[str, ...]:
    """Checks of a report section, from the table of experiments. ``peer=False``: our own
    kernels only; ``peer=True``: independent peers (no kernel of ours, e.g. OSU)."""
    return tuple(e.check for e in experiments.EXPERIMENTS if e.section == section and (
        peer is None or peer == (not e.kernels)))


def feature(lang: str) -> str:
    """The environment feature that selects a language (``python-pickle`` runs where
    ``python`` is); the language itself where the table says nothing more."""
    spec = experiments.LANGUAGES.get(lang)
    return str(getattr(spec, 'feature', lang))


def experiment_languages(check: str) -> tuple[str, ...]:
    """Languages a check's kernels exist in (the table of programs), in the table's order."""
    exp = experiments.BY_CHECK.get(check)
    if not exp:
        return ()
    found = {lang for k in exp.kernels for lang in experiments.KERNELS.get(k, ())}
    return tuple(lang for lang in experiments.LANGUAGES if lang in found)


@dataclasses.dataclass(frozen=True)
class Test:
    """One test (parameters fixed) on one environment: what a plot line or table row shows."""
    environ: str
    test: str

    @functools.cached_property
    def check(self) -> str:
        return experiments.check_of(self.test)

    @functools.cached_property
    def params(self) -> dict[str, str]:
        return params_of(self.test)

    def param(self, name: str, default: str = '') -> str:
        return self.params.get(name, default)


class Measurements:
    """Launches of every (environment, test, variable) of the reported sessions."""

    def __init__(self, samples: Iterable[Sample]):
        self._values: dict[tuple[str, str, str], list[float]] = {}
        self._units: dict[tuple[str, str, str], str] = {}
        self._over: set[tuple[str, str]] = set()
        self._tests: dict[Test, None] = {}
        for s in samples:
            key = (s.environ, s.test, s.variable)
            self._values.setdefault(key, []).append(s.value)
            self._units.setdefault(key, s.unit)
            self._tests.setdefault(Test(s.environ, s.test))
            if s.oversubscribed:
                self._over.add((s.environ, s.test))

    def tests(self, checks_: Iterable[str], **params: str) -> list[Test]:
        wanted = set(checks_)
        return [t for t in self._tests if t.check in wanted and
                all(t.params.get(k) == v for k, v in params.items())]

    def launches(self, test: Test, variable: str) -> list[float]:
        return list(self._values.get((test.environ, test.test, variable), ()))

    def value(self, test: Test, variable: str) -> float | None:
        values = self.launches(test, variable)
        return finite(statistics.median(values)) if values else None

    def spread(self, test: Test, variable: str) -> tuple[float, float, int] | None:
        """(lowest, highest, launches) of a variable's finite launches, or None."""
        values = [v for v in self.launches(test, variable) if finite(v) is not None]
        return (min(values), max(values), len(values)) if values else None

    def sweep_spread(self, test: Test, name: str) -> dict[int, tuple[float, float]]:
        """``<name>_<size>B``: (lowest, highest launch) by size."""
        out = {}
        for variable in self.variables(test):
            sized = experiments.split_sized(variable)
            spread = self.spread(test, variable) if sized and sized[0] == name else None
            if spread:
                out[sized[1]] = spread[:2]
        return dict(sorted(out.items()))

    def launch_counts(self, tests: Iterable[Test]) -> tuple[int, int]:
        """Fewest and most launches of any variable of these tests ((0, 0) for none)."""
        counts = [len(v) for (e, t, _), v in self._values.items()
                  if Test(e, t) in set(tests)]
        return (min(counts), max(counts)) if counts else (0, 0)

    def unit(self, test: Test, variable: str) -> str:
        return self._units.get((test.environ, test.test, variable), '')

    def variables(self, test: Test) -> list[str]:
        return [v for (e, t, v) in self._values if (e, t) == (test.environ, test.test)]

    def sweep(self, test: Test, name: str) -> dict[int, float]:
        """``<name>_<size>B`` values of a test, by size."""
        out = {}
        for variable in self.variables(test):
            sized = experiments.split_sized(variable)
            if sized and sized[0] == name:
                value = self.value(test, variable)
                if value is not None:
                    out[sized[1]] = value
        return dict(sorted(out.items()))

    def oversubscribed(self, test: Test) -> bool:
        return (test.environ, test.test) in self._over


def environments(cases: list[Case]) -> list[str]:
    """Environments in the order ReFrame met them (its configuration's order)."""
    return list(dict.fromkeys(c.environ for c in cases if c.environ))
