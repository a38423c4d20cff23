"""A site's facts, declared once: partitions and compiler x MPI stacks.

A site is a :class:`Site`, read from a site file (``config/sites/<name>.yaml``, see
:mod:`commcheck.site.sitefile`) or filled in by discovery for the embedded local site
(:mod:`commcheck.site.discover`). Everything else is generated from it: the ReFrame configuration
(:mod:`commcheck.site.rfmconfig`), the features the checks select on, the launch line of every job
(:mod:`commcheck.site.launch`) and the Spack environments (:mod:`commcheck.site.spack_env`).

The model lives in :mod:`commcheck.site.model` and is re-exported here (``from commcheck.site
import Site`` keeps working). The models validate themselves (pydantic): unknown keys, wrong
types, wrappers that are not executable, prefixes that do not exist, a stack declared with a
language it cannot build.
"""

from __future__ import annotations

from commcheck.site.model import (
    COMPILER_FAMILIES,
    SPACK_COMPILERS,
    Compiler,
    Language,
    Mpi,
    Osu,
    Partition,
    Site,
    SiteError,
    SpackSettings,
    Stack,
    UpgradePair,
    env_flag,
    env_int,
)

__all__ = ['COMPILER_FAMILIES', 'SPACK_COMPILERS', 'Compiler', 'Language', 'Mpi', 'Osu',
           'Partition', 'Site', 'SiteError', 'SpackSettings', 'Stack', 'UpgradePair', 'env_flag',
           'env_int']
