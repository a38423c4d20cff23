"""Parse the kernels' record lines (``TYPE key=value ...``; see src/kernels/README.md)."""

from __future__ import annotations

import shlex
from pathlib import Path

RECORD_TYPES = ('META', 'DATA', 'RESULT', 'PASS', 'FLOOR', 'WAIT')


class RecordError(ValueError):
    """Kernel output that does not follow the record format."""


def _value(text: str):
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def parse_line(line: str) -> tuple[str, dict] | None:
    """Returns (type, fields) for a record line, None for free text."""
    head, _, rest = line.strip().partition(' ')
    if head not in RECORD_TYPES:
        return None
    fields = {}
    try:
        tokens = shlex.split(rest)
    except ValueError as err:
        raise RecordError(f'malformed {head} record: {line.strip()!r}: {err}') from None
    for token in tokens:
        key, sep, value = token.partition('=')
        if not sep or not key:
            raise RecordError(f'malformed {head} record: {token!r} is not key=value')
        fields[key] = _value(value)
    return head, fields


def parse(text: str) -> dict[str, list[dict]]:
    """All records of a kernel's output, by type, in order of appearance."""
    records: dict[str, list[dict]] = {kind: [] for kind in RECORD_TYPES}
    for line in text.splitlines():
        parsed = parse_line(line)
        if parsed:
            records[parsed[0]].append(parsed[1])
    return records


def parse_file(path: str | Path) -> dict[str, list[dict]]:
    return parse(Path(path).read_text(errors='replace'))


def select(rows: list[dict], **where) -> dict:
    """The one row whose fields equal ``where``; a clear error if none or several match."""
    found = [r for r in rows if all(r.get(k) == v for k, v in where.items())]
    if len(found) != 1:
        raise RecordError(f'expected one record with {where}, found {len(found)}')
    return found[0]


def split_runs(text: str) -> list[dict[str, list[dict]]]:
    """Records of several kernel runs written to one output, one group per META record."""
    groups: list[str] = []
    for line in text.splitlines():
        if line.startswith('META '):
            groups.append('')
        if groups:
            groups[-1] += line + '\n'
    return [parse(g) for g in groups]


_SUFFIX = {'': 1, 'k': 1 << 10, 'm': 1 << 20, 'g': 1 << 30}


def parse_sizes(text: str) -> list[int]:
    """The message sizes a kernel's ``--sizes`` option means (see src/kernels/README.md):
    a comma list, or a power-of-two range ``lo:hi``; ``k``/``m``/``g`` suffixes."""
    def one(token: str) -> int:
        token = token.strip().lower()
        digits, suffix = token.rstrip('kmg'), token[len(token.rstrip('kmg')):]
        if not digits.isdigit() or len(suffix) > 1 or int(digits) <= 0:
            raise RecordError(f'--sizes: {token!r} is not a byte count')
        return int(digits) * _SUFFIX[suffix]
    if ':' in text:
        lo, hi = (one(t) for t in text.split(':', 1))
        if lo > hi:
            raise RecordError(f'--sizes: range {text!r} runs backwards')
        out = []
        while lo <= hi:
            out.append(lo)
            lo *= 2
        return out
    return [one(t) for t in text.split(',')]
