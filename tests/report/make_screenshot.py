"""Regenerate ``docs/report-top.png``: the top of the report of the test fixtures, as Chromium
shows it (the README's picture).

    .venv/bin/python tests/report/make_screenshot.py
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO))

from PIL import Image  # noqa: E402  (matplotlib's dependency)
from playwright.sync_api import sync_playwright  # noqa: E402

from commcheck.report import write_report  # noqa: E402
from tests.report.browser import open_page  # noqa: E402
from tests.report.conftest import FIXTURES, LABELS, raw_report, session_of  # noqa: E402

OUT = REPO / 'docs' / 'report-top.png'
WIDTH, HEIGHT = 1100, 760


def main() -> int:
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        (tmp / 'refs').mkdir()
        shutil.copy(FIXTURES / 'local.baseline.json', tmp / 'refs')
        os.environ['RFM_REFERENCE_PREFIX'] = str(tmp / 'refs')
        sessions = [session_of(raw_report(label)) for label in LABELS]
        index = write_report(sessions[-1:], tmp / 'reports', history_sessions=sessions,
                             gate=json.loads((FIXTURES / 'gate.json').read_text()))
        shot = tmp / 'top.png'
        with sync_playwright() as pw:
            context, page = open_page(pw, tmp / 'profile', viewport=(WIDTH, HEIGHT))
            page.goto(index.as_uri(), wait_until='load')
            page.screenshot(path=str(shot))
            context.close()
        OUT.parent.mkdir(exist_ok=True)
        Image.open(shot).convert('RGB').quantize(colors=64, dither=Image.Dither.NONE).save(
            OUT, optimize=True)
    print(f'{OUT.relative_to(REPO)}: {OUT.stat().st_size // 1024} kB')
    return 0


if __name__ == '__main__':
    sys.exit(main())
