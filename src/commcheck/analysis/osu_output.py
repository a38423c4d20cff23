"""Read the OSU Micro-Benchmarks' point-to-point output (7.x: ``# Size  <metric>`` tables).

With ``-c`` (OSU 7.x validates the received buffers) each row ends in ``Pass`` or ``Fail``.
"""

from __future__ import annotations

import re

_ROW = re.compile(r'^\s*(\d+)\s+([-+0-9.eE]+)(?:\s+(\S+))?\s*$')


class OsuOutputError(ValueError):
    """OSU output with no data rows or a malformed row."""


def parse_rows(text: str) -> list[tuple[int, float, str | None]]:
    """(size, first metric column, validation status or None) for every data row; lines
    before OSU's own ``# OSU ...`` title (the job's other output) are not OSU's."""
    lines = text.splitlines()
    titles = [i for i, line in enumerate(lines) if line.startswith('# OSU')]
    rows = []
    for line in lines[titles[0] if titles else 0:]:
        if line.lstrip().startswith('#') or not line.strip():
            continue
        match = _ROW.match(line)
        if not match:
            raise OsuOutputError(f'unexpected line in OSU output: {line.strip()!r}')
        rows.append((int(match.group(1)), float(match.group(2)), match.group(3)))
    if not rows:
        raise OsuOutputError('OSU output has no data rows')
    return rows


def parse_table(text: str) -> dict[int, float]:
    """Message size -> first metric column (latency in µs, or bandwidth in MB/s)."""
    return {size: value for size, value, _ in parse_rows(text)}


def problems(text: str, expected_sizes: list[int]) -> list[str]:
    """What is wrong with a validated OSU run: missing sizes, failed validation."""
    try:
        rows = parse_rows(text)
    except OsuOutputError as err:
        return [str(err)]
    found = [size for size, _, _ in rows]
    out = []
    missing = [s for s in expected_sizes if s not in found]
    if missing:
        out.append(f'no result for {len(missing)} size(s) from {missing[0]} B (the run stopped '
                   f'after {found[-1]} B)' if found else 'no result rows')
    failed = [size for size, _, status in rows if status is not None and status != 'Pass']
    if failed:
        out.append(f'OSU validation failed at {", ".join(map(str, failed))} B')
    unvalidated = [size for size, _, status in rows if status is None]
    if unvalidated:
        out.append('OSU did not validate its buffers (no Validation column: run with -c)')
    return out


_SINGLE = re.compile(r'^\s*([-+0-9.eE]+)(?:\s+\S+)*\s*$')


def parse_single(text: str) -> float:
    """The one figure of a benchmark without sizes (``osu_barrier``: ``# Avg Latency(us)``
    then one row): the first column of its one data row."""
    lines = text.splitlines()
    titles = [i for i, line in enumerate(lines) if line.startswith('# OSU')]
    rows = [line for line in lines[titles[0] if titles else 0:]
            if line.strip() and not line.lstrip().startswith('#')]
    if len(rows) != 1 or not _SINGLE.match(rows[0]):
        raise OsuOutputError(f'expected one data row in OSU output, got {len(rows)}'
                             + (f': {rows[0].strip()!r}' if rows else ''))
    try:
        return float(_SINGLE.match(rows[0]).group(1))
    except ValueError:
        raise OsuOutputError(f'not a number in OSU output: {rows[0].strip()!r}') from None
