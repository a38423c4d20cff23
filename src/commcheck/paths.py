"""Where commcheck keeps things, relative to the checkout (overridable by environment)."""

import os
from pathlib import Path

REPO_ROOT = Path(os.environ.get('COMMCHECK_ROOT', Path(__file__).resolve().parents[2]))
CHECKS_DIR = REPO_ROOT / 'checks'
CONFIG_DIR = REPO_ROOT / 'config'
REFERENCES_DIR = CONFIG_DIR / 'references'


def references_dir() -> Path:
    """Where ReFrame's references and commcheck's baselines are: ``RFM_REFERENCE_PREFIX``
    (ReFrame's own setting, read when called), else ``config/references``."""
    return Path(os.environ.get('RFM_REFERENCE_PREFIX') or REFERENCES_DIR)

KERNELS_SRC = REPO_ROOT / 'src' / 'kernels'
SPACK_ENV_DIR = REPO_ROOT / 'spack-env'
SPACK_PACKAGE_REPO = SPACK_ENV_DIR / 'repo'

# Generated, git-ignored: ReFrame stage/output, per-stack command links, Spack views.
STATE_DIR = Path(os.environ.get('COMMCHECK_STATE', REPO_ROOT / '.state'))

# MPI stacks installed from PyPI by `commcheck setup-mpi` (software, not run state: a test
# that moves COMMCHECK_STATE still finds them).
WHEELS_DIR = Path(os.environ.get('COMMCHECK_WHEELS_DIR', REPO_ROOT / '.state' / 'wheels'))

# Builds that take minutes and depend only on a stack (mpi4py per MPI wrapper, keyed by the
# wrapper, its MPI version and the Python): the user's cache, kept across state directories and
# checkouts (a fresh clone in CI reuses them).
CACHE_DIR = Path(os.environ.get('COMMCHECK_CACHE') or
                 Path(os.environ.get('XDG_CACHE_HOME') or Path.home() / '.cache') / 'commcheck')

# Results that must survive between runs: run reports, perflogs, ReFrame's results database.
REPORTS_DIR = Path(os.environ.get('COMMCHECK_REPORTS', REPO_ROOT / 'reports'))
RUNS_DIR = REPORTS_DIR / 'runs'
PERFLOG_DIR = REPORTS_DIR / 'perflogs'
RESULTS_DB = REPORTS_DIR / 'results.db'
