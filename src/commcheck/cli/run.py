"""``commcheck run``: the suite on a site through ReFrame, then the report of the session.

Phases: setup (site, preflight, the run lock, what a killed run left), ReFrame (build and run
jobs; signals forwarded, see :mod:`commcheck.cli.guard`), report. ReFrame runs in a session of
its own with default signal dispositions and dies with commcheck (``PR_SET_PDEATHSIG``: a
SIGKILL to commcheck sends it SIGTERM, so it cancels its jobs); what still survives is ended by
the next run (:mod:`commcheck.cli.runstate`).
"""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from commcheck import paths
from commcheck.cli import guard, options, push, runstate
from commcheck.errors import EXIT_INTERNAL, EXIT_OK, EXIT_REGRESSED, EXIT_USAGE, UserError

NOTHING_RAN = re.compile(r'Ran 0/0 test case')
REFUSED = re.compile(r'(?:reframe: error:|command line error:)\s*(.*)')
NOT_STORED = re.compile(r'failed to store results in the database:?\s*(.*)')
ANSI = re.compile(r'\x1b\[[0-9;]*m')
#: ReFrame's line for a failed build fixture: its environment (the stack) in group 1.
BUILD_FAILED = re.compile(r'^\[\s*FAIL\s*\].*?\bKernelsBuild\b.*?\+(\S+)')
PR_SET_PDEATHSIG = 1


def add_parsers(sub) -> None:
    run = sub.add_parser('run', help='run the checks on a site and write a report')
    options.add_site(run)
    run.add_argument('--no-report', action='store_true', help='only run ReFrame')
    run.add_argument('reframe_args', nargs='*', help='passed to reframe (after --)')
    run.set_defaults(func=cmd_run)


def reframe_executable() -> str:
    # The reframe installed beside this commcheck (the venv's) first: `.venv/bin/commcheck run`
    # must work without activating the venv.
    beside = Path(sys.executable).parent / 'reframe'
    reframe = str(beside) if beside.exists() else shutil.which('reframe')
    if not reframe:
        raise UserError('reframe is not on PATH: run `make setup` and use .venv/bin/commcheck')
    return reframe


def reframe_command(extra: list[str]) -> list[str]:
    return [reframe_executable(), '-C', str(paths.CONFIG_DIR / 'site.py'),
            '-c', str(paths.CHECKS_DIR), '-r', *interleaved(extra)]


def interleaved(extra: list[str]) -> list[str]:
    """With ``--repeat N``, ``--exec-order random`` unless an order is given: ReFrame runs the
    N repeats of one test back to back otherwise, so a change of the machine's regime in the
    middle of a session would hit one test's launches and not another's; in random order the
    launches of all tests (and stacks) compared together are interleaved in time."""
    given = ' '.join(extra)
    if '--repeat' not in given or '--exec-order' in given:
        return extra
    return [*extra, '--exec-order', 'random']


def _child_setup(parent: int, libc) -> None:
    """ReFrame's start: default signals, and SIGTERM when commcheck dies."""
    guard.child_signals_default()
    if libc is not None:
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != parent:          # commcheck died before the prctl
        os.kill(os.getpid(), signal.SIGTERM)


def _libc():
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def run_reframe(cmd: list[str], env: dict, lock: runstate.RunLock) -> tuple[int, list[str], list]:
    """ReFrame in its own session, its output echoed; (status, last lines, signals forwarded)."""
    parent, libc = os.getpid(), _libc()
    proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, errors='replace', bufsize=1,
                            start_new_session=True,
                            preexec_fn=lambda: _child_setup(parent, libc))
    lock.update(reframe_pid=proc.pid)
    tail: list[str] = []
    with guard.forward_to(proc) as received:
        try:
            for line in proc.stdout:
                sys.stdout.write(line)
                plain = ANSI.sub('', line.rstrip('\n'))
                said = progress(plain)
                if said:
                    sys.stdout.write(said + '\n')
                sys.stdout.flush()
                tail = (tail + [plain])[-200:]
        except BrokenPipeError:
            pass        # commcheck's reader went away; ReFrame still finishes and stores
        finally:
            status = proc.wait()
    return status, tail, list(received)


def progress(line: str) -> str | None:
    """The progress line for one of ReFrame's: a stack's failed build (its building and
    built lines are the fixture's own, commcheck.rfm.build)."""
    failed = BUILD_FAILED.search(line)
    if failed:
        return (f'commcheck: build {failed.group(1)}: failed (ReFrame\'s failure report, at '
                f'the end, says why)')
    return None


def _setup(args):
    from commcheck.results import preflight
    site = options.load_site(args)      # a bad site file is one line here, not in ReFrame
    found = preflight.problems(paths.REPORTS_DIR, paths.STATE_DIR)
    if found:
        raise UserError(found[0] + (f' (and {len(found) - 1} more: commcheck preflight)'
                                    if len(found) > 1 else ''))
    from commcheck.results import pgstore
    # the store it pushes to, resolved as every command resolves it (a password: refused now)
    args.history = pgstore.store_address(None, lambda: site.history)
    lock = runstate.RunLock(paths.STATE_DIR)
    lock.acquire(sys.argv)
    return site, lock


def _prepare(site, lock: runstate.RunLock) -> None:
    from commcheck.experiments import unselected
    from commcheck.results import preflight
    from commcheck.site.rfmconfig import features
    for line in unselected({s.id: features(s) for s in site.stacks}):
        print(f'commcheck: {line}')
    said = runstate.clean_after_dead_run(lock)
    if said:
        print(f'commcheck: {said}', file=sys.stderr)
    for folder in (paths.RUNS_DIR, paths.PERFLOG_DIR):
        folder.mkdir(parents=True, exist_ok=True)
    for line in preflight.protect(paths.PERFLOG_DIR, paths.RESULTS_DB):
        print(f'commcheck: {line}', file=sys.stderr)


def _judge(args, status, tail, produced) -> int | None:
    """An exit code from what ReFrame said, or None to go on to the report."""
    if any(NOTHING_RAN.search(line) for line in tail):
        raise UserError(f'no check matched the ReFrame arguments {" ".join(args.reframe_args)!r}'
                        f' on site {args.site} (list them: commcheck run -- -l)')
    if not produced:
        said = [m.group(1).strip() for m in map(REFUSED.search, tail) if m]
        if said:
            raise UserError(f'ReFrame refused its arguments: {said[-1]}')
        errors = [line.strip() for line in tail if 'ERROR' in line]
        print(f'ERROR: reframe exited with status {status} and wrote no run report'
              + (f': {errors[-1]}' if errors else ''), file=sys.stderr)
        return exit_code(status) if status < 0 else EXIT_USAGE
    return None


def exit_code(status: int) -> int:
    """commcheck's code for ReFrame's status: 0 and 1 (a failed check) as they are, killed by
    signal N as 128 + N, anything else an error of ReFrame's (never 1)."""
    if status < 0:
        return 128 - status
    return status if status in (EXIT_OK, EXIT_REGRESSED) else EXIT_INTERNAL


def stored():
    """The results database, opened once for the run's report and its push; None when there
    is none (the report then says it has no history, and nothing is pushed)."""
    from commcheck.results import source
    return source.open_history(paths.RESULTS_DB) if paths.RESULTS_DB.exists() else None


def cmd_run(args) -> int:
    site, lock = _setup(args)
    try:
        _prepare(site, lock)
        before = set(paths.RUNS_DIR.glob('run-report-*.json'))
        env = dict(os.environ, COMMCHECK_SITE=args.site, **{runstate.RUN_ID: lock.run_id})
        status, tail, received = run_reframe(reframe_command(args.reframe_args), env, lock)
        ended = runstate.end_processes(lock.run_id)
        if ended:
            print(f'commcheck: ended what ReFrame left running: {", ".join(ended)}',
                  file=sys.stderr)
    finally:
        lock.release()
    produced = sorted(set(paths.RUNS_DIR.glob('run-report-*.json')) - before)
    code = _judge(args, status, tail, produced)
    if code is not None:
        return 128 + received[0] if received else code
    lost = [m.group(1).strip() for m in map(NOT_STORED.search, tail) if m]
    db = stored()
    if not args.no_report and not received:
        from commcheck.report import entry
        out = entry.report_of_run(produced[-1], paths.REPORTS_DIR,
                                  paths.RESULTS_DB if db is None else db)
        if out:
            print(out)
    if args.history and not lost and not received:
        push.after_run(args.history, push.site_name(args), db)
    if lost:
        print(f'ERROR: ReFrame could not store the session in {paths.RESULTS_DB}: {lost[-1]} '
              f'(the session is in {produced[-1]}; commcheck preflight)', file=sys.stderr)
        return EXIT_USAGE
    if received:
        print(f'commcheck: stopped by {signal.Signals(received[0]).name}; ReFrame stored the '
              f'partial session', file=sys.stderr)
        return 128 + received[0]
    return exit_code(status)
