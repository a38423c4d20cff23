"""ReFrame configuration of the embedded default site: this machine, as discovered.

One environment per compiler x MPI stack found (see ``commcheck.discover``); the same as
``COMMCHECK_SITE=local reframe -C config/site.py``. Loading it writes nothing.
"""

import sys

from commcheck.discover import local_site
from commcheck.rfmconfig import reframe_configuration
from commcheck.site import SiteError

try:
    site_configuration = reframe_configuration(local_site())
except SiteError as err:
    sys.exit(f'ERROR: commcheck local site: {err}')
