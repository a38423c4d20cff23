"""What was recorded: readers of ReFrame's results database, run reports and perflogs
(:mod:`.store`), the derived sample index, archiving, reference files, and the guards that keep
stored data safe before a run (:mod:`.preflight`).

Imports only the package's base modules (paths, errors, experiments, yamltext).
"""
