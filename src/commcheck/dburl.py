"""The shared history store's address: where it is set, the one check it must pass, and the one
way it is printed.

A store is named by a libpq connection string, either a URL (``postgresql://commcheck@db.site/
commcheck``) or key=value pairs (``service=commcheck``, ``host=db.site dbname=commcheck``), in
the environment (:data:`ENV`) or in a site file (``history:``). It never carries a password:
a password in a command line, a site file or a CI variable that is echoed ends up in process
lists and logs. libpq reads it from its own places instead: ``PGPASSFILE`` (``~/.pgpass``, mode
0600), a service file (``PGSERVICEFILE``), or ``PGPASSWORD`` in the environment. A string
that contains one is refused (:func:`password_problem`), and every place that prints a store
prints :func:`redact` of it, which hides a password even in a string that was never accepted.

Base layer: nothing here connects or imports the client library.
"""

from __future__ import annotations

import os
import re
from urllib.parse import parse_qsl, unquote, urlsplit

#: The environment variable that names the shared history store (over the site file's
#: ``history:``).
ENV = 'COMMCHECK_HISTORY'
#: How a URL of the shared store begins (``--db`` and the configuration take one).
URL_SCHEMES = ('postgresql://', 'postgres://')
HIDDEN = '***'
#: Where libpq takes a password from instead (the refusal names them).
PASSWORD_PLACES = ('PGPASSFILE (~/.pgpass, mode 0600), a service file, or PGPASSWORD in the '
                   'environment')

_URL_USERINFO = re.compile(r'(?P<head>postgres(?:ql)?://[^:@/?#\s]*):(?P<secret>[^/?#\s]+)@',
                           re.IGNORECASE)
_KEY_VALUE = re.compile(r"""(?P<head>\bpassword\s*=\s*)(?P<secret>'(?:[^'\\]|\\.)*'|[^\s&]*)""",
                        re.IGNORECASE)


def is_url(text) -> bool:
    """Whether ``text`` is a store's URL (the one check: ``--db``, the readers, the store)."""
    return isinstance(text, str) and text.strip().lower().startswith(URL_SCHEMES)


def redact(text: str) -> str:
    """``text`` with any password it holds replaced by ``***``: the URL's user-info password
    (``postgresql://u:secret@h``), and ``password=...`` as a key=value pair or a URL query
    parameter. Used wherever a store's address (or a message that may quote it) is printed."""
    out = _URL_USERINFO.sub(lambda m: f'{m["head"]}:{HIDDEN}@', str(text))
    return _KEY_VALUE.sub(lambda m: f'{m["head"]}{HIDDEN}', out)


def _has_password(text: str) -> bool:
    if is_url(text):
        parts = urlsplit(text.strip())
        if parts.password is not None and unquote(parts.password) != '':
            return True
        return any(k.lower() == 'password' for k, _ in parse_qsl(parts.query,
                                                                  keep_blank_values=True))
    return bool(_KEY_VALUE.search(text))


def password_problem(text: str, where: str = '') -> str | None:
    """The refusal of a store address that carries a password (None when it carries none):
    one line that names where it was set and never the password."""
    try:
        found = _has_password(text)
    except ValueError:              # an unparsable URL: refuse it only if it looks like one
        found = bool(_URL_USERINFO.search(text) or _KEY_VALUE.search(text))
    if not found:
        return None
    return (f'{where + ": " if where else ""}the history store address {redact(text)} contains '
            f'a password; remove it and give the password to libpq through {PASSWORD_PLACES}')


def from_environment() -> str | None:
    """``COMMCHECK_HISTORY``, or None when unset or empty (read when called)."""
    value = os.environ.get(ENV, '').strip()
    return value or None
