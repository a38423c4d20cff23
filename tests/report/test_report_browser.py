"""The report as a reader opens it: headless Chromium, from the file system, offline.

Needs the ``playwright`` package and Debian's ``chromium``; without them the test is skipped,
except under ``CI=true`` where it fails.
"""

from __future__ import annotations

import os
import time

import pytest

from tests.report.browser import chromium_path, open_page
from tests.report.conftest import all_cases, session_of

IN_CI = os.environ.get('CI', '').lower() in ('1', 'true', 'yes')
SCRIPT = '<script>alert(1)</script>'


def _require_browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        message = 'playwright is not installed (pip install playwright)'
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    if chromium_path() is None:
        message = 'no chromium executable (apt-get install chromium)'
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    return sync_playwright


def test_report_opens_cleanly_in_chromium(reports, write, tmp_path):
    sync_playwright = _require_browser()
    cases = all_cases(reports['main'])
    for tc in cases:
        if tc['environ'] == 'gnu-mpich4':
            tc['environ'] = f'gnu-mpich4 {SCRIPT}'
    pingpong = next(tc for tc in cases if tc['display_name'].startswith('PingPong'))
    pingpong['display_name'] += f' %note={SCRIPT}'
    pingpong.update(result='fail', fail_reason=f'SanityError: {SCRIPT}')
    index, _ = write([session_of(reports['main'])])

    started = time.perf_counter()
    errors, dialogs, requests = [], [], []
    with sync_playwright() as pw:
        context, page = open_page(pw, tmp_path / 'chromium-profile')
        try:
            page.on('console', lambda m: errors.append(m.text) if m.type == 'error' else None)
            page.on('pageerror', lambda e: errors.append(str(e)))
            page.on('dialog', lambda d: (dialogs.append(d.message), d.dismiss()))
            page.on('request', lambda r: requests.append(r.url))
            page.goto(index.as_uri(), wait_until='load')
            images = page.eval_on_selector_all(
                'img', 'els => els.map(e => [e.getAttribute("src"), e.complete, e.naturalWidth])')
            first_heading = page.eval_on_selector(
                'h1, h2, h3, h4, h5, h6', 'e => [e.tagName, e.innerText]')
            text = page.inner_text('body')
            shot = tmp_path / 'report.png'
            page.screenshot(path=str(shot), full_page=True)
        finally:
            context.close()
    elapsed = time.perf_counter() - started

    assert errors == []
    assert dialogs == []
    assert images and all(complete and width > 0 for _, complete, width in images), images
    assert first_heading[0] == 'H1' and first_heading[1].startswith('Verdict:')
    assert SCRIPT in text                       # shown as text ...
    assert all(url.startswith(('file://', 'data:')) for url in requests), requests  # offline
    assert shot.stat().st_size > 10_000
    print(f'chromium: {len(images)} images, {elapsed:.1f} s, screenshot {shot}')
