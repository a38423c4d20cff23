"""``commcheck baseline``: references from recorded launches, for ReFrame and for the gate.

From the samples of stored sessions (oversubscribed runs never count), per system, partition,
environment, test and key variable: the median, a robust spread (MAD), the count. Two files
are written, atomically, each keeping its previous version as ``<name>.prev``:

- ``<system>.baseline.json``: the launch samples and their provenance, which
  ``commcheck compare`` tests new launches against;
- ``<system>.yaml``: ReFrame's ``$ref`` file, which plain ``reframe -c checks -r`` gates one
  launch on, against gross breakage (a lost binding, a transport fallen back to TCP: 10x and
  more): a slowdown factor of ``1 + max(floor (1.0), 5 x 1.4826 MAD / median, 3 x the slowest
  baseline launch's excess)`` in the direction that is worse (the other side is unbounded).
  Smaller shifts are the statistical gate's (``commcheck compare``). Floor variables are kept
  in the baseline file (the gate judges MPI's own cost against them) but get no ``$ref``.
  A key variable with a floor is referenced through its own cost over that floor
  (``own_latency_8B``, a perf variable of the same launch: ``experiments.own_costs``), with
  a bound of at least ``own_floor`` (4.0: five times the baseline's own cost); its raw figure
  then gets no ``$ref``: a machine's regime moves the raw figure and the floor alike (this
  project's VM: the 8 B path 4x between regimes), and a raw bound wide enough for that would
  miss what the own cost catches. The own cost moved 1.2-2.3x across those regimes; a
  transport fallen back to TCP makes it 20-50x (docs/floors.md).

Entries of checks that the selected sessions did not run are kept from the previous file. The
baseline file's format, its reader and writer: :mod:`commcheck.results.baselinefile`.
"""

from __future__ import annotations

import dataclasses
import re
import statistics
import time
from pathlib import Path

import yaml

from commcheck import experiments
from commcheck.analysis import robust
from commcheck.results import references
from commcheck.results.baselinefile import (
    BaselineError,
    BaselineFile,
    Variable,
    baseline_path,
    save,
)
from commcheck.results.store import Session, group

PARAM = re.compile(r'%([\w.]+)=(\S+)')


@dataclasses.dataclass(frozen=True)
class Policy:
    min_samples: int = 5        #: launches a variable needs to be baselined
    #: The narrowest bound of ReFrame's one-launch reference, as a slowdown factor minus 1
    #: (1.0: twice as slow). Plain ReFrame judges one launch, and one launch can land in a
    #: slow placement (on the CI VM a clean 1 MiB launch measured 27 % of the baseline
    #: median), so its bound catches gross breakage only (a transport fallen back to TCP is
    #: 10x and more); every smaller change is ``commcheck compare``'s, on all launches and
    #: against the hardware floor.
    floor: float = 1.0
    #: The narrowest bound of an own cost's reference (a key variable over its floor of the
    #: same launch), as a slowdown factor minus 1: across this VM's regimes the own cost moved
    #: up to 2.3x (the raw 8 B latency 4x), over TCP it grows 20-50x; 5x lies between both
    #: with a margin of 2x or more on either side, so one launch's verdict does not depend on
    #: the regime the baseline or the rerun ran in.
    own_floor: float = 4.0
    mad_factor: float = 5.0
    spread_factor: float = 3.0
    all_variables: bool = False  #: every variable with a direction, not only the key ones


def tolerance(values: list[float], direction: str, policy: Policy,
              own: bool = False) -> tuple[float, float, float]:
    """(median, MAD, bound as a fraction of the median) of one variable's launches.

    The bound is a slowdown factor 1 + r, r = max(floor, 5 x 1.4826 MAD / median, 3 x (the
    slowest baseline launch's factor - 1)): +r for a lower-is-better variable, -(1 - 1/(1 + r))
    for a higher-is-better one (a factor 2 is +100 % latency or -50 % bandwidth). ``floor``
    is the policy's ``own_floor`` for an own cost (``own``), else its ``floor``."""
    med = statistics.median(values)
    mad = robust.mad(values, med)
    lower = direction == experiments.LOWER_IS_BETTER
    slowest = max(values) / med if lower else med / min(values)
    excess = max(policy.own_floor if own else policy.floor,
                 policy.mad_factor * robust.MAD_TO_SIGMA * mad / med,
                 policy.spread_factor * (slowest - 1))
    return med, mad, excess if lower else 1 - 1 / (1 + excess)


def _variable(samples: list, direction: str, median: float, mad: float,
              tol: float) -> Variable:
    """One baselined variable from its launches' samples (of one key)."""
    first = samples[0]
    return Variable(
        system=first.system, partition=first.partition, environ=first.environ,
        test=first.test, variable=first.variable, unit=first.unit, direction=direction,
        median=median, mad=mad, tolerance=tol, samples=[s.value for s in samples],
        provenance=[s.prov for s in samples], sessions=[s.session for s in samples],
        times=[s.time for s in samples])


def compute(sessions: list[Session], system: str, policy: Policy,
            warn) -> list[Variable]:
    samples = [s for sess in sessions for s in sess.samples
               if s.system == system and not s.oversubscribed]
    if not samples:
        raise BaselineError(f'no measurements of system {system!r} in the selected sessions '
                            f'({len(sessions)} session(s))')
    chosen, short = [], []
    for key, group_samples in sorted(group(samples).items()):
        first = group_samples[0]
        direction = experiments.direction(first.check, first.variable, first.unit)
        key_vars = experiments.gated_variables(first.check)     # with their floors
        if direction is None or not (policy.all_variables or first.variable in key_vars):
            continue
        values = [s.value for s in group_samples]
        if len(values) < policy.min_samples:
            short.append((key, len(values)))
            continue
        if first.variable == experiments.CPU_WAIT:
            # the launches' CPU contention, kept for the gate to compare with (a quiet node's
            # is 0): no bound, never referenced
            med = statistics.median(values)
            chosen.append(_variable(group_samples, direction, med, robust.mad(values, med), 0.0))
            continue
        if statistics.median(values) <= 0:
            warn(f'{" ".join(key[2:])}: median {statistics.median(values):g} {first.unit} is not '
                 f'positive (no bound is a fraction of it); not baselined')
            continue
        med, mad, tol = tolerance(values, direction, policy,
                                  own=bool(experiments.own_cost_of(first.check, first.variable)))
        chosen.append(_variable(group_samples, direction, med, mad, tol))
    if not chosen:
        most = max((n for _, n in short), default=0)
        raise BaselineError(f'too few launches to baseline: at most {most} per variable, need '
                            f'{policy.min_samples} (run with `--repeat {policy.min_samples}` or '
                            f'select more sessions)')
    for key, n in short:
        warn(f'{" ".join(key[2:])}: {n} launch(es) < {policy.min_samples}; not baselined')
    return chosen


def index_of(test: str) -> list[str]:
    """The test's parameters, as ReFrame ``$index`` attributes (fixture parameters by name)."""
    return [name.split('.')[-1] for name, _ in PARAM.findall(test) if name != '.repeat_no']


def _index_key(value: str):
    """An index level's key: numbers as numbers, names as the anchored regular expressions
    ReFrame matches string keys as (escaped where they hold regex characters)."""
    if value.isdigit():
        return int(value)
    return re.escape(value) if re.search(r'[.^$*+?{}\[\]\\|()]', value) else value


def ref_entries(variables: list[Variable]) -> dict:
    """``$ref`` entries: check -> {$index: [$partition, $environ, params...], nested levels}.
    Neither floors nor the raw figures whose own cost is referenced get one."""
    out: dict = {}
    owned = set()
    for v in variables:
        cost_of = experiments.own_cost_of(experiments.check_of(v.test), v.variable)
        if cost_of:
            owned.add((v.partition, v.environ, v.test, cost_of[0]))
    for v in variables:
        check = experiments.check_of(v.test)
        if experiments.is_floor(check, v.variable):
            continue        # the machine's figure: gated by `commcheck compare`, not ReFrame
        if (v.partition, v.environ, v.test, v.variable) in owned:
            continue        # referenced through its own cost over the floor
        params = index_of(v.test)
        entry = out.setdefault(check, {'$index': ['$partition', '$environ', *params]})
        level = entry.setdefault(f'{v.system}:{v.partition}', {}).setdefault(
            _index_key(v.environ), {})
        for _, value in PARAM.findall(v.test):
            level = level.setdefault(_index_key(value), {})
        lower = -v.tolerance if v.direction == experiments.HIGHER_IS_BETTER else None
        upper = v.tolerance if v.direction == experiments.LOWER_IS_BETTER else None
        level[v.variable] = [float(f'{v.median:.6g}'), _round(lower), _round(upper), v.unit]
    return out


def _round(value: float | None):
    return None if value is None else round(value, 4)


def render_refs(entries: dict, previous: dict, system: str, sessions: list[str]) -> str:
    merged = {k: v for k, v in (previous or {}).items() if k not in entries}
    merged.update(entries)
    head = (f'# Performance references of system {system}, written by `commcheck baseline`\n'
            f'# from {len(sessions)} session(s): {", ".join(s[:8] for s in sessions)}.\n'
            '# [value, lower, upper, unit]: bounds are fractions of value from the measured\n'
            '# launch-to-launch noise (see commcheck.analysis.baseline); null = unbounded.\n')
    return head + yaml.safe_dump(merged, sort_keys=False, default_flow_style=None, width=100)


def write(ref_dir: Path, system: str, sessions: list[Session], variables: list[Variable],
          policy: Policy) -> dict[str, str]:
    """Write both files; returns what changed in the references, as a unified diff."""
    ref_file = ref_dir / f'{system}.yaml'
    old_text = ref_file.read_text(encoding='utf-8') if ref_file.exists() else ''
    previous = {}
    if old_text:
        problem = references.problem(ref_file)
        if problem:
            raise BaselineError(f'{problem} (fix or move it; it is not overwritten)')
        previous = yaml.safe_load(old_text) or {}
    uuids = [s.uuid for s in sessions]
    record = BaselineFile(system=system, created=time.strftime('%Y-%m-%dT%H:%M:%S%z'),
                          sessions=uuids, policy=dataclasses.asdict(policy), variables=variables)
    new_text = render_refs(ref_entries(variables), previous, system, uuids)
    references.validate_text(new_text, str(ref_file))      # never write what ReFrame rejects
    save(baseline_path(ref_dir, system), record)
    references.write_atomic(ref_file, new_text)
    return {'references': str(ref_file), 'baseline': str(baseline_path(ref_dir, system)),
            'diff': references.diff(old_text, new_text, ref_file.name)}

