"""The ``commcheck`` command: set up, run the suite on a site, report, benchmark.

``commcheck run`` is ``reframe -C config/<site>.py -c checks -r`` plus a report; anything after
``--`` goes to ReFrame unchanged (``-n PingPong``, ``--mode paper``, ``-S iters=2000`` ...).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

from commcheck import paths


class UsageError(Exception):
    """Bad arguments or a missing prerequisite: one line, exit 2."""


def site_config(site: str) -> str:
    config = paths.CONFIG_DIR / f'{site}.py'
    if not config.exists():
        known = sorted(p.stem for p in paths.CONFIG_DIR.glob('*.py') if not p.stem.startswith('_'))
        raise UsageError(f'no site configuration {config.name} in config/ (sites: {known})')
    return str(config)


def reframe_command(site: str, extra: list[str]) -> list[str]:
    # The reframe installed beside this commcheck (the venv's) first: `.venv/bin/commcheck run`
    # must work without activating the venv.
    beside = Path(sys.executable).parent / 'reframe'
    reframe = str(beside) if beside.exists() else shutil.which('reframe')
    if not reframe:
        raise UsageError('reframe is not on PATH: run `make setup` and use .venv/bin/commcheck')
    return [reframe, '-C', site_config(site), '-c', str(paths.CHECKS_DIR), '-r', *extra]


def cmd_run(args) -> int:
    for d in (paths.RUNS_DIR, paths.PERFLOG_DIR):
        d.mkdir(parents=True, exist_ok=True)
    before = set(paths.RUNS_DIR.glob('run-report-*.json'))
    status = subprocess.call(reframe_command(args.site, args.reframe_args))
    produced = sorted(set(paths.RUNS_DIR.glob('run-report-*.json')) - before)
    if not produced:
        print('ERROR: reframe wrote no run report; nothing to report', file=sys.stderr)
        return status or 1
    if not args.no_report:
        from commcheck import report
        out = report.write_report(produced[-1], paths.REPORTS_DIR)
        print(f'commcheck: report written to {out}')
    return status


def cmd_report(args) -> int:
    from commcheck import report
    run_report = args.run_report or report.latest_run_report(paths.RUNS_DIR)
    out = report.write_report(run_report, args.out or paths.REPORTS_DIR)
    print(f'commcheck: report written to {out}')
    return 0


def cmd_site(args) -> int:
    import json
    from commcheck.discover import local_site
    if args.site != 'local':
        raise UsageError('only the discovered local site can be shown; read config/<site>.py')
    print(json.dumps(local_site().reframe_configuration(), indent=2))
    return 0


def cmd_setup_mpi(args) -> int:
    from commcheck import wheels
    return wheels.ensure_mpi()


def cmd_bench(args) -> int:
    from commcheck import bench
    return bench.main(args)


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog='commcheck', description=__doc__.splitlines()[0])
    sub = top.add_subparsers(dest='command', required=True)

    run = sub.add_parser('run', help='run the checks on a site and write a report')
    run.add_argument('--site', default='local', help='config/<site>.py (default: local)')
    run.add_argument('--no-report', action='store_true', help='only run ReFrame')
    run.add_argument('reframe_args', nargs='*', help='passed to reframe (after --)')
    run.set_defaults(func=cmd_run)

    rep = sub.add_parser('report', help='write the report of a ReFrame run report')
    rep.add_argument('--run-report', help='a ReFrame run report (default: the newest)')
    rep.add_argument('--out', help='output directory (default: reports/)')
    rep.set_defaults(func=cmd_report)

    site = sub.add_parser('site', help='print the ReFrame configuration of a site')
    site.add_argument('--site', default='local')
    site.set_defaults(func=cmd_site)

    setup = sub.add_parser('setup-mpi', help='install the PyPI MPI wheels if no MPI is found')
    setup.set_defaults(func=cmd_setup_mpi)

    bench = sub.add_parser('bench', help='our ping-pong next to NetPIPE/OSU on each stack')
    bench.add_argument('--iters', type=int, default=20000)
    bench.set_defaults(func=cmd_bench)
    return top


def main(argv: list[str] | None = None) -> int:
    from commcheck.report import ReportError
    from commcheck.results import RunReportError
    from commcheck.site import SiteError
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except (UsageError, ReportError, RunReportError, SiteError) as err:
        print(f'ERROR: {err}', file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == '__main__':
    sys.exit(main())
