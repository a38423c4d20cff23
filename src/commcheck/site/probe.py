"""What an MPI environment is, learned from the environment itself, for a site's own ReFrame
configuration whose environments carry no commcheck extras.

Run with the environment loaded (its modules and settings in this process's environment):

- the C compiler that builds MPI programs: the environment's ``cc`` if it does, else ``mpicc``
  on ``PATH``; the Fortran one likewise (``ftn``, else ``mpifort``, ``mpif90``), and Fortran is
  a language of the environment only if one builds a ``use mpi`` program;
- the compiler family and version behind the C compiler, from its predefined macros;
- the MPI library, from ``MPI_Get_library_version`` (which MPI allows before ``MPI_Init``: the
  probe runs without a launcher), identified by the flavour records'
  ``library_pattern``: the flavour and its version, the same text every kernel prints as
  ``META mpi=`` and is checked against.

A fact that cannot be learned is ``unknown``, with the reason in ``unknown``; no C compiler
that builds an MPI program is :class:`ProbeError`, one line naming the environment, the key
and what to set.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from commcheck.site import flavours

UNKNOWN = 'unknown'

PROBE_C = r'''#include <mpi.h>
#include <stdio.h>
int main(void) {
    char text[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    if (MPI_Get_library_version(text, &len) != MPI_SUCCESS) return 1;
    text[len > 0 && len < MPI_MAX_LIBRARY_VERSION_STRING ? len : 0] = '\0';
    printf("%s\n", text);
    return 0;
}
'''

PROBE_F = '''program probe
  use mpi
  implicit none
  character(len=MPI_MAX_LIBRARY_VERSION_STRING) :: text
  integer :: length, ierr
  call MPI_Get_library_version(text, length, ierr)
  print '(a)', text(1:length)
end program probe
'''

#: Compiler family (as site files name them) from predefined macros, most specific first:
#: (family, the macro that marks it, the macros of its major, minor and patch version).
COMPILER_MACROS = (
    ('oneapi', '__INTEL_LLVM_COMPILER', ('__clang_major__', '__clang_minor__',
                                         '__clang_patchlevel__')),
    ('intel', '__INTEL_COMPILER', ('__INTEL_COMPILER', '__INTEL_COMPILER_UPDATE')),
    ('cray', '_CRAYC', ('_RELEASE_MAJOR', '_RELEASE_MINOR', '_RELEASE_PATCHLEVEL')),
    ('nvidia', '__NVCOMPILER', ('__NVCOMPILER_MAJOR__', '__NVCOMPILER_MINOR__',
                                '__NVCOMPILER_PATCHLEVEL__')),
    ('aocc', '__AOCC__', ('__clang_major__', '__clang_minor__', '__clang_patchlevel__')),
    ('clang', '__clang__', ('__clang_major__', '__clang_minor__', '__clang_patchlevel__')),
    ('gnu', '__GNUC__', ('__GNUC__', '__GNUC_MINOR__', '__GNUC_PATCHLEVEL__')),
)
DEFINE = re.compile(r'^#define (\w+) (.*)$', re.MULTILINE)
TIMEOUT = 120


class ProbeError(ValueError):
    """The environment cannot build MPI programs: one line, naming what to set."""


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess | None:
    try:
        return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT,
                              stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.SubprocessError):
        return None


def _why(done: subprocess.CompletedProcess | None, what: str) -> str:
    if done is None:
        return f'{what} cannot be run'
    lines = [line.strip() for line in (done.stderr + done.stdout).splitlines() if line.strip()]
    return f'{what}: {lines[-1][:160] if lines else f"exit {done.returncode}"}'


def _first_that_builds(candidates: list[str], source: str, name: str, workdir: Path
                       ) -> tuple[str | None, list[str]]:
    """The first compiler of ``candidates`` (found on PATH) that builds ``source``; and why
    each one before it did not."""
    (workdir / name).write_text(source, encoding='utf-8')
    tried = []
    for given in dict.fromkeys(c for c in candidates if c):
        found = shutil.which(given)
        if not found:
            tried.append(f'{given}: not found')
            continue
        done = _run([found, name, '-o', Path(name).stem], workdir)
        if done is not None and done.returncode == 0:
            return found, tried
        tried.append(_why(done, given))
    return None, tried


def compiler_of(cc: str, workdir: Path) -> tuple[str, str]:
    """(family, version) of the compiler behind ``cc``, from its predefined macros."""
    done = _run([cc, '-dM', '-E', '-x', 'c', '/dev/null'], workdir)
    macros = dict(DEFINE.findall(done.stdout)) if done and done.returncode == 0 else {}
    for family, mark, parts in COMPILER_MACROS:
        if mark in macros:
            found = [macros[p].strip() for p in parts if p in macros]
            return family, '.'.join(found) or UNKNOWN
    return UNKNOWN, UNKNOWN


def library_of(program: Path, workdir: Path) -> tuple[str, str, str]:
    """(flavour, version, first line of MPI_Get_library_version) of a built probe."""
    done = _run([str(program)], workdir)
    text = (done.stdout.strip().splitlines() or [''])[0] if done and done.returncode == 0 else ''
    found = flavours.identify_library(text) if text else None
    if found:
        return found[0], found[1], text
    return UNKNOWN, UNKNOWN, text


def learn(name: str, cc: str | None, ftn: str | None, workdir: Path) -> dict:
    """The extras an environment ``name`` would carry, learned (see the module's docstring);
    ``cc``/``ftn``: the environment's own compilers. ``workdir`` is scratch space."""
    workdir.mkdir(parents=True, exist_ok=True)
    mpicc, tried = _first_that_builds([cc, 'mpicc'], PROBE_C, 'probe.c', workdir)
    if mpicc is None:
        raise ProbeError(f'environment {name!r}: no C compiler builds an MPI program '
                         f'({"; ".join(tried)}): set its cc to the MPI C wrapper (e.g. '
                         f"'cc': 'mpicc') or put that wrapper on PATH (modules, env_vars)")
    unknown: dict[str, str] = {}
    flavour, version, text = library_of(workdir / 'probe', workdir)
    if flavour == UNKNOWN:
        unknown['mpi'] = (f'MPI_Get_library_version says "{text[:80]}", which no known flavour '
                          f'matches ({", ".join(sorted(flavours.FLAVOURS))}): set the extras '
                          f"'mpi' and 'mpi_version'" if text else
                          'the probe built with it did not run')
    family, compiler_version = compiler_of(mpicc, workdir)
    if family == UNKNOWN:
        unknown['compiler'] = (f'{mpicc} defines none of the known compilers\' macros: set '
                               f"the extras 'compiler' and 'compiler_version'")
    mpifc, tried_f = _first_that_builds([ftn, 'mpifort', 'mpif90'], PROBE_F, 'probe_f.f90',
                                        workdir)
    if mpifc is None:
        unknown['fortran'] = ('no Fortran compiler builds a `use mpi` program '
                              f'({"; ".join(tried_f)})')
    return {'stack': name, 'compiler': family, 'compiler_version': compiler_version,
            'mpi': flavour, 'mpi_version': version, 'mpi_library_text': text,
            'mpi_library': [flavour, version] if flavour != UNKNOWN else [],
            'build': 'cmake', 'languages': ['c', 'fortran'] if mpifc else ['c'],
            'has_fortran': bool(mpifc), 'mpi_cc': mpicc, 'mpi_fc': mpifc or '',
            'unknown': unknown}
