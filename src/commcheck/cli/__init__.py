"""commcheck: set up, run the suite on a site, gate, report, benchmark.

``commcheck run`` is ``reframe -C config/site.py -c checks -r`` for the site ``--site`` names,
plus a report; anything after ``--`` goes to ReFrame unchanged (``-n PingPong``,
``--repeat 5``, ``--mode seeds``, ``-S iters=2000`` ...).

One module per command (``cli/<command>.py``: its parser and its entry point); the options
several commands share and every validator are in :mod:`commcheck.cli.options`. Every argument
and setting is validated before anything is built, run or printed. Every command exits with the
codes of :mod:`commcheck.errors`: 0 clean, 1 a judged regression or a failed check, 2 bad input
or unusable files, 3 could not decide, 4 an internal error (its traceback in a log file).
"""

from __future__ import annotations

import os
import signal
import sys

from commcheck import errors

if os.path.basename(sys.argv[0]) == 'commcheck':
    # The command (not an import): a signal that arrives while the rest loads is kept, and acted
    # on as soon as the guard is in place, even if the parent left it ignored.
    for _sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(_sig, lambda signum, _frame: errors.PENDING_SIGNALS.append(signum))

from commcheck.cli import (  # noqa: E402
    archive,
    baseline,
    bench,
    compare,
    guard,
    history,
    options,
    preflight,
    push,
    report,
    run,
    sessions,
    site,
    tools,
    upgrade,
)

COMMANDS = (run, preflight, report, site, tools, bench, baseline, compare, upgrade, history,
            archive, push, sessions)


def parser() -> options.Parser:
    top = options.Parser(prog='commcheck', description=__doc__.splitlines()[0])
    sub = top.add_subparsers(dest='command', required=True, parser_class=options.Parser)
    for module in COMMANDS:
        module.add_parsers(sub)
    return top


def main(argv: list[str] | None = None) -> int:
    return guard.guarded(lambda: _dispatch(argv))


def _dispatch(argv):
    args = parser().parse_args(argv)
    options.check_environment()
    options.check_range(args)
    return args.func(args)


if __name__ == '__main__':
    sys.exit(main())
