"""The upgrade's record (``reports/upgrade/<session>.json``, or ``upgrade --json``): written
by ``commcheck upgrade`` (:mod:`commcheck.analysis.paired` judges what it holds), read by the
report's upgrade section. Its model, version, writer and reader, beside the gate's
(:mod:`commcheck.results.gaterecord`, whose JSON writer and tolerant reader it shares).

Format 2 (issue 44) added the floor's slope, the acceptance, the looks and the plan; records of
format 1 are still read.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from commcheck.results import gaterecord
from commcheck.results.store import Warn

#: Of the JSON ``commcheck upgrade`` writes. 2 (issue 44): the floor's slope, the acceptance,
#: the looks and the plan.
FORMAT_VERSION = 2
#: The versions the readers accept.
FORMATS_READ = (1, 2)
#: The directory under the reports directory the upgrade's records go to.
DIRECTORY = 'upgrade'
#: What the record says it is.
KIND = 'upgrade'

write = gaterecord.write


@dataclasses.dataclass
class UpgradeRecord:
    """What ``commcheck upgrade`` decided: the sessions, the two stacks, its settings, the
    plan of its looks (None for stored pairs judged at once), the count of each verdict and
    one judgement a variable (:meth:`paired.Judgement.as_dict`)."""
    sessions: list[str]
    old: str
    new: str
    settings: dict
    plan: dict | None
    counts: dict
    judgements: list[dict]
    format_version: int = FORMAT_VERSION

    def as_dict(self) -> dict:
        return {'format_version': self.format_version, 'kind': KIND, 'sessions': self.sessions,
                'old': self.old, 'new': self.new, 'settings': self.settings, 'plan': self.plan,
                'counts': self.counts, 'judgements': self.judgements}


def path_of(reports_dir: Path, session: str) -> Path:
    """Where a record of ``session`` goes by default (``<reports>/upgrade/<uuid>.json``)."""
    return gaterecord.path_of(reports_dir, session, DIRECTORY)


def load(path: str | Path, warn: Warn) -> dict | None:
    """An upgrade record written by ``commcheck upgrade``, or None (absent: silently; bad:
    warned). Its format versions 1 (before the floor's slope, the acceptance and the looks)
    and 2 are read; another is warned about."""
    record = gaterecord.read(path, warn, 'upgrade', 'commcheck upgrade', 'judgements',
                             'upgrade section', kind=KIND)
    if record is not None and record.get('format_version') not in FORMATS_READ:
        warn(f'{path}: upgrade record of format {record.get("format_version")!r}, this '
             f'commcheck reads {", ".join(map(str, FORMATS_READ))}; no upgrade section')
        return None
    return record
