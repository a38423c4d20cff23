"""ReFrame configuration of a declared site: ``COMMCHECK_SITE=<name> reframe -C config/site.py``.

``COMMCHECK_SITE`` is a site file's name in ``config/sites/`` (``mycluster`` for
``config/sites/mycluster.yaml``), a path to a site file, or ``local`` (the default: this
machine, discovered). The file is validated; an error names the file, line and key, and the fix.
"""

import sys

from commcheck.site import SiteError
from commcheck.site.rfmconfig import reframe_configuration, site_from_environment

try:
    site_configuration = reframe_configuration(site_from_environment())
except SiteError as err:
    sys.exit(f'ERROR: commcheck site: {err}')
