"""The gate's verdicts as JUnit XML (``commcheck compare --junit FILE``; ``commcheck upgrade
--junit FILE`` the same of its paired judgements), the format CI pages read (GitLab's
``artifacts:reports:junit``, GitHub test-report actions), so the page shows each judged
variable's verdict.

One ``testsuite`` per system, partition and environment (in name order, as compare prints its
blocks), one ``testcase`` per judged key variable: ``classname`` system/partition/environment/
test, ``name`` the variable. A verdict that fails the gate (:func:`verdicts.fails`: the ones
``compare`` exits 1 on) is a ``failure``; a verdict that decides nothing (cannot tell, no
baseline, not comparable) is ``skipped``; the rest pass. The message holds the verdict, the
interval of what was judged, the threshold and the note, its text the whole row; a passing
test case's ``system-out`` holds the whole row, so its verdict (unchanged, improved, machine
changed) is shown too. An upgrade's judgement with an acceptance margin fails when it was
refused and is skipped while undecided; its message says the margin and the bound reached.
Written with the standard library's ElementTree.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from pathlib import Path

from commcheck.analysis import paired, verdicts

#: The ``name`` of the ``testsuites`` root (``commcheck upgrade``'s: :data:`UPGRADE_SUITES`).
SUITES = 'commcheck compare'
UPGRADE_SUITES = 'commcheck upgrade'


def classname(comp) -> str:
    system, partition, environ, test, _ = comp.key
    return f'{system}/{partition}/{environ}/{test}'


def message(comp) -> str:
    """One line: the verdict, the judged quantity's change and interval (worse positive), its
    threshold, the floor's, the acceptance (an upgrade's, with a margin), the note."""
    parts = [comp.verdict]
    upgrade = isinstance(comp, paired.Judgement)
    if comp.cost and math.isfinite(comp.cost.high):
        what = comp.judged() if upgrade else "MPI's own cost" if comp.floor else 'value'
        parts.append(f'{what} {comp.cost.interval()} worse-positive, threshold '
                     f'{math.expm1(comp.cost.threshold):.1%} ({comp.cost.level}), detectable '
                     f'>= {comp.cost.detectable:.0%}')
    if upgrade and comp.accept is not None:
        parts.append(verdicts.accepted(comp.acceptance, comp.accept, comp.bound))
    if comp.floor:
        parts.append(f'floor {comp.floor_variable} {comp.floor.interval()}, threshold '
                     f'{math.expm1(comp.floor.threshold):.1%}')
    if comp.note:
        parts.append(comp.note)
    return '; '.join(parts)


def details(comp) -> str:
    """The row in full: medians, launches a side (an upgrade's pairs and looks), what else
    changed."""
    d = comp.as_dict()
    if isinstance(comp, paired.Judgement):
        lines = [message(comp),
                 f"{comp.old} median {_num(d['median_old'])} {comp.unit}, {comp.new} "
                 f"{_num(d['median_new'])} {comp.unit}, pairs {d['pairs']} "
                 f"({d['machine_pairs']} left out), looks at {d['looks'] or [d['pairs']]}"]
        if comp.pairs_needed:
            lines.append(f'pairs in all that would decide: about {comp.pairs_needed}')
    else:
        lines = [message(comp),
                 f"baseline median {_num(d['median_base'])} {comp.unit}, now "
                 f"{_num(d['median_new'])} {comp.unit}, launches {d['n_base']}/{d['n_new']}"]
        if comp.launches_needed:
            lines.append(f'launches a side that would decide: about {comp.launches_needed}')
    lines += [f'what else changed: {k} {a} -> {b}'
              for k, (a, b) in comp.provenance_changes.items()]
    return '\n'.join(lines)


def _num(value) -> str:
    return '-' if value is None else f'{value:.4g}'


def kind_of(comp, fail_on_machine_change: bool) -> str:
    """``failure``, ``skipped`` or '' (passed): the verdict's, or an upgrade's acceptance."""
    accepting = isinstance(comp, paired.Judgement) and comp.accept is not None
    if verdicts.fails(comp.verdict, fail_on_machine_change) or (
            accepting and comp.acceptance == verdicts.FAIL):
        return 'failure'
    if comp.verdict in verdicts.UNDECIDED or (accepting and comp.acceptance is None):
        return 'skipped'
    return ''


def _case(suite: ET.Element, comp, fail_on_machine_change: bool) -> str:
    case = ET.SubElement(suite, 'testcase', classname=classname(comp), name=comp.variable,
                         time='0')
    kind = kind_of(comp, fail_on_machine_change)
    if kind:
        ET.SubElement(case, kind, message=message(comp), type=comp.verdict).text = details(comp)
    else:
        ET.SubElement(case, 'system-out').text = details(comp)
    return kind


def document(comparisons, title: str, fail_on_machine_change: bool = False) -> ET.ElementTree:
    """The JUnit tree of these verdicts; ``title`` (what was judged against what) is a property
    of every suite."""
    upgrade = any(isinstance(c, paired.Judgement) for c in comparisons)
    root = ET.Element('testsuites', name=UPGRADE_SUITES if upgrade else SUITES)
    blocks: dict[tuple[str, str, str], list] = {}
    for comp in sorted(comparisons, key=lambda c: c.key):
        blocks.setdefault(tuple(comp.key[:3]), []).append(comp)
    totals = {'tests': 0, 'failures': 0, 'skipped': 0}
    for block, comps in blocks.items():
        suite = ET.SubElement(root, 'testsuite', name='/'.join(block))
        props = ET.SubElement(suite, 'properties')
        ET.SubElement(props, 'property', name='compared', value=title)
        kinds = [_case(suite, c, fail_on_machine_change) for c in comps]
        counts = {'tests': len(kinds), 'failures': kinds.count('failure'),
                  'skipped': kinds.count('skipped')}
        suite.attrib.update({k: str(v) for k, v in counts.items()}, errors='0', time='0')
        totals = {k: totals[k] + counts[k] for k in totals}
    root.attrib.update({k: str(v) for k, v in totals.items()}, errors='0', time='0')
    ET.indent(root)
    return ET.ElementTree(root)


def write(path: Path, comparisons, title: str, fail_on_machine_change: bool = False) -> None:
    """The JUnit file, replaced whole (written beside it, then renamed: a CI step reading it
    never sees half a file)."""
    tree = document(comparisons, title, fail_on_machine_change)
    part = path.with_name(f'.{path.name}.part')
    tree.write(part, encoding='utf-8', xml_declaration=True)
    part.replace(path)
