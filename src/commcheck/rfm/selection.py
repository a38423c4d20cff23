"""Which environments a check runs on, under any site's configuration, and a failed test case,
never an empty green session, where it can run on none.

ReFrame's conventions hold: a check's ``valid_prog_environs`` is
:data:`commcheck.site.vocabulary.ANY_MPI` until ``-S valid_prog_environs=...`` (or
``-S Check.valid_prog_environs=...``) names others, as for hpctestlib's tests; only the default
is narrowed, per test, to the environments that can run its language
(:func:`commcheck.site.vocabulary.environments_for`). ``valid_systems`` is ``*`` unless ``-S``
says otherwise.

Nothing measurable: when a check's selection (before the narrowing) matches no environment on
any partition ``valid_systems`` reaches, its first variant is kept on each of those partitions
that has an environment, and fails there at setup with one line: the partition, what is
missing, and the smallest change that adds it (:func:`refuse`). A system with no environment
on any reached partition cannot hold a test case at all: loading the checks stops with those
lines and exit 1.
"""

from __future__ import annotations

import reframe.core.runtime as rt

from commcheck.rfm.learned import ConfigurationProblem
from commcheck.site import vocabulary

#: Where a check that can measure nothing keeps its reasons, by partition (full name).
NOTHING = '_commcheck_nothing_to_measure'


def select(check, needs: tuple[str, ...]) -> None:
    """Narrows the default selection to ``needs``; keeps a check that can measure nothing as
    a failing test case (the module's docstring)."""
    if check.is_fixture():          # a fixture runs where its parent does
        return
    chosen = list(check.valid_prog_environs)
    if chosen == vocabulary.ANY_MPI:
        check.valid_prog_environs = vocabulary.environments_for(needs)
    reached = rt.valid_sysenv_comb(check.valid_systems, chosen)
    if any(reached.values()) or check.variant_num != 0:
        return
    system = rt.runtime().system
    why = {part.fullname: _why(part, chosen) for part in reached} or {
        system.name: f'valid_systems={",".join(check.valid_systems)} selects none of the '
                     f'partitions of {system.name} '
                     f'({", ".join(p.name for p in system.partitions) or "none"})'}
    holding = [part for part in reached if part.environs]
    if not holding:
        raise SystemExit('\n'.join(f'ERROR: commcheck: nothing to measure on {where}: {line}'
                                   for where, line in why.items()))
    setattr(check, NOTHING, why)
    check.valid_systems = [part.fullname for part in holding]
    check.valid_prog_environs = list(dict.fromkeys(part.environs[0].name for part in holding))


def _why(part, chosen: list[str]) -> str:
    names = [env.name for env in part.environs]
    if not names:
        return ("it has no environments: list your MPI environments in the partition's "
                "'environs'")
    described = ', '.join(f'{env.name} (features: {", ".join(env.features) or "none"})'
                          for env in part.environs)
    if chosen == vocabulary.ANY_MPI:
        return (f'none of its environments, {described}, is an MPI environment (a feature '
                f'{" or ".join(map(repr, vocabulary.MPI_FEATURES))}): add \'mpi\' to the '
                f'features of your MPI environments, or name them: '
                f'-S valid_prog_environs={names[0]}')
    return (f'valid_prog_environs={",".join(chosen)} selects none of its environments '
            f'({", ".join(names)}): name one of them (-S valid_prog_environs={names[0]})')


def refuse(check) -> None:
    """Fails a check kept by :func:`select` as a failing test case, with its one line."""
    why = getattr(check, NOTHING, None)
    if why:
        part = check.current_partition.fullname
        raise ConfigurationProblem(f'nothing to measure on {part}: '
                                   f'{why.get(part, next(iter(why.values())))}')
