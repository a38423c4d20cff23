"""Plain ReFrame on the references `commcheck baseline` writes, for real: one launch is judged
on MPI's own cost over the floor of the same launch (``own_latency_8B`` ...), never on the raw
figure, so a clean rerun passes whatever regime the machine is in, and a transport fallen back
to TCP fails.

Why it does not depend on the regime: the raw 8 B latency moved about 4x between this VM's
regimes, its own cost 1.2-2.3x (both stacks, 2026-11-25/26); over TCP the own cost grows 20-50x.
The own cost's bound is at least 5x its baseline median (``Policy.own_floor``), more than 2x
from either side. No mocks: real ReFrame sessions on Debian's Open MPI, real kernels.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml

from commcheck import paths
from tests.conftest import BIN, STACKS, commcheck_cmd, needs_stacks

pytestmark = [needs_stacks(), pytest.mark.integration]

OPENMPI = [s.name for s in STACKS if s.mpi.prefix == '/usr' and s.compiler.family == 'gnu'
           and s.mpi.flavour == 'openmpi']
SWEEP = ['-n', 'PingPong%lang=c', '-S', 'sizes=8,1024,1048576', '-S', 'iters=200',
         '-S', 'warmup=20']


def reframe(env, repeat: int, **extra_env):
    cmd = [str(BIN / 'reframe'), '-C', str(paths.CONFIG_DIR / 'local.py'), '-c',
           str(paths.CHECKS_DIR), '-r', *SWEEP, '-p', f'^{OPENMPI[0]}$', '--repeat', str(repeat)]
    return subprocess.run(cmd, env=dict(env, **extra_env), capture_output=True, text=True,
                          timeout=1200)


@pytest.fixture(scope='module')
def baselined(tmp_path_factory):
    if not OPENMPI:
        pytest.skip("needs Debian's Open MPI (its TCP transport is the degradation)")
    base = tmp_path_factory.mktemp('own')
    env = dict(os.environ, COMMCHECK_STATE=str(base / 'state'),
               COMMCHECK_REPORTS=str(base / 'reports'), RFM_REFERENCE_PREFIX=str(base / 'refs'))
    env['PATH'] = f'{BIN}{os.pathsep}{env["PATH"]}'
    (base / 'reports').mkdir()
    done = reframe(env, 5)
    assert done.returncode == 0, done.stdout[-3000:]
    made = subprocess.run([commcheck_cmd(), 'baseline', '--last', '1'], env=env,
                          capture_output=True, text=True, timeout=600)
    assert made.returncode == 0, made.stderr
    return env


def test_the_references_bound_own_costs_only(baselined):
    refs = yaml.safe_load((Path(baselined['RFM_REFERENCE_PREFIX']) / 'local.yaml').read_text())
    (partition,) = [k for k in refs['PingPong'] if k != '$index']
    level = refs['PingPong'][partition][OPENMPI[0]]['c']
    assert set(level) == {'own_latency_8B', 'own_latency_1024B', 'own_bw_1048576B'}
    assert all(upper >= 4.0 and lower is None for _, lower, upper, _ in level.values())


def test_a_clean_rerun_passes_plain_reframe(baselined):
    done = reframe(baselined, 3)
    assert done.returncode == 0, done.stdout[-3000:]


def test_open_mpi_on_tcp_fails_plain_reframe(baselined):
    done = reframe(baselined, 2, OMPI_MCA_btl='self,tcp')
    assert done.returncode != 0 and 'failed to meet reference' in done.stdout, \
        done.stdout[-3000:]
    assert 'own_latency_8B' in done.stdout and 'sanity error' not in done.stdout
