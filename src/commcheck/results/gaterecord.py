"""The gate's record (``reports/gate/<session>.json``, or ``compare --json``): written by
``commcheck compare`` (:mod:`commcheck.analysis.gate` judges what it holds), read by the
report's verdict section and the CI gate job. Its model, version, writer and reader, as
:mod:`commcheck.results.baselinefile` is the baseline file's; the upgrade's record is
:mod:`commcheck.results.upgraderecord`.

Written as ``json.dumps(..., indent=1, default=str)`` and a newline, keys in the model's order;
read without failing: absent is None silently, unreadable or another thing is None with one
warning naming the file.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from commcheck.results.store import Warn

#: Of the JSON ``commcheck compare`` writes.
FORMAT_VERSION = 2
#: The directory under the reports directory the gate's records go to, one a judged session.
DIRECTORY = 'gate'
#: The fields a reader needs (the record's sessions, and its rows).
FIELDS = ('sessions', 'comparisons')


@dataclasses.dataclass
class GateRecord:
    """What ``commcheck compare`` decided: the sessions judged, against what, its settings,
    the count of each verdict and one row a variable (:meth:`gate.Comparison.as_dict` with
    ``since``)."""
    sessions: list[str]
    against: str
    settings: dict
    counts: dict
    comparisons: list[dict]
    format_version: int = FORMAT_VERSION

    def as_dict(self) -> dict:
        return {'format_version': self.format_version, 'sessions': self.sessions,
                'against': self.against, 'settings': self.settings, 'counts': self.counts,
                'comparisons': self.comparisons}


def path_of(reports_dir: Path, session: str, directory: str = DIRECTORY) -> Path:
    """Where a record of ``session`` goes by default (``<reports>/gate/<uuid>.json``)."""
    return Path(reports_dir) / directory / f'{session}.json'


def write(path: Path, record: dict) -> Path:
    """``record`` (a model's :meth:`as_dict`) as JSON at ``path``, its directory made."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1, default=str) + '\n')
    return path


def read(path: str | Path, warn: Warn, what: str, command: str, rows: str, shown: str,
         kind: str | None = None) -> dict | None:
    """A JSON record a command wrote (``sessions`` and a list ``rows``; ``kind`` where it
    says one), or None: absent silently, unreadable or another thing with a warning."""
    path = Path(path)
    if not path.exists():
        return None
    try:
        record = json.loads(path.read_text(encoding='utf-8'))
    except (OSError, UnicodeDecodeError, ValueError) as err:
        warn(f'{path}: not a readable {what} record ({err}); no {shown}')
        return None
    if not (isinstance(record, dict) and isinstance(record.get('sessions'), list)
            and isinstance(record.get(rows), list)
            and (kind is None or record.get('kind') == kind)):
        article = 'an' if what[0] in 'aeiou' else 'a'
        warn(f'{path}: not {article} {what} record of `{command}` (no sessions/{rows}); '
             f'no {shown}')
        return None
    return record


def load(path: str | Path, warn: Warn) -> dict | None:
    """A gate record written by ``commcheck compare``, or None (absent: silently; bad:
    warned)."""
    return read(path, warn, 'gate', 'commcheck compare', 'comparisons', 'regression table')
