"""Fabric acceptance: every node-pair sweep as heat maps (node x node, latency and bandwidth),
the named outliers first with the command that reruns just those nodes, and the collectives
across each partition.

The heat maps are drawn from the sweep's own records (the job output the run report points at),
judged again with the check's recorded settings (statistic, z, minimum effect), so the page
names what the check named; a difference is a warning. A sweep whose output is gone or invalid
is listed with the reason, never drawn.
"""

from __future__ import annotations

import glob
import math
import os
import re

from matplotlib.colors import LogNorm

from commcheck import experiments
from commcheck.analysis import fabric, kernel_records
from commcheck.report.context import Context, Section
from commcheck.report.model import Case, cases_of
from commcheck.report.plots import Painter

#: What Outlier.describe() starts with: kind, name, metric.
NAMED = re.compile(r'^(node|link) (\S+): (\w+) ')
#: The collectives' columns: OSU's collectives check's key variables, from the table.
COLLECTIVE_KEYS = experiments.key_variables('OsuCollectives')


def _records(case: Case) -> list[dict]:
    # A passed test's output is copied to its output directory; a failed one stays staged.
    places = [str(case.raw.get(k) or '') for k in ('outputdir', 'stagedir')]
    files = [f for d in places if d for f in sorted(glob.glob(os.path.join(d, '*.out')))]
    if not files:
        raise fabric.FabricError(f'the job output is not kept (no *.out in '
                                 f'{" or ".join(d for d in places if d) or "?"})')
    try:
        return kernel_records.parse_file(files[0])['DATA']
    except (OSError, kernel_records.RecordError) as err:
        raise fabric.FabricError(f'{files[0]}: {err}') from None


def _settings(case: Case) -> tuple[str, fabric.Settings]:
    raw = case.raw
    try:
        metrics = tuple(m.strip() for m in str(raw.get('metrics') or ','.join(
            fabric.Settings.metrics)).split(',') if m.strip() in fabric.METRICS)
        return (str(raw.get('statistic') or 'median'),
                fabric.Settings(z=float(raw.get('z', fabric.Settings.z)),
                                min_effect=float(raw.get('min_effect',
                                                         fabric.Settings.min_effect)),
                                metrics=metrics or fabric.Settings.metrics))
    except (TypeError, ValueError):
        return 'median', fabric.Settings()


def _past(ctx: Context, case: Case, statistic: str) -> list[list[fabric.Pair]]:
    """The same sweep (system, partition, environment) in earlier stored sessions whose job
    output is still there, oldest first; a sweep that cannot be read is left out."""
    past = []
    earlier = ctx.history.sessions_with('FabricSweep', case.system, case.partition,
                                        case.environ)
    for old in cases_of(s for s in earlier if s.uuid != case.session):
        if (old.check, old.system, old.partition, old.environ) != (
                'FabricSweep', case.system, case.partition, case.environ) or old.fixture:
            continue
        try:
            past.append(fabric.pairs_from_records(_records(old), statistic))
        except fabric.FabricError:
            continue
    return past


def _finite(grid):
    return [[None if v is None or math.isnan(v) else v for v in row] for row in grid]


def sweep_of(ctx: Context, case: Case) -> dict:
    row = {'environ': case.environ, 'partition': case.partition, 'session': case.session,
           'result': case.result, 'problem': '', 'plot': None}
    statistic, settings = _settings(case)
    try:
        judged = fabric.judge(fabric.pairs_from_records(_records(case), statistic), settings)
    except fabric.FabricError as err:
        row['problem'] = str(err)
        return row
    recorded = {m.groups() for o in case.raw.get('outliers') or []
                if (m := NAMED.match(str(o)))}
    found = {(o.kind.replace('history', 'link vs its past'), o.name, o.metric)
             for o in judged.outliers}
    if recorded != found:
        ctx.warn(f'fabric: {case.label}: the check named {sorted(recorded)}, the report '
                 f'{sorted(found)} from the same records')
    row.update(
        statistic=statistic, z=settings.z, min_effect=settings.min_effect,
        metrics=', '.join(settings.metrics), nodes=judged.nodes,
        outliers=[{'text': o.describe(), 'kind': o.kind, 'name': o.name, 'metric': o.metric,
                   'value': o.value, 'reference': o.reference, 'unit': o.unit,
                   'z': None if math.isinf(o.z) else o.z, 'effect': o.effect}
                  for o in judged.outliers],
        rerun=fabric.rerun_command(judged), notes=judged.notes,
        history=_history(ctx, case, judged, statistic, settings),
        latency=_finite(fabric.matrix(judged.pairs, judged.nodes, 'latency')),
        bandwidth=_finite(fabric.matrix(judged.pairs, judged.nodes, 'bandwidth')),
        per_node=[{'node': n, 'latency': judged.node_values['latency'][n],
                   'latency_z': judged.node_z['latency'][n],
                   'bandwidth': judged.node_values['bandwidth'][n],
                   'bandwidth_z': judged.node_z['bandwidth'][n]} for n in judged.nodes])
    return row


def _history(ctx, case, judged, statistic, settings) -> dict:
    past = _past(ctx, case, statistic)
    worse = fabric.against_history(judged.pairs, past, settings)
    return {'sweeps': len(past), 'worse': [o.describe() for o in worse]}


def _heatmap(p: Painter, sweep: dict):
    nodes = sweep['nodes']
    n = len(nodes)
    size = min(7.0, 1.6 + 0.45 * n)
    fig, axes = p.figure(2 * size + 1.6, size + 0.4, ncols=2, left=1.0, bottom=1.0, wspace=1.4)
    for ax, key, unit, cmap in ((axes[0][0], 'latency', 'us', 'magma_r'),
                                (axes[0][1], 'bandwidth', 'MB/s', 'magma')):
        grid = [[math.nan if v is None else v for v in row] for row in sweep[key]]
        vals = [v for row in grid for v in row if not math.isnan(v)]
        if not vals:
            continue
        # The scale spans at least a factor of 3, so that the 10 % differences of a healthy
        # fabric stay one colour and only a real outlier stands out.
        low, high = min(vals), max(vals)
        low, high = (low, max(high, 3 * low)) if key == 'latency' else (min(low, high / 3), high)
        image = ax.imshow(grid, cmap=cmap, norm=LogNorm(low, high))
        ax.set_xticks(range(n), nodes, rotation=90, fontsize=7)
        ax.set_yticks(range(n), nodes, fontsize=7)
        ax.set_title(f'{key} ({unit}){"; row sends" if key == "bandwidth" else ""}', fontsize=9)
        fig.colorbar(image, ax=ax, shrink=0.8, format='%.3g')
        if n <= 12:
            for i in range(n):
                for j in range(n):
                    if not math.isnan(grid[i][j]):
                        ax.text(j, i, f'{grid[i][j]:.3g}', ha='center', va='center',
                                fontsize=6, bbox={'fc': 'white', 'alpha': 0.6, 'lw': 0,
                                                  'pad': 0.5})
    return fig


def collectives(ctx: Context) -> list[dict]:
    rows = []
    for case in ctx.cases:
        if case.fixture or case.check not in ('Collectives', 'OsuCollectives'):
            continue
        perf = case.raw.get('perfvalues') or {}
        values = {str(k).split(':')[-1]: v[0] for k, v in perf.items()
                  if isinstance(v, (list, tuple)) and v}
        rows.append({'check': case.check, 'test': case.test, 'environ': case.environ,
                     'partition': case.partition, 'ranks': case.raw.get('num_tasks'),
                     'per_node': case.raw.get('num_tasks_per_node'), 'result': case.result,
                     **{k: values.get(k) for k in COLLECTIVE_KEYS}})
    return rows


def build(ctx: Context) -> Section:
    sweeps = [sweep_of(ctx, c) for c in ctx.cases
              if not c.fixture and c.check == 'FabricSweep' and c.result in ('pass', 'fail')]
    sweeps.sort(key=lambda s: (not s.get('outliers'), s['environ'], s['partition']))
    plots = []
    for s in sweeps:
        if s.get('nodes'):
            s['plot'] = ctx.plots.draw(
                _heatmap, f'fabric-{s["environ"]}-{s["partition"]}',
                f'Node-pair heat maps, {s["environ"]} on {s["partition"]} ({s["statistic"]} '
                f'batch): one-way latency and bandwidth (row: sender)', s)
            plots.append(s['plot'])
    rows = collectives(ctx)
    title = experiments.BY_CHECK['FabricSweep'].title
    return Section({'sweeps': sweeps, 'collectives': rows, 'keys': COLLECTIVE_KEYS,
                    'title': title}, 'fabric.html.j2', plots)
