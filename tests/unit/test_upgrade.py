"""``commcheck upgrade`` without launching anything: the site's upgrade pair (the example's
validates once uncommented), the ReFrame arguments that make the pairs, and bad input as one
ERROR line and exit 2. Real paired sessions: tests/integration/test_gate_scenario.py."""

import re
import subprocess

import pytest

from commcheck import paths
from commcheck.cli import upgrade
from commcheck.errors import UserError
from commcheck.site import sitefile
from tests.conftest import commcheck_cmd

EXAMPLE = paths.CONFIG_DIR / 'sites' / 'example-slurm.yaml'
DECLARATION = re.compile(r'^(\s*)# ((?:- |  |upgrade:).*)$')


def uncommented_upgrade_pair(text: str) -> str:
    """The example site file with its commented upgrade pair (stacks and key) uncommented."""
    out, inside = [], False
    for line in text.splitlines():
        inside = (inside or 'upgrade pair: begin' in line) and 'upgrade pair: end' not in line
        found = DECLARATION.match(line) if inside else None
        out.append(found[1] + found[2] if found else line)
    return '\n'.join(out) + '\n'


def test_the_example_upgrade_pair_validates():
    site = sitefile.parse(uncommented_upgrade_pair(EXAMPLE.read_text()), str(EXAMPLE))
    assert (site.upgrade.old, site.upgrade.new) == ('gnu-openmpi414', 'gnu-openmpi416')
    specs = {s.id: s.mpi.spack_spec for s in site.stacks if s.build == 'spack'}
    assert specs == {'gnu-openmpi414': 'openmpi@4.1.4', 'gnu-openmpi416': 'openmpi@4.1.6'}
    assert sitefile.parse(EXAMPLE.read_text(), str(EXAMPLE)).upgrade is None


@pytest.mark.parametrize('pair,said', [
    ('{old: gnu-openmpi414, new: nope}', "upgrade: new: no stack 'nope'"),
    ('{old: gnu-openmpi414, new: gnu-openmpi414}', 'old and new are the same stack'),
    ('{old: gnu-openmpi414}', "upgrade: missing required key 'new'"),
])
def test_a_bad_upgrade_pair_is_refused(pair, said):
    text = uncommented_upgrade_pair(EXAMPLE.read_text()).replace(
        'upgrade: {old: gnu-openmpi414, new: gnu-openmpi416}', f'upgrade: {pair}')
    with pytest.raises(UserError, match=re.escape(said)):
        sitefile.parse(text, str(EXAMPLE))


def test_the_pairs_are_reframes_repeats_in_random_order():
    args = upgrade.reframe_args('a', 'b', 8, ['-n', 'PingPong'])
    assert args == ['-n', 'PingPong', '-p', '^(a|b)$', '--repeat', '8', '--exec-order',
                    'random']


@pytest.mark.parametrize('given', [['--repeat', '3'], ['-p', 'x'], ['--exec-order=name']])
def test_options_that_break_the_pairs_are_refused(given):
    with pytest.raises(UserError, match='commcheck upgrade sets it'):
        upgrade.reframe_args('a', 'b', 8, given)


@pytest.mark.parametrize('argv,said', [
    (['--old', 'gnu-mpich4'], '--old and --new: name the two stacks'),
    (['--old', 'x', '--new', 'x'], 'are the same stack'),
    (['--old', 'nope', '--new', 'gnu-mpich4'], '--old nope: no such stack'),
    (['--old', 'gnu-mpich4', '--new', 'gnu-openmpi4', '--', '--repeat', '2'],
     '--repeat: commcheck upgrade sets'),
])
def test_bad_input_is_one_error_line(isolated_env, argv, said):
    done = subprocess.run([commcheck_cmd(), 'upgrade', *argv], env=isolated_env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith('ERROR:') and said in lines[0], lines
