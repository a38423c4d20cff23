"""How ranks are started: the launch line of a stack on a partition, from the declarations.

The partition says which launcher (the stack's own ``mpiexec``, or Slurm's ``srun``), how ranks
are bound, and whether a pair shares a node; the stack's flavour record says how its launcher
spells that. Checks never build launch lines themselves: ReFrame jobs get a
:class:`commcheck.rfm.launcher.StackLauncher`, tools outside ReFrame call :func:`argv` too.
"""

from __future__ import annotations

import os

from commcheck.site import flavours, mpj
from commcheck.site import vocabulary as vocab


def argv(env: dict, part: dict, ranks: int, per_node: int | None = None,
         oversubscribed: bool = False) -> list[str]:
    """The words before the program: ``env`` and ``part`` are the environment's and the
    partition's ``extras`` as :mod:`commcheck.site.rfmconfig` generates them."""
    record = flavours.flavour(env['mpi'])
    if record.java:
        # MPJ Express's multicore device: all ranks are threads of one JVM on one node,
        # started directly (starter.jar would swallow the exit code; see commcheck.site.mpj).
        return mpj.launch_prefix(env['mpj_home'], ranks,
                                 os.path.join(env['java_build'], mpj.JAR_NAME))
    binding = part.get(vocab.BINDING, 'none')
    if part.get(vocab.LAUNCHER) == 'srun':
        cpu_bind = 'none' if oversubscribed or binding == 'none' else 'cores'
        return ['srun', f'--mpi={env["srun_mpi"]}', f'--cpu-bind={cpu_bind}']
    spread = per_node if per_node and part.get(vocab.NODES, 1) > 1 else None
    return record.launch_prefix(env['launcher'], ranks, binding=binding, per_node=spread,
                                oversubscribe=oversubscribed)
