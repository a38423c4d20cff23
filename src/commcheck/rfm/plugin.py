"""The base of commcheck's plugins (hooks and variables mixed into the checks), on every ReFrame
release the checks support (docs/own-config.md#reframe-releases): ``RegressionTestPlugin``
from ReFrame 4.9, the same class's older name ``RegressionMixin`` before it (deprecated since)."""

import reframe as rfm

#: What commcheck's plugins derive from.
Plugin = getattr(rfm, 'RegressionTestPlugin', None) or rfm.RegressionMixin
