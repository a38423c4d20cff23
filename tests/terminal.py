"""A command run at a terminal, as a person runs it: its own pseudo-terminal (stdin, stdout
and stderr), and each prompt answered when it appears, typed like a person types it (psql's
``\\password`` reads the new password from the terminal with echo off, never from a pipe
filled in advance: it flushes what was typed before it asks).
"""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import time
from collections.abc import Callable, Sequence

#: A prompt and what to type when it appears (the match -> the line, without its newline).
Answer = tuple[re.Pattern, Callable[[re.Match], str]]


def run(argv: Sequence[str], answers: Sequence[Answer] = (), timeout: float = 120,
        **popen) -> tuple[int, str]:
    """(exit code, everything it wrote to the terminal) of ``argv``. A prompt that is not in
    ``answers`` waits until ``timeout``, then the command is killed (exit -9)."""
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen(list(argv), stdin=slave, stdout=slave, stderr=slave,
                                start_new_session=True, **popen)
    finally:
        os.close(slave)
    said, answered = bytearray(), 0
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:             # EIO: every holder of the terminal has closed it
                    break
                if not chunk:
                    break
                said += chunk
                answered = _answer(master, said, answered, answers)
            elif proc.poll() is not None:
                break
        else:
            proc.kill()
        return proc.wait(timeout=30), said.decode('utf-8', errors='replace')
    finally:
        os.close(master)


def _answer(master: int, said: bytearray, answered: int, answers: Sequence[Answer]) -> int:
    """Types the answer to a prompt that appeared after position ``answered``; the new
    position."""
    text = said.decode('utf-8', errors='replace')
    found = [(m, reply) for pattern, reply in answers if (m := pattern.search(text, answered))]
    if not found:
        return answered
    first, reply = min(found, key=lambda pair: pair[0].start())
    os.write(master, (reply(first) + '\n').encode())
    return first.end()


def password_prompts(passwords: dict[str, str]) -> list[Answer]:
    """psql's ``\\password ROLE``: the role's password, asked twice."""
    asked: list[str] = []

    def new(found: re.Match) -> str:
        asked.append(found.group(1))
        return passwords[found.group(1)]

    return [(re.compile(r'Enter new password for user "([^"]+)":'), new),
            (re.compile(r'Enter it again:'), lambda _: passwords[asked[-1]])]
