"""The command line of the Python kernels, read as the C kernels read theirs (cc_util.h,
cc_sweep.h): long options only, ``--name value``; every rank parses the same arguments and
so reaches the same usage error."""

from __future__ import annotations

import dataclasses
import os
import re

MAX_SIZES = 64
INT_MAX = 2**31 - 1   # an MPI count
DEFAULT_BATCHES = 10
PATHS = ('buffer', 'pickle')
_INT = re.compile(r'\s*[+-]?[0-9]+')
_BYTES = re.compile(r'\s*([+-]?[0-9]+)([kKmMgG]?)')
_SHIFT = {'': 0, 'k': 10, 'm': 20, 'g': 30}


class UsageError(Exception):
    """Bad input: rank 0 prints it as one ERROR line, every rank finalizes, exit 2."""


class Help(Exception):
    """--help: rank 0 prints the text (the exception's argument), exit 0."""


def parse_int(opt: str, text: str, lo: int, hi: int) -> int:
    if not _INT.fullmatch(text):
        raise UsageError(f"{opt}: '{text}' is not a whole number")
    value = int(text)
    if not lo <= value <= hi:
        raise UsageError(f'{opt}: {value} is out of range [{lo}, {hi}]')
    return value


def physical_memory() -> int:
    try:
        return os.sysconf('SC_PHYS_PAGES') * os.sysconf('SC_PAGE_SIZE')
    except (ValueError, OSError):
        return 1 << 62


def parse_bytes(opt: str, text: str) -> int:
    """Digits with an optional k/m/g suffix (KiB, MiB, GiB); at least 1, at most the node's
    physical memory."""
    match = _BYTES.fullmatch(text)
    if not match:
        raise UsageError(f"{opt}: '{text}' is not a byte count")
    value = int(match.group(1))
    if value <= 0:
        raise UsageError(f"{opt}: sizes must be positive, got '{text}'")
    value <<= _SHIFT[match.group(2).lower()]
    if value > physical_memory():
        raise UsageError(f"{opt}: {text} bytes is more than this node's memory "
                         f'({physical_memory()} bytes)')
    return value


def parse_sizes(opt: str, text: str) -> list[int]:
    """A list ``8,64,512`` (kept in the given order) or a power-of-two range ``lo:hi``."""
    if ':' in text:
        lo_text, _, hi_text = text.partition(':')
        if not lo_text or not hi_text:
            raise UsageError(f"{opt}: '{text}' is not a range lo:hi")
        lo, hi = parse_bytes(opt, lo_text), parse_bytes(opt, hi_text)
        if lo > hi:
            raise UsageError(f"{opt}: range '{text}' runs backwards")
        sizes = []
        while lo <= hi and len(sizes) < MAX_SIZES:
            sizes.append(lo)
            lo *= 2
        return sizes
    tokens = [t for t in text.split(',') if t]
    if len(tokens) > MAX_SIZES:
        raise UsageError(f'{opt}: more than {MAX_SIZES} sizes')
    if not tokens:
        raise UsageError(f"{opt}: no sizes in '{text}'")
    return [parse_bytes(opt, t) for t in tokens]


def batch_count(given: int | None, iters: int) -> int:
    """--batches: 10, or iters when fewer; an explicit count may not exceed iters."""
    if given is None:
        return min(DEFAULT_BATCHES, iters)
    if given > iters:
        raise UsageError(f'--batches {given} is more than --iters {iters}: every batch needs '
                         f'an iteration')
    return given


@dataclasses.dataclass
class Sweep:
    """What the command line of a two-rank message sweep asks for."""

    sizes: list
    iters: int = 1000
    warmup: int = 100
    batches: int = DEFAULT_BATCHES
    inject: bool = False
    path: str = 'buffer'


def parse_sweep(argv: list[str], kernel: str, usage: str, ranks: int) -> Sweep:
    """The options of pingpong.py and comms2.py; a sweep runs on exactly 2 ranks."""
    sizes_text, batches, sweep = '1:1048576', None, Sweep(sizes=[])
    args = iter(argv)
    for arg in args:
        if arg == '--help':
            raise Help(usage)
        if arg == '--inject-error':
            sweep.inject = True
            continue
        if arg not in ('--sizes', '--iters', '--warmup', '--batches', '--path'):
            raise UsageError(f"unknown option '{arg}' (see --help)")
        value = next(args, None)
        if value is None:
            raise UsageError(f'{arg} needs a value')
        if arg == '--sizes':
            sizes_text = value
        elif arg == '--iters':
            sweep.iters = parse_int(arg, value, 1, 1000000000)
        elif arg == '--warmup':
            sweep.warmup = parse_int(arg, value, 0, 1000000000)
        elif arg == '--batches':
            batches = parse_int(arg, value, 1, 1000000000)
        elif value in PATHS:
            sweep.path = value
        else:
            raise UsageError(f"--path: unknown path '{value}' ({', '.join(PATHS)})")
    sweep.sizes = parse_sizes('--sizes', sizes_text)
    for size in sweep.sizes:
        if size > INT_MAX:
            raise UsageError(f'--sizes: {size} bytes do not fit in one message (at most {INT_MAX})')
    sweep.batches = batch_count(batches, sweep.iters)
    if ranks != 2:
        raise UsageError(f'{kernel} needs exactly 2 ranks, got {ranks}')
    return sweep
