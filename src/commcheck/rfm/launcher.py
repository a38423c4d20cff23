"""The ReFrame launcher of every commcheck job: the launch line the declarations give."""

from __future__ import annotations

from reframe.core.launchers import JobLauncher

from commcheck.site import launch


class StackLauncher(JobLauncher):
    """Starts the job's ranks with the stack's own launcher (or ``srun`` with its plugin),
    bound and placed as the partition declares; see :func:`commcheck.site.launch.argv`."""

    def __init__(self, env_extras: dict, part_extras: dict, per_node: int | None,
                 oversubscribed: bool):
        super().__init__()
        self._env, self._part = dict(env_extras), dict(part_extras)
        self._per_node, self._oversubscribed = per_node, oversubscribed

    def command(self, job):
        return launch.argv(self._env, self._part, job.num_tasks, self._per_node,
                           self._oversubscribed)
