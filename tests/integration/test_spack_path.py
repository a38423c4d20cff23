"""The Spack build path: the same checks, programs and OSU from each stack's Spack environment.

Runs where Spack is found (SPACK_ROOT or PATH), as a site would have it; elsewhere it is
skipped with the reason. A site without internet sets COMMCHECK_SPACK_MIRROR.
"""

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from commcheck import paths
from commcheck.spack_env import find_spack
from tests.conftest import STACKS, needs_stacks

pytestmark = [needs_stacks(), pytest.mark.spack,
              pytest.mark.skipif(find_spack() is None,
                                 reason='Spack not found: set SPACK_ROOT or put spack on PATH')]


def test_spack_environments_are_generated_per_stack(isolated_env):
    isolated_env['COMMCHECK_BUILD'] = 'spack'
    done = subprocess.run(['commcheck', 'site'], env=isolated_env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    for stack in STACKS:
        env = yaml.safe_load((paths.SPACK_ENV_DIR / 'local' / stack.name / 'spack.yaml')
                             .read_text())['spack']
        assert env['packages']['mpi'] == {'require': [stack.mpi.flavour], 'buildable': False}
        assert any(s.startswith('commcheck-kernels') for s in env['specs'])


def test_checks_run_from_spack_builds_including_osu(isolated_env):
    isolated_env['COMMCHECK_BUILD'] = 'spack'
    done = subprocess.run(['reframe', '-C', str(paths.CONFIG_DIR / 'local.py'), '-c',
                           str(paths.CHECKS_DIR), '-r', '-n', '^PingPong|^OsuPt2Pt',
                           '-S', 'PingPong.sizes=8,1024,1048576'],
                          env=isolated_env, capture_output=True, text=True, timeout=5400)
    assert done.returncode == 0, done.stdout[-4000:]
    report = sorted((Path(isolated_env['COMMCHECK_REPORTS']) / 'runs').glob('*.json'))[-1]
    cases = [tc for run in json.loads(report.read_text())['runs'] for tc in run['testcases']]
    osu = [tc for tc in cases if tc['display_name'].startswith('OsuPt2Pt')]
    assert len(osu) == 3 * len(STACKS) and all(tc['result'] == 'pass' for tc in osu)
    assert all('spack-views' in tc['executable'] for tc in cases if not tc['fixture'])
