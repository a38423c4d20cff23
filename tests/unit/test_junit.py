"""``commcheck compare --junit``: the gate's verdicts as JUnit XML, parsed back as a CI page
would read them: one test case per judged variable, failures exactly where compare exits 1,
skipped where nothing was decided, the interval, threshold and note in the message."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from commcheck import cli
from commcheck.analysis import gate, junit, paired, verdicts
from commcheck.cli import compare
from commcheck.results import history_gen, store
from tests.unit.test_gate import FLOOR, KEY, launches, noisy, samples
from tests.unit.test_history_index import SOURCE
from tests.unit.test_paired import NEW, OLD, session

OTHER = KEY[:2] + ('gnu-openmpi4',) + KEY[3:]


def keyed(key, variable):
    return key[:4] + (variable,)


def comparisons() -> list[gate.Comparison]:
    """Real verdicts of the gate's rule: MPI regressed and machine changed (floored), unchanged,
    cannot tell (three launches a side), no baseline, on two environments."""
    (bv, bf), (nv, nf) = launches(8, 1), launches(8, 101, mpi=1.5)
    (mv, mf) = launches(8, 102, machine=2.5)
    lat1k, bw = keyed(OTHER, 'latency_1024B'), keyed(OTHER, 'bw_1048576B')
    other_floor = keyed(OTHER, 'floor_latency_8B')
    base = {KEY: samples(bv, session='b'), FLOOR: samples(bf, FLOOR, session='b'),
            OTHER: samples(bv, OTHER, session='b'),
            other_floor: samples(bf, other_floor, session='b'),
            lat1k: samples(noisy(30, 1.0, 0.002, seed=3), lat1k, session='b')}
    new = {KEY: samples(nv, session='n'), FLOOR: samples(nf, FLOOR, session='n'),
           OTHER: samples(mv, OTHER, session='n'),
           other_floor: samples(mf, other_floor, session='n'),
           lat1k: samples(noisy(30, 1.0, 0.002, seed=4), lat1k, session='n'),
           bw: samples([9000, 9100, 8900], bw, 'MB/s', session='n')}
    comps = gate.compare(base, new)
    assert {c.variable: c.verdict for c in comps if c.key.environ == 'gnu-openmpi4'} == {
        'latency_8B': verdicts.MACHINE_CHANGED, 'latency_1024B': verdicts.UNCHANGED,
        'bw_1048576B': verdicts.NO_BASELINE}
    assert [c.verdict for c in comps if c.key.environ == 'gnu-mpich4'] == [verdicts.MPI_REGRESSED]
    return comps


def parsed(tmp_path, comps, fail_on_machine_change=False) -> ET.Element:
    out = tmp_path / 'verdicts.xml'
    junit.write(out, comps, 'n against b', fail_on_machine_change)
    assert not list(tmp_path.glob('.*.part'))
    return ET.parse(out).getroot()


def cases(root: ET.Element) -> dict[tuple[str, str], ET.Element]:
    return {(c.get('classname'), c.get('name')): c for c in root.iter('testcase')}


def test_one_case_per_variable_failures_where_compare_exits_1(tmp_path):
    comps = comparisons()
    root = parsed(tmp_path, comps)
    assert root.tag == 'testsuites' and root.get('name') == 'commcheck compare'
    assert [s.get('name') for s in root.iter('testsuite')] == ['sys/part/gnu-mpich4',
                                                                 'sys/part/gnu-openmpi4']
    found = cases(root)
    assert set(found) == {(f'sys/part/{c.key.environ}/PingPong %lang=c', c.variable)
                          for c in comps}
    regressed = found[('sys/part/gnu-mpich4/PingPong %lang=c', 'latency_8B')]
    (failure,) = regressed.findall('failure')
    assert failure.get('type') == 'MPI regressed'
    message = failure.get('message')
    assert message.startswith("MPI regressed; MPI's own cost +") and 'worse-positive' in message
    assert 'threshold ' in message and 'floor floor_latency_8B ' in message
    comp = next(c for c in comps if c.verdict == verdicts.MPI_REGRESSED)
    assert comp.cost.interval() in message and comp.floor.interval() in message
    assert 'launches 8/8' in failure.text
    machine = found[('sys/part/gnu-openmpi4/PingPong %lang=c', 'latency_8B')]
    assert not list(machine) or [e.tag for e in machine] == ['system-out']
    assert machine.find('system-out').text.startswith('machine changed; ')
    skipped = found[('sys/part/gnu-openmpi4/PingPong %lang=c', 'bw_1048576B')]
    assert skipped.find('skipped').get('type') == 'no baseline'
    assert [(s.get('tests'), s.get('failures'), s.get('skipped'))
            for s in root.iter('testsuite')] == [('1', '1', '0'), ('3', '0', '1')]
    assert (root.get('tests'), root.get('failures'), root.get('skipped')) == ('4', '1', '1')
    assert compare.exit_code(comps) == 1


def test_a_changed_machine_fails_only_when_the_site_asked(tmp_path):
    comps = [c for c in comparisons() if c.key.environ == 'gnu-openmpi4']
    assert compare.exit_code(comps) == 0
    assert parsed(tmp_path, comps).get('failures') == '0'
    assert compare.exit_code(comps, True) == 1
    root = parsed(tmp_path, comps, fail_on_machine_change=True)
    (failed,) = [c for c in root.iter('testcase') if c.find('failure') is not None]
    assert failed.get('name') == 'latency_8B'
    assert failed.find('failure').get('type') == 'machine changed'


@pytest.mark.parametrize('verdict', verdicts.VERDICTS)
def test_every_verdict_is_failure_skipped_or_passed_as_the_exit_code_says(tmp_path, verdict):
    comp = gate.Comparison(key=KEY, unit='us', direction='lower', base=[], new=[],
                           verdict=verdict, note='a note')
    for flag in (False, True):
        (case,) = parsed(tmp_path, [comp], flag).iter('testcase')
        kinds = [e.tag for e in case if e.tag != 'system-out']
        want = ['failure'] if compare.exit_code([comp], flag) == 1 else \
            ['skipped'] if verdict in (verdicts.CANNOT_TELL, verdicts.NO_BASELINE,
                                       verdicts.NOT_COMPARABLE) else []
        assert kinds == want, (verdict, flag)
        said = case.find(want[0]).get('message') if want else case.find('system-out').text
        assert said.startswith(verdict) and 'a note' in said


def test_compare_writes_the_junit_beside_its_json_and_keeps_its_exit_code(tmp_path):
    """The command, on a real session's records made into a history with an upgrade that
    slowed one stack: every comparison of the JSON is a test case with its verdict."""
    change = history_gen.Change(at=3, environ='gnu-mpich4', field='mpi_version', before='',
                                after='4.1.6', factor=1.6)
    db = tmp_path / 'results.db'
    history_gen.generate(history_gen.source_report(SOURCE), 4, db, repeat=8, changes=[change])
    sessions = store.read_db(db)
    out, xml = tmp_path / 'gate.json', tmp_path / 'junit.xml'
    code = cli.main(['compare', '--db', str(db), '--session', sessions[3].uuid,
                     '--baseline-session', sessions[0].uuid, '--baseline-session',
                     sessions[1].uuid, '--json', str(out), '--junit', str(xml)])
    record = json.loads(out.read_text())
    found = cases(ET.parse(xml).getroot())
    assert code == 1 and len(found) == len(record['comparisons'])
    for c in record['comparisons']:
        case = found[(f"{c['system']}/{c['partition']}/{c['environ']}/{c['test']}",
                      c['variable'])]
        failure, skipped = case.find('failure'), case.find('skipped')
        assert (failure is not None) == (c['verdict'] in verdicts.SOFTWARE_REGRESSED), c
        assert (skipped is not None) == (c['verdict'] in verdicts.UNDECIDED), c
        said = (failure if failure is not None else skipped if skipped is not None
                else case.find('system-out'))
        assert (said.get('message') or said.text).startswith(c['verdict'])
    failed = {k for k, case in found.items() if case.find('failure') is not None}
    assert failed and {cls.split('/')[2] for cls, _ in failed} == {'gnu-mpich4'}


def test_an_upgrades_acceptance_is_a_failure_a_pass_or_skipped(tmp_path):
    """commcheck upgrade --junit with a margin: refused is a failure naming the margin and the
    better end reached, accepted passes saying its worse end, undecided is skipped."""
    judged = []
    for test, slower, pairs in (('PingPong %lang=c', 1.12, 16), ('PingPong %lang=f', 1.0, 16),
                                ('ParkbenchComms %lang=c', 1.05, 9)):
        made = [store.Sample(**{**{f: getattr(s, f) for f in s.__slots__}, 'test': test})
                for s in session(pairs, 4, slower=slower)]
        judged += paired.compare(made, OLD, NEW, paired.Settings(accept=0.05))
    path = tmp_path / 'u.xml'
    junit.write(path, judged, 'upgrade')
    root = ET.parse(path).getroot()
    assert root.get('name') == 'commcheck upgrade'
    cases = {c.get('classname').split('/')[-1]: c for c in root.iter('testcase')}
    failure = cases['PingPong %lang=c'].find('failure')
    assert 'refused: slower by more than 5% (better end +' in failure.get('message')
    assert cases['PingPong %lang=f'].find('failure') is None
    assert 'accepted: not slower by more than 5% (worse end' in \
        cases['PingPong %lang=f'].find('system-out').text
    assert cases['ParkbenchComms %lang=c'].find('skipped') is not None
