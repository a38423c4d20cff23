#!/usr/bin/env python3
"""The last job of a commcheck CI pipeline, the gate: ``commcheck compare`` on the sessions of
this pipeline's test jobs, against the stored baseline, with the verdicts as JUnit XML and the
report kept. Each job's ReFrame run report names its session (``session_info.uuid``); every job
pushed its session to the shared history store (``commcheck push``, in its after-script), which
compare reads (``COMMCHECK_HISTORY``). Usage:

    python3 config/ci/gate.py --out gate JOB-report.json ... [-- COMPARE_OPTION ...]

Writes OUT/junit.xml (one test case per judged variable), OUT/gate.json (compare's JSON) and
OUT/report/ (``commcheck report`` of these sessions), and exits with compare's exit code: 0
clean, 1 a judged regression, 2 the gate could not run (a bad run report, no baseline, the
store unreachable, a session not in the store: never a verdict on part of the pipeline), 3
nothing decided, 4 internal error. Which of them fail the pipeline is the pipeline's choice
(docs/ci.md): the examples in config/ci fail only on 1.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

from commcheck.errors import EXIT_CODES, EXIT_REGRESSED, EXIT_UNDECIDED, EXIT_USAGE

UUID = re.compile(r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}')


class BadReport(Exception):
    """A run report the gate cannot take a session from: one line naming the file."""


def session_of(path: Path) -> str:
    """The session uuid a ReFrame run report names."""
    try:
        report = json.loads(path.read_text(encoding='utf-8'))
    except FileNotFoundError:
        raise BadReport(f'{path}: no such run report (did the job write one?)') from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise BadReport(f'{path}: not a readable ReFrame run report ({err})') from None
    uuid = report.get('session_info', {}).get('uuid') if isinstance(report, dict) else None
    if not isinstance(uuid, str) or not UUID.fullmatch(uuid):
        raise BadReport(f'{path}: no session uuid in session_info (a ReFrame run report of '
                        f'4.7 or later, with the results database on, names one)')
    return uuid


def commcheck(*args: str) -> int:
    """One ``commcheck`` command of this interpreter's installation; its exit code."""
    return subprocess.run([sys.executable, '-m', 'commcheck.cli', *args]).returncode


def _db_option(args: list[str]) -> list[str]:
    """``--db X`` (or ``--db=X``) among compare's options, for the report."""
    for i, arg in enumerate(args):
        if arg == '--db' and i + 1 < len(args):
            return ['--db', args[i + 1]]
        if arg.startswith('--db='):
            return [arg]
    return []


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    split = argv.index('--') if '--' in argv else len(argv)
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--out', type=Path, default=Path('gate'),
                        help='directory for junit.xml, gate.json and report/ (default: gate)')
    parser.add_argument('reports', nargs='+', type=Path, metavar='REPORT',
                        help="the test jobs' ReFrame run reports")
    args = parser.parse_args(argv[:split])
    try:
        sessions = list(dict.fromkeys(session_of(path) for path in args.reports))
    except BadReport as err:
        print(f'ERROR: gate: {err}', file=sys.stderr)
        return EXIT_USAGE
    print(f'gate: {len(sessions)} session(s) of this pipeline: {" ".join(sessions)}')
    try:
        args.out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        print(f'ERROR: gate: --out {args.out}: {err.strerror}', file=sys.stderr)
        return EXIT_USAGE
    selected = [arg for uuid in sessions for arg in ('--session', uuid)]
    compare_args = argv[split + 1:]
    code = commcheck('compare', *selected, '--json', str(args.out / 'gate.json'),
                     '--junit', str(args.out / 'junit.xml'), *compare_args)
    store = _db_option(compare_args)         # the report reads the history compare read
    if code in (0, EXIT_REGRESSED, EXIT_UNDECIDED) and \
            commcheck('report', *sessions, *store, '--out', str(args.out / 'report')) != 0:
        print('WARNING: gate: the report could not be written (see above); the verdict '
              'stands', file=sys.stderr)
    meaning = dict(EXIT_CODES).get(code, 'unexpected')
    print(f'gate: commcheck compare exited {code}: {meaning}')
    return code


if __name__ == '__main__':
    sys.exit(main())
