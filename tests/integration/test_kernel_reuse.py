"""Two real ReFrame sessions with an empty kernel cache: the first builds the kernels and keeps
them, the second reuses them and says so, in its output and in every test's provenance."""

from __future__ import annotations

import os

import pytest

from commcheck import paths
from tests.conftest import STACKS, needs_stacks
from tests.integration.test_reframe_sessions import cases, reframe, run_reports

pytestmark = [needs_stacks(), pytest.mark.integration]

#: A stack without Python: its fixture builds the compiled kernels only (mpi4py is another
#: cache's, test_mpi4py_wheel.py).
C_ONLY = [s for s in STACKS if 'python' not in s.tested_languages]


@pytest.mark.skipif(not C_ONLY, reason='no stack without Python here')
def test_the_second_session_reuses_the_kernels_and_says_so(isolated_env, tmp_path):
    stack = C_ONLY[0]
    cache = tmp_path / 'cache'
    cache.mkdir()
    if (paths.CACHE_DIR / 'mpi4py').is_dir():     # mpi4py as it is: only the kernels start empty
        os.symlink(paths.CACHE_DIR / 'mpi4py', cache / 'mpi4py')
    (tmp_path / 'norefs').mkdir()
    isolated_env.update(COMMCHECK_CACHE=str(cache), RFM_REFERENCE_PREFIX=str(tmp_path / 'norefs'))
    args = ('-r', '-n', 'PingPong%lang=c', '--mode', 'quick', '-p', f'^{stack.name}$')
    sessions = []
    for _ in range(2):
        done = reframe(isolated_env, *args)
        assert done.returncode == 0, done.stdout[-3000:]
        ran = [tc for tc in cases(run_reports(isolated_env)[-1]) if tc['environ'] == stack.name]
        sessions.append((done.stdout, ran))
    (first, ran1), (second, ran2) = sessions
    build1, build2 = ([tc for tc in ran if tc['name'].startswith('KernelsBuild')][0]
                      for ran in (ran1, ran2))
    assert (build1['kernels_build'], build2['kernels_build']) == ('built', 'reused')
    assert build1['kernels_key'] == build2['kernels_key']
    assert build2['reused_from'] == str(cache / 'kernels' / build1['kernels_key'])
    for ran, how in ((ran1, 'built'), (ran2, 'reused')):
        measured = [tc for tc in ran if not tc['fixture']]
        assert measured and all(tc['result'] == 'pass' for tc in measured)
        assert all(tc['provenance']['kernels_build'] == how and
                   tc['provenance']['kernels_key'] == build1['kernels_key'] for tc in measured)
