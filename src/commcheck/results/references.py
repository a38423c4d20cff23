"""Reference files (ReFrame 4.10 ``$ref`` YAML): validated before ReFrame sees them, and
written atomically by ``commcheck baseline``.

A file maps a check's class name to a mapping indexed by ``$index`` (usually
``[$partition, $environ]``); the leaves map a performance variable to
``[value, lower, upper, unit]`` with ``lower``/``upper`` fractions of ``value`` (``null``:
unbounded). :func:`problem` says, in one line with the file and line, what is wrong.
"""

from __future__ import annotations

import difflib
import math
import os
import shutil
import tempfile
from pathlib import Path

from commcheck import yamltext
from commcheck.errors import UserError

SPECIAL_INDEX = ('$system', '$partition', '$environ')


class ReferenceFileError(UserError):
    pass


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _leaf_problem(value) -> str | None:
    if not isinstance(value, list) or len(value) not in (3, 4):
        return 'must be a list [value, lower, upper, unit]'
    if value and value[0] == '$xfail':
        return None
    ref, lower, upper = value[:3]
    if not _number(ref):
        return f'value {ref!r} is not a number'
    if lower is not None and not (_number(lower) and -1 <= lower <= 0):
        return f'lower threshold {lower!r} must be a number in [-1, 0] or null'
    if upper is not None and not (_number(upper) and upper >= 0):
        return f'upper threshold {upper!r} must be a number >= 0 or null'
    if len(value) == 4 and not isinstance(value[3], str):
        return f'unit {value[3]!r} must be a string'
    return None


def _walk(data, depth: int, path: tuple):
    """Yields (path, problem) for every level below a check's ``$index``."""
    if depth == 0:
        if not isinstance(data, dict):
            yield path, 'must map performance variables to [value, lower, upper, unit]'
            return
        for var, leaf in data.items():
            problem = _leaf_problem(leaf)
            if problem:
                yield path + (str(var),), problem
        return
    if not isinstance(data, dict):
        yield path, f'must be a mapping ({depth} more index level(s) expected)'
        return
    for key, value in data.items():
        yield from _walk(value, depth - 1, path + (str(key),))


def validate_text(text: str, source: str) -> None:
    """Raises :class:`ReferenceFileError` naming ``source``, the line and the key."""
    data, lines = yamltext.load(text, source, ReferenceFileError)
    if data is None:
        return
    if not isinstance(data, dict):
        raise ReferenceFileError(f'{source}: the top level must map check names to '
                                 f'references, got a {type(data).__name__}')
    for check, entry in data.items():
        where = f'{source}:{lines.get((str(check),), "?")}'
        if not isinstance(entry, dict):
            raise ReferenceFileError(f'{where}: {check}: must be a mapping with $index')
        index = entry.get('$index')
        if index is None:
            depth = 1
        elif (not isinstance(index, list) or not index or
              not all(isinstance(i, str) and i for i in index)):
            raise ReferenceFileError(f'{where}: {check}.$index must be a list of names such '
                                     f'as [$partition, $environ]')
        else:
            depth = len(index)
        body = {k: v for k, v in entry.items() if k != '$index'}
        for path, problem in _walk(body, depth, (str(check),)):
            line = yamltext.line_of(lines, path) or '?'
            raise ReferenceFileError(f'{source}:{line}: {".".join(path)}: {problem}')


def problem(path: str | os.PathLike) -> str | None:
    """None if the reference file is usable, else one line saying what is wrong."""
    try:
        text = Path(path).read_text(encoding='utf-8')
    except (OSError, UnicodeDecodeError) as err:
        return f'{path}: cannot read: {err}'
    try:
        validate_text(text, str(path))
    except ReferenceFileError as err:
        return str(err)
    return None


def write_atomic(path: Path, text: str) -> Path | None:
    """Write ``text`` to ``path`` through a temporary file and a rename; the previous file
    is kept beside it as ``<name>.prev`` (returned), so nothing recorded is lost."""
    path.parent.mkdir(parents=True, exist_ok=True)
    previous = None
    fd, tmp = tempfile.mkstemp(prefix=f'.{path.name}.', dir=path.parent)
    try:
        with os.fdopen(fd, 'w', encoding='utf-8') as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if path.exists():
            previous = path.with_name(path.name + '.prev')
            shutil.copy2(path, previous)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    return previous


def diff(old: str, new: str, name: str) -> str:
    return ''.join(difflib.unified_diff(old.splitlines(True), new.splitlines(True),
                                        f'{name} (before)', f'{name} (after)'))
