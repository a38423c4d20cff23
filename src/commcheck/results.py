"""Test cases of a ReFrame run report, in the shape the report and (later) baselines need."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path


class RunReportError(ValueError):
    """A run report that cannot be read; the message names the file and the problem."""


@dataclasses.dataclass(frozen=True)
class PerfValue:
    value: float
    ref: float
    lower: float | None
    upper: float | None
    unit: str
    result: str | None

    @property
    def referenced(self) -> bool:
        return self.lower is not None or self.upper is not None


@dataclasses.dataclass(frozen=True)
class Case:
    check: str                  # class name, e.g. PingPong
    display_name: str
    system: str
    partition: str
    environ: str
    result: str                 # pass, fail, skip, ...
    attrs: dict                 # the test's variables and parameters as ReFrame recorded them
    perf: dict[str, PerfValue]
    fixture: bool

    def get(self, name, default=None):
        return self.attrs.get(name, default)


def _case(raw: dict) -> Case:
    perf = {}
    for key, val in (raw.get('perfvalues') or {}).items():
        name = key.rsplit(':', 1)[-1]
        perf[name] = PerfValue(float(val[0]), float(val[1] or 0), val[2], val[3], val[4] or '',
                               val[5] if len(val) > 5 else None)
    return Case(check=raw['display_name'].split()[0],
                display_name=raw['display_name'], system=raw.get('system') or '',
                partition=raw.get('partition') or '', environ=raw.get('environ') or '',
                result=raw.get('result') or '', attrs=raw, perf=perf,
                fixture=bool(raw.get('fixture')))


def load(path: str | Path) -> tuple[dict, list[Case]]:
    """Session info and the last attempt of every test case of a run report."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
        runs = data['runs']
        session = data['session_info']
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise RunReportError(f'{path}: not a readable ReFrame run report ({err})') from None
    last: dict[tuple, dict] = {}
    for run in runs:
        for raw in run.get('testcases', []):
            last[(raw.get('unique_name') or raw['display_name'], raw.get('system'),
                  raw.get('partition'), raw.get('environ'))] = raw
    return session, [_case(raw) for raw in last.values()]
