"""Site files: a site declared in YAML (``config/sites/<name>.yaml``), validated, and back.

``load(path)`` returns a :class:`commcheck.site.Site` or raises :class:`SiteError` with one
line naming the file, the line and key path, and what to do. ``dump(site)`` writes a site in
the same syntax (``commcheck site show``), so a site can start from the discovered one.
"""

from __future__ import annotations

import os
from pathlib import Path

import yaml
from pydantic import BaseModel, ValidationError

from commcheck import paths, yamltext
from commcheck.site import Site, SiteError, flavours

SITES_DIR = paths.CONFIG_DIR / 'sites'


def _key_path(loc: tuple) -> str:
    text = ''
    for part in loc:
        text += f'[{part}]' if isinstance(part, int) else (f'.{part}' if text else str(part))
    return text or '(top level)'


def _known_keys(model: type[BaseModel], loc: tuple) -> list[str]:
    """The keys allowed at ``loc`` (for an unknown-key message)."""
    for part in loc:
        if isinstance(part, int):
            continue
        field = model.model_fields.get(part)
        if field is None:
            break
        inner = field.annotation
        for arg in getattr(inner, '__args__', ()) or ():
            for sub in (arg, *getattr(arg, '__args__', ())):
                if isinstance(sub, type) and issubclass(sub, BaseModel):
                    inner = sub
        if isinstance(inner, type) and issubclass(inner, BaseModel):
            model = inner
    return sorted(model.model_fields)


def describe(err: ValidationError, positions: dict, source: str) -> str:
    errors = err.errors()
    first = errors[0]
    loc = tuple(first['loc'])
    line = yamltext.line_of(positions, loc)
    where = f'{source}:{line}' if line else source
    if first['type'] == 'extra_forbidden':
        known = ', '.join(_known_keys(Site, loc[:-1]))
        what = f'unknown key {loc[-1]!r} (allowed here: {known})'
        loc = loc[:-1]
    elif first['type'] == 'missing':
        what = f'missing required key {loc[-1]!r}'
        loc = loc[:-1]
    else:
        what = first['msg'].removeprefix('Value error, ')
    more = f' (and {len(errors) - 1} more problems)' if len(errors) > 1 else ''
    return f'{where}: {_key_path(loc)}: {what}{more}'.replace('\n', '\\n')


def parse(text: str, source: str) -> Site:
    data, positions = yamltext.load(text, source, SiteError)
    if not isinstance(data, dict):
        raise SiteError(f'{source}: a site file is a mapping (site name, partitions, stacks), '
                        f'got {type(data).__name__}')
    try:
        return Site.model_validate(data)
    except ValidationError as err:
        raise SiteError(describe(err, positions, source)) from None


def load(path: str | Path) -> Site:
    path = Path(path)
    try:
        text = path.read_text(encoding='utf-8')
    except (OSError, UnicodeDecodeError) as err:
        raise SiteError(f'{path}: cannot read site file: {err}') from None
    return parse(text, str(path))


def wrapper_problem(stack) -> str | None:
    """Where a stack's own C wrapper is another flavour's (or version's) MPI, what it is.

    The wrapper is asked (each flavour's ``wrapper_probe``), so a prefix whose ``bin/mpicc``
    is an alternatives link to another MPI (Debian: ``/usr/bin/mpicc`` follows the ``mpi``
    alternative) is found before any job runs. A wrapper given by name only (a module puts it
    on PATH) is not probed here: its launches are checked (``META mpi=``).
    """
    cc = stack.mpi.c_wrapper
    if stack.mpi.record.java or not cc or not os.path.isabs(cc) or not os.path.isfile(cc):
        return None
    found = flavours.identify_wrapper(cc)
    want_flavour, want_version = stack.mpi.expected_library
    if found is None or (found[0] == want_flavour and
                         flavours.versions_agree(want_version, found[1])):
        return None
    real = os.path.realpath(cc)
    via = f' (it resolves to {real})' if real != cc else ''
    return (f'stack {stack.id}: declares {flavours.FLAVOURS[want_flavour].title} {want_version}, '
            f'but its C wrapper {cc}{via} is {flavours.FLAVOURS[found[0]].title} {found[1]}: '
            f'give this MPI\'s own mpi.cc, mpi.fc and mpi.launcher (e.g. mpicc.<flavour>), '
            f'not an alternatives link')


def check(path: str | Path) -> Site:
    """``commcheck site check``: the file loads, and every stack's wrappers are what it says."""
    site = load(path)
    for stack in site.stacks:
        problem = wrapper_problem(stack)
        if problem:
            raise SiteError(f'{path}: {problem}')
    return site


def site_file(name: str) -> Path:
    """A site name (``config/sites/<name>.yaml``) or a path to a site file."""
    candidate = Path(name)
    if candidate.suffix in ('.yaml', '.yml') or '/' in name:
        if not candidate.exists():
            raise SiteError(f'{name}: no such site file')
        return candidate
    path = SITES_DIR / f'{name}.yaml'
    if not path.exists():
        known = sorted(p.stem for p in SITES_DIR.glob('*.yaml'))
        raise SiteError(f'no site {name!r}: no {path.relative_to(paths.REPO_ROOT)} '
                        f'(sites: local, {", ".join(known)})')
    return path


def load_named(name: str) -> Site:
    if name == 'local':
        from commcheck.site.discover import local_site
        return local_site()
    return load(site_file(name))


def _prune(value):
    """Drop empty mappings and lists: what is not declared is not shown."""
    if isinstance(value, dict):
        pruned = {k: _prune(v) for k, v in value.items()}
        return {k: v for k, v in pruned.items() if v not in ({}, [], ())}
    if isinstance(value, list):
        return [_prune(v) for v in value]
    return value


def dump(site: Site) -> str:
    """The site in site-file syntax: what was declared or discovered, defaults left out."""
    data = _prune(site.model_dump(mode='json', exclude_none=True))
    header = (f'# commcheck site file (config/sites/<name>.yaml): {site.description}\n'
              '# Keys: see config/sites/README.md. Validate with `commcheck site check FILE`.\n')
    return header + yaml.safe_dump(data, sort_keys=False, default_flow_style=False, width=100)
