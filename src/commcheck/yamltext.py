"""YAML that people write: parsed with the line of every key kept, for one-line errors."""

from __future__ import annotations

import yaml

#: libyaml's parser where PyYAML was built with it (10x faster on a suite's references)
LOADER = getattr(yaml, 'CSafeLoader', yaml.SafeLoader)


def _lines(node, path: tuple, out: dict) -> None:
    out[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            _lines(value, path + (str(key.value),), out)
            out[path + (str(key.value),)] = key.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _lines(item, path + (index,), out)


def describe_error(err: yaml.YAMLError, source: str) -> str:
    """One line for a YAML error: the file, the line if known, what is wrong."""
    mark = getattr(err, 'problem_mark', None)
    where = f'{source}:{mark.line + 1}' if mark else source
    problem = (getattr(err, 'problem', None) or getattr(err, 'reason', None)
               or str(err).splitlines()[0])
    return f'{where}: not valid YAML: {" ".join(str(problem).split())}'


def load(text: str, source: str, error: type[Exception]) -> tuple[object, dict[tuple, int]]:
    """(data, key path -> line) of a YAML text; ``error(one line)`` if it is not YAML."""
    try:
        node = yaml.compose(text, Loader=LOADER)
        data = yaml.load(text, Loader=LOADER)
    except yaml.YAMLError as err:
        raise error(describe_error(err, source)) from None
    lines: dict[tuple, int] = {}
    if node is not None:
        _lines(node, (), lines)
    return data, lines


def line_of(lines: dict[tuple, int], path: tuple) -> int | None:
    """The line of ``path``, or of the nearest enclosing key that has one."""
    for cut in range(len(path), -1, -1):
        if tuple(path[:cut]) in lines:
            return lines[tuple(path[:cut])]
    return None
