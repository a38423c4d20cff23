"""The report says what the default run left out and how to have it, and which grid the kept
oversubscribed runs used: a real session's run report (quick mode: 1, 2 and 4 ranks) whose
4-rank stencil cases are recorded as a default run records them, those of one variant left out
(skipped with the reason the check gives) and the others run on the small grid."""

from __future__ import annotations

import copy

from commcheck import experiments
from commcheck.report import write_report
from tests.report.conftest import all_cases, session_of
from tests.report.test_report import section


def test_the_stencil_section_names_what_was_left_out_and_the_small_grid(raw_reports, tmp_path):
    report = copy.deepcopy(raw_reports['main'])
    stencil = [tc for tc in all_cases(report) if tc['name'].startswith('Stencil ')]
    four = [tc for tc in stencil if str(tc.get('ranks')) == '4' and tc['result'] == 'pass']
    left = [tc for tc in four if tc.get('variant') == 'sr']
    assert left and len(left) < len(four)
    for tc in left:
        tc.update(result='skip', perfvalues={},
                  skip_reason=f'4 ranks on 2 cores: {experiments.LEFT_OUT}')
    for tc in four:
        if tc not in left:
            tc.update(small_grid=True, n=48, steps=10)
    index = write_report([session_of(report)], tmp_path / 'reports')
    html = section(index, 'stencil')
    assert 'Left out of this run' in html and f'4 ranks ({len(left)} test cases)' in html
    assert '--mode full' in html and '4 ranks: 48², 10 steps' in html
    assert 'Grid 48' not in html            # the full grid is the one the judged runs used
