"""Progress a person can follow: one plain line per stack as its state changes (building,
built, reused, failed), with no terminal, in the background, SIGINT ignored."""

from __future__ import annotations

import signal
import subprocess

from commcheck.cli import run
from commcheck.site import wheels
from tests.conftest import commcheck_cmd

#: ReFrame 4's lines for a build fixture (colours removed, as commcheck run reads them).
FAILED = ('[     FAIL ] ( 3/33) KernelsBuild ~local:default+gnu-mpich4 /6207635d '
          '@local:default+gnu-mpich4')
PASSED = ('[       OK ] ( 2/33) KernelsBuild ~local:default+gnu-openmpi4 /c8c1376c '
          '@local:default+gnu-openmpi4')


def test_a_failed_build_is_one_line_naming_its_stack():
    assert run.progress(FAILED) == ('commcheck: build gnu-mpich4: failed (ReFrame\'s failure '
                                    'report, at the end, says why)')
    assert run.progress(PASSED) is None
    assert run.progress('[     FAIL ] ( 9/33) PingPong %lang=c /a1 @local:default+gnu-mpich4') \
        is None


def test_setup_mpi_says_each_stack_in_plain_lines_without_a_terminal():
    """In the background (its own session, no terminal, stdin closed) with SIGINT ignored,
    as a CI job or `nohup make setup &` starts it: a line per wheel stack, no control codes."""
    done = subprocess.run([commcheck_cmd(), 'setup-mpi'], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=1800, start_new_session=True,
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if line.startswith('commcheck: setup-mpi')]
    assert [line.split()[2].rstrip(':') for line in lines] == wheels.wanted()
    assert all(line.split(': ')[2].split()[0] in ('reused', 'installing', 'installed')
               for line in lines), lines
    assert '\x1b' not in done.stdout
