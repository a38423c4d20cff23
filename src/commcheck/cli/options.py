"""Every value a user gives commcheck, validated once, before any work starts.

Options are checked by argparse types (a bad value: one ``ERROR:`` line naming the option, the
value and what would be accepted; exit 2); options several commands share are declared here once;
settings from the environment are checked by :func:`check_environment` before a command runs.
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import typing
from pathlib import Path

from commcheck import dburl, paths
from commcheck.errors import EXIT_CODES, EXIT_USAGE, UserError

#: The epilog of every ``--help``: the exit codes every command shares.
EPILOG = 'exit codes: ' + '; '.join(f'{code} {what}' for code, what in EXIT_CODES)


NEGATIVE = re.compile(r'^-\d+$|^-\d*\.\d+$')


class Parser(argparse.ArgumentParser):
    """Bad arguments: one ERROR line (with the command and the option), exit 2; every
    ``--help`` ends with the exit codes. An unknown option or argument is named by the command
    it was given to, before anything else is said about that command's arguments (argparse
    would first ask for a required one: "required: --before" for ``archive --no-such-flag``)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault('epilog', EPILOG)
        super().__init__(*args, **kwargs)

    def error(self, message):
        self.exit(EXIT_USAGE, f'ERROR: {self.prog}: {message} (see {self.prog} --help)\n')

    def parse_known_args(self, args=None, namespace=None):
        import sys
        args = list(sys.argv[1:] if args is None else args)
        unknown = self._unknown_option(args)
        if unknown:
            self.error(f'unrecognized arguments: {unknown}')
        parsed, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(f'unrecognized arguments: {" ".join(extras)}')
        return parsed, extras

    def _unknown_option(self, args: list[str]) -> str | None:
        """The first option of ``args`` this parser does not know, up to ``--`` or the
        subcommand (whose own parser looks at the rest)."""
        commands = {name for action in self._actions
                    if isinstance(action, argparse._SubParsersAction) for name in action.choices}
        known = self._option_string_actions
        for arg in args:
            if arg == '--' or arg in commands:
                return None
            if not arg.startswith('-') or arg == '-' or NEGATIVE.match(arg):
                continue
            name = arg.split('=', 1)[0]
            if name in known or arg[:2] in known or (
                    name.startswith('--') and any(o.startswith(name) for o in known)):
                continue
            return arg
        return None


# -- values ------------------------------------------------------------------------------------
def whole(low: int = 1, high: int | None = None):
    """A whole number in [low, high]."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f'{text!r} is not a whole number') from None
        if value < low:
            raise argparse.ArgumentTypeError(f'{value} must be at least {low}')
        if high is not None and value > high:
            raise argparse.ArgumentTypeError(f'{value} is out of range: at most {high}')
        return value
    parse.__name__ = 'whole number'
    parse.low, parse.high = low, high
    return parse


positive_int = whole(1)


def whole_list(low: int = 1, high: int | None = None):
    """``30,120,365``: whole numbers in [low, high]."""
    one = whole(low, high)

    def parse(text: str) -> list[int]:
        return [one(part) for part in text.split(',')]
    parse.__name__ = 'list of whole numbers'
    return parse


def _number(text: str, low: float, high: float, must: str) -> float:
    """``text`` as a number in the open interval (low, high), else why not."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'{text!r} is not a number') from None
    if not low < value < high:
        raise argparse.ArgumentTypeError(f'{value} must be {must}')
    return value


def fraction(text: str) -> float:
    return _number(text, 0, 1, 'between 0 and 1')


def positive_number(text: str) -> float:
    return _number(text, 0, float('inf'), 'a positive number')


def percent(text: str) -> float:
    """A share as ``5%`` or ``0.05`` (between 0 and 100 %, exclusive): the fraction."""
    if text.strip().endswith('%'):
        return _number(text.strip()[:-1], 0, 100, 'between 0 and 100 %') / 100
    return _number(text, 0, 1, 'between 0 and 1 (or a percentage: 5%)')


percent.__name__ = 'percentage'
#: The units of :func:`duration`, in seconds.
DURATION_UNITS = {'s': 1.0, 'm': 60.0, 'min': 60.0, 'h': 3600.0}


def duration(text: str) -> float:
    """A duration as ``10m``, ``600s``, ``1.5h`` (a bare number: minutes): seconds."""
    found = re.fullmatch(r'\s*([0-9.]+)\s*(s|m|min|h)?\s*', text)
    if not found:
        raise argparse.ArgumentTypeError(f'{text!r} is not a duration (10m, 600s, 1.5h)')
    return _number(found[1], 0, float('inf'), 'a positive duration') * \
        DURATION_UNITS[found[2] or 'm']


duration.__name__ = 'duration'


def date(text: str) -> float:
    try:
        return datetime.datetime.fromisoformat(text).timestamp()
    except ValueError:
        raise argparse.ArgumentTypeError(f'{text!r} is not a date (YYYY-MM-DD[THH:MM])') from None


def pattern(text: str) -> re.Pattern:
    try:
        return re.compile(text)
    except re.error as err:
        raise argparse.ArgumentTypeError(f'{text!r} is not a regular expression ({err})') \
            from None


def name(text: str) -> str:
    """A name (stack, system, environment, session): not empty, no whitespace."""
    if not text.strip() or any(c.isspace() for c in text):
        raise argparse.ArgumentTypeError(f'{text!r} is not a name (empty or with spaces)')
    return text


def nonempty(text: str) -> str:
    """A name or a path: not empty."""
    if not text.strip():
        raise argparse.ArgumentTypeError('an empty value')
    return text


def session_id(text: str) -> str:
    """A session uuid or a prefix of one: hexadecimal digits and dashes."""
    if not re.fullmatch(r'[0-9a-fA-F][0-9a-fA-F-]*', text):
        raise argparse.ArgumentTypeError(f'{text!r} is not a session uuid or prefix '
                                         f'(hexadecimal digits and dashes)')
    return text.lower()


# -- paths -------------------------------------------------------------------------------------
def _nearest(path: Path) -> Path:
    """The path itself or its nearest ancestor that exists (as a link or otherwise)."""
    probe = path
    while not os.path.lexists(probe) and probe != probe.parent:
        probe = probe.parent
    return probe


def path_problem(path: Path, kind: str, writable: bool = True, create: bool = True,
                 parents: bool = False) -> str | None:
    """What makes ``path`` unusable as a ``kind`` ('file' or 'directory') to write, or None.
    ``create``: a missing path is made (its parent must be a writable directory; with
    ``parents``, missing parents are made too, under the nearest directory that exists)."""
    if path.exists():
        if kind == 'directory' and not path.is_dir():
            return f'{path} is not a directory'
        if kind == 'file' and path.is_dir():
            return f'{path} is a directory, not a file'
        if kind == 'file' and not path.is_file():
            return f'{path} is not a regular file'
        needs = os.W_OK | (os.X_OK if kind == 'directory' else 0)
        if writable and not os.access(path, needs):
            return f'{path} is not writable'
        return None
    if not create:
        return f'{path} does not exist'
    parent = path.parent
    if not parent.exists():
        found = _nearest(parent)
        if found.exists() and not found.is_dir():
            return f'{path}: {found} is not a directory'
        if not parents:
            return f'{path}: its directory {parent} does not exist'
        parent = found
    if not parent.is_dir():
        return f'{path}: {parent} is not a directory'
    if writable and not os.access(parent, os.W_OK | os.X_OK):
        return f'{path}: its directory {parent} is not writable'
    return None


def _path_type(kind: str, writable: bool = True, create: bool = True):
    def parse(text: str) -> Path:
        if not text:
            raise argparse.ArgumentTypeError('an empty path')
        problem = path_problem(Path(text), kind, writable, create)
        if problem:
            raise argparse.ArgumentTypeError(problem)
        return Path(text)
    parse.__name__ = kind
    return parse


#: A file to write (created, or replaced): its directory must exist and be writable.
output_file = _path_type('file')
#: A directory to write under (created if its parent exists): writable.
output_dir = _path_type('directory')


def existing_file(text: str) -> Path:
    """A file to read: exists, is a regular file, readable."""
    path = Path(text)
    if not path.exists():
        raise argparse.ArgumentTypeError(f'{text}: no such file')
    if path.is_dir():
        raise argparse.ArgumentTypeError(f'{text} is a directory, not a file')
    if not path.is_file():
        raise argparse.ArgumentTypeError(f'{text} is not a regular file')
    if not os.access(path, os.R_OK):
        raise argparse.ArgumentTypeError(f'{text} is not readable')
    return path


# -- options several commands share ------------------------------------------------------------
def history_db(text: str) -> Path | str:
    """``--db``: a ReFrame results database file to read, or the shared store's
    ``postgresql://`` URL (which never carries a password)."""
    if dburl.is_url(text.strip()):
        problem = dburl.password_problem(text.strip(), 'refused')
        if problem:
            raise argparse.ArgumentTypeError(problem)
        return text.strip()
    return existing_file(text)


history_db.__name__ = 'results database or postgresql:// URL'


def store_url(text: str) -> str:
    """A shared store's ``postgresql://`` URL, without a password."""
    if not dburl.is_url(text.strip()):
        raise argparse.ArgumentTypeError(f'{text!r} is not a postgresql:// URL')
    return history_db(text)


def add_db(p) -> None:
    p.add_argument('--db', type=history_db,
                   help='ReFrame results database, or the shared store as postgresql://... '
                        '(default: the configured store, else reports/results.db)')


def add_cluster(p) -> None:
    p.add_argument('--cluster', type=name,
                   help='only sessions of this cluster (ReFrame system)')


def add_sessions(p, what: str) -> None:
    p.add_argument('--session', action='append', metavar='UUID', type=session_id,
                   help=f'{what} (uuid or prefix; repeatable)')


def add_selection(p, what: str) -> None:
    """``--db``, ``--session``, ``--last``, ``--since``, ``--until``."""
    add_db(p)
    add_sessions(p, f'{what} session')
    p.add_argument('--last', type=positive_int, metavar='N', help=f'the last N sessions {what}')
    p.add_argument('--since', type=date, help='sessions started on or after this date')
    p.add_argument('--until', type=date, help='sessions started on or before this date')


def add_all(p) -> None:
    p.add_argument('--all', action='store_true', help='every variable, not only key ones')


def add_verdict_outputs(p, machine: str, record: str, junit: str) -> None:
    """The options of a command that gives verdicts (``compare``, ``upgrade``), in this order:
    ``--fail-on-machine-change``, ``--all``, ``--json`` (its record) and ``--junit``; each help
    text the command's own."""
    p.add_argument('--fail-on-machine-change', action='store_true', help=machine)
    add_all(p)
    p.add_argument('--json', type=output_file, help=record)
    p.add_argument('--junit', type=output_file, metavar='FILE', help=junit)


def add_site(p) -> None:
    p.add_argument('--site', type=nonempty,
                   help='local, a name in config/sites/, or a site file '
                        '(default: COMMCHECK_SITE or local)')


def load_site(args):
    """The site ``--site`` (else ``COMMCHECK_SITE``, else ``local``) names; ``args.site`` is
    set to that name. A bad one: one line naming the option or the variable."""
    from commcheck.site import SiteError, sitefile
    given = os.environ.get('COMMCHECK_SITE', '').strip()
    source = '--site' if args.site else 'COMMCHECK_SITE' if given else None
    args.site = args.site or given or 'local'
    try:
        return sitefile.load_named(args.site)
    except SiteError as err:
        if source:
            said = f'--site {args.site}' if source == '--site' else f'{source}={args.site}'
            raise SiteError(f'{said}: {err}') from None
        raise


def check_range(args) -> None:
    """``--since`` after ``--until`` selects nothing: say so instead."""
    since, until = getattr(args, 'since', None), getattr(args, 'until', None)
    if since is not None and until is not None and since > until:
        raise UserError('--since is after --until: no session can match')


# -- the environment ---------------------------------------------------------------------------
def _choices(accepted: tuple[str, ...]):
    def check(value: str) -> str | None:
        return None if value in accepted else f'use one of {", ".join(accepted)}'
    return check


def _whole_at_least_one(value: str) -> str | None:
    return None if value.isdigit() and int(value) >= 1 else 'use a whole number >= 1'


def _wheels(value: str) -> str | None:
    from commcheck.site.discover import WHEELS
    unknown = sorted({n.strip() for n in value.split(',') if n.strip()} - set(WHEELS))
    return f'unknown {", ".join(unknown)}: use a comma list of {", ".join(WHEELS)}' \
        if unknown else None


def _bindings() -> tuple[str, ...]:
    from commcheck.site import Partition
    return typing.get_args(Partition.model_fields['binding'].annotation)


def _builds() -> tuple[str, ...]:
    from commcheck.site import Stack
    return typing.get_args(Stack.model_fields['build'].annotation)


#: Settings with a set of accepted values: name -> check(value) giving the problem or None.
ENVIRONMENT = {
    'COMMCHECK_BINDING': lambda v: _choices(_bindings())(v),
    'COMMCHECK_BUILD': lambda v: _choices(_builds())(v),
    'COMMCHECK_MPI': _choices(('wheels',)),
    'COMMCHECK_MAX_JOBS': _whole_at_least_one,
    'COMMCHECK_OVERSUBSCRIBE': _choices(('0', '1')),
    'COMMCHECK_WHEELS': _wheels,
}


def directories() -> dict[str, Path]:
    """Directories named by the environment (read when called: tests move them)."""
    return {'COMMCHECK_STATE': paths.STATE_DIR, 'COMMCHECK_REPORTS': paths.REPORTS_DIR,
            'COMMCHECK_WHEELS_DIR': paths.WHEELS_DIR, 'COMMCHECK_CACHE': paths.CACHE_DIR,
            'COMMCHECK_ROOT': paths.REPO_ROOT,
            'RFM_REFERENCE_PREFIX': paths.references_dir(),
            **({'OSU_ROOT': Path(os.environ['OSU_ROOT'].strip())}
               if os.environ.get('OSU_ROOT', '').strip() else {})}


def check_environment() -> None:
    """Every setting from the environment, before any work: one line naming the variable,
    its value and what is accepted."""
    for var, check in ENVIRONMENT.items():
        value = os.environ.get(var)
        if value is None or not value.strip():
            continue
        problem = check(value.strip())
        if problem:
            raise UserError(f'{var}={value!r}: {problem}')
    for var, path in directories().items():
        found = _nearest(path)
        if path.exists() and not path.is_dir():
            raise UserError(f'{var}={path} is not a directory')
        if not path.exists() and found.exists() and not found.is_dir():
            raise UserError(f'{var}={path}: {found} is not a directory')
        if var in ('COMMCHECK_ROOT', 'OSU_ROOT') and not path.is_dir():
            raise UserError(f'{var}={path} does not exist')
