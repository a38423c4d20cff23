import pytest

from commcheck.analysis import kernel_records

OUTPUT = '''# one-way = rtt/2
META kernel=pingpong lang=c ranks=2 mpi="MPICH Version: 4.0.2" iters=10
DATA size=8 iters=10 rtt_us=1.5 oneway_us=0.75 bw_MBps=10.67
DATA size=16 iters=10 rtt_us=1.5 oneway_us=0.75 bw_MBps=21.33
some library noise
PASS validated=20
'''


def test_records_are_grouped_by_type_with_typed_values():
    out = kernel_records.parse(OUTPUT)
    assert out['META'][0]['mpi'] == 'MPICH Version: 4.0.2'
    assert [r['size'] for r in out['DATA']] == [8, 16]
    assert out['DATA'][1]['oneway_us'] == 0.75
    assert out['PASS'] == [{'validated': 20}]


def test_select_finds_exactly_one():
    rows = kernel_records.parse(OUTPUT)['DATA']
    assert kernel_records.select(rows, size=16)['bw_MBps'] == 21.33
    with pytest.raises(kernel_records.RecordError, match='found 0'):
        kernel_records.select(rows, size=32)


@pytest.mark.parametrize('line', ['DATA size', 'DATA =3', 'META mpi="unclosed'])
def test_malformed_records_are_errors(line):
    with pytest.raises(kernel_records.RecordError):
        kernel_records.parse(line)


def test_split_runs_separates_kernel_runs():
    runs = kernel_records.split_runs(OUTPUT + OUTPUT.replace('pingpong', 'dtype'))
    assert [r['META'][0]['kernel'] for r in runs] == ['pingpong', 'dtype']
    assert all(len(r['DATA']) == 2 and r['PASS'] for r in runs)


def test_a_kernel_that_did_not_start_fails_with_its_stderr(tmp_path):
    """No META record: the failure carries the job's last stderr lines (the launcher's or
    MPI's own reason), on one line."""
    import types

    from commcheck.rfm import perf
    (tmp_path / 'out').write_text('')
    (tmp_path / 'err').write_text('srun: warning\n\n[n3:123] *** Process received signal ***\n'
                                  'srun: error: cc-n3: task 2: Segmentation fault\n')
    check = types.SimpleNamespace(stagedir=str(tmp_path), stdout='out', stderr='err',
                                  faults=[])
    with pytest.raises(Exception, match=r'no META record: the kernel did not start properly; '
                                        r'its stderr ends: srun: warning \| \[n3:123\] .* \| '
                                        r'srun: error: cc-n3: task 2: Segmentation fault'):
        perf.kernel_passed(check).evaluate()
    (tmp_path / 'err').unlink()
    assert perf.stderr_tail(check).startswith('(unreadable: ')
