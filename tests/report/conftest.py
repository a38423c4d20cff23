"""Fixtures of the report tests: real ReFrame sessions recorded on two stacks (see
``make_fixtures.py``), read as commcheck reads them, and copies to damage."""

from __future__ import annotations

import copy
import gzip
import json
import os
import shutil
import types
from pathlib import Path

import pytest

from commcheck.results import store

FIXTURES = Path(__file__).parent / 'fixtures'
LABELS = ('h1', 'h2', 'h3', 'main')


def raw_report(label: str) -> dict:
    """A run report as ReFrame wrote it (paths of the recording machine replaced)."""
    return json.loads(gzip.decompress((FIXTURES / f'session-{label}.json.gz').read_bytes()))


def all_cases(report: dict) -> list[dict]:
    return [tc for run in report['runs'] for tc in run['testcases']]


class Warnings(list):
    def __call__(self, message: str) -> None:
        self.append(message)


@pytest.fixture
def warnings():
    return Warnings()


@pytest.fixture(scope='session')
def raw_reports() -> dict[str, dict]:
    return {label: raw_report(label) for label in LABELS}


@pytest.fixture
def reports(raw_reports) -> dict[str, dict]:
    """Deep copies: a test may edit them."""
    return copy.deepcopy(raw_reports)


def session_of(report: dict, warn=store.warn_stderr) -> store.Session:
    return store.session_from_report(report, 'fixture', warn)


@pytest.fixture
def sessions(reports) -> dict[str, store.Session]:
    return {label: session_of(report) for label, report in reports.items()}


@pytest.fixture
def gate_record() -> dict:
    return json.loads((FIXTURES / 'gate.json').read_text())


@pytest.fixture(autouse=True)
def references(tmp_path, monkeypatch) -> Path:
    """A references directory holding the fixtures' baseline file (never the checkout's)."""
    refs = tmp_path / 'references'
    refs.mkdir()
    shutil.copy(FIXTURES / 'local.baseline.json', refs / 'local.baseline.json')
    monkeypatch.setenv('RFM_REFERENCE_PREFIX', str(refs))
    return refs


@pytest.fixture
def write(tmp_path, sessions, gate_record, warnings):
    """write(**overrides) -> (index.html path, data.json content): the main session's report
    with the stored sessions as history and its gate record, unless overridden."""
    from commcheck.report import write_report

    def _write(chosen=None, *, history_sessions=None, gate='default', out=None):
        chosen = [sessions['main']] if chosen is None else chosen
        stored = list(sessions.values()) if history_sessions is None else history_sessions
        index = write_report(chosen, out or tmp_path / 'reports', history_sessions=stored,
                             gate=gate_record if gate == 'default' else gate, warn=warnings)
        return index, json.loads((index.parent / 'data.json').read_text(),
                                 parse_constant=_no_constants)
    return _write


def _no_constants(name):
    raise AssertionError(f'data.json holds {name}: not JSON')


@pytest.fixture(scope='session')
def main_report(tmp_path_factory, raw_reports):
    """The main session's report, written once for the tests that only read it."""
    from commcheck.report import write_report
    refs = tmp_path_factory.mktemp('references')
    shutil.copy(FIXTURES / 'local.baseline.json', refs / 'local.baseline.json')
    sessions = {label: session_of(report) for label, report in raw_reports.items()}
    warnings = Warnings()
    saved = os.environ.get('RFM_REFERENCE_PREFIX')
    os.environ['RFM_REFERENCE_PREFIX'] = str(refs)
    try:
        index = write_report([sessions['main']], tmp_path_factory.mktemp('reports'),
                             history_sessions=list(sessions.values()),
                             gate=json.loads((FIXTURES / 'gate.json').read_text()),
                             warn=warnings)
    finally:
        if saved is None:
            os.environ.pop('RFM_REFERENCE_PREFIX', None)
        else:
            os.environ['RFM_REFERENCE_PREFIX'] = saved
    data = json.loads((index.parent / 'data.json').read_text(), parse_constant=_no_constants)
    return types.SimpleNamespace(index=index, data=data, warnings=warnings, sessions=sessions)
