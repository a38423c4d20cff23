"""Read the OSU Micro-Benchmarks' point-to-point output (7.x: ``# Size  <metric>`` tables)."""

from __future__ import annotations

import re

_ROW = re.compile(r'^\s*(\d+)\s+([-+0-9.eE]+)')


class OsuOutputError(ValueError):
    """OSU output with no data rows or a malformed row."""


def parse_table(text: str) -> dict[int, float]:
    """Message size -> first metric column (latency in µs, or bandwidth in MB/s)."""
    table = {}
    for line in text.splitlines():
        if line.lstrip().startswith('#') or not line.strip():
            continue
        match = _ROW.match(line)
        if not match:
            raise OsuOutputError(f'unexpected line in OSU output: {line.strip()!r}')
        table[int(match.group(1))] = float(match.group(2))
    if not table:
        raise OsuOutputError('OSU output has no data rows')
    return table
