"""ReFrame configuration of the embedded default site: this machine, as discovered.

One environment per compiler x MPI stack found (see ``commcheck.site.discover``); the same as
``COMMCHECK_SITE=local reframe -C config/site.py``. Loading it writes nothing.
"""

import sys

from commcheck.site import SiteError
from commcheck.site.discover import local_site
from commcheck.site.rfmconfig import reframe_configuration

try:
    site_configuration = reframe_configuration(local_site())
except SiteError as err:
    sys.exit(f'ERROR: commcheck local site: {err}')
