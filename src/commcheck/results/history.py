"""The one History: what every reader of stored sessions uses, declared once.

A history is ReFrame's results database (:class:`commcheck.results.source.LocalHistory`, with
its derived sample index; a ReFrame run report is read through one made for it) or the site's
shared PostgreSQL store (:class:`commcheck.results.pgread.StoreHistory`). Both answer
:class:`History`, so the commands and the report never branch on the backend: each opens its
history once with :func:`commcheck.results.source.open_history` and closes it when done.

- the listing, no record decoded: :meth:`History.stored`, :meth:`History.resolve`,
  :meth:`History.choose`, :meth:`History.listing` (one :class:`Listed` a session, for
  ``commcheck sessions``), :meth:`History.with_check`;
- the chosen sessions' records, decoded and validated (a damaged one: a warning naming the
  session, the others read): :meth:`History.records`, :meth:`History.load`;
- one variable's series, a launch at a time: :meth:`History.series` gives a :class:`Series`
  (the sample index there, the store's measurements table here);
- "since when": :meth:`History.has_series` says whether the series can be read without
  building anything (``compare`` never builds the index, so it looks the change's start up
  only then);
- unavailable: a store that cannot be read now raises :class:`HistoryUnavailable`, never a
  verdict on what was read before.

This module holds the declarations and the one address check (:func:`is_url`, from
:mod:`commcheck.dburl`); it imports no reader, so no reader imports back into it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from commcheck.dburl import URL_SCHEMES, is_url
from commcheck.results.store import HistoryError, SampleKey, Session, Stored, Wanted, Warn

if TYPE_CHECKING:
    from commcheck.results.sample_index import Indexed

__all__ = ['URL_SCHEMES', 'History', 'HistoryUnavailable', 'Listed', 'Series', 'is_url']


class HistoryUnavailable(HistoryError):
    """The shared store cannot be read now (unreachable, refused, dropped mid-read): no verdict
    is given on what was read before. The message never carries a password."""


@dataclasses.dataclass(frozen=True)
class Listed:
    """A stored session as ``commcheck sessions`` lists it."""
    uuid: str
    time_start: float
    site: str                   # '' where the source does not record it (a local file)
    cluster: str                # the ReFrame system its test cases ran on
    host: str                   # where ReFrame ran (session_info.hostname)
    cases: int                  # test cases recorded


class Series(Protocol):
    """The per-launch series of a history, one variable at a time (``history`` and the
    report's history section stream from it)."""
    warn: Warn

    def sessions(self, chosen: Iterable[Stored] | None = None) -> list[Indexed]:
        """The readable sessions (all, or those chosen), oldest first."""

    def keys(self, chosen: Iterable[Stored] | None = None, measured: bool = False
             ) -> list[tuple[SampleKey, str]]:
        """(key, unit) of every variable stored, sorted by key."""

    def launches(self, key: tuple, chosen: Iterable[Stored] | None = None
                 ) -> list[tuple[str, list[float], str, list]]:
        """One variable's measured launches, a session at a time by start: (uuid, values, unit,
        each launch's provenance)."""

    def reopened(self) -> Series:
        """The same series through a connection of its own (for a forked worker)."""

    def close(self) -> None:
        """Ends what it holds open."""


class History(Protocol):
    """What every reader of stored sessions uses (see the module)."""
    #: what names the history in a message (a URL never with its password)
    where: str

    def stored(self, since: float | None = None, until: float | None = None,
               cluster: str | None = None) -> list[Stored]:
        """The sessions started in [since, until] (on ``cluster``), oldest first."""

    def resolve(self, want: str) -> Stored:
        """The one session whose uuid starts with ``want``."""

    def choose(self, *, uuids: Iterable[str] = (), last: int | None = None,
               since: float | None = None, until: float | None = None,
               cluster: str | None = None) -> list[Stored]:
        """By uuid (prefixes), time range, cluster, the last N."""

    def records(self, uuids: list[str]) -> Iterable[tuple[str, str]]:
        """(uuid, JSON record) of the given sessions, in the order given."""

    def fetcher(self, uuids: list[str]) -> Callable[[str], str | None]:
        """uuid -> its JSON record, callable in a forked worker."""

    def load(self, chosen: Iterable[Stored], warn: Warn = ..., cases: bool = True,
             wanted: Wanted | None = None) -> list[Session]:
        """The chosen sessions decoded, in the order given (a damaged one warned, skipped)."""

    def listing(self, cluster: str | None = None) -> list[Listed]:
        """Every session (of ``cluster``), oldest first."""

    def with_check(self, check: str, system: str, partition: str, environ: str
                   ) -> list[Stored]:
        """The sessions that ran ``check`` on that environment, oldest first."""

    def series(self, only=None, warn: Warn | None = None) -> Series:
        """One variable's series at a time (the sample index, the store's measurements)."""

    def has_series(self) -> bool:
        """Whether :meth:`series` reads without building anything ("since when")."""

    def archive(self, before: float, into: Path) -> list[Stored]:
        """Moves the sessions started before ``before`` into the SQLite archive ``into``."""

    def close(self) -> None:
        """Ends what it holds open."""

    def __enter__(self) -> History:
        ...

    def __exit__(self, *exc) -> None:
        ...


def members(protocol: type) -> list[str]:
    """The names a protocol declares (its methods and annotated attributes)."""
    declared = set(getattr(protocol, '__annotations__', {}))
    declared |= {n for n, v in vars(protocol).items() if callable(v) and (
        not n.startswith('_') or n in ('__enter__', '__exit__'))}
    return sorted(declared)


def iter_missing(given: object, protocol: type) -> Iterator[str]:
    """The members of ``protocol`` that ``given`` (a class or an object) lacks."""
    return (n for n in members(protocol) if not hasattr(given, n)
            and n not in getattr(given, '__annotations__', {}))
