import pytest

from commcheck import osu

LATENCY = '''# OSU MPI Latency Test v7.3
# Datatype: MPI_CHAR.
# Size       Avg Latency(us)
1                       0.23
2                       0.24
1048576                71.90
'''


def test_table_maps_size_to_metric():
    assert osu.parse_table(LATENCY) == {1: 0.23, 2: 0.24, 1048576: 71.90}


@pytest.mark.parametrize('text', ['# only a header\n', LATENCY + 'garbage here\n'])
def test_bad_output_is_an_error(text):
    with pytest.raises(osu.OsuOutputError):
        osu.parse_table(text)
