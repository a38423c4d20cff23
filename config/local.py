"""ReFrame configuration of the embedded default site: this machine, as discovered.

One environment per compiler x MPI stack found (e.g. ``gnu-mpich``, ``gnu-openmpi``); see
``commcheck.discover`` for what is looked for and ``commcheck.site`` for what is generated.
"""

import sys

from commcheck.discover import local_site
from commcheck.site import SiteError

try:
    site_configuration = local_site().reframe_configuration()
except SiteError as err:
    sys.exit(f'ERROR: commcheck local site: {err}')
