"""The exit codes every ``commcheck`` command shares, and the one kind of error a user sees.

Every reader and validator raises a :class:`UserError` subclass (a bad site file, an unreadable
history, a reference file ReFrame would trip over, bad arguments), with a message that names the
file or option, the value and what would be accepted; the ``commcheck`` command prints it as one
``ERROR:`` line and exits :data:`EXIT_USAGE`. Anything else that escapes a command is a bug:
:data:`EXIT_INTERNAL`, never :data:`EXIT_REGRESSED`, so a CI job never reads a crash as a
regression.
"""

EXIT_OK = 0            #: clean: nothing regressed, every check passed
EXIT_REGRESSED = 1     #: a judged regression (``compare``), or a failed check (``run``)
EXIT_USAGE = 2         #: bad input or unusable files: one ERROR line names the option or file
EXIT_UNDECIDED = 3     #: could not decide (too few launches, nothing comparable); push: the
#: history store cannot be reached now (the sessions wait in the spool: retry later)
EXIT_INTERNAL = 4      #: internal error: one ERROR line, the traceback in a log file

#: The contract, as ``--help`` and the README state it.
EXIT_CODES = ((EXIT_OK, 'clean'),
              (EXIT_REGRESSED, 'a judged regression (compare), a failed check (run)'),
              (EXIT_USAGE, 'bad input or unusable files (one ERROR line names it)'),
              (EXIT_UNDECIDED, 'could not decide (too few launches, nothing comparable; '
                               'push: the history store cannot be reached now)'),
              (EXIT_INTERNAL, 'internal error (one ERROR line; the traceback in a log file)'))


#: Signals received before the command's guard was in place (see commcheck.cli).
PENDING_SIGNALS: list[int] = []


class UserError(Exception):
    """Bad input: the message is one line naming the file (or option) and the problem."""


class Interrupted(BaseException):
    """A signal (SIGINT, SIGTERM, SIGHUP) stopped commcheck; exit 128 + the signal number."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum
