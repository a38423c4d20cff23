"""The exit-code contract, driven from the parser itself: every option of every subcommand gets
bad values of every kind its type admits (directory instead of file, file instead of directory,
read-only or missing parent, bad pattern, unknown name, out-of-range and non-numeric numbers,
empty selection), and every setting from the environment bad values; each must give exit 2,
exactly one ``ERROR:`` line naming the option, the variable or the file, no traceback, nothing
on stdout (refused before any work or printing), and no input file changed.

Permission cases run as ``nobody`` (root ignores permissions), on a world readable by nobody.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from commcheck import cli, errors, paths
from commcheck.cli import bench as bench_cli
from commcheck.cli import options
from tests.report.conftest import FIXTURES, raw_report

BIN = Path(sys.executable).parent
COMMCHECK = str(BIN / 'commcheck')
SETPRIV = shutil.which('setpriv')
SESSIONS = ('h1', 'h2', 'h3', 'main')


def _nobody_can_run() -> bool:
    """Root can become nobody, and nobody can reach this venv's commcheck (a checkout below a
    0700 directory, such as mktemp's, cannot be run by nobody: those cases are skipped)."""
    if os.geteuid() != 0 or not SETPRIV:
        return False
    done = subprocess.run([SETPRIV, '--reuid=nobody', '--regid=nogroup', '--clear-groups',
                           COMMCHECK, '--help'], capture_output=True, timeout=120, cwd='/')
    return done.returncode == 0


#: bool: the permission cases can run (see :func:`_nobody_can_run`).
AS_NOBODY = _nobody_can_run()


# -- a world of inputs, readable by nobody -------------------------------------------------------
def _database(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.execute('CREATE TABLE sessions(uuid TEXT PRIMARY KEY, session_start_unix REAL, '
                 'session_end_unix REAL, json_blob TEXT, report_file TEXT)')
    conn.execute('CREATE TABLE testcases(name TEXT, system TEXT, partition TEXT, environ TEXT, '
                 'job_completion_time_unix REAL, session_uuid TEXT, uuid TEXT)')
    for label in SESSIONS:
        report = raw_report(label)
        info = report['session_info']
        conn.execute('INSERT INTO sessions VALUES (?, ?, ?, ?, ?)',
                     (info['uuid'], info['time_start_unix'], info['time_end_unix'],
                      json.dumps(report), ''))
    conn.commit()
    conn.close()


@pytest.fixture(scope='module')
def world():
    root = Path(tempfile.mkdtemp(prefix='commcheck-contract-'))
    root.chmod(0o755)
    (root / 'reports').mkdir()
    _database(root / 'reports' / 'results.db')
    (root / 'refs').mkdir()
    shutil.copy(FIXTURES / 'local.baseline.json', root / 'refs' / 'local.baseline.json')
    (root / 'a-dir').mkdir()
    (root / 'a-file').write_text('x\n')
    (root / 'read-only').mkdir()
    (root / 'unreadable').write_text('secret\n')
    (root / 'unreadable').chmod(0o000)
    (root / 'state').mkdir()
    (root / 'home').mkdir()
    for dirpath, dirnames, filenames in os.walk(root):
        for d in dirnames:
            if d != 'read-only':
                os.chmod(os.path.join(dirpath, d), 0o777)
        for f in filenames:
            if f != 'unreadable':
                os.chmod(os.path.join(dirpath, f), 0o644)
    (root / 'read-only').chmod(0o555)
    yield root
    subprocess.run(['chmod', '-R', 'u+rwX', str(root)], check=False)
    shutil.rmtree(root, ignore_errors=True)


def env_of(world: Path, **extra) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(('COMMCHECK_', 'RFM_', 'OSU_'))}
    env.update(COMMCHECK_STATE=str(world / 'state'), COMMCHECK_REPORTS=str(world / 'reports'),
               RFM_REFERENCE_PREFIX=str(world / 'refs'), COMMCHECK_CACHE=str(world / 'cache'),
               HOME=str(world / 'home'), PATH=f'{BIN}{os.pathsep}{os.environ.get("PATH", "")}')
    env.update(extra)
    return env


def digest(world: Path) -> dict[str, str]:
    out = {}
    for path in sorted(world.rglob('*')):
        if path.is_file() and path.name != 'unreadable' and \
                not {'state', 'home'} & set(path.relative_to(world).parts):
            out[str(path.relative_to(world))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def run(argv: list[str], env: dict, as_nobody: bool = False) -> subprocess.CompletedProcess:
    cmd = [COMMCHECK, *argv]
    if as_nobody:
        cmd = [SETPRIV, '--reuid=nobody', '--regid=nogroup', '--clear-groups', *cmd]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300,
                          cwd=env['HOME'])


def assert_refused(done: subprocess.CompletedProcess, *named: str) -> None:
    said = done.stdout + done.stderr
    assert 'Traceback' not in said, said
    assert done.returncode == errors.EXIT_USAGE, f'exit {done.returncode}: {said}'
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith('ERROR: '), done.stderr
    assert any(word in lines[0] for word in named), (named, lines[0])
    assert done.stdout == '', done.stdout


# -- the parser, walked ---------------------------------------------------------------------------
def subcommands(parser=None, prefix=()) -> list[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    parser = parser or cli.parser()
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                inner = subcommands(sub, prefix + (name,))
                found += inner or [(prefix + (name,), sub)]
    return found


#: Values that name nothing that exists, per option (types cannot know what exists).
UNKNOWN = {'--site': 'no-such-site', '--stack': 'no-such-stack', '--system': 'no-such-system',
           '--cluster': 'no-such-cluster',
           '--environ': 'no-such-env', '--against': 'no-such-env', '--session': 'ffffffff',
           '--baseline-session': 'ffffffff', 'session': 'ffffffff'}

#: Options that need a companion to be used at all.
COMPANIONS = {'--environ': ['--against', 'gnu-mpich4'], '--against': ['--environ', 'gnu-mpich4']}

#: Good values of the positional arguments a subcommand requires, given with a bad option.
REQUIRED = {('mirror',): lambda world: [str(world / 'new-mirror')],
            ('site', 'check'): lambda world: [str(FIXTURES / 'gate.json')]}


def bad_values(action, world: Path) -> list[tuple[str, bool]]:
    """(value, needs a non-root user) for one option, from its type."""
    kind, out = action.type, []
    if kind is options.output_file:
        out += [(str(world / 'a-dir'), False), (str(world / 'a-file' / 'x.json'), False),
                (str(world / 'missing' / 'x.json'), False),
                (str(world / 'read-only' / 'x.json'), True)]
    elif kind is options.output_dir:
        out += [(str(world / 'a-file'), False), (str(world / 'a-file' / 'sub'), False),
                (str(world / 'missing' / 'deeper' / 'sub'), False),
                (str(world / 'read-only' / 'sub'), True), (str(world / 'read-only'), True)]
    elif kind is options.existing_file:
        out += [(str(world / 'a-dir'), False), (str(world / 'missing.db'), False),
                (str(world / 'unreadable'), True)]
    elif kind is options.history_db:        # a file as above, or a store URL: no password
        out += [(str(world / 'a-dir'), False), (str(world / 'missing.db'), False),
                (str(world / 'unreadable'), True),
                ('postgresql://commcheck:not-here@localhost/commcheck', False)]
    elif kind is options.store_url:
        out += [(str(world / 'results.db'), False), ('', False),
                ('postgresql://commcheck:not-here@localhost/commcheck', False)]
    elif kind is options.fraction:
        out += [('0', False), ('1.5', False), ('abc', False), ('nan', False)]
    elif kind is options.positive_number:
        out += [('0', False), ('-1', False), ('abc', False), ('inf', False)]
    elif kind is options.percent:
        out += [('0%', False), ('100%', False), ('1.5', False), ('abc', False), ('nan', False)]
    elif getattr(kind, '__name__', '') == 'kinds':
        out += [('nope', False), ('aa:0', False), ('aa:x', False), ('', False)]
    elif kind is options.duration:
        out += [('0m', False), ('-1m', False), ('10 parsecs', False), ('inf', False)]
    elif kind is options.date:
        out += [('yesterday', False), ('2024-13-40', False)]
    elif kind is options.pattern:
        out += [('(', False), ('[a-', False)]
    elif kind is options.session_id:
        out += [('not-a-uuid!', False)]
    elif kind is options.name:
        out += [('two words', False), ('', False)]
    elif kind is options.nonempty:
        out += [('', False), ('  ', False)]
    elif getattr(kind, '__name__', '') == 'whole number':
        out += [(str(kind.low - 1), False), ('-3', False), ('abc', False), ('1.5', False)]
        if kind.high is not None:
            out.append((str(kind.high + 1), False))
    elif getattr(kind, '__name__', '') == 'list of whole numbers':
        out += [('0', False), ('30,abc', False), ('30,,120', False), ('', False)]
    if action.choices and not isinstance(action, argparse._SubParsersAction):
        out.append(('bogus', False))
    key = action.option_strings[-1] if action.option_strings else action.dest
    if key in UNKNOWN:
        out.append((UNKNOWN[key], False))
    return out


def cases(world: Path):
    for path, parser in subcommands():
        for action in parser._actions:
            if isinstance(action, (argparse._HelpAction, argparse._StoreTrueAction)):
                continue
            if action.dest == 'reframe_args':
                continue
            for value, nobody in bad_values(action, world):
                if action.option_strings:
                    argv = [*path, *REQUIRED.get(path, lambda w: [])(world),
                            action.option_strings[-1], value,
                            *COMPANIONS.get(action.option_strings[-1], [])]
                else:
                    argv = [*path, value]
                yield argv, action, value, nobody


def test_every_option_has_bad_values():
    world = Path('/nonexistent-world')
    missing = []
    for path, parser in subcommands():
        for action in parser._actions:
            if isinstance(action, (argparse._HelpAction, argparse._StoreTrueAction)) or \
                    action.dest == 'reframe_args':
                continue
            if not bad_values(action, world):
                missing.append(f'{" ".join(path)} {action.option_strings or action.dest}')
    assert not missing, f'options without bad values in this test: {missing}'


def _named(action, value: str) -> tuple[str, ...]:
    names = tuple(action.option_strings) or (action.dest, action.metavar or action.dest)
    return (*names, value or "''", str(Path(value).parent) if value else "''")


def test_every_bad_value_is_refused_with_one_line(world):
    env, before = env_of(world), digest(world)
    failures = []
    for argv, action, value, nobody in cases(world):
        if nobody and not AS_NOBODY:
            continue
        done = run(argv, env, as_nobody=nobody)
        try:
            assert_refused(done, *_named(action, value))
        except AssertionError as err:
            failures.append(f'commcheck {" ".join(argv)}: {str(err)[:400]}')
    assert not failures, '\n'.join(failures)
    assert digest(world) == before


def _parse_error(argv: list[str], capsys) -> str:
    with pytest.raises(SystemExit) as stop:
        cli.parser().parse_args(argv)
    assert stop.value.code == errors.EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count('\n') == 1 and err.startswith('ERROR: '), err
    return err


@pytest.mark.parametrize('path', [(), *(path for path, _ in subcommands())], ids=' '.join)
def test_an_unknown_option_is_named_before_any_missing_argument(path, capsys):
    """``archive --no-such-flag`` (``--before`` required) and every other command, with and
    without its required arguments: the unknown option is what the one line names, with the
    command it was given to."""
    required = REQUIRED.get(path, lambda w: [])(Path('/nonexistent-world'))
    for argv in ([*path, '--no-such-flag'], [*path, *required, '--no-such-flag'],
                 [*path, '--no-such-flag=1', *required]):
        err = _parse_error(argv, capsys)
        prog = ' '.join(('commcheck', *path))
        assert err.startswith(f'ERROR: {prog}: unrecognized arguments: --no-such-flag'), err


def test_a_stray_argument_is_named_by_its_command(capsys):
    err = _parse_error(['archive', '--before', '2026-01-01', 'stray'], capsys)
    assert err.startswith('ERROR: commcheck archive: unrecognized arguments: stray'), err
    err = _parse_error(['compare', '--fail-on-machine-change', 'stray'], capsys)
    assert err.startswith('ERROR: commcheck compare: unrecognized arguments: stray'), err
    args = cli.parser().parse_args(['run', '--', '-n', 'PingPong', '--no-such', '-1'])
    assert args.reframe_args == ['-n', 'PingPong', '--no-such', '-1']     # ReFrame's, unread


@pytest.mark.parametrize('argv', [
    ['history', '--since', '2999-01-01'], ['history', '--until', '1990-01-01'],
    ['history', '--since', '2025-01-02', '--until', '2025-01-01'],
    ['baseline', '--since', '2999-01-01'], ['compare', '--session', 'ffffffff'],
    ['report', 'ffffffff'], ['compare', '--baseline-session', 'ffffffff'],
])
def test_an_empty_selection_is_refused(world, argv):
    before = digest(world)
    done = run(argv, env_of(world))
    assert_refused(done, 'no session matches', '--since')
    assert digest(world) == before


@pytest.mark.parametrize('var,value', [
    ('COMMCHECK_BINDING', 'bogus'), ('COMMCHECK_MPI', 'system-please'),
    ('COMMCHECK_BUILD', 'make'), ('COMMCHECK_MAX_JOBS', '0'), ('COMMCHECK_MAX_JOBS', 'many'),
    ('COMMCHECK_OVERSUBSCRIBE', 'yes'), ('COMMCHECK_WHEELS', 'mpich,lam'),
])
@pytest.mark.parametrize('argv', [['site', 'show'], ['run'], ['preflight'], ['history'],
                                  ['bench', '--stack', 'x'], ['setup-mpi']])
def test_a_bad_setting_is_refused_by_every_command(world, var, value, argv):
    done = run(argv, env_of(world, **{var: value}))
    assert_refused(done, var)
    assert value in done.stderr


@pytest.mark.parametrize('argv', [['run'], ['site', 'show'], ['mirror', 'new-mirror']])
def test_an_unknown_site_in_the_environment_is_refused(world, argv):
    done = run(argv, env_of(world, COMMCHECK_SITE='no-such-site'))
    assert_refused(done, 'COMMCHECK_SITE=no-such-site')
    assert not (world / 'home' / 'new-mirror').exists()


@pytest.mark.parametrize('var', ['COMMCHECK_STATE', 'COMMCHECK_REPORTS', 'RFM_REFERENCE_PREFIX'])
@pytest.mark.parametrize('argv', [['run'], ['preflight'], ['report'], ['history'], ['compare'],
                                  ['baseline'], ['site', 'show']])
def test_a_directory_setting_that_is_a_file_is_refused(world, var, argv):
    before = digest(world)
    for bad in (world / 'a-file', world / 'a-file' / 'below'):
        done = run(argv, env_of(world, **{var: str(bad)}))
        assert_refused(done, var)
    assert digest(world) == before


@pytest.mark.skipif(not AS_NOBODY, reason='needs root to become nobody, and nobody to reach the '
                                         'venv')
@pytest.mark.parametrize('argv', [['run'], ['preflight']])
def test_a_reports_directory_nobody_can_write_is_refused(world, argv):
    done = run(argv, env_of(world, COMMCHECK_REPORTS=str(world / 'read-only' / 'reports'),
                            COMMCHECK_STATE=str(world / 'state')), as_nobody=True)
    assert_refused(done, 'read-only')


def test_help_states_the_exit_codes():
    for path, _ in [((), None), *subcommands()]:
        done = subprocess.run([COMMCHECK, *path, '--help'], capture_output=True, text=True)
        assert done.returncode == 0
        text = ' '.join(done.stdout.split())
        for code, what in errors.EXIT_CODES:
            assert f'{code} {" ".join(what.split())}' in text, (path, text[-600:])


def test_an_internal_error_is_exit_4_with_its_traceback_in_a_log(world, monkeypatch, capsys):
    monkeypatch.setattr(paths, 'STATE_DIR', world / 'state')

    def broken(args):
        raise ZeroDivisionError('a bug')
    parser = cli.parser
    monkeypatch.setattr(cli, 'parser', lambda: _with_func(parser(), broken))
    assert cli.main(['history']) == errors.EXIT_INTERNAL
    err = capsys.readouterr().err.strip()
    found = re.fullmatch(r'ERROR: internal error \(ZeroDivisionError: a bug\); traceback in (\S+)',
                         err)
    assert found, err
    assert 'Traceback' in Path(found.group(1)).read_text()
    assert 'raise ZeroDivisionError' in Path(found.group(1)).read_text()


def _with_func(parser, func):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                sub.set_defaults(func=func)
    return parser


def test_the_iters_bound_is_the_kernels_own():
    header = (paths.KERNELS_SRC / 'common' / 'cc_sweep.h').read_text()
    found = re.search(r'cc_parse_int\("--iters", v, (\d+), (\d+)\)', header)
    assert found and int(found.group(2)) == bench_cli.KERNEL_MAX_ITERS
    assert int(found.group(1)) == 1
