"""commcheck: set up, run the suite on a site, gate, report, benchmark.

``commcheck run`` is ``reframe -C config/site.py -c checks -r`` for the site ``--site`` names,
plus a report; anything after ``--`` goes to ReFrame unchanged (``-n PingPong``,
``--repeat 5``, ``--mode seeds``, ``-S iters=2000`` ...).

Every argument is validated before anything is built or run; bad input gets one ``ERROR:``
line and exit code 2. ``compare`` exits 1 when a variable regressed and 3 when it could not
compare anything.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from commcheck import paths

EXIT_USAGE, EXIT_REGRESSED, EXIT_UNDECIDED = 2, 1, 3


class UsageError(Exception):
    """Bad arguments or a missing prerequisite: one line, exit 2."""


# -- argument types: checked by argparse, before any work starts -------------------------------
def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'{text!r} is not a whole number') from None
    if value < 1:
        raise argparse.ArgumentTypeError(f'{value} must be at least 1')
    return value


def fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'{text!r} is not a number') from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f'{value} must be between 0 and 1')
    return value


def positive_number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'{text!r} is not a number') from None
    if not 0 < value < float('inf'):
        raise argparse.ArgumentTypeError(f'{value} must be a positive number')
    return value


def date(text: str) -> float:
    try:
        return datetime.datetime.fromisoformat(text).timestamp()
    except ValueError:
        raise argparse.ArgumentTypeError(f'{text!r} is not a date (YYYY-MM-DD[THH:MM])') from None


def output_dir(text: str) -> Path:
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f'{text} exists and is not a directory')
    return path


def existing_file(text: str) -> Path:
    path = Path(text)
    if not path.is_file():
        raise argparse.ArgumentTypeError(f'{text}: no such file')
    return path


def check_reports_dir() -> None:
    if paths.REPORTS_DIR.exists() and not paths.REPORTS_DIR.is_dir():
        raise UsageError(f'COMMCHECK_REPORTS={paths.REPORTS_DIR} is not a directory')


# -- run ---------------------------------------------------------------------------------------
def reframe_executable() -> str:
    # The reframe installed beside this commcheck (the venv's) first: `.venv/bin/commcheck run`
    # must work without activating the venv.
    beside = Path(sys.executable).parent / 'reframe'
    reframe = str(beside) if beside.exists() else shutil.which('reframe')
    if not reframe:
        raise UsageError('reframe is not on PATH: run `make setup` and use .venv/bin/commcheck')
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


def run_reframe(cmd: list[str], env: dict) -> tuple[int, list[str]]:
    """Run ReFrame in its own process group, echoing its output; SIGINT and SIGTERM sent to
    commcheck alone are forwarded once, and commcheck waits for ReFrame to store the partial
    session before it exits with ReFrame's status."""
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, errors='replace', bufsize=1, start_new_session=True)

    def forward(signum, _frame):
        try:
            proc.send_signal(signum)
        except ProcessLookupError:
            pass

    previous = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM,
                                                       signal.SIGHUP)}
    tail: list[str] = []
    try:
        for line in proc.stdout:
            sys.stdout.write(line)
            sys.stdout.flush()
            tail = (tail + [line.rstrip('\n')])[-200:]
        status = proc.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return status, tail


NOTHING_RAN = re.compile(r'Ran 0/0 test case')


def cmd_run(args) -> int:
    from commcheck import preflight, sitefile
    check_reports_dir()
    site = sitefile.load_named(args.site)   # a bad site file is one line here, not in ReFrame
    from commcheck.experiments import unselected
    from commcheck.rfmconfig import features
    for line in unselected({s.id: features(s) for s in site.stacks}):
        print(f'commcheck: {line}')
    for folder in (paths.RUNS_DIR, paths.PERFLOG_DIR):
        folder.mkdir(parents=True, exist_ok=True)
    for line in preflight.protect(paths.PERFLOG_DIR, paths.RESULTS_DB):
        print(f'commcheck: {line}', file=sys.stderr)
    before = set(paths.RUNS_DIR.glob('run-report-*.json'))
    env = dict(os.environ, COMMCHECK_SITE=args.site)
    status, tail = run_reframe(reframe_command(args.reframe_args), env)
    produced = sorted(set(paths.RUNS_DIR.glob('run-report-*.json')) - before)
    if any(NOTHING_RAN.search(line) for line in tail):
        raise UsageError(f'no check matched the ReFrame arguments {" ".join(args.reframe_args)!r}'
                         f' on site {args.site} (list them: commcheck run -- -l)')
    if not produced:
        said = [line for line in tail if line.startswith('reframe: error:')]
        if said:
            raise UsageError(f'ReFrame refused its arguments: {said[-1].split(":", 2)[-1].strip()}')
        print(f'ERROR: reframe exited with status {status} and wrote no run report',
              file=sys.stderr)
        return status or 1
    if not args.no_report:
        from commcheck.report import entry
        out = entry.report_of_run(produced[-1], paths.REPORTS_DIR, paths.RESULTS_DB)
        if out:
            print(out)
    return status


def cmd_preflight(args) -> int:
    from commcheck import preflight
    moved = preflight.protect(paths.PERFLOG_DIR, paths.RESULTS_DB)
    for line in moved:
        print(f'commcheck: {line}')
    if not moved:
        print('commcheck: perflogs and results database are sound')
    return 0


# -- report ------------------------------------------------------------------------------------
def cmd_report(args) -> int:
    from commcheck.report import entry
    check_reports_dir()
    out = entry.report_of_stored(args.db or paths.RESULTS_DB, args.session,
                                 args.out or paths.REPORTS_DIR, paths.REPORTS_DIR)
    print(out)
    return 0


# -- site --------------------------------------------------------------------------------------
def cmd_site(args) -> int:
    from commcheck import sitefile
    if args.action == 'check':
        site = sitefile.load(args.file)
        print(f'{args.file}: site {site.name}: {len(site.partitions)} partition(s), '
              f'{len(site.stacks)} stack(s): {", ".join(s.id for s in site.stacks)}')
        return 0
    site = sitefile.load_named(args.site)
    if args.reframe:
        from commcheck.rfmconfig import reframe_configuration
        print(json.dumps(reframe_configuration(site), indent=2))
    else:
        print(sitefile.dump(site), end='')
    return 0


def cmd_mirror(args) -> int:
    from commcheck import mirror
    return mirror.main(args)


def cmd_setup_mpi(args) -> int:
    from commcheck import wheels
    return wheels.ensure_mpi()


def cmd_bench(args) -> int:
    if args.what == 'gate':
        from commcheck import bench_gate
        return bench_gate.main(args)
    from commcheck import bench
    return bench.main(args)


# -- the gate ----------------------------------------------------------------------------------
def _sessions(args, warn):
    from commcheck import history
    return history.read_db(args.db or paths.RESULTS_DB, warn)


def cmd_baseline(args) -> int:
    from commcheck import baseline, history
    sessions = history.select(_sessions(args, history.warn_stderr), uuids=args.session or (),
                              last=args.last, since=args.since, until=args.until)
    if not sessions:
        raise UsageError('no stored session matches the selection')
    systems = sorted({s.system for sess in sessions for s in sess.samples})
    if args.system:
        systems = [args.system]
    if len(systems) != 1:
        raise UsageError(f'the sessions measured systems {systems}: choose one with --system')
    given = {'min_samples': args.min_samples, 'floor': args.floor}
    policy = baseline.Policy(all_variables=args.all,
                             **{k: v for k, v in given.items() if v is not None})
    variables = baseline.compute(sessions, systems[0], policy, history.warn_stderr)
    ref_dir = Path(args.refs or os.environ.get('RFM_REFERENCE_PREFIX') or paths.REFERENCES_DIR)
    written = baseline.write(ref_dir, systems[0], sessions, variables, policy)
    print(f'commcheck: baselined {len(variables)} variable(s) of {systems[0]} from '
          f'{len(sessions)} session(s)')
    print(written['diff'] or f'commcheck: {written["references"]} unchanged')
    print(f'commcheck: wrote {written["references"]} and {written["baseline"]} '
          f'(previous versions kept as .prev)')
    return 0


def cmd_compare(args) -> int:
    from commcheck import gate_cli
    return gate_cli.compare(args)


def cmd_history(args) -> int:
    from commcheck import gate_cli
    return gate_cli.history_cmd(args)


# -- the parser --------------------------------------------------------------------------------
def _selection(p, what):
    p.add_argument('--db', type=existing_file, help='ReFrame results database '
                                                    '(default: reports/results.db)')
    p.add_argument('--session', action='append', metavar='UUID',
                   help=f'{what} session (uuid or prefix; repeatable)')
    p.add_argument('--last', type=positive_int, metavar='N', help=f'the last N sessions {what}')
    p.add_argument('--since', type=date, help='sessions started on or after this date')
    p.add_argument('--until', type=date, help='sessions started on or before this date')


class Parser(argparse.ArgumentParser):
    """Bad arguments: one ERROR line (with the command and the option), exit 2."""

    def error(self, message):
        self.exit(EXIT_USAGE, f'ERROR: {self.prog}: {message} (see {self.prog} --help)\n')


def parser() -> argparse.ArgumentParser:
    top = Parser(prog='commcheck', description=__doc__.splitlines()[0])
    sub = top.add_subparsers(dest='command', required=True, parser_class=Parser)

    run = sub.add_parser('run', help='run the checks on a site and write a report')
    run.add_argument('--site', default=os.environ.get('COMMCHECK_SITE') or 'local',
                     help='local, a name in config/sites/, or a site file')
    run.add_argument('--no-report', action='store_true', help='only run ReFrame')
    run.add_argument('reframe_args', nargs='*', help='passed to reframe (after --)')
    run.set_defaults(func=cmd_run)

    pre = sub.add_parser('preflight', help='set aside damaged perflogs and results databases')
    pre.set_defaults(func=cmd_preflight)

    rep = sub.add_parser('report', help='write the HTML report of stored sessions (its path '
                                         'is the last line printed)')
    rep.add_argument('session', nargs='*', metavar='SESSION',
                     help='session uuid or prefix (default: the newest stored session)')
    rep.add_argument('--db', type=existing_file, help='ReFrame results database '
                                                      '(default: reports/results.db)')
    rep.add_argument('--out', type=output_dir, help='directory to write the report under '
                                                    '(default: reports/)')
    rep.set_defaults(func=cmd_report)

    site = sub.add_parser('site', help='show a site in site-file syntax, or check a site file')
    site_sub = site.add_subparsers(dest='action', required=True, parser_class=Parser)
    show = site_sub.add_parser('show', help='print a site as a site file')
    show.add_argument('--site', default=os.environ.get('COMMCHECK_SITE') or 'local')
    show.add_argument('--reframe', action='store_true',
                      help='print the generated ReFrame configuration instead')
    check = site_sub.add_parser('check', help='validate a site file')
    check.add_argument('file', type=existing_file)
    site.set_defaults(func=cmd_site)

    setup = sub.add_parser('setup-mpi', help='install the PyPI MPI wheels (COMMCHECK_WHEELS)')
    setup.set_defaults(func=cmd_setup_mpi)

    mirror = sub.add_parser('mirror', help='make the Spack source mirror an air-gapped site '
                                           'needs (OSU and what it needs)')
    mirror.add_argument('dir', type=output_dir, help='mirror directory (created, or added to)')
    mirror.add_argument('--site', default=os.environ.get('COMMCHECK_SITE') or 'local')
    mirror.set_defaults(func=cmd_mirror)

    bench = sub.add_parser('bench', help='benchmarks: our ping-pong beside NetPIPE/OSU, or the '
                                         "gate's false-positive rate and power")
    bench.add_argument('what', nargs='?', choices=('pingpong', 'gate'), default='pingpong')
    bench.add_argument('--iters', type=positive_int, default=20000,
                       help='round trips per launch (pingpong)')
    bench.add_argument('--launches', type=positive_int, default=12,
                       help='launches per stack in each session (gate)')
    bench.add_argument('--sessions', type=positive_int, default=24,
                       help='clean sessions, the first 3 the first baseline (gate)')
    bench.add_argument('--slowed', type=int, default=4, choices=range(0, 100), metavar='N',
                       help='sessions with both cores shared with busy loops (gate)')
    bench.add_argument('--degraded', type=int, default=4, choices=range(0, 100), metavar='N',
                       help='sessions with Open MPI off shared memory (gate)')
    bench.add_argument('--ucx', action='store_true',
                       help="degraded sessions also put MPICH's UCX on TCP (gate)")
    bench.add_argument('--gap', type=positive_number, default=180.0,
                       help='seconds between sessions (gate)')
    bench.add_argument('--json', type=Path, help='where the launches go (gate; default '
                                                 'reports/bench/gate-<time>.json)')
    bench.add_argument('--stack', help='one stack (default: the Debian MPICH and Open MPI)')
    bench.set_defaults(func=cmd_bench)

    base = sub.add_parser('baseline', help='write references from stored launches')
    _selection(base, 'baseline from this')
    base.add_argument('--system', help='the system to baseline (default: the only one)')
    # Defaults: commcheck.baseline.Policy (5, 1.0).
    base.add_argument('--min-samples', type=positive_int,
                      help='launches a variable needs (default 5)')
    base.add_argument('--floor', type=positive_number,
                      help="narrowest bound of ReFrame's one-launch reference, a slowdown "
                           'factor minus 1 (default 1.0: twice as slow; gross breakage only)')
    base.add_argument('--all', action='store_true', help='every variable, not only key ones')
    base.add_argument('--refs', type=output_dir, help='reference directory (default: '
                                                      'RFM_REFERENCE_PREFIX or config/references)')
    base.set_defaults(func=cmd_baseline)

    comp = sub.add_parser('compare', help='the gate: flag regressions against the baseline')
    comp.add_argument('--db', type=existing_file)
    comp.add_argument('--session', action='append', metavar='UUID',
                      help='session(s) to judge (default: the newest)')
    comp.add_argument('--baseline', type=existing_file,
                      help='baseline file (default: <references>/<system>.baseline.json)')
    comp.add_argument('--baseline-session', action='append', metavar='UUID',
                      help='take the baseline from these stored sessions instead')
    comp.add_argument('--environ', metavar='OLD', help='compare two environments of the '
                                                       'session(s): OLD ...')
    comp.add_argument('--against', metavar='NEW', help='... against NEW')
    # Defaults: commcheck.gate.Settings (derived from the data, 0.05, 3).
    comp.add_argument('--min-effect', type=fraction,
                      help='smallest change that can flag (default: derived from the '
                           "baseline's spread, at least 5 %%)")
    comp.add_argument('--alpha', type=fraction,
                      help='family-wise false-alarm rate over the variables (default 0.05)')
    comp.add_argument('--min-samples', type=positive_int,
                      help='launches a side below which nothing is computed (default 3)')
    comp.add_argument('--fail-on-machine-change', action='store_true',
                      help='exit 1 when the hardware floor moved too (a site that wants to '
                           'catch a bad node)')
    comp.add_argument('--all', action='store_true', help='every variable, not only key ones')
    comp.add_argument('--json', type=Path, help='write the comparison here (default: '
                                                'reports/gate/<session>.json)')
    comp.set_defaults(func=cmd_compare)

    hist = sub.add_parser('history', help='change points over stored sessions')
    _selection(hist, 'history over this')
    hist.add_argument('--match', default='', help='regex on "environ test variable"')
    hist.add_argument('--all', action='store_true', help='every variable, not only key ones')
    hist.add_argument('--json', type=Path, help='write the change points here')
    hist.set_defaults(func=cmd_history)
    return top


def main(argv: list[str] | None = None) -> int:
    from commcheck.baseline import BaselineError
    from commcheck.history import HistoryError
    from commcheck.references import ReferenceFileError
    from commcheck.site import SiteError
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except (UsageError, SiteError, HistoryError, BaselineError, ReferenceFileError) as err:
        print(f'ERROR: {err}', file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == '__main__':
    sys.exit(main())
