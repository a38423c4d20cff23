"""The benchmarks behind ``commcheck bench``: measurements of commcheck's own tools, not tests.

- :mod:`commcheck.bench.pingpong`: our C ping-pong beside NetPIPE and OSU on the same stack;
- :mod:`commcheck.bench.gate`: the gate's false alarms and power on real sessions, beside the
  previous rule (kept in that module as the benchmark's comparator, so a change of the rule is
  measured against what it replaced) and ReFrame's ``--performance-compare``;
- :mod:`commcheck.bench.history`: what the gate's data path costs as the stored history grows;
- :mod:`commcheck.bench.upgrade`: the paired upgrade rule on real sessions;
- :mod:`commcheck.bench.firstrun`: a fresh clone's first and second ``make run``, the
  README's timing figures, stated with their machine (:mod:`commcheck.bench.machine`).

Its layer sits between ``report`` and ``cli`` and imports only downwards, as every layer does, so
the command's parser (:mod:`commcheck.cli.bench`) stays thin and no import cycle can form.
"""
