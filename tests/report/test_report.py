"""The report from real ReFrame sessions: what it says, and that bad input never stops it."""

from __future__ import annotations

import copy
import gzip
import hashlib
import json
import re
import sqlite3
from html.parser import HTMLParser
from pathlib import Path

import pytest

from commcheck import cli, paths
from commcheck.report import findings, load_gate, load_run_report, render, write_report
from commcheck.report.build import new_directory
from commcheck.results import store
from tests.report.conftest import FIXTURES, all_cases, raw_report, session_of

SCRIPT = '<script>alert(1)</script>'


class Headings(HTMLParser):
    def __init__(self):
        super().__init__()
        self.found, self._open = [], None

    def handle_starttag(self, tag, attrs):
        if re.fullmatch(r'h[1-6]', tag):
            self._open = [tag, '']

    def handle_data(self, data):
        if self._open:
            self._open[1] += data

    def handle_endtag(self, tag):
        if self._open and tag == self._open[0]:
            self.found.append((tag, self._open[1].strip()))
            self._open = None


def headings(html: str) -> list[tuple[str, str]]:
    parser = Headings()
    parser.feed(html)
    return parser.found


def section(index: Path, sid: str) -> str:
    html = index.read_text()
    start = html.index(f'<section id="{sid}">')
    return html[start:html.index('</section>', start)]


# -- what the report says -------------------------------------------------------------------
def test_verdict_is_the_first_heading_and_counts_as_reframe(main_report, raw_reports):
    index, data = main_report.index, main_report.data
    assert main_report.warnings == []
    first = headings(index.read_text())[0]
    assert first[0] == 'h1' and first[1].startswith('Verdict:')
    verdict = data['sections']['verdict']
    info = raw_reports['main']['session_info']
    assert verdict['total']['cases'] == info['num_cases']
    assert verdict['matches_reframe'] is True
    assert sum(r['cases'] for r in verdict['environments']) == verdict['total']['cases']
    fixtures = sum(tc['fixture'] for tc in all_cases(raw_reports['main']))
    assert fixtures > 0 and verdict['total']['fixtures'] == fixtures
    assert [r['environ'] for r in verdict['environments']] == ['gnu-mpich4', 'gnu-openmpi4']


def test_regressions_say_since_when_and_what_changed(main_report):
    index, data, sessions = main_report.index, main_report.data, main_report.sessions
    gate = data['sections']['verdict']['gate']
    flagged = {(r['environ'], r['variable']): r for r in gate['flagged']}
    row = flagged[('gnu-openmpi4', 'latency_8B')]
    assert row['verdict'] == 'regressed' and row['change'] > 1
    assert row['ci_low'] is not None and row['ci_low'] > 0
    assert row['since']['session'] == sessions['h3'].uuid[:8]
    assert {'field': 'env.OMPI_MCA_btl', 'before': '', 'after': 'self,tcp'} in row['changes']
    assert not any(r['environ'] == 'gnu-mpich4' and r['verdict'] == 'regressed'
                   for r in gate['flagged'])
    rows = {r['environ']: r for r in data['sections']['verdict']['environments']}
    assert rows['gnu-openmpi4']['regressed'] >= 1 and rows['gnu-mpich4']['regressed'] == 0
    assert 'OMPI_MCA_btl' in section(index, 'verdict')


def test_without_a_gate_record_nothing_is_called_unchanged(write):
    index, data = write(gate=None)
    verdict = data['sections']['verdict']
    assert verdict['gate'] is None and 'not compared' in verdict['headline']
    assert 'not compared' in section(index, 'verdict')


def test_every_section_in_reading_order(main_report):
    index, data = main_report.index, main_report.data
    html = index.read_text()
    order = [m.group(1) for m in re.finditer(r'<section id="([a-z0-9]+)">', html)]
    assert order == ['verdict', 'upgrade', 'p2p', 'datatypes', 'stencil', 'fabric', 'history',
                     'seeds', 'provenance']
    assert list(data['sections']) == order
    for img in re.findall(r'<img src="([^"]+)"', html):
        assert (index.parent / img).stat().st_size > 2000
    assert (index.parent / 'summary.md').read_text().startswith('# Verdict: ')


def test_hockney_fits_and_memory_fraction(main_report):
    data = main_report.data
    p2p = data['sections']['p2p']
    fits = {(r['environ'], r['benchmark']) for r in p2p['fits'] if r['r_inf']}
    assert ('gnu-mpich4', 'comms1') in fits and ('gnu-openmpi4', 'comms2') in fits
    assert all(r['ratio'] and r['ratio'] > 0 for r in p2p['comms_ratio'])
    fractions = [r for r in p2p['memory_fraction'] if r['fraction'] is not None]
    assert fractions and all(r['copy_source'].startswith('Stencil') for r in fractions)
    assert any(p['file'] == 'plots/hockney.png' for p in p2p['plots'])


def test_oversubscribed_points_are_marked(main_report):
    index, data = main_report.index, main_report.data
    rows = data['sections']['stencil']['rows']
    over = [r for r in rows if r['oversubscribed']]
    assert over and all(r['ranks'] > 2 for r in over)
    assert '(oversubscribed)' in section(index, 'stencil')


def test_findings_are_judged_and_java_cannot_be_told_without_java(main_report):
    data = main_report.data
    found = {f['id']: f for f in data['sections']['seeds']['findings']}
    assert {f.id for f in findings.FINDINGS} == set(found)
    assert found['003-stride-loop']['status'] in (findings.HOLDS, findings.DOES_NOT_HOLD,
                                                  findings.MIXED, findings.CANNOT_TELL)
    assert found['003-stride-loop']['stacks'] >= 1
    assert found['001-regimes']['status'] in (findings.HOLDS, findings.DOES_NOT_HOLD,
                                              findings.MIXED)
    for fid in ('000-java-half', '000-converge', '000-jit', '003-java-startup',
                '003-java-rinf'):
        assert found[fid]['status'] == findings.CANNOT_TELL
        assert found[fid]['detail'] == 'no Java results in this session'
    assert found['003-stride-byte']['status'] == findings.CANNOT_TELL
    assert 'no byte' in found['003-stride-byte']['detail']


def _as_java(case: dict, scale_small: float, scale_t0: float = 1.0) -> dict:
    """The same test in Java on the same stack (Open MPI has Java bindings)."""
    java = copy.deepcopy(case)
    java['display_name'] = java['display_name'].replace('%lang=c', '%lang=java')
    java['unique_name'] = java.get('unique_name', '') + '_java'
    if case['display_name'].startswith('PingPong'):
        java['perfvalues']['local:default:first_message'] = [900.0, 0, None, None, 'us', 'pass']
    for name, entry in java['perfvalues'].items():
        variable = name.split(':')[-1]
        m = re.fullmatch(r'latency_(\d+)B', variable)
        if m and int(m.group(1)) < 16384:
            entry[0] *= scale_small
        if variable == 't0':
            entry[0] *= scale_t0
    return java


def test_java_findings_are_computed_when_java_ran(reports, write):
    report = reports['main']
    cases = all_cases(report)
    extra = [_as_java(tc, 0.5) for tc in cases if tc['display_name'].startswith('PingPong')
             and tc['environ'] == 'gnu-openmpi4']
    extra += [_as_java(tc, 1.0, 5.0) for tc in cases
              if tc['display_name'].startswith('ParkbenchComms') and tc['environ'] == 'gnu-mpich4']
    report['runs'][0]['testcases'] += extra
    _, data = write([session_of(report)])
    found = {f['id']: f for f in data['sections']['seeds']['findings']}
    assert found['000-java-half']['status'] == findings.HOLDS, found['000-java-half']
    assert found['003-java-startup']['status'] == findings.HOLDS, found['003-java-startup']
    # The Java copy has the C launches' r_inf: the ratio's median is 1.00, and whether the
    # spread of the (real, noisy) launches decides the 10 % band depends on those launches.
    assert found['003-java-rinf']['status'] in (findings.HOLDS, findings.CANNOT_TELL)
    assert 'r_inf ratio 1.00' in found['003-java-rinf']['detail']
    assert found['000-jit']['status'] == findings.HOLDS, found['000-jit']


def test_skips_name_the_fixture_or_dependency_and_its_reason(reports, write):
    cases = all_cases(reports['main'])
    seq = next(tc for tc in cases if tc['display_name'].startswith('StencilSequential')
               and tc['environ'] == 'gnu-openmpi4')
    seq.update(result='skip', skip_reason='no memory for the sequential grid')
    dependents = [tc for tc in cases if [seq['unique_name'], 'local:default', 'gnu-openmpi4']
                  in tc['dependencies_actual']]
    assert dependents
    for tc in dependents:
        tc.update(result='skip', skip_reason='', perfvalues={})
    build = next(tc for tc in cases if tc['display_name'].startswith('KernelsBuild')
                 and tc['environ'] == 'gnu-mpich4')
    build.update(result='fail', fail_phase='compile', fail_reason='BuildError: cmake failed')
    for tc in cases:
        if tc['display_name'].startswith('PingPong') and tc['environ'] == 'gnu-mpich4':
            tc.update(result='fail_deps', perfvalues={})
    index, data = write([session_of(reports['main'])], gate=None)
    reasons = {g['reason']: g for g in data['sections']['verdict']['skipped']}
    skipped = next(r for r in reasons if 'no memory' in r)
    assert skipped.startswith('its fixture StencilSequential') and 'was skipped' in skipped
    assert reasons[skipped]['count'] == len(dependents)
    failed = next(r for r in reasons if 'cmake failed' in r)
    assert failed.startswith('its fixture KernelsBuild') and 'failed' in failed
    verdict = data['sections']['verdict']
    assert verdict['status'] == 'fail' and verdict['total']['fail'] == 1
    assert verdict['failures'][0]['reason'] == 'BuildError: cmake failed'


def test_notes_of_tests_are_listed(reports, write):
    cases = [tc for tc in all_cases(reports['main'])
             if tc['display_name'].startswith('ParkbenchComms')]
    for tc in cases:
        tc['notes'] = ['n_half not computed: the sweep has no size above the breakpoint']
    index, data = write([session_of(reports['main'])], gate=None, history_sessions=[])
    notes = data['sections']['verdict']['notes']
    assert notes[0]['count'] == len(cases) and 'n_half' in notes[0]['note']
    assert 'n_half not computed' in section(index, 'verdict')
    assert 'n\\_half not computed' in (index.parent / 'summary.md').read_text()


def test_not_selected_combinations_come_from_recorded_languages(reports, write):
    for tc in all_cases(reports['main']):
        if tc['environ'] == 'gnu-openmpi4' and tc.get('provenance'):
            tc['provenance']['languages'] = 'c'
    _, data = write([session_of(reports['main'])], gate=None)
    rows = {r['environ']: r for r in data['sections']['verdict']['not_selected']}
    missing = {m['check']: m['languages'] for m in rows['gnu-openmpi4']['missing']}
    assert missing['FortranPointers'] == ['fortran']
    assert 'fortran' in missing['PingPong'] and 'java' in missing['PingPong']
    assert rows['gnu-openmpi4']['languages'] == ['c']


# -- missing data and hostile names ---------------------------------------------------------
def test_missing_checks_say_so_never_zero_or_nan(write, sessions):
    index, data = write([sessions['h1']], gate=None)
    html = index.read_text()
    assert 'No derived-datatype results in this session' in section(index, 'datatypes')
    assert 'No stencil or pointer-study results' in section(index, 'stencil')
    assert not re.search(r'\b(nan|NaN|inf)\b', html)
    assert data['sections']['datatypes']['plots'] == []
    seed001 = data['sections']['seeds']['seed001']
    assert all(v is None or v > 0 for r in seed001['rows'] for v in r['today'])


def test_names_with_markup_render_as_text(reports, write):
    cases = all_cases(reports['main'])
    for tc in cases:
        if tc['environ'] == 'gnu-mpich4':
            tc['environ'] = f'gnu-mpich4{SCRIPT}'
            if isinstance(tc.get('provenance'), dict):
                tc['provenance']['mpi_version'] = SCRIPT
    pingpong = next(tc for tc in cases if tc['display_name'].startswith('PingPong'))
    pingpong['display_name'] += f' %note={SCRIPT}'
    pingpong.update(result='fail', fail_reason=f'SanityError: {SCRIPT}')
    index, _ = write([session_of(reports['main'])])
    html = index.read_text()
    assert '<script' not in html.lower()
    assert '&lt;script&gt;alert(1)&lt;/script&gt;' in html
    summary = (index.parent / 'summary.md').read_text()
    assert '<script>' not in summary and r'\<script\>alert(1)\<' in summary


def test_markdown_cells_cannot_break_the_table():
    assert render.md_escape('a|b\nc') == r'a\|b c'
    assert render.num(float('nan')) == render.MISSING and render.num(None) == render.MISSING
    assert render.num(12588.27) == '12,588' and render.num(0.49512) == '0.4951'


# -- bad input: a warning and a partial report, never a traceback --------------------------------
def test_truncated_run_report_gives_what_it_holds(tmp_path, warnings, write):
    text = gzip.decompress((FIXTURES / 'session-main.json.gz').read_bytes()).decode()
    path = tmp_path / 'run-report-7.json'
    path.write_text(text[:int(len(text) * 0.6)])
    session = load_run_report(path, warnings)
    assert session is not None and 0 < len(session.cases) < len(all_cases(raw_report('main')))
    assert any('truncated' in w for w in warnings)
    index, data = write([session], gate=None)
    assert data['sections']['verdict']['warnings']
    assert 'Partial report' in index.read_text()
    assert data['sections']['verdict']['matches_reframe'] is False


def test_a_strange_session_uuid_stays_inside_the_output(tmp_path, reports, warnings):
    reports['h1']['session_info']['uuid'] = '../../outside'
    index = write_report([session_of(reports['h1'])], tmp_path / 'out', warn=warnings)
    assert index.parent.parent == tmp_path / 'out' and index.parent.name.endswith('-outside')


def test_unreadable_run_report_and_no_session(tmp_path, warnings):
    path = tmp_path / 'run-report-8.json'
    path.write_bytes(b'\x00\xff garbage')
    assert load_run_report(path, warnings) is None
    assert load_run_report(tmp_path / 'absent.json', warnings) is None
    index = write_report([], tmp_path / 'reports', warn=warnings)
    data = json.loads((index.parent / 'data.json').read_text())
    assert data['sections']['verdict']['status'] == 'no data'
    assert index.parent.name.endswith('-nosession')
    assert headings(index.read_text())[0][1].startswith('Verdict:')


def test_damaged_test_cases_are_skipped_with_warnings(reports, write, warnings):
    cases = reports['main']['runs'][0]['testcases']
    cases[3]['perfvalues'] = {'local:default:latency_8B': ['fast', 0, None, None, 'us']}
    cases[4]['perfvalues'] = 'none'
    cases[5]['provenance'] = ['not', 'a', 'mapping']
    cases[6]['dependencies_actual'] = 'KernelsBuild'
    cases[7]['result'] = None
    cases[8]['perfvalues'] = {'local:default:t0': [float('nan'), 0, None, None, 'us']}
    del cases[9]['display_name']
    cases.append('not a test case')
    session = session_of(reports['main'], warnings)
    index, data = write([session])
    assert len(warnings) >= 4
    assert all('error' not in s for s in data['sections'].values())
    assert headings(index.read_text())[0][1].startswith('Verdict:')


def test_a_section_that_fails_leaves_the_rest(monkeypatch, write, warnings):
    from commcheck.report.sections import p2p

    def broken(ctx):
        raise RuntimeError('boom')
    monkeypatch.setattr(p2p, 'build', broken)
    index, data = write()
    assert any('Stacks side by side' in w and 'boom' in w for w in warnings)
    assert data['sections']['p2p'] == {'title': 'Stacks side by side', 'plots': [],
                                       'error': 'RuntimeError: boom'}
    assert data['sections']['datatypes']['rows']
    assert 'could not be built' in section(index, 'p2p')


def test_gate_records_of_other_sessions_or_damaged_are_warned(tmp_path, write, warnings):
    _, data = write(gate={'sessions': ['another'], 'comparisons': []}, history_sessions=[])
    assert data['sections']['verdict']['gate'] is None
    assert any('not of the reported' in w for w in warnings)
    uuid = raw_report('main')['session_info']['uuid']
    _, data = write(gate={'sessions': [uuid], 'comparisons': ['junk', {'verdict': 3}]},
                    history_sessions=[])
    assert data['sections']['verdict']['gate']['flagged'] == []
    bad = tmp_path / 'gate.json'
    bad.write_text('{"sessions": [')
    assert load_gate(bad, warnings) is None and 'not a readable gate record' in warnings[-1]
    assert load_gate(tmp_path / 'none.json', warnings) is None


def test_damaged_baseline_file_is_warned(references, write, warnings):
    (references / 'local.baseline.json').write_text('{"system": 1}')
    _, data = write()
    assert any('not a commcheck baseline' in w for w in warnings)
    assert data['sections']['history']['rows']
    assert all(r['baseline'] is None for r in data['sections']['history']['rows'])


def test_baseline_band_and_change_points_in_history(main_report):
    data, sessions = main_report.data, main_report.sessions
    hist = data['sections']['history']
    assert [s['uuid'] for s in hist['sessions']][-1] == sessions['main'].uuid[:8]
    banded = [r for r in hist['rows'] if r['baseline']]
    assert banded and all(r['baseline']['tolerance'] > 0 for r in banded)
    shifted = [r for r in hist['rows'] if r['change_points']]
    assert any(r['environ'] == 'gnu-openmpi4' and r['variable'] == 'latency_8B'
               for r in shifted)
    cp = next(r for r in shifted if r['variable'] == 'latency_8B')['change_points'][0]
    assert cp['session'] == sessions['h3'].uuid[:8]


# -- never overwrite -------------------------------------------------------------------------
def _digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob('*')) if p.is_file()}


def test_nothing_from_earlier_runs_is_overwritten(tmp_path, write, sessions):
    out = tmp_path / 'reports'
    (out / 'runs').mkdir(parents=True)
    (out / 'runs' / 'run-report-0.json').write_text('{}')
    (out / 'results.db').write_bytes(b'db')
    quick = {'history_sessions': [], 'gate': None, 'out': out}
    first, _ = write([sessions['main']], **quick)
    before = _digest(out)
    second, _ = write([sessions['main']], **quick)
    third, _ = write([sessions['main']], **quick)
    assert len({first.parent, second.parent, third.parent}) == 3
    assert second.parent.name == first.parent.name + '-2'
    assert third.parent.name == first.parent.name + '-3'
    after = _digest(out)
    assert {k: after[k] for k in before} == before
    assert new_directory(out, sessions['main']).name == first.parent.name + '-4'


# -- the command line ------------------------------------------------------------------------
def _database(path: Path, labels=('h1', 'h2', 'h3', 'main')) -> Path:
    conn = sqlite3.connect(path)
    conn.execute('CREATE TABLE sessions(uuid TEXT PRIMARY KEY, session_start_unix REAL, '
                 'session_end_unix REAL, json_blob TEXT, report_file TEXT)')
    for label in labels:
        report = raw_report(label)
        info = report['session_info']
        conn.execute('INSERT INTO sessions VALUES (?, ?, ?, ?, ?)',
                     (info['uuid'], info['time_start_unix'], info['time_end_unix'],
                      json.dumps(report), ''))
    conn.execute('INSERT INTO sessions VALUES (?, ?, ?, ?, ?)',
                 ('0bad0bad-row', 1.0, 2.0, '{"session_info": ', ''))
    conn.commit()
    conn.close()
    return path


@pytest.fixture
def reports_dir(tmp_path, monkeypatch) -> Path:
    out = tmp_path / 'reports'
    monkeypatch.setattr(paths, 'REPORTS_DIR', out)
    monkeypatch.setattr(paths, 'RESULTS_DB', out / 'results.db')
    out.mkdir()
    _database(out / 'results.db')
    uuid = raw_report('main')['session_info']['uuid']
    (out / 'gate').mkdir()
    (out / 'gate' / f'{uuid}.json').write_text((FIXTURES / 'gate.json').read_text())
    return out


def test_cli_report_prints_the_page_last(reports_dir, capsys):
    assert cli.main(['report']) == 0
    captured = capsys.readouterr()
    last = Path(captured.out.strip().splitlines()[-1])
    assert last.name == 'index.html' and last.is_file() and last.parent.parent == reports_dir
    uuid = raw_report('main')['session_info']['uuid']
    assert last.parent.name.endswith(uuid[:8])
    assert '0bad0bad-row' in captured.err                    # the damaged row: a warning
    data = json.loads((last.parent / 'data.json').read_text())
    assert data['sections']['verdict']['gate'] is not None
    assert len(data['sections']['history']['sessions']) == 4


def test_cli_report_of_named_sessions_and_missing_ones(reports_dir, capsys, tmp_path):
    h1 = raw_report('h1')['session_info']['uuid']
    assert cli.main(['report', 'ffffffff', h1[:8], '--out', str(tmp_path / 'elsewhere')]) == 0
    captured = capsys.readouterr()
    assert "no stored session 'ffffffff'" in captured.err
    last = Path(captured.out.strip().splitlines()[-1])
    assert last.parent.parent == tmp_path / 'elsewhere' and h1[:8] in last.parent.name
    assert cli.main(['report', 'ffffffff']) == 2
    assert 'ERROR' in capsys.readouterr().err


def test_run_report_page_of_a_run(reports_dir, tmp_path, warnings):
    from commcheck.report import entry
    run = tmp_path / 'run-report-3.json'
    run.write_text(json.dumps(raw_report('main')))
    index = entry.report_of_run(run, reports_dir, reports_dir / 'results.db', warnings)
    data = json.loads((index.parent / 'data.json').read_text())
    assert data['sections']['verdict']['gate'] is not None
    run.write_text('{"session_info": ')
    index = entry.report_of_run(run, reports_dir, reports_dir / 'results.db', warnings)
    assert index is not None and any('instead' in w for w in warnings)
    assert store.read_db(reports_dir / 'results.db', lambda m: None)


def _plot_alts(data: dict, section: str) -> list[str]:
    return [p['alt'] for p in data['sections'][section].get('plots', [])] if isinstance(
        data['sections'][section], dict) else []


def test_figures_say_how_many_launches_and_draw_their_spread(main_report):
    """Values from several launches are drawn with bars from the lowest to the highest launch
    (the data carry those ranges); values from one launch say so."""
    data = main_report.data
    alts = ' '.join(p['alt'] for p in main_report.data.get('plots', []))
    index = main_report.index.read_text()
    assert ('bars from the lowest to the highest launch' in index or
            'one launch (no spread over launches to draw)' in index), alts
    rows = data['sections']['stencil']['rows']
    assert rows and all(set(r['spread']) == {'time', 'speedup', 'bw_fraction'} for r in rows)
    for r in rows:
        lo, hi = r['spread']['time']
        if lo is not None and r['time'] is not None:
            assert lo <= r['time'] <= hi


def test_one_launch_is_said_and_several_are_drawn(reports, write):
    """The fixture session has several repeats (%.repeat_no): medians with bars; keeping only
    its first repeat: one launch, said so."""
    report = reports['main']
    for tc in all_cases(report):
        if tc['display_name'].startswith('Stencil '):
            tc['bound'] = 'STREAM copy over the same working set: probe text'
    index, several = write([session_of(report)])
    text = index.read_text()
    assert several['sections']['stencil']['bounds'] == [
        'STREAM copy over the same working set: probe text']
    assert 'probe text' in text
    assert re.search(r'medians of \d+(-\d+)? launches, bars from the lowest to the highest '
                     r'launch', text)
    rows = [r for r in several['sections']['stencil']['rows'] if r['time'] is not None]
    assert rows and any(r['spread']['time'][1] > r['spread']['time'][0] for r in rows)
    # the seeds' tables: today's medians with their interval beside the published figures
    hockney = [r for r in several['sections']['seeds']['seed003_hockney'] if not r['published']]
    assert hockney and all(re.fullmatch(r' \[\S+-\S+\]', r['ranges']['r_inf'])
                           for r in hockney if r['r_inf'] is not None)
    single = copy.deepcopy(report)
    for run in single['runs']:
        run['testcases'] = [tc for tc in run['testcases']
                            if '%.repeat_no=' not in tc['display_name'] or
                            '%.repeat_no=0' in tc['display_name']]
    index, one = write([session_of(single)])
    assert 'one launch (no spread over launches to draw)' in index.read_text()
    assert 'medians of' not in index.read_text()
    assert all(r['ranges']['r_inf'] in ('', ' (one launch)')
               for r in one['sections']['seeds']['seed003_hockney'] if not r['published'])
