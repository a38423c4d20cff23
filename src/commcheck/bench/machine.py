"""The machine a benchmark ran on, as its figures are stated with: the CPU model, the CPUs, the
last-level cache (from sysfs: its size, times its instances) and the load."""

from __future__ import annotations

import os
from pathlib import Path

CPUS = Path('/sys/devices/system/cpu')


def cpu_model(cpuinfo: Path = Path('/proc/cpuinfo')) -> str:
    """The first ``model name`` of /proc/cpuinfo, or ``unknown CPU``."""
    try:
        for line in cpuinfo.read_text().splitlines():
            if line.startswith('model name'):
                return line.split(':', 1)[1].strip()
    except OSError:
        pass
    return 'unknown CPU'


def last_level_cache(root: Path = CPUS) -> tuple[int, int, int] | None:
    """(level, bytes of one instance, instances) of the highest cache level sysfs lists
    (instances: the distinct CPU sets sharing one), or None where it lists none."""
    found: dict[int, tuple[int, set[str]]] = {}
    for index in sorted(root.glob('cpu[0-9]*/cache/index[0-9]*')):
        try:
            level = int((index / 'level').read_text())
            size = _bytes((index / 'size').read_text().strip())
            shared = (index / 'shared_cpu_list').read_text().strip()
        except (OSError, ValueError):
            continue
        if (index / 'type').exists() and (index / 'type').read_text().strip() == 'Instruction':
            continue
        found.setdefault(level, (size, set()))[1].add(shared)
    if not found:
        return None
    level = max(found)
    size, instances = found[level]
    return level, size, len(instances)


def _bytes(text: str) -> int:
    units = {'K': 1 << 10, 'M': 1 << 20, 'G': 1 << 30}
    return int(text[:-1]) * units[text[-1]] if text[-1:] in units else int(text)


def mib(size: int) -> str:
    return f'{size / (1 << 20):g} MiB' if size >= 1 << 20 else f'{size / (1 << 10):g} KiB'


def describe(root: Path = CPUS, cpuinfo: Path = Path('/proc/cpuinfo')) -> str:
    """``AMD EPYC, 2 CPUs, L3 32 MiB`` (``x 2`` where the level has several instances)."""
    cache = last_level_cache(root)
    said = f'{cpu_model(cpuinfo)}, {os.cpu_count()} CPUs'
    if cache:
        level, size, instances = cache
        said += f', L{level} {mib(size)}' + (f' x {instances}' if instances > 1 else '')
    return said


def load() -> str:
    """The 1, 5 and 15 minute load averages."""
    try:
        return ' '.join(f'{x:.2f}' for x in os.getloadavg())
    except OSError:
        return 'unknown'
