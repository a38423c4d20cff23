"""The code passes the linter configured in pyproject.toml (ruff: pycodestyle, pyflakes, import
order, pyupgrade, bugbear), so a ``# noqa`` is a decision on the line, not a habit."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def ruff() -> list[str]:
    beside = Path(sys.executable).parent / 'ruff'
    found = str(beside) if beside.exists() else shutil.which('ruff')
    if not found:
        pytest.fail('ruff is not installed: it is a test dependency (pip install -e .[test])')
    return [found]


def test_ruff_finds_nothing():
    done = subprocess.run([*ruff(), 'check', '--no-cache', 'src', 'checks', 'config', 'tests'],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


def test_ruff_fails_on_a_defect(tmp_path):
    """The linter run above can fail: an unused import in a copy of the configuration."""
    (tmp_path / 'pyproject.toml').write_text((ROOT / 'pyproject.toml').read_text())
    (tmp_path / 'bad.py').write_text('import os\n')
    done = subprocess.run([*ruff(), 'check', '--no-cache', 'bad.py'], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and 'F401' in done.stdout
