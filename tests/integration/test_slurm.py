"""The suite on a real Slurm cluster, through sbatch: ``config/sites/example-slurm.yaml``.

``.ci/slurm-cluster`` starts slurmctld and four slurmd in network namespaces on this machine
(see ``.ci/README.md``); ReFrame runs on the login host (``cc-login``) as a site runs it, with
the site file's partitions: ``intra`` (both ranks of a pair on one node) and ``inter`` (one rank
on each of two nodes); its ``fabric`` partition (all four nodes) is test_fabric.py's. The
point-to-point checks (PingPong, ParkbenchComms COMMS1/COMMS2) and the hybrid
stencil (SHM inside a node, Send/Recv between nodes) run at ``--mode quick`` sizes, C kernels.

Besides the file's two Debian stacks, the run has the PyPI MPICH 5.0.2 wheel
(``commcheck setup-mpi``) as the stack the file's commented ``gnu-mpich5`` block shows, with this
machine's prefix: MPICH between nodes (Debian's 4.0.2 is restricted to ``intra``, see the file).

Needs root, slurm-wlm, munge and iproute2. Under ``CI=true`` a missing prerequisite fails the
module; elsewhere it is skipped with the reason. Performance is measured and printed, not gated
(no references: a shared 2-core runner is not a reference machine).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from commcheck import paths
from commcheck.results import store
from commcheck.site import SiteError, discover, sitefile
from tests.conftest import BIN, IN_CI

pytestmark = [pytest.mark.integration]

CLUSTER_SCRIPT = paths.REPO_ROOT / '.ci' / 'slurm-cluster'
SITE_FILE = paths.CONFIG_DIR / 'sites' / 'example-slurm.yaml'
NODES = ('cc-n1', 'cc-n2', 'cc-n3', 'cc-n4')
SBIN_PATH = os.pathsep.join((os.environ.get('PATH', ''), '/usr/sbin', '/sbin'))
REFRAME_TIMEOUT = 1200

#: What runs on each partition: C kernels, quick sizes (``--mode quick``).
P2P_SELECTION = ['-n', 'PingPong%lang=c', '-n', 'ParkbenchComms%benchmark=comms1%lang=c',
                 '-n', 'ParkbenchComms%benchmark=comms2%lang=c']
STENCIL_SELECTION = ['-n', 'Stencil%variant=hybrid%ranks=2%seq.lang=c',
                     '-n', 'Stencil%variant=hybrid%ranks=4%seq.lang=c']


def require(reason: str | None):
    """A missing prerequisite: a failure in CI, a skip (with the reason) elsewhere."""
    if reason:
        if IN_CI:
            pytest.fail(f'CI=true and a prerequisite is missing: {reason}')
        pytest.skip(reason)


def cluster_prerequisites() -> str | None:
    if os.geteuid() != 0:
        return 'the Slurm cluster needs root (network namespaces, SlurmUser=root)'
    programs = ('slurmctld', 'slurmd', 'sbatch', 'squeue', 'scontrol', 'srun', 'munged', 'munge',
                'ip', 'unshare')
    missing = [p for p in programs if not shutil.which(p, path=SBIN_PATH)]
    if missing:
        return (f'not installed: {", ".join(missing)} (Debian: apt-get install slurm-wlm munge '
                f'iproute2)')
    return None


@dataclass
class Cluster:
    """A running .ci/slurm-cluster: commands on its login host, its slurmctld log."""

    state: Path

    def environ(self, base: dict | None = None) -> dict[str, str]:
        env = dict(os.environ if base is None else base, COMMCHECK_SLURM_DIR=str(self.state))
        env.pop('COMMCHECK_SLURM_PREFIX', None)     # the site files name the hosts cc-*
        return env

    def script(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run([str(CLUSTER_SCRIPT), *args], env=self.environ(),
                              capture_output=True, text=True, timeout=timeout)

    def run(self, argv: list[str], env: dict | None = None, timeout: float = 120):
        """``argv`` on the login host, with ``env`` (default: this process's)."""
        return subprocess.run([str(CLUSTER_SCRIPT), 'exec', '--', *argv],
                              env=self.environ(env), capture_output=True, text=True,
                              timeout=timeout)

    def hostnames(self, nodelist: str) -> set[str]:
        done = self.run(['scontrol', 'show', 'hostnames', nodelist])
        assert done.returncode == 0, done.stderr
        return set(done.stdout.split())

    def batch_jobs(self) -> dict[str, dict]:
        """Every batch job slurmctld ran: job id -> nodes allocated, exit status."""
        log = (self.state / 'log' / 'slurmctld.log').read_text(errors='replace')
        jobs: dict[str, dict] = {}
        names: dict[str, set[str]] = {}
        # Started by the main scheduler or by backfill:
        for match in re.finditer(r'sched: Allocate JobId=(?P<a>\d+) NodeList=(?P<an>\S+)|'
                                 r'_start_job: Started JobId=(?P<b>\d+) in \S+ on (?P<bn>\S+)',
                                 log):
            job, nodes = match['a'] or match['b'], match['an'] or match['bn']
            if nodes not in names:
                names[nodes] = self.hostnames(nodes)
            jobs.setdefault(job, {})['nodes'] = names[nodes]
        for job, status in re.findall(r'_job_complete: JobId=(\d+) WEXITSTATUS (\d+)', log):
            jobs.setdefault(job, {})['exit'] = int(status)
        return jobs


def start_cluster(request) -> Cluster:
    """Start a cluster for this module; stopped at its end. Its state directory is a short
    one under the temporary directory, searchable by all (munged refuses a socket below a 0700
    directory such as pytest's); removed after a clean stop."""
    require(cluster_prerequisites())
    state = Path(tempfile.mkdtemp(prefix='cc-slurm-'))
    state.chmod(0o755)
    cluster = Cluster(state)

    def stop():
        done = cluster.script('stop')
        assert done.returncode == 0, f'slurm-cluster stop failed:\n{done.stdout}{done.stderr}'
        shutil.rmtree(state, ignore_errors=True)

    request.addfinalizer(stop)
    done = cluster.script('start')
    if done.returncode != 0:
        pytest.fail(f'.ci/slurm-cluster start failed:\n{done.stdout}{done.stderr}')
    return cluster


def reframe_env(base: Path, site_file: Path) -> dict[str, str]:
    """ReFrame's environment: the site file, state and reports under ``base``, no references."""
    (base / 'norefs').mkdir(parents=True, exist_ok=True)
    # A kernel cache of its own, cold, so the builds through this cluster's login are tested
    # too. Reused kernels once failed here (MPICH 5's MPI_Init, 3 of 3 warm sessions, with 24
    # stale mpich_shm segments in /dev/shm); with /dev/shm clean, 4 of 4 warm sessions passed
    # (2026-11-28, issue 37's note).
    return dict(os.environ, COMMCHECK_SITE=str(site_file), COMMCHECK_STATE=str(base / 'state'),
                COMMCHECK_REPORTS=str(base / 'reports'), RFM_REFERENCE_PREFIX=str(base / 'norefs'),
                COMMCHECK_CACHE=str(base / 'cache'),
                PATH=f'{BIN}{os.pathsep}{os.environ.get("PATH", "")}')


def run_reframe(cluster: Cluster, env: dict, *args: str, timeout: float = REFRAME_TIMEOUT):
    cmd = [str(BIN / 'reframe'), '-C', str(paths.CONFIG_DIR / 'site.py'),
           '-c', str(paths.CHECKS_DIR), *args]
    return cluster.run(cmd, env=env, timeout=timeout)


def run_report(env: dict) -> dict:
    reports = sorted((Path(env['COMMCHECK_REPORTS']) / 'runs').glob('run-report-*.json'))
    assert reports, 'ReFrame wrote no run report'
    return json.loads(reports[-1].read_text())


def all_cases(report: dict) -> list[dict]:
    return [tc for run in report['runs'] for tc in run['testcases']]


def newer_mpich() -> dict | None:
    """The PyPI MPICH wheel (>= 4.2: no finalize hang between nodes) as a site-file stack."""
    for mpi in discover.wheel_mpis():
        if mpi.flavour == 'mpich' and tuple(map(int, mpi.version.split('.')[:2])) >= (4, 2):
            gcc = discover.gnu_compiler()
            return {'name': f'gnu-mpich{discover.major(mpi.version)}',
                    'compiler': {'family': 'gnu', 'version': gcc.version, 'cc': gcc.cc},
                    'mpi': {'flavour': 'mpich', 'version': mpi.version, 'prefix': mpi.prefix,
                            'srun_mpi': 'pmi2'},
                    'languages': ['c']}
    return None


def site_under_test(tmp: Path, partitions=('intra', 'inter')) -> tuple[Path, list[str]]:
    """example-slurm.yaml as CI runs it: the file with the given partitions, plus the wheel's
    MPICH where it is installed (required in CI: `make test` installs it). Returns (file,
    why-not notes)."""
    data = yaml.safe_load(SITE_FILE.read_text())
    data['partitions'] = [p for p in data['partitions'] if p['name'] in partitions]
    for stack in data['stacks']:
        if 'partitions' in stack:
            stack['partitions'] = [p for p in stack['partitions'] if p in partitions]
    data['stacks'] = [s for s in data['stacks'] if s.get('partitions', True)]
    notes = []
    extra = newer_mpich()
    if extra:
        data['stacks'].append(extra)
    else:
        why = ('no PyPI MPICH >= 4.2 wheel under the wheels directory (`commcheck setup-mpi`): '
               'MPICH does not run between nodes here')
        if IN_CI:
            pytest.fail(why)
        notes.append(why)
    path = tmp / 'example-slurm.yaml'
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    try:
        sitefile.load(path)
    except SiteError as err:
        require(f'{SITE_FILE.name} does not validate on this machine: {err}')
    return path, notes


@pytest.fixture(scope='module')
def cluster(request) -> Cluster:
    return start_cluster(request)


@pytest.fixture(scope='module')
def session(cluster, tmp_path_factory):
    """One ReFrame session on both partitions: the p2p checks and the hybrid stencil."""
    base = tmp_path_factory.mktemp('rfm-slurm')
    site_file, notes = site_under_test(base)
    env = reframe_env(base, site_file)
    # One retry: Debian's Open MPI 4.1.4 rarely segfaults at start under srun between the
    # namespaces (seen once in CI: both ranks of one node, a NULL call, not reproduced in 9
    # reruns); a failure of ours fails its retry too, and the retry is in the run report.
    done = run_reframe(cluster, env, '-r', '--max-retries', '1', '--mode', 'quick',
                       *P2P_SELECTION, *STENCIL_SELECTION)
    return {'done': done, 'env': env, 'site': sitefile.load(site_file), 'notes': notes}


def ran(session) -> list[dict]:
    """Each test case's last attempt (a retried one's retry)."""
    last = {(tc['display_name'], tc['system'], tc['partition'], tc['environ']): tc
            for tc in all_cases(run_report(session['env'])) if not tc['fixture']}
    return list(last.values())


def test_everything_passes(session):
    done = session['done']
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    cases = ran(session)
    not_passed = [(tc['display_name'], tc['partition'], tc['environ'], tc['result'],
                   tc.get('skip_reason') or tc.get('fail_reason'))
                  for tc in cases if tc['result'] != 'pass']
    # The only skip: four ranks on one 2-CPU node of the intra-node partition.
    assert all(name.startswith('Stencil %variant=hybrid %ranks=4') and part == 'intra' and
               result == 'skip' and 'oversubscription' in why
               for name, part, _, result, why in not_passed), not_passed


def test_every_stack_ran_on_its_partitions(session):
    site, cases = session['site'], ran(session)
    expected = set()
    for part in site.partitions:
        for stack in site.stacks_of(part):
            for check in ('PingPong %lang=c', 'ParkbenchComms %benchmark=comms1 %lang=c',
                          'ParkbenchComms %benchmark=comms2 %lang=c',
                          'Stencil %variant=hybrid %ranks=2 %seq.lang=c'):
                expected.add((check, part.name, stack.id))
            if part.placement == 'different-nodes':
                expected.add(('Stencil %variant=hybrid %ranks=4 %seq.lang=c', part.name,
                              stack.id))
    passed = {(tc['display_name'], tc['partition'], tc['environ'])
              for tc in cases if tc['result'] == 'pass'}
    assert expected <= passed, sorted(expected - passed)
    # Debian's MPICH 4.0.2 never runs between nodes (its finalize hang; see the site file).
    assert not [tc for tc in cases if tc['environ'] == 'gnu-mpich4' and tc['partition'] == 'inter']
    assert any(tc['partition'] == 'inter' and tc['environ'] == 'gnu-openmpi4' for tc in cases)


def test_jobs_went_through_the_queue(cluster, session):
    """Every test ran as an sbatch job: a job id, the squeue scheduler, an allocation in
    slurmctld's log on the nodes its placement asks for, exit status 0, srun with the stack's
    PMI plugin, and the placement recorded with the result."""
    site, cases = session['site'], [tc for tc in ran(session) if tc['result'] == 'pass']
    jobs = cluster.batch_jobs()
    assert cases
    for tc in cases:
        where = f'{tc["display_name"]} on {tc["partition"]}+{tc["environ"]}'
        part, stack = site.partition(tc['partition']), site.stack(tc['environ'])
        assert tc['scheduler'] == 'squeue' and tc['provenance']['scheduler'] == 'squeue', where
        assert tc['jobid'] and tc['jobid'] in jobs, f'{where}: job {tc["jobid"]} not in slurmctld'
        job = jobs[tc['jobid']]
        assert job.get('exit') == 0, f'{where}: {job}'
        assert job['nodes'] <= set(NODES)
        if tc['num_tasks'] > 1 and part.placement == 'different-nodes':
            want = min(part.nodes, tc['num_tasks'])
            assert len(job['nodes']) == want, f'{where}: ran on {job["nodes"]}'
        else:
            assert len(job['nodes']) == 1, f'{where}: ran on {job["nodes"]}'
        if store.job_nodes(tc):
            assert set(store.job_nodes(tc)) == job['nodes'], where
        assert tc['placement'] == part.placement == tc['provenance']['placement'], where
        assert tc['provenance']['launcher'] == 'srun', where
        script = (Path(tc['outputdir']) / 'rfm_job.sh').read_text()
        assert '#SBATCH -p all' in script, where
        plugin = stack.mpi.srun_mpi
        assert f'srun --mpi={plugin} --cpu-bind=none ' in script, where
        assert 'mpiexec' not in script and 'mpirun' not in script, where


def test_pairs_are_placed_as_declared(session):
    for tc in ran(session):
        if tc['display_name'].startswith(('PingPong', 'ParkbenchComms')) and tc['result'] == 'pass':
            per_node = 1 if tc['partition'] == 'inter' else 2
            assert (tc['num_tasks'], tc['num_tasks_per_node']) == (2, per_node), tc['display_name']


def test_hybrid_stencil_spans_real_nodes(session):
    """Between nodes the hybrid variant's nodes are the real ones (no emulated --node-size);
    on one node it still emulates them."""
    for tc in ran(session):
        if not tc['display_name'].startswith('Stencil %variant=hybrid') or tc['result'] != 'pass':
            continue
        ranks = tc['num_tasks']
        if tc['partition'] == 'inter':
            assert tc['num_tasks_per_node'] == ranks // 2
            assert '--node-size' not in tc['executable_opts']
        else:
            assert tc['num_tasks_per_node'] == ranks
            assert '--node-size' in tc['executable_opts']


def test_report_measurements(session):
    """Latency and bandwidth between and inside nodes, as ReFrame measured them (printed)."""
    rows = []
    for tc in ran(session):
        if tc['display_name'] == 'PingPong %lang=c' and tc['result'] == 'pass':
            values = {k.split(':')[-1]: v[0] for k, v in tc['perfvalues'].items()}
            rows.append((tc['environ'], tc['partition'], values['latency_8B'],
                         values['bw_1048576B']))
            assert values['latency_8B'] > 0 and values['bw_1048576B'] > 0
    print('\nstack          partition  latency_8B (us)  bw_1MiB (MB/s)')
    for row in sorted(rows):
        print(f'{row[0]:<14} {row[1]:<10} {row[2]:>15.2f} {row[3]:>15.0f}')
    for note in session['notes']:
        print(f'note: {note}')
    assert {r[1] for r in rows} == {'intra', 'inter'}
