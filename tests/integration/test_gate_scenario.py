"""The acceptance scenario a site lives, for real: baseline, clean rerun, real degradations.

A baseline is recorded from repeated launches on both Debian stacks (with the hardware floor of
every launch); a clean rerun never reads "MPI regressed" (it may read unchanged, cannot tell or
machine changed: the machine is shared, and which it reads depends on its regime, so the test
asserts only what holds in every regime); then each stack is really degraded: Open MPI forced
off shared memory (``OMPI_MCA_btl=self,tcp``: the software's own cost, the floor untouched)
must read "MPI regressed" (or "both", if the machine moved too) and exit 1, naming what else
changed; MPICH's two ranks confined to one core by a cpuset cgroup (what a scheduler's cpuset
does; MPI binding cannot escape it) slows the floor too, so it must read a changed machine (or
both), and exit 1 with ``--fail-on-machine-change``. No mocks: real ReFrame sessions, real
MPI, real kernels.

ReFrame's own one-launch ``$ref`` bounds, written by ``commcheck baseline``, catch gross
breakage only: they bound MPI's own cost over the floor of the same launch (``own_latency_8B``
..., a factor 5 at least; tests/integration/test_own_cost_refs.py), and fail the Open MPI TCP
run (8 B latency 20x and more). The verdict is ``commcheck compare``'s, not ReFrame's.

The upgrade question, paired (``commcheck upgrade``, pairs until decided): Debian's MPICH in
service against itself under another name (A/A: never flagged; with a 5 % margin accepted or
undecided, never refused) and, both under the slowmpi interposer (``src/kernels/tools/slowmpi``),
at 0 % against 20 % (a real wait before every message, sized in each launch to its own 8 B and
1 MiB times): exit 1, the slower stack named. The two launches of a pair share the machine's
regime and the interposer sizes itself in it, and both sides load it, so the two differ only
by the wait (issue 44: a plain old side read another 1 MiB floor than an interposed one on an
Intel Xeon VM, and 7 of 10 pairs were set aside); the pairs go on until decided, within a
budget, so neither outcome depends on the regime the session meets or on the VM's kind.

Not here: MPICH's UCX forced onto TCP (``UCX_TLS=tcp,self``). It is flagged (+840 % 8 B
latency, all six key variables, measured by hand), but Debian's MPICH 4.0.2 then hangs in
MPI_Finalize in about one launch of five (see config/sites/example-slurm.yaml), and a hung
launch costs the job's whole time limit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from commcheck import paths
from tests.conftest import BIN, STACKS, commcheck_cmd, needs_stacks

pytestmark = [needs_stacks(), pytest.mark.integration]

DEBIAN = {s.mpi.flavour: s.name for s in STACKS if s.mpi.prefix == '/usr' and
          s.compiler.family == 'gnu'}
REPEATS = 6
SWEEP = ['-n', 'PingPong%lang=c', '-S', 'sizes=8,1024,1048576', '-S', 'iters=400']
CPUSET = Path('/sys/fs/cgroup/cpuset')


def reframe(env, *args, preexec=None):
    cmd = [str(BIN / 'reframe'), '-C', str(paths.CONFIG_DIR / 'local.py'), '-c',
           str(paths.CHECKS_DIR), '-r', *SWEEP, '--repeat', str(REPEATS), *args]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800,
                          preexec_fn=preexec)


def compare(env, *args):
    return subprocess.run([commcheck_cmd(), 'compare', *args], env=env, capture_output=True,
                          text=True, timeout=600)


def gate_json(env) -> dict:
    newest = max((Path(env['COMMCHECK_REPORTS']) / 'gate').glob('*.json'),
                 key=lambda p: p.stat().st_mtime)
    return json.loads(newest.read_text())


SOFTWARE = {'MPI regressed', 'both', 'regressed'}


def flagged(record: dict, environ: str, verdicts=frozenset(SOFTWARE)) -> set[str]:
    return {c['variable'] for c in record['comparisons']
            if c['verdict'] in verdicts and c['environ'] == environ}


def isolated(base: Path) -> dict:
    """The environment of a scenario: its own state, reports and references under base."""
    env = dict(os.environ, COMMCHECK_STATE=str(base / 'state'),
               COMMCHECK_REPORTS=str(base / 'reports'),
               RFM_REFERENCE_PREFIX=str(base / 'refs'))
    env['PATH'] = f'{BIN}{os.pathsep}{env["PATH"]}'
    (base / 'reports').mkdir()
    return env


@pytest.fixture(scope='module')
def site_env(tmp_path_factory):
    if set(DEBIAN) != {'mpich', 'openmpi'}:
        pytest.skip("the scenario needs Debian's MPICH and Open MPI")
    env = isolated(tmp_path_factory.mktemp('gate'))
    done = reframe(env, '-p', f'^({DEBIAN["mpich"]}|{DEBIAN["openmpi"]})$')
    assert done.returncode == 0, done.stdout[-3000:]
    base_line = subprocess.run([commcheck_cmd(), 'baseline', '--last', '1'], env=env,
                               capture_output=True, text=True, timeout=600)
    assert base_line.returncode == 0, base_line.stderr
    # 6 key variables, their 6 floors and 6 own costs, and each stack's CPU wait
    assert 'baselined 20 variable(s)' in base_line.stdout
    return env


def test_the_baseline_gates_plain_reframe_too(site_env):
    refs = Path(site_env['RFM_REFERENCE_PREFIX']) / 'local.yaml'
    assert 'own_latency_8B' in refs.read_text()
    assert (refs.parent / 'local.baseline.json').exists()


def test_a_clean_rerun_is_not_flagged(site_env):
    done = reframe(site_env, '-p', f'^({DEBIAN["mpich"]}|{DEBIAN["openmpi"]})$')
    # Every launch is valid; one of the 12 may still land outside ReFrame's one-launch bound on
    # a shared 2-core VM (seen in CI: 1 MiB at 27 % of the baseline median, 1 KiB latency
    # +20.1 % against a 20 % floor). The gate decides on the launches together.
    assert done.returncode == 0 or ('failed to meet reference' in done.stdout and
                                    'sanity error' not in done.stdout), done.stdout[-3000:]
    gate = compare(site_env)
    assert gate.returncode in (0, 3), gate.stdout[-3000:] + gate.stderr
    record = gate_json(site_env)
    assert record['format_version'] == 2
    assert not any(record['counts'][v] for v in SOFTWARE), gate.stdout[-3000:]
    assert len(record['comparisons']) == 6
    assert all(c['floor_variable'] and c['detectable'] > 0 for c in record['comparisons'])


def _degraded(site_env, environ, extra_env, preexec=None, said='failed to meet reference',
              compare_args=()):
    env = dict(site_env, **extra_env)
    done = reframe(env, '-p', f'^{environ}$', preexec=preexec)
    # ReFrame's own gate, on the references `commcheck baseline` wrote, fails the run too (or
    # the check's own finding, where what was measured is not comparable).
    assert done.returncode != 0 and said in done.stdout, done.stdout[-2000:]
    gate = compare(site_env, *compare_args)
    assert gate.returncode == 1, gate.stdout[-3000:] + gate.stderr
    record = gate_json(site_env)
    return record, gate.stdout


def test_open_mpi_off_shared_memory_is_flagged(site_env):
    record, out = _degraded(site_env, DEBIAN['openmpi'], {'OMPI_MCA_btl': 'self,tcp'})
    assert {'latency_8B', 'latency_1024B'} <= flagged(record, DEBIAN['openmpi'],
                                                      {'MPI regressed', 'both'})
    assert not flagged(record, DEBIAN['mpich'])         # the other stack was not touched
    changes = [c['provenance_changes'] for c in record['comparisons']
               if c['verdict'] in SOFTWARE]
    assert all(ch.get('env.OMPI_MCA_btl') == ['', 'self,tcp'] for ch in changes)
    assert 'env.OMPI_MCA_btl  -> self,tcp' in out


def _confine_to_cpu0():
    group = CPUSET / f'commcheck-test-{os.getpid()}'
    group.mkdir(exist_ok=True)
    (group / 'cpuset.cpus').write_text('0')
    (group / 'cpuset.mems').write_text((CPUSET / 'cpuset.mems').read_text().strip())
    return group


@pytest.mark.skipif(not (CPUSET / 'tasks').exists() or os.geteuid() != 0,
                    reason='needs root and a cgroup-v1 cpuset hierarchy')
@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason='one core: nothing to confine')
def test_both_ranks_on_one_core_is_flagged_and_said(site_env):
    group = _confine_to_cpu0()
    try:
        # MPICH: Open MPI refuses to start 2 ranks on a 1-CPU cpuset (not enough slots).
        record, _ = _degraded(site_env, DEBIAN['mpich'], {}, said='ran confined to 1 CPU',
                              preexec=lambda: (group / 'tasks').write_text(str(os.getpid())),
                              compare_args=('--fail-on-machine-change',))
    finally:
        subprocess.run(['sh', '-c', f'cat {group}/tasks > {CPUSET}/tasks 2>/dev/null; '
                                    f'rmdir {group}'], check=False)
    # Latency on one core is orders of magnitude worse in any regime, but how many of the key
    # variables a baseline recorded on a busy VM lets the gate decide follows its spread (a
    # variable it cannot decide says how many launches would): at least one latency moves, and
    # the gate exits 1 only because the site asked it to fail on a changed machine.
    moved = {'machine changed', 'both', 'MPI regressed'}
    assert {'latency_8B', 'latency_1024B'} & flagged(record, DEBIAN['mpich'], moved), record
    changes = [c['provenance_changes'] for c in record['comparisons']
               if c['verdict'] in moved and c['environ'] == DEBIAN['mpich']]
    assert all(ch.get('affinity_cpus') == ['2', '1'] for ch in changes), changes
    runs = sorted((Path(site_env['COMMCHECK_REPORTS']) / 'runs').glob('*.json'),
                  key=lambda p: p.stat().st_mtime)
    cases = [tc for run in json.loads(runs[-1].read_text())['runs'] for tc in run['testcases']
             if not tc['fixture']]
    assert all('ran confined to 1 CPU' in (tc['fail_reason'] or '') for tc in cases)


def test_environments_compared_within_a_session(site_env):
    """The upgrade question, on two stacks measured in one session."""
    gate = compare(site_env, '--session', _first_session(site_env), '--environ',
                   DEBIAN['mpich'], '--against', DEBIAN['openmpi'])
    assert gate.returncode in (0, 1, 3), gate.stderr
    record = gate_json(site_env)
    assert {c['environ'] for c in record['comparisons']} == {
        f'{DEBIAN["openmpi"]} vs {DEBIAN["mpich"]}'}
    assert all(c['provenance_changes'].get('mpi') == ['mpich', 'openmpi']
               for c in record['comparisons'])


def _first_session(env) -> str:
    from commcheck.results import store
    return store.read_db(Path(env['COMMCHECK_REPORTS']) / 'results.db')[0].uuid


# ---- the upgrade question, paired (commcheck upgrade) ------------------------------------------

UPGRADE_SWEEP = ['-n', 'PingPong%lang=c', '-S', 'sizes=8,1024,1048576', '-S', 'iters=400']
#: Pairs until decided, at most this many (looks at 12, 18, 24 pairs).
UPGRADE_MAX_PAIRS = 24


@pytest.fixture(scope='module')
def upgrade_site(tmp_path_factory):
    """A site with Debian's MPICH four times: in service, the same under another name (A/A),
    and under the slowmpi interposer at 0 % and at 20 % (each launch sizes it to its own 8 B
    and 1 MiB times, so the slowdown is 20 % in whatever regime the launch meets)."""
    import yaml

    from commcheck.site import discover, sitefile, slowmpi
    if 'mpich' not in DEBIAN:
        pytest.skip("the paired case needs Debian's MPICH")
    base = tmp_path_factory.mktemp('upgrade')
    stack = next(s for s in discover.local_site().stacks if s.name == DEBIAN['mpich'])
    library = slowmpi.build(stack, base / 'slowmpi')
    data = yaml.safe_load(sitefile.dump(discover.local_site()))
    mpich = {**next(s for s in data['stacks'] if s['name'] == DEBIAN['mpich']),
             'languages': ['c']}
    data['stacks'] = [mpich, {**mpich, 'name': 'mpich-again'},
                      {**mpich, 'name': 'mpich-zero', 'env': slowmpi.environment(library, 0)},
                      {**mpich, 'name': 'mpich-slower', 'env': slowmpi.environment(library, 20)}]
    data['upgrade'] = {'old': mpich['name'], 'new': 'mpich-again'}
    (base / 'upgrade.yaml').write_text(yaml.safe_dump(data, sort_keys=False))
    env = dict(os.environ, COMMCHECK_STATE=str(base / 'state'),
               COMMCHECK_REPORTS=str(base / 'reports'), COMMCHECK_SITE=str(base / 'upgrade.yaml'))
    env['PATH'] = f'{BIN}{os.pathsep}{env["PATH"]}'
    env.pop('RFM_REFERENCE_PREFIX', None)
    return env


def _upgrade(env, *args):
    done = subprocess.run([commcheck_cmd(), 'upgrade', '--max-pairs', str(UPGRADE_MAX_PAIRS),
                           *args, '--', *UPGRADE_SWEEP], env=env, capture_output=True, text=True,
                          timeout=2400)
    newest = max((Path(env['COMMCHECK_REPORTS']) / 'upgrade').glob('*.json'),
                 key=lambda p: p.stat().st_mtime)
    return done, json.loads(newest.read_text())


def test_upgrade_a_a_is_not_flagged(upgrade_site):
    """The same stack under two names, in adjacent pairs until decided, with a 5 % margin:
    never a regression, never refused (accepted, exit 0, or undecided at the budget, 3)."""
    done, record = _upgrade(upgrade_site, '--accept', '5%')     # the site's upgrade: pair
    assert done.returncode in (0, 3), done.stdout[-3000:] + done.stderr[-2000:]
    assert (record['old'], record['new']) == (DEBIAN['mpich'], 'mpich-again')
    assert record['format_version'] == 2 and record['settings']['accept'] == 0.05
    assert {j['variable'] for j in record['judgements']} == {
        'latency_8B', 'latency_1024B', 'bw_1048576B'}
    assert not any(record['counts'][v] for v in SOFTWARE), done.stdout[-3000:]
    assert all(j['accept']['result'] != 'fail' for j in record['judgements'])
    assert all(12 <= j['pairs'] <= UPGRADE_MAX_PAIRS and j['floor_variable']
               for j in record['judgements']), \
        [(j['variable'], j['pairs'], j['floor_variable'], j['note']) for j in record['judgements']]
    case, = record['plan']['cases']
    assert case['looks'][0] == 12 and case['stopped'] in ('decided', 'budget used')
    # a ReFrame run a look, and a run more where a stage made fewer pairs than its look
    # needs (a launch whose completion ReFrame recorded after its partner's neighbour: seen
    # once in CI, 2026-12-05, the stage's first launch recorded last; the top-up is the rule)
    assert len(case['looks']) <= len(record['sessions']) <= 2 * len(case['looks'])
    said = 'ACCEPTED' if done.returncode == 0 else 'NOT DECIDED'
    assert said in done.stdout, done.stdout[-3000:]


def test_upgrade_a_real_slower_mpi_fails_naming_the_stack(upgrade_site):
    """The interposer's +20 % on every message of the new stack, both sides under it: exit 1,
    the stack named, decided within the budget."""
    done, record = _upgrade(upgrade_site, '--old', 'mpich-zero', '--new', 'mpich-slower')
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-2000:]
    flagged = {j['variable']: j for j in record['judgements'] if j['verdict'] in SOFTWARE}
    assert {'latency_8B', 'bw_1048576B'} & set(flagged), done.stdout[-3000:]
    assert all(j['slower'] == 'mpich-slower' for j in flagged.values())
    assert 'SLOWER: mpich-slower on' in done.stdout
    assert not [j for j in record['judgements'] if j['slower'] == 'mpich-zero']
    case, = record['plan']['cases']
    assert case['looks'][-1] <= UPGRADE_MAX_PAIRS and case['seconds_a_pair'] > 0


# ---- the stencil: its own floor (the same steps without the halo exchange, same launch) -------
# A grid where the exchange dominates a step (240^2: about 25 us of compute a rank, two rows
# of 1.9 KB exchanged, so TCP at least doubles a step: at 480^2 it added 30 %, which a floor
# 30 % faster in another regime than the one-session baseline's could account for) and a run
# (80 steps) about as long as a time slice, so that busy loops on the cores reach the runs'
# median; C on Open MPI at 2 ranks: small, and TCP applies.
STENCIL = ['-n', 'Stencil%variant=sr%ranks=2%seq.lang=c', '-S', 'Stencil.n=240',
           '-S', 'StencilSequential.n=240', '-S', 'steps=80', '-S', 'min_reps=5',
           '-S', 'target_seconds=0.2']


def stencil_reframe(env, repeat: int = REPEATS, **extra_env):
    cmd = [str(BIN / 'reframe'), '-C', str(paths.CONFIG_DIR / 'local.py'), '-c',
           str(paths.CHECKS_DIR), '-r', *STENCIL, '-p', f'^{DEBIAN["openmpi"]}$',
           '--repeat', str(repeat)]
    return subprocess.run(cmd, env=dict(env, **extra_env), capture_output=True, text=True,
                          timeout=1200)


@pytest.fixture(scope='module')
def stencil_env(tmp_path_factory):
    if 'openmpi' not in DEBIAN:
        pytest.skip("the stencil's scenario needs Debian's Open MPI")
    env = isolated(tmp_path_factory.mktemp('stencil-gate'))
    done = stencil_reframe(env)
    assert done.returncode == 0, done.stdout[-3000:]
    made = subprocess.run([commcheck_cmd(), 'baseline', '--last', '1'], env=env,
                          capture_output=True, text=True, timeout=600)
    assert made.returncode == 0, made.stderr
    return env


def stencil_verdicts(env) -> dict[str, str]:
    return {c['variable']: c['verdict'] for c in gate_json(env)['comparisons']
            if c['test'].startswith('Stencil ')}


def test_stencil_on_busy_cores_reads_a_changed_machine(stencil_env):
    """A busy loop on every core slows compute and exchange; the compute-only runs of the same
    launches slow with them, so neither time nor bw_fraction reads as MPI's. Which verdict it
    reads depends on how much of the runs the loops' time slices reach (the median of runs
    shorter than a slice can stay where it was): machine changed, cannot tell (compare exits 3
    when nothing is decided) or unchanged, never a software verdict, never exit 1."""
    loops = [subprocess.Popen([sys.executable, '-c', 'while True: pass'])
             for _ in range(os.cpu_count() or 1)]
    try:
        done = stencil_reframe(stencil_env)
    finally:
        for proc in loops:
            proc.kill()
            proc.wait()
    assert 'sanity error' not in done.stdout, done.stdout[-3000:]
    gate = compare(stencil_env)
    verdicts = stencil_verdicts(stencil_env)
    assert gate.returncode in (0, 3), gate.stdout[-3000:] + gate.stderr
    assert verdicts['time'] in ('machine changed', 'cannot tell', 'unchanged', 'improved'), \
        gate.stdout[-3000:]
    assert not set(verdicts.values()) & SOFTWARE, gate.stdout[-3000:]


def test_stencil_halo_exchange_on_tcp_reads_mpi_regressed(stencil_env):
    stencil_reframe(stencil_env, OMPI_MCA_btl='self,tcp')
    gate = compare(stencil_env)
    assert gate.returncode == 1, gate.stdout[-3000:] + gate.stderr
    assert stencil_verdicts(stencil_env)['time'] in ('MPI regressed', 'both'), gate.stdout[-3000:]
