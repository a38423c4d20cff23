"""The one object every section reads, and the one shape every section returns."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from commcheck.report.model import Case, Measurements, text
from commcheck.report.plots import Plotter
from commcheck.results.baselinefile import BaselineFile
from commcheck.results.store import Session, Warn


@dataclasses.dataclass
class Context:
    sessions: list[Session]             # the reported sessions, oldest first
    cases: list[Case]                   # their test cases, fixtures included
    values: Measurements                # their performance values, fixtures excluded
    environments: list[str]
    gate: dict | None                   # ``commcheck compare`` record of these sessions
    history: object                     # .sessions(), .points(key), with .reopened() (inputs.py)
    baselines: dict[str, BaselineFile]  # system -> baseline file, where one exists
    plots: Plotter
    warn: Warn
    upgrade: dict | None = None         # ``commcheck upgrade`` record of these sessions

    def languages(self, environ: str) -> tuple[str, ...] | None:
        """Languages an environment offers, as its tests recorded them (provenance), or None
        when none of its tests recorded them."""
        for case in self.cases:
            if case.environ == environ and case.languages:
                return case.languages
        return None


def record_rows(ctx: Context, record: dict, kind: str, items: str, item: str,
                row: Callable[[dict], dict]) -> list[dict] | None:
    """The rows of a ``kind`` record (``gate``: ``commcheck compare``'s, ``upgrade``) of the
    reported sessions, one ``row(entry)`` per mapping in ``record[items]`` (any other entry, an
    ``item`` that is not a mapping: warned, skipped); None, warned, when the record is of other
    sessions."""
    uuids = {s.uuid for s in ctx.sessions}
    if not uuids & {text(u) for u in record.get('sessions', [])}:
        ctx.warn(f'the {kind} record is of session(s) {record.get("sessions")}, not of the '
                 f'reported one(s); not shown')
        return None
    rows = []
    for entry in record.get(items, []):
        if not isinstance(entry, dict):
            ctx.warn(f'{kind} record: a {item} that is not a mapping; skipped')
            continue
        rows.append(row(entry))
    return rows


@dataclasses.dataclass
class Section:
    """What a section module returns; its id and title are the registry's
    (:data:`commcheck.report.sections.SECTIONS`)."""
    data: dict                          # every number the section shows (data.json)
    template: str                       # templates/sections/<template>
    plots: list[dict] = dataclasses.field(default_factory=list)
