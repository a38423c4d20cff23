"""Fabric acceptance on a real (emulated) 4-node Slurm cluster: the node-pair sweep names a node
whose link is degraded for real, and no node when none is; collectives on the partition.

``.ci/slurm-cluster`` starts four slurmd in network namespaces (see ``.ci/README.md``); ReFrame
runs on its login host with ``config/sites/example-slurm.yaml``'s ``fabric`` partition (all four
nodes), on Debian's Open MPI 4.1.4 (srun --mpi=pmix) and the PyPI MPICH 5 wheel (srun
--mpi=pmi2; Debian's MPICH 4.0.2 runs on ``intra`` only, see the site file).

1. A clean session: FabricSweep (every pair of the four nodes) and Collectives (one rank per
   node) on both stacks. The sweep names nobody.
2. ``slurm-cluster degrade cc-n3 tbf rate 5mbit ...``: a token-bucket rate limit on cc-n3's
   egress, inside its namespace (this kernel has no netem). The sweep, run with exactly the
   rerun command a named node's failure prints, names cc-n3 and no other node, in its failure
   reason, its perf variables and the report's fabric section; the job ran on the nodes the
   command lists. The qdisc is removed afterwards.

The four "nodes" share this machine's two CPUs (and, on a busy machine, its other load): a
ping-pong then measures the scheduler as much as the link (a round trip needs both busy-polling
ranks on a CPU at once; clean latencies here ranged 10 us to 1 ms, best batches included), and
now and then a clean pair streams 10-100x slower for a while. So the sweep here runs its pairs
one at a time (``serial``), three times (``passes``: a transient slows one pass), judges the best
batch of each pair over the passes (``statistic=best``) by bandwidth only (``metrics``), and
names only what is 50x worse than the median of the others (``min_effect=49``). The rate limit,
5 Mbit/s (0.6 MB/s) against 100-1800 MB/s on the clean veth links, is 150-3000x. Needs what
test_slurm.py needs.
"""

from __future__ import annotations

import glob
import json
import os
import re
import subprocess
import warnings
from pathlib import Path

import pytest

from commcheck.analysis import fabric, kernel_records
from commcheck.results import store
from tests.conftest import BIN
from tests.integration.test_slurm import (
    all_cases,
    reframe_env,
    run_reframe,
    site_under_test,
    start_cluster,
)

pytestmark = [pytest.mark.integration]

NODES = ('cc-n1', 'cc-n2', 'cc-n3', 'cc-n4')
DEGRADED = 'cc-n3'
RATE_LIMIT = ('tbf', 'rate', '5mbit', 'burst', '32kb', 'latency', '50ms')
#: How the emulated nodes are swept (see the module's description).
SWEEP = ['-S', 'FabricSweep.serial=true', '-S', 'FabricSweep.passes=3',
         '-S', 'FabricSweep.statistic=best', '-S', 'FabricSweep.metrics=bandwidth',
         '-S', 'FabricSweep.min_effect=49', '-S', 'FabricSweep.lat_iters=200',
         '-S', 'FabricSweep.batches=40', '-S', 'FabricSweep.bw_iters=8',
         '-S', 'FabricSweep.bw_size=64k', '-S', 'FabricSweep.warmup=2']
INTER_NODE_STACKS = {'gnu-openmpi4', 'gnu-mpich5'}
#: Both sessions retry a failed test case twice: Debian's Open MPI 4.1.4 under srun has crashed
#: at start here (a rank jumping to address 0, its peers then failing to connect to it; 3 of
#: about 10 CI sweeps, none in 60 launches by hand, none in 22 degraded sweeps by hand on
#: 2026-11-26). The site file keeps PMIx off its shared-memory store for it, and the cluster
#: ends a crashed step at once (KillOnBadExit), so a retry costs seconds. The clean session is
#: judged by its last attempt (a pass ends the retries; a fault of ours fails every attempt).
#: The degraded sweep's expected failure is retried too, so it is judged by its last attempt
#: that measured (:func:`judged`): one start crash on the last attempt failed CI once.
RETRIES = ('--max-retries', '2')
#: Sessions at most. ReFrame ran one retry here, not two (a run report of 2026-11-27 holds
#: two runs, Open MPI 4 crashing at start in both; why the second retry did not run is not
#: known), so a stack with no attempt that started gets the whole session again, and each
#: stack is judged by its last attempt that started.
SESSIONS = 3
#: Stacks whose start crash (above) may take every attempt of the degraded sweep: a CI run of
#: 2026-11-28 saw Debian's Open MPI 4 crash at start in all of them (rank 0 jumping to address
#: 0, before its first message; 0 of 14 such launches by hand here, clean or degraded, idle or
#: with busy loops). Such a stack is left out of the degraded verdicts with a warning, when
#: every attempt died so; the other stack must still name the node, and a stack that started
#: is judged as before.
START_CRASHES = {'gnu-openmpi4'}


@pytest.fixture(scope='module')
def cluster(request):
    return start_cluster(request)


@pytest.fixture(scope='module')
def site(tmp_path_factory):
    base = tmp_path_factory.mktemp('rfm-fabric')
    site_file, notes = site_under_test(base, partitions=('fabric',))
    return {'base': base, 'file': site_file, 'notes': notes}


@pytest.fixture(scope='module')
def clean(cluster, site):
    env = reframe_env(site['base'] / 'clean', site['file'])
    done = sessions(cluster, env, ('FabricSweep', 'Collectives'), '-r', *RETRIES, '--mode',
                    'quick', '-n', 'FabricSweep', '-n', 'Collectives', *SWEEP)
    return {'done': done, 'env': env, 'cases': ran(env)}


@pytest.fixture(scope='module')
def degraded(cluster, site, clean):
    """The sweep with cc-n3's link rate-limited, launched with the rerun command's options."""
    env = reframe_env(site['base'] / 'degraded', site['file'])
    rerun = ['-n', 'FabricSweep', '-S', 'FabricSweep.num_nodes=4',
             '-J', f'nodelist={",".join(NODES)}']
    done = cluster.script('degrade', DEGRADED, *RATE_LIMIT)
    assert done.returncode == 0, done.stderr
    try:
        done = sessions(cluster, env, ('FabricSweep',), '-r', *RETRIES, '--mode', 'quick',
                        *rerun, *SWEEP)
    finally:
        restored = cluster.script('restore', DEGRADED)
    assert restored.returncode == 0, restored.stderr
    assert 'tbf' not in restored.stderr.split('now:')[-1], restored.stderr
    report = subprocess.run([str(BIN / 'commcheck'), 'report'], env=env, capture_output=True,
                            text=True, timeout=600)
    assert list((Path(env['COMMCHECK_REPORTS']) / 'runs').glob('run-report-*.json')), \
        done.stdout[-3000:] + done.stderr[-3000:]
    return {'done': done, 'env': env, 'cases': ran(env), 'rerun': rerun, 'report': report}


def ran(env) -> list[dict]:
    """Every test case of every session in ``env``, in the order they ran."""
    reports = sorted((Path(env['COMMCHECK_REPORTS']) / 'runs').glob('run-report-*.json'),
                     key=lambda path: int(path.stem.rsplit('-', 1)[1]))
    return [tc for path in reports for tc in all_cases(json.loads(path.read_text()))
            if not tc['fixture']]


def started(tc) -> bool:
    """The attempt's MPI job started (a start crash leaves no META record)."""
    return 'did not start' not in (tc.get('fail_reason') or '')


def sessions(cluster, env, names, *args):
    """The session, again (at most :data:`SESSIONS` in all) while a stack has no attempt of
    ``names`` on the fabric partition that started; the last session's process."""
    for _ in range(SESSIONS):
        done = run_reframe(cluster, env, *args)
        if all(set(last_started(ran(env), name)) == INTER_NODE_STACKS for name in names):
            break
    return done


def last_started(cases, name) -> dict[str, dict]:
    """Per stack, the last attempt of ``name`` on the fabric partition that started."""
    return {tc['environ']: tc for tc in cases
            if tc['display_name'] == name and tc['partition'] == 'fabric' and started(tc)}


def sweeps(cases) -> dict[str, dict]:
    found = last_started(cases, 'FabricSweep')
    assert set(found) == INTER_NODE_STACKS, sorted(found)
    return found


def judged(cases) -> dict[str, dict]:
    """Per stack, the last attempt of the degraded sweep that measured. The session retries
    (RETRIES, SESSIONS), and the expected failure is retried too, so a start crash of MPI (see
    RETRIES) on the last attempt would hide the attempts that measured: an attempt that did not
    start is printed with its job's stderr and passed over; at least one of each stack measured.
    """
    attempts = [tc for tc in cases
                if tc['display_name'] == 'FabricSweep' and tc['partition'] == 'fabric']
    assert {tc['environ'] for tc in attempts} == INTER_NODE_STACKS, attempts
    for tc in attempts:
        if not started(tc):
            print(f'{tc["environ"]}: an attempt did not start: {tc["fail_reason"]}\n'
                  f'{job_tail(tc)}')
    found = last_started(attempts, 'FabricSweep')
    crashed = {env for env in INTER_NODE_STACKS - set(found)
               if env in START_CRASHES and all(crashed_at_start(tc) for tc in attempts
                                               if tc['environ'] == env)}
    assert found and set(found) | crashed == INTER_NODE_STACKS, \
        [(tc['environ'], tc.get('fail_reason')) for tc in attempts]
    for env in sorted(crashed):
        warnings.warn(f'{env}: every degraded sweep crashed at start (Debian Open MPI 4.1.4 '
                      f'under srun, see RETRIES): judged on {", ".join(sorted(found))} only',
                      stacklevel=2)
    return found


def crashed_at_start(tc) -> bool:
    """The attempt did not start, and its job died of a signal (MPI's start crash, not ours:
    the same kernel and options start on the clean links)."""
    return not started(tc) and 'Segmentation fault' in job_tail(tc)


def values(tc) -> dict[str, float]:
    return {k.split(':')[-1]: v[0] for k, v in (tc.get('perfvalues') or {}).items()}


def job_records(tc) -> dict[str, list[dict]]:
    # A passed test's output is copied to its output directory; a failed one stays staged.
    out = glob.glob(os.path.join(tc['outputdir'], '*.out')) or \
        glob.glob(os.path.join(tc['stagedir'], '*.out'))
    assert out, f'no job output kept in {tc["outputdir"]} or {tc["stagedir"]}'
    return kernel_records.parse(Path(out[0]).read_text(errors='replace'))


def job_tail(tc, chars: int = 3000) -> str:
    """The end of a test case's job output and error, for an assertion's message."""
    found = []
    for d in (tc['stagedir'], tc['outputdir']):
        for path in sorted(glob.glob(os.path.join(d or '', 'rfm_job.e*')) +
                           glob.glob(os.path.join(d or '', '*.err'))):
            found.append(f'--- {path}\n' + Path(path).read_text(errors='replace')[-chars:])
    return '\n'.join(found) or 'no job output kept'


def print_grid(title, tc):
    out = job_records(tc)
    found = fabric.pairs_from_records(out['DATA'], 'best')
    result = out['RESULT'][0]
    print(f'\n{title} {tc["environ"]}: {result["pairs"]} pairs, {result["rounds"]} rounds, '
          f'{result["passes"]} passes: sweep {result["sweep_s"]:.2f} s, slowest round '
          f'{result["slowest_round_s"]:.2f} s')
    for metric, unit in (('latency', 'us'), ('bandwidth', 'MB/s')):
        grid = fabric.matrix(found, NODES, metric)
        print(f'\n{title} {tc["environ"]}: {metric} ({unit}, best batch; bandwidth: row -> '
              f'column)')
        print('        ' + ''.join(f'{n:>10}' for n in NODES))
        for node, row in zip(NODES, grid):
            print(f'{node:<8}' + ''.join('         -' if v != v else f'{v:>10.1f}'
                                         for v in row))


def test_clean_sweep_names_no_node(clean):
    done = clean['done']
    for env, tc in sweeps(clean['cases']).items():
        assert tc['result'] == 'pass', (env, tc.get('fail_reason'), done.stdout[-4000:],
                                        job_tail(tc))
        figures = values(tc)
        assert figures['named'] == 0, (env, tc.get('fail_reason'))
        for node in NODES:
            name = fabric.safe_name(node)
            assert figures[f'node_latency_{name}'] > 0 and figures[f'node_bw_{name}'] > 0
        assert (tc['num_tasks'], tc['num_tasks_per_node']) == (4, 1)
        assert set(store.job_nodes(tc)) in (set(NODES), set())
        print_grid('clean', tc)


def test_collectives_on_the_partition(clean):
    """One rank per node on all four nodes, every result validated (within one node they run
    on the local site: tests/integration/test_reframe_sessions.py's main job)."""
    placed = last_started(clean['cases'], 'Collectives')
    assert set(placed) == INTER_NODE_STACKS
    print('\nstack          partition ranks  allreduce_8B allreduce_64K alltoall_1K  bcast_64K '
          'barrier (us)')
    for env, tc in sorted(placed.items()):
        part = tc['partition']
        assert tc['result'] == 'pass', (part, env, tc.get('fail_reason'))
        assert (tc['num_tasks'], tc['num_tasks_per_node']) == (4, 1), (part, env)
        v = values(tc)
        keys = ('allreduce_8B', 'allreduce_65536B', 'alltoall_1024B', 'bcast_65536B', 'barrier')
        assert all(v[k] > 0 for k in keys), v
        print(f'{env:<14} {part:<9} {tc["num_tasks"]:>5} ' +
              ' '.join(f'{v[k]:>12.1f}' for k in keys))


def test_degraded_node_is_named_and_no_other(degraded):
    for env, tc in judged(degraded['cases']).items():
        reason = tc.get('fail_reason') or ''
        assert tc['result'] == 'fail' and 'fabric outliers' in reason, (env, tc['result'],
                                                                         reason, job_tail(tc))
        named = re.findall(r'(node|link) (\S+?):', reason.split('; rerun')[0])
        assert named and {n for _, n in named} == {DEGRADED}, (env, reason)
        assert any(kind == 'node' for kind, _ in named)
        figures = values(tc)
        assert figures['named'] >= 1
        bw = {n: figures[f'node_bw_{fabric.safe_name(n)}'] for n in NODES}
        assert all(bw[DEGRADED] * 10 < bw[n] for n in NODES if n != DEGRADED), bw
        print_grid('degraded', tc)
        print(f'{env}: {reason}')


def test_the_rerun_command_is_what_ran(degraded):
    """The failure prints the command that reruns the named node with healthy peers; the
    degraded session ran exactly its options, and its job ran on exactly those nodes."""
    for tc in judged(degraded['cases']).values():
        command = (tc.get('fail_reason') or '').split('rerun just those nodes: ')[-1]
        assert command.startswith('commcheck run -- '), (command, job_tail(tc))
        assert command.split('commcheck run -- ')[1].split() == degraded['rerun'], command
        script = (Path(tc['stagedir']) / 'rfm_job.sh').read_text()    # failed: kept staged
        assert f'#SBATCH --nodelist={",".join(NODES)}' in script, script
        assert set(store.job_nodes(tc)) in (set(NODES), set())


def test_report_names_the_node_first(degraded):
    report = degraded['report']
    assert report.returncode in (0, 1), report.stderr[-3000:]
    index = Path(report.stdout.strip().splitlines()[-1])
    html = index.read_text()
    section = html[html.index('id="fabric"'):]
    assert DEGRADED in section[:section.index('heat')], 'the named node comes before the maps'
    assert 'nodelist=' in section
    assert list(index.parent.glob('**/fabric-*.svg')) or list(index.parent.glob('**/fabric-*.png'))
