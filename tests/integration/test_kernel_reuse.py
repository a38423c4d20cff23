"""Two real ReFrame sessions with an empty kernel cache: the first builds the kernels and keeps
them, the second reuses them and says so, in its output and in every test's provenance."""

from __future__ import annotations

import pytest

from commcheck import paths
from tests.conftest import needs_stacks
from tests.integration.test_reframe_sessions import cases, reframe, run_reports

pytestmark = [needs_stacks(), pytest.mark.integration]

#: The PyPI MPICH wheel's stack alone (a wheels directory holding only it): C only, so the
#: session's one fixture builds the compiled kernels and nothing else, in a minute or two.
MPICH_WHEEL = paths.WHEELS_DIR / 'mpich'


@pytest.mark.skipif(not (MPICH_WHEEL / 'bin' / 'mpicc').exists(),
                    reason='no PyPI MPICH wheel (commcheck setup-mpi)')
def test_the_second_session_reuses_the_kernels_and_says_so(isolated_env, tmp_path):
    (tmp_path / 'wheels').mkdir()
    (tmp_path / 'wheels' / 'mpich').symlink_to(MPICH_WHEEL)
    (tmp_path / 'norefs').mkdir()
    cache = tmp_path / 'cache'
    isolated_env.update(COMMCHECK_CACHE=str(cache), RFM_REFERENCE_PREFIX=str(tmp_path / 'norefs'),
                        COMMCHECK_MPI='wheels', COMMCHECK_WHEELS_DIR=str(tmp_path / 'wheels'))
    sessions = []
    for _ in range(2):
        done = reframe(isolated_env, '-r', '-n', 'PingPong%lang=c', '--mode', 'quick')
        assert done.returncode == 0, done.stdout[-3000:]
        sessions.append((done.stdout, cases(run_reports(isolated_env)[-1])))
    (first, ran1), (second, ran2) = sessions
    build1, build2 = ([tc for tc in ran if tc['name'].startswith('KernelsBuild')]
                      for ran in (ran1, ran2))
    assert len(build1) == len(build2) == 1
    build1, build2 = build1[0], build2[0]
    stack = build1['environ']
    assert (build1['kernels_build'], build2['kernels_build']) == ('built', 'reused')
    assert f'build {stack}: built' in first and f'build {stack}: reused' in second
    assert build1['kernels_key'] == build2['kernels_key']
    assert build2['reused_from'] == str(cache / 'kernels' / build1['kernels_key'])
    for ran, how in ((ran1, 'built'), (ran2, 'reused')):
        measured = [tc for tc in ran if not tc['fixture']]
        assert measured and all(tc['result'] == 'pass' for tc in measured)
        assert all(tc['provenance']['kernels_build'] == how and
                   tc['provenance']['kernels_key'] == build1['kernels_key'] for tc in measured)
