"""The slower MPI of known size (``src/kernels/tools/slowmpi``): a PMPI interposer that a
launch loads with ``LD_PRELOAD`` and that busy-waits before every point-to-point send, sized
to a percentage of the launch's own 8 B latency and 1 MiB one-way time. The tests and
``commcheck bench upgrade`` make a "new" stack really slower with it; it prints what it added,
measured, at ``MPI_Finalize`` (one ``slowmpi:`` line on stderr), read here."""

from __future__ import annotations

import re
from pathlib import Path

from commcheck.site import Stack, kbuild

LINE = re.compile(r'slowmpi: (?P<ranks>\d+) ranks, (?P<messages>\d+) messages; asked '
                  r'(?P<ns>[\d.]+) ns \+ (?P<ns_per_kib>[\d.]+) ns/KiB .*?added, measured on '
                  r'(?P<sampled>\d+) messages: small (?P<small>-?[\d.]+) ns a message \(asked '
                  r'(?P<small_asked>[\d.]+)\), large (?P<large>-?[\d.]+) ns \(asked '
                  r'(?P<large_asked>[\d.]+)\)')


def build(stack: Stack, build_dir: Path) -> Path:
    """The interposer built with the stack's C wrapper, by the kernels' CMake project (a
    target outside its default build): its library."""
    return kbuild.cmake_build(stack, build_dir, targets=('slowmpi',)).parent / 'lib' / \
        'libslowmpi.so'


def environment(library: Path, percent: float) -> dict[str, str]:
    """What a launch needs to be ``percent`` % slower on messages (0: loaded, adds nothing)."""
    return {'LD_PRELOAD': str(library), 'SLOWMPI_PERCENT': f'{percent:g}'}


def added(stderr: str) -> dict[str, float] | None:
    """The interposer's own account of a launch (the last ``slowmpi:`` line), or None."""
    found = list(LINE.finditer(stderr))
    return {k: float(v) for k, v in found[-1].groupdict().items()} if found else None
