"""Sessions for the store's tests, made from the real session of tests/report/fixtures by the
history generator (new uuids, one day apart): ReFrame results databases and run reports."""

from __future__ import annotations

import json
import math
from pathlib import Path

from commcheck.results import history_gen

FIXTURE = Path(__file__).resolve().parents[1] / 'report' / 'fixtures' / 'session-main.json.gz'
_SOURCE: dict = {}


def source() -> dict:
    if not _SOURCE:
        _SOURCE.update(history_gen.source_report(FIXTURE))
    return _SOURCE


def sessions(n: int, seed: int, start: float | None = None, repeat: int = 1) -> list[dict]:
    """``n`` run reports (ReFrame's JSON), distinct uuids for distinct seeds."""
    gen = history_gen.Generator(source(), n, seed=seed, changes=[], start=start, repeat=repeat)
    return [gen.session(i) for i in range(n)]


def results_db(path: Path, reports: list[dict]) -> Path:
    """A ReFrame results database holding ``reports`` (added to, if it exists)."""
    history_gen.write_db(path, reports)
    return path


def report_file(path: Path, report: dict) -> Path:
    """A run report as ``reframe --report-file`` writes it."""
    path.write_text(json.dumps(report, indent=2), encoding='utf-8')
    return path


def measurement_count(report: dict) -> int:
    """The rows a session must give: every finite performance value of its (non-fixture)
    test cases, counted here from the JSON, not by the decoder under test."""
    return sum(1 for run in report['runs'] for case in run['testcases']
               if not case.get('fixture')
               for entry in (case.get('perfvalues') or {}).values()
               if isinstance(entry, list) and isinstance(entry[0], (int, float))
               and math.isfinite(entry[0]))
