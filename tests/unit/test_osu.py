import pytest

from commcheck.analysis import osu_output

LATENCY = '''# OSU MPI Latency Test v7.3
# Datatype: MPI_CHAR.
# Size       Avg Latency(us)
1                       0.23
2                       0.24
1048576                71.90
'''


def test_table_maps_size_to_metric():
    assert osu_output.parse_table(LATENCY) == {1: 0.23, 2: 0.24, 1048576: 71.90}


@pytest.mark.parametrize('text', ['# only a header\n', LATENCY + 'garbage here\n'])
def test_bad_output_is_an_error(text):
    with pytest.raises(osu_output.OsuOutputError):
        osu_output.parse_table(text)


REAL = (__import__('pathlib').Path(__file__).parents[1] / 'data' /
        'osu_latency_validated.txt').read_text()   # osu_latency -m 1:1048576 -c, OSU 7.3, MPICH
ALL_SIZES = [2 ** k for k in range(21)]


def test_a_complete_validated_run_has_no_problems():
    assert osu_output.problems(REAL, ALL_SIZES) == []
    assert len(osu_output.parse_table(REAL)) == 21


def test_a_run_cut_short_is_caught_not_passed():
    cut = REAL[:REAL.index('\n4096 ')]
    found = osu_output.problems(cut, ALL_SIZES)
    assert found == ['no result for 9 size(s) from 4096 B (the run stopped after 2048 B)']
    assert osu_output.problems('# OSU MPI Latency Test v7.3\n# Size   Latency (us)\n', ALL_SIZES)


def test_failed_or_missing_validation_is_caught():
    assert 'validation failed at 8 B' in osu_output.problems(
        REAL.replace('8.04              Pass', '8.04              Fail'), ALL_SIZES)[0]
    assert 'did not validate' in osu_output.problems(LATENCY, [1, 2, 1048576])[0]
