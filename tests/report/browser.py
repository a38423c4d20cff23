"""Headless Chromium (Debian's ``chromium``, driven by Playwright; no browser is downloaded)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

#: This machine's network is closed: without these Chromium keeps trying to reach it.
QUIET = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
         '--disable-background-networking', '--disable-component-update', '--disable-sync',
         '--disable-default-apps', '--disable-extensions', '--no-default-browser-check']


def chromium_path() -> str | None:
    for candidate in (os.environ.get('COMMCHECK_CHROMIUM'), shutil.which('chromium'),
                      '/usr/bin/chromium'):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def open_page(playwright, profile: Path, viewport=(1280, 900)):
    """A fresh browser profile (its own user data directory) and one page."""
    context = playwright.chromium.launch_persistent_context(
        str(profile), executable_path=chromium_path(), headless=True, args=QUIET,
        viewport={'width': viewport[0], 'height': viewport[1]}, timeout=180_000)
    return context, context.pages[0] if context.pages else context.new_page()
