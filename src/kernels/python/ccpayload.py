"""Message payloads, byte for byte those of the C kernels (cc_payload.h): every byte depends
on size and sender, and the first and last 8 bytes (all of a message shorter than 16 bytes)
carry a stamp of the message's number ``seq``, so a message left over from an earlier one is
caught by the cheap per-message check (:func:`ends_ok`), not only by the whole-payload check
of the last message (:func:`mismatch`)."""

from __future__ import annotations

import numpy as np

_MASK = (1 << 64) - 1


def body(size: int, sender: int) -> np.ndarray:
    """The message without its stamps: once per size, outside the timing."""
    j = np.arange(size, dtype=np.uint64)
    return ((j * 13 + (j >> 8) + size * 7 + sender * 101 + 1) & 0xff).astype(np.uint8)


def stamp_of(size: int, sender: int, seq: int) -> bytes:
    """The 8 stamp bytes (little-endian 64 bits, wrapping like C's uint64_t)."""
    return (((seq * 1000003) ^ (size << 1) ^ sender) & _MASK).to_bytes(8, 'little')


def stamp(buf, size: int, stamp8: bytes) -> None:
    """Writes the stamp into a writable buffer (bytearray, memoryview of a uint8 array)."""
    if size < 16:
        buf[:size] = (stamp8 + stamp8)[:size]
    else:
        buf[:8] = stamp8
        buf[size - 8:size] = stamp8


def ends_ok(buf, size: int, stamp8: bytes) -> bool:
    """The cheap check of every message: are its stamped ends those of message ``seq``?"""
    if size < 16:
        return buf[:size] == (stamp8 + stamp8)[:size]
    return buf[:8] == stamp8 and buf[size - 8:size] == stamp8


def expected(size: int, sender: int, seq: int) -> np.ndarray:
    message = body(size, sender)
    stamp(memoryview(message), size, stamp_of(size, sender, seq))
    return message


def mismatch(buf, size: int, sender: int, seq: int, whole: bool) -> tuple[int, int, int]:
    """(offset, got, expected) of the first wrong byte of the whole message (``whole``) or of
    its stamped ends; offset is ``size`` when there is none."""
    got = np.frombuffer(buf, dtype=np.uint8, count=size)
    want = expected(size, sender, seq)
    wrong = got != want
    if not whole and size >= 16:
        wrong[8:size - 8] = False
    bad = np.flatnonzero(wrong)
    if not bad.size:
        return size, 0, 0
    j = int(bad[0])
    return j, int(got[j]), int(want[j])
