"""The report's upgrade section: the record ``commcheck upgrade`` writes, judged here from the
recorded main session's two stacks (its launches paired by time, as the command pairs them),
shown per variable with its pairs, intervals, verdict and detection limit; a damaged or
foreign record is a warning, never a broken page."""

from __future__ import annotations

import json
import re

from commcheck.analysis import paired
from commcheck.report import write_report
from commcheck.report.inputs import load_upgrade


def _record(session, old='gnu-mpich4', new='gnu-openmpi4'):
    settings = paired.Settings()
    judged = paired.compare(session.samples, old, new, settings)
    return paired.record([session.uuid], old, new, settings, judged), judged


def _section(index) -> str:
    html = index.read_text()
    start = html.index('<section id="upgrade">')
    return html[start:html.index('</section>', start)]


def test_the_section_shows_every_judged_variable(tmp_path, sessions, warnings):
    main = sessions['main']
    record, judged = _record(main)
    assert judged, 'the main session holds both stacks'
    index = write_report([main], tmp_path, history_sessions=[], warn=warnings, upgrade=record)
    data = json.loads((index.parent / 'data.json').read_text())['sections']['upgrade']
    assert data['old'] == 'gnu-mpich4' and data['new'] == 'gnu-openmpi4'
    assert len(data['rows']) == len(judged)
    text = _section(index)
    for j in judged:
        assert j.variable in text and j.verdict in text
    assert len(re.findall(r'<tr><td><span class="badge', text)) == len(judged)


def test_without_a_record_one_line_says_so(tmp_path, sessions, warnings):
    index = write_report([sessions['main']], tmp_path, history_sessions=[], warn=warnings)
    assert 'No upgrade pairing in this session' in _section(index)


def test_a_record_of_another_session_is_not_shown(tmp_path, sessions, warnings):
    record, _ = _record(sessions['main'])
    record['sessions'] = ['another']
    index = write_report([sessions['main']], tmp_path, history_sessions=[], warn=warnings,
                         upgrade=record)
    assert 'No upgrade pairing' in _section(index)
    assert any('upgrade record is of session(s)' in w for w in warnings)


def test_a_damaged_record_is_a_warning(tmp_path, warnings):
    bad = tmp_path / 'u.json'
    bad.write_text('{"kind": "upgrade", "sessions": []')
    assert load_upgrade(bad, warnings) is None and 'not a readable upgrade record' in warnings[-1]
    bad.write_text(json.dumps({'kind': 'gate', 'sessions': [], 'judgements': []}))
    assert load_upgrade(bad, warnings) is None and 'not an upgrade record' in warnings[-1]
    assert load_upgrade(tmp_path / 'absent.json', warnings) is None


def test_the_margin_the_bound_and_the_looks_are_shown(tmp_path, sessions, warnings):
    main = sessions['main']
    settings = paired.Settings(accept=0.05)
    judged = paired.compare(main.samples, 'gnu-mpich4', 'gnu-openmpi4', settings)
    plan = {'cases': [{'test': judged[0].key.test, 'horizon': 60, 'looks': [12, 18],
                       'stopped': 'decided'}]}
    record = paired.record([main.uuid], 'gnu-mpich4', 'gnu-openmpi4', settings, judged, plan)
    index = write_report([main], tmp_path, history_sessions=[], warn=warnings, upgrade=record)
    text = _section(index)
    assert 'acceptance margin 5.0%' in text and 'Acceptance (5.0%)' in text
    assert 'looked at 12, 18 pairs of 60 planned: decided' in text
    data = json.loads((index.parent / 'data.json').read_text())['sections']['upgrade']
    assert data['accept'] == 0.05 and all('accept' in r and 'slope' in r for r in data['rows'])


def test_a_record_of_format_1_is_still_read_and_another_is_refused(tmp_path, sessions, warnings):
    """Format 1 (before the floor's slope, the margin and the looks) shows what it has; a
    format this commcheck does not know is a warning, no section."""
    main = sessions['main']
    record, judged = _record(main)
    old = {**record, 'format_version': 1, 'plan': None,
           'judgements': [{k: v for k, v in j.items() if k not in ('slope', 'accept', 'looks',
                                                                   'level')}
                          for j in record['judgements']]}
    old['settings'] = {k: v for k, v in old['settings'].items() if k not in ('adjust', 'accept')}
    path = tmp_path / 'u.json'
    path.write_text(json.dumps(old))
    loaded = load_upgrade(path, warnings)
    assert loaded is not None
    index = write_report([main], tmp_path / 'r', history_sessions=[], warn=warnings,
                         upgrade=loaded)
    text = _section(index)
    assert len(re.findall(r'<tr><td><span class="badge', text)) == len(judged)
    assert 'as the ratio over it' in text       # format 1 judged over the floor
    path.write_text(json.dumps({**record, 'format_version': 99}))
    assert load_upgrade(path, warnings) is None and 'format 99' in warnings[-1]
