"""``commcheck bench firstrun``: the figures it prints from a stored run report, the machine it
names, and its whole path (clone, two runs as cron starts them, a run report each) on a small
repository whose ``make run`` writes the stored report (the real one takes 10-20 minutes: the
lead runs it alone)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from commcheck.bench import firstrun, machine
from commcheck.errors import UserError
from tests.conftest import commcheck_cmd

REPORT = Path(__file__).resolve().parents[1] / 'data' / 'run-report-pingpong.json'


def test_the_parts_and_counts_of_a_stored_run_report():
    report = json.loads(REPORT.read_text())
    cases = report['runs'][0]['testcases']
    total = {name: sum(c['time_total'] for c in cases if c['display_name'].startswith(name))
             for name in ('PingPong', 'KernelsBuild')}
    found = {p.name: p for p in firstrun.parts(report)}
    assert sorted(found) == ['KernelsBuild', 'PingPong'] and found['PingPong'].cases == 4
    assert {n: p.seconds for n, p in found.items()} == pytest.approx(total)
    assert [p.name for p in firstrun.parts(report)] == sorted(total, key=lambda n: -total[n])
    results = [c['result'] for c in cases]
    assert firstrun.counts(report) == {'cases': 5, 'passed': results.count('pass'),
                                       'failed': results.count('fail'), 'skipped': 0} \
        == {'cases': 5, 'passed': 2, 'failed': 3, 'skipped': 0}


def test_a_run_is_one_line_with_its_wall_time_and_longest_part(tmp_path):
    run = firstrun.from_report('second', 462.4, 0, REPORT)
    said = firstrun.line(run)
    assert said.startswith('second make run: 462 s (7 min 42 s), exit 0; ')
    first, second = run.parts
    assert '; 2 of 5 passed, 3 failed, 0 skipped; ' in said
    assert said.endswith(f'longest parts (test cases\' time, {first.seconds + second.seconds:.0f}'
                         f' s in all): {first.name} {first.seconds:.0f} s ({first.cases} test '
                         f'cases); {second.name} {second.seconds:.0f} s ({second.cases} test '
                         f'cases)')
    bad = tmp_path / 'bad.json'
    bad.write_text('{not json')
    with pytest.raises(UserError, match=str(bad)):
        firstrun.from_report('first', 1.0, 0, bad)


def _sysfs(root: Path, caches: dict[int, list[tuple]]) -> Path:
    """cpuN/cache/indexM/{level,type,size,shared_cpu_list} as Linux lists them."""
    for cpu, entries in caches.items():
        for i, (level, kind, size, shared) in enumerate(entries):
            index = root / f'cpu{cpu}' / 'cache' / f'index{i}'
            index.mkdir(parents=True)
            for name, value in (('level', level), ('type', kind), ('size', size),
                                ('shared_cpu_list', shared)):
                (index / name).write_text(f'{value}\n')
    return root


def test_the_machine_names_its_cpu_and_last_level_cache(tmp_path):
    two_l3 = {0: [(1, 'Instruction', '32K', '0'), (3, 'Unified', '32768K', '0-1')],
              2: [(1, 'Instruction', '32K', '2'), (3, 'Unified', '32768K', '2-3')]}
    sysfs = _sysfs(tmp_path / 'cpu', two_l3)
    assert machine.last_level_cache(sysfs) == (3, 32 << 20, 2)
    cpuinfo = tmp_path / 'cpuinfo'
    cpuinfo.write_text('processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Platinum\n')
    assert machine.describe(sysfs, cpuinfo).startswith('Intel(R) Xeon(R) Platinum, ')
    assert machine.describe(sysfs, cpuinfo).endswith(' CPUs, L3 32 MiB x 2')
    assert machine.last_level_cache(tmp_path / 'none') is None
    assert machine.describe(tmp_path / 'none', tmp_path / 'none').startswith('unknown CPU, ')
    assert machine.mib(480 << 20) == '480 MiB' and machine.mib(512 << 10) == '512 KiB'


#: The stand-in clone's ``make run``: what cron gives a job (no terminal, empty caches), then
#: the stored run report, as a run writes it.
MAKEFILE = '''run:
\ttest ! -t 0
\ttest -d "$$XDG_CACHE_HOME" || mkdir "$$XDG_CACHE_HOME"
\ttest -z "$$COMMCHECK_STATE"
\tmkdir -p reports/runs
\tls "$$XDG_CACHE_HOME" | wc -l > reports/cache-entries-$$(ls reports/runs | wc -l)
\ttouch "$$XDG_CACHE_HOME/used"
\tcp report.json reports/runs/run-report-$$(date +%s%N).json
'''


def test_the_benchmark_clones_runs_twice_and_says_so(tmp_path, isolated_env):
    repo = tmp_path / 'repo'
    repo.mkdir()
    (repo / 'Makefile').write_text(MAKEFILE)
    (repo / 'report.json').write_text(REPORT.read_text())
    for cmd in (['init', '-q'], ['add', '.'],
                ['-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', 'x']):
        subprocess.run(['git', *cmd], cwd=repo, check=True)
    keep, out = tmp_path / 'keep', tmp_path / 'firstrun.json'
    keep.mkdir()
    done = subprocess.run([commcheck_cmd(), 'bench', 'firstrun', '--repo', str(repo),
                           '--keep', str(keep), '--json', str(out)], env=isolated_env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f'commcheck bench firstrun: a fresh clone of {repo} at ')
    assert lines[1].startswith('first make run: ') and lines[2].startswith('second make run: ')
    assert lines[3].startswith(f'machine: {machine.describe()}; load before ')
    record = json.loads(out.read_text())
    assert [r['label'] for r in record['runs']] == ['first', 'second']
    assert all(r['exit'] == 0 and r['counts']['cases'] == 5 for r in record['runs'])
    kept, = keep.iterdir()
    clone = kept / 'commcheck'
    assert (clone / 'reports' / 'cache-entries-0').read_text().strip() == '0'   # empty caches
    assert (clone / 'reports' / 'cache-entries-1').read_text().strip() == '1'   # the same, warm
    assert (kept / 'first-run.log').exists() and (kept / 'second-run.log').exists()


def test_a_source_that_is_no_repository_is_one_line(tmp_path, isolated_env):
    done = subprocess.run([commcheck_cmd(), 'bench', 'firstrun', '--repo', str(tmp_path)],
                          env=isolated_env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stderr.startswith('ERROR: git clone ')
    assert done.stderr.count('\n') == 1
