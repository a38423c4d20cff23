"""Reading OSU's collective benchmarks (osu_allreduce ... osu_barrier, 7.x output)."""

import pytest

from commcheck.analysis import osu_output

ALLREDUCE = """AFFINITY cpus=2
# OSU MPI Allreduce Latency Test v7.3
# Datatype: MPI_CHAR.
# Size       Avg Latency(us)        Validation
8                       5.12              Pass
1024                   11.40              Pass
"""
BARRIER = """# OSU MPI Barrier Latency Test v7.3
# Avg Latency(us)
             4.56
"""


def test_sized_collective_table():
    assert osu_output.parse_table(ALLREDUCE) == {8: 5.12, 1024: 11.40}
    assert osu_output.problems(ALLREDUCE, [8, 1024]) == []
    assert osu_output.problems(ALLREDUCE.replace('11.40              Pass', '11.40   Fail'),
                        [8, 1024]) == ['OSU validation failed at 1024 B']


def test_barrier_has_one_figure():
    assert osu_output.parse_single(BARRIER) == 4.56
    for bad in ('# OSU MPI Barrier Latency Test v7.3\n# Avg Latency(us)\n',
                BARRIER + '             4.60\n', BARRIER.replace('4.56', 'fast')):
        with pytest.raises(osu_output.OsuOutputError):
            osu_output.parse_single(bad)
