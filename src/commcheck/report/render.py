"""Jinja2 rendering: the HTML page (autoescaped) and the Markdown summary (every value escaped
for Markdown by the environment's ``finalize``, so no template can forget it).

Numbers are formatted here, once, for both; a missing value renders as a dash that the page
explains ("not measured in this session"), never as 0 or nan.
"""

from __future__ import annotations

import math
import re

import jinja2
from markupsafe import Markup

MISSING = '—'


def num(value, digits: int = 4) -> str:
    """A value for reading: thousands without decimals, small values to ``digits`` figures."""
    if value is None or isinstance(value, bool):
        return MISSING
    if isinstance(value, int):
        return f'{value:,}'
    if not isinstance(value, float) or not math.isfinite(value):
        return MISSING
    size = abs(value)
    if size >= 1000:
        return f'{value:,.0f}'
    if size >= 100:
        return f'{value:.1f}'
    if size == 0:
        return '0'
    if size < 1e-3:
        return f'{value:.2e}'
    return f'{value:.{digits}g}'


def pct(value, signed: bool = True) -> str:
    if value is None or not isinstance(value, (int, float)) or not math.isfinite(value):
        return MISSING
    return f'{value:+.1%}' if signed else f'{value:.1%}'


def size(value) -> str:
    """Bytes as the documents write them: 8 B, 4 KiB, 1 MiB."""
    try:
        n = int(value)
    except (TypeError, ValueError):
        return MISSING
    for unit, scale in (('MiB', 1 << 20), ('KiB', 1 << 10)):
        if n >= scale and n % scale == 0:
            return f'{n // scale} {unit}'
    return f'{n} B'


_STAMP = re.compile(r'^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})([+-]\d{4})?$')


def when(value) -> str:
    """ReFrame's compact timestamps (``20261122T035831+0000``) as people read them."""
    text = '' if value is None else str(value)
    m = _STAMP.match(text)
    if not m:
        return text or MISSING
    y, mo, d, h, mi, s, zone = m.groups()
    return f'{y}-{mo}-{d} {h}:{mi}:{s}' + (f' {zone}' if zone else '')


def minute(value) -> str:
    """A ReFrame timestamp to the minute: ``2026-11-22 04:14``."""
    m = _STAMP.match('' if value is None else str(value))
    return f'{m.group(1)}-{m.group(2)}-{m.group(3)} {m.group(4)}:{m.group(5)}' if m \
        else when(value)


def short_when(value) -> str:
    m = _STAMP.match('' if value is None else str(value))
    return f'{m.group(2)}-{m.group(3)} {m.group(4)}:{m.group(5)}' if m else str(value or '')


def cell(value, digits: int = 4, suffix: str = '') -> Markup:
    """A table cell: the formatted value, or a marked missing value."""
    if num(value, digits) == MISSING:
        return Markup('<td class="na" title="not measured in this session">—</td>')
    return Markup('<td class="n">{}{}</td>').format(num(value, digits), suffix)


def _filters(env: jinja2.Environment) -> jinja2.Environment:
    env.filters.update(num=num, pct=pct, size=size, cell=cell, when=when, minute=minute)
    return env


def html_environment() -> jinja2.Environment:
    return _filters(jinja2.Environment(
        loader=jinja2.PackageLoader('commcheck.report', 'templates'), autoescape=True,
        undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True))


_MD_SPECIAL = re.compile(r'([\\`*_{}\[\]<>|#~])')


def md_escape(value) -> str:
    """Markdown (and the HTML a ticket system may render from it): special characters escaped,
    newlines folded, so a name from a configuration stays text in a table cell."""
    text = '' if value is None else str(value)
    text = text.replace('&', '&amp;').replace('\r', ' ').replace('\n', ' ')
    return _MD_SPECIAL.sub(r'\\\1', text)


def markdown_environment() -> jinja2.Environment:
    return _filters(jinja2.Environment(
        loader=jinja2.PackageLoader('commcheck.report', 'templates'), autoescape=False,
        finalize=md_escape, undefined=jinja2.StrictUndefined, trim_blocks=True,
        lstrip_blocks=True, keep_trailing_newline=True))
