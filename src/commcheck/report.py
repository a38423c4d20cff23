"""The run report: today's measurements beside the seeds' published figures.

Writes ``report.md`` (tables), ``plots/*.png`` (matplotlib) and ``tables.json`` (the same tables,
machine-readable, for the full HTML report and baselines) into the output directory. Each
section is one function taking the run's cases; a section with no data says so in one line.
"""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use('Agg')
import matplotlib.pyplot as plt  # noqa: E402

from commcheck import results  # noqa: E402
from commcheck.report_sections import SECTIONS  # noqa: E402


class ReportError(ValueError):
    """No run report to read."""


def latest_run_report(runs_dir: Path) -> Path:
    found = sorted(Path(runs_dir).glob('run-report-*.json'), key=lambda p: p.stat().st_mtime)
    if not found:
        raise ReportError(f'no ReFrame run report in {runs_dir}: run `commcheck run` first')
    return found[-1]


def md_table(header: list[str], rows: list[list]) -> str:
    def cell(v):
        if v is None:
            return '–'
        if isinstance(v, float):
            return f'{v:.4g}'
        return str(v)
    lines = ['| ' + ' | '.join(header) + ' |', '|' + '---|' * len(header)]
    lines += ['| ' + ' | '.join(cell(v) for v in row) + ' |' for row in rows]
    return '\n'.join(lines)


def summary(session: dict, cases: list[results.Case]) -> tuple[str, dict]:
    tests = [c for c in cases if not c.fixture]
    counts: dict[str, int] = {}
    for c in tests:
        counts[c.result] = counts.get(c.result, 0) + 1
    rows, skipped = [], {}
    for c in sorted(tests, key=lambda c: (c.check, c.display_name, c.environ)):
        if c.result == 'skip':
            reason = c.get('skip_reason') or 'no reason recorded'
            skipped.setdefault(reason, []).append(f'{c.display_name} ({c.environ})')
            continue
        gated = {k: v for k, v in c.perf.items() if v.referenced}
        shown = ', '.join(f'{k}={v.value:.4g} {v.unit} (ref {v.ref:.4g})'
                          for k, v in sorted(gated.items())) or '–'
        rows.append([c.display_name, c.environ, c.result, c.get('reference_status', ''), shown])
    text = '\n'.join([
        '# commcheck report', '',
        f"Run {session.get('uuid', '')} on `{session.get('hostname', '')}`, "
        f"{session.get('time_start', '')} – {session.get('time_end', '')}, "
        f"ReFrame {session.get('version', '')}.", '',
        'Results: ' + ', '.join(f'{n} {r}' for r, n in sorted(counts.items())), '',
        '## All checks', '',
        md_table(['check', 'environment', 'result', 'references', 'gated values'], rows), '',
        '### Skipped', '',
        *[f'- {len(names)} x {reason}' for reason, names in sorted(skipped.items())]])
    return text, {'session': {k: session.get(k) for k in ('uuid', 'hostname', 'time_start',
                                                            'time_end', 'version', 'cmdline')},
                  'counts': counts}


def write_report(run_report: str | Path, out_dir: str | Path) -> Path:
    out_dir = Path(out_dir)
    plots = out_dir / 'plots'
    plots.mkdir(parents=True, exist_ok=True)
    session, cases = results.load(run_report)
    text, tables = summary(session, cases)
    parts = [text]
    for section in SECTIONS:
        body, data = section(cases, plots)
        parts.append(body)
        tables[section.__name__] = data
    tables['run_report'] = str(run_report)
    (out_dir / 'tables.json').write_text(json.dumps(tables, indent=1, default=str))
    report = out_dir / 'report.md'
    report.write_text('\n\n'.join(parts) + '\n')
    plt.close('all')
    return report
