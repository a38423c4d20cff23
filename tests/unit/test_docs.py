"""The documents stay true: every relative link and #anchor in README.md and docs/*.md resolves
(GitHub's anchor rule), and so does every docs/ link in the code's comments and site files;
every ``commcheck ...`` line in the README's code blocks parses with the current command line (a
dry parse: nothing runs); every environment variable of the README's settings table is read in
src/ or config/; every shell block of the documents is run by a test or marked with what it
needs that CI lacks (tests/docblocks.py; tests/integration/test_doc_blocks.py runs them), and
a block that is neither, or that fails as written, is named by file and line. Each check is
also fed a planted fault, in a temporary copy, and must name it.
"""

import contextlib
import io
import re
import shlex
import shutil
import unicodedata
from pathlib import Path

import pytest

from commcheck import cli
from tests import docblocks

ROOT = Path(__file__).resolve().parents[2]

#: Written on other branches of the same change (issue 38) and merged with this one: until they
#: are, links to them and the settings row that names them are not checked. Each entry fails
#: as soon as it exists, so that it is removed here then.

FENCE = re.compile(r'^\s*(```|~~~)')
LINK = re.compile(r'!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)')
HEADING = re.compile(r'^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$')
CODE_DOC_LINK = re.compile(r'\bdocs/[\w.-]+\.md(?:#[\w-]+)?')


# -- markdown -----------------------------------------------------------------------------------
def prose_lines(text: str, spans: bool = False) -> list[tuple[int, str]]:
    """(line number, line) outside fenced code blocks, inline code spans blanked (kept with
    `spans`)."""
    lines, fenced = [], False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            lines.append((number, line if spans else
                          re.sub(r'`[^`]*`', lambda m: ' ' * len(m.group()), line)))
    return lines


def code_blocks(text: str) -> list[tuple[int, str]]:
    """(line number, line) inside fenced code blocks, backslash continuations joined."""
    lines, fenced, pending = [], False, None
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced, pending = not fenced, None
            continue
        if not fenced:
            continue
        start, joined = pending if pending else (number, '')
        joined += line.rstrip('\\').rstrip() + ' ' if line.endswith('\\') else line
        pending = (start, joined) if line.endswith('\\') else None
        if pending is None:
            lines.append((start, joined))
    return lines


def github_anchor(heading: str) -> str:
    """GitHub's anchor of a heading: its text (code spans and links as their text), lower case,
    without punctuation except '-' and '_', spaces as '-'."""
    text = re.sub(r'\[([^\]]*)\]\([^)]*\)', r'\1', heading).replace('`', '')
    text = re.sub(r'[*~]', '', text).strip().lower()
    kept = ''.join(c for c in text if c in ' -_' or unicodedata.category(c)[0] in 'LN')
    return kept.replace(' ', '-')


def anchors(path: Path) -> set[str]:
    """Every heading's anchor in a Markdown file; a repeated one gets -1, -2 ... as on GitHub."""
    seen: dict[str, int] = {}
    found = set()
    for _, line in prose_lines(path.read_text(encoding='utf-8'), spans=True):
        m = HEADING.match(line)
        if not m:
            continue
        anchor = github_anchor(m.group(2))
        count = seen.get(anchor, 0)
        seen[anchor] = count + 1
        found.add(anchor if count == 0 else f'{anchor}-{count}')
    return found


# -- the checks -----------------------------------------------------------------------------
def documents(root: Path) -> list[Path]:
    return [root / 'README.md', *sorted((root / 'docs').glob('*.md'))]


def resolve(source: Path, target: str, root: Path) -> str | None:
    """What is wrong with a link from `source` to `target`, or None."""
    if re.match(r'^[a-z][a-z0-9+.-]*:', target):
        return None                                   # http:, https:, mailto:
    file_part, _, anchor = target.partition('#')
    path = (source.parent / file_part).resolve() if file_part else source.resolve()
    where = path.relative_to(root.resolve()).as_posix() if path.is_relative_to(root.resolve()) \
        else str(path)
    if not path.exists():
        return f'{target}: no such file'
    if anchor and path.suffix == '.md' and anchor not in anchors(path):
        return f'{target}: no heading #{anchor} in {where}'
    return None


def broken_links(root: Path) -> list[str]:
    problems = []
    for doc in documents(root):
        for number, line in prose_lines(doc.read_text(encoding='utf-8')):
            for m in LINK.finditer(line):
                problem = resolve(doc, m.group(1), root)
                if problem:
                    problems.append(f'{doc.relative_to(root)}:{number}: {problem}')
    return problems


def broken_code_links(root: Path) -> list[str]:
    """docs/... links in the code's comments (where dated measurements went) and the site
    files'."""
    problems = []
    sources = [p for d in ('src', 'checks', 'config') for p in sorted((root / d).rglob('*'))
               if p.suffix in ('.py', '.yaml')]
    for source in sources:
        for number, line in enumerate(source.read_text(encoding='utf-8').splitlines(), 1):
            for target in CODE_DOC_LINK.findall(line):
                problem = resolve(root / 'README.md', target, root)
                if problem:
                    problems.append(f'{source.relative_to(root)}:{number}: {problem}')
    return problems


def _permissive(parser) -> None:
    """Values that name files are not checked: a documented path need not exist here."""
    for action in parser._actions:
        name = getattr(action.type, '__qualname__', '')
        if name.startswith(('_path_type', 'existing_file')):
            action.type = None
        for sub in (getattr(action, 'choices', None) or {}).values() \
                if isinstance(getattr(action, 'choices', None), dict) else ():
            _permissive(sub)


def command_problem(argv: list[str]) -> str | None:
    """The parser's complaint about `argv`, or None: parsed only, never run."""
    parser = cli.parser()
    _permissive(parser)
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            parser.parse_args(argv)
    except SystemExit as stop:
        if stop.code:
            return err.getvalue().strip() or f'exit {stop.code}'
    return None


def command_lines(readme: Path) -> list[tuple[int, list[str]]]:
    """(line, argv) of every `commcheck ...` line in the README's code blocks (after any
    VAR=value assignments; `.venv/bin/commcheck` too)."""
    found = []
    for number, line in code_blocks(readme.read_text(encoding='utf-8')):
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split, lexer.commenters = True, '#'
        try:
            words = list(lexer)
        except ValueError:
            continue
        ends = [i for i, w in enumerate(words) if set(w) <= set('();<>|&')]
        words = words[:ends[0]] if ends else words    # the command, before > | && ...
        while words and re.match(r'^[A-Za-z_]\w*=', words[0]):
            words = words[1:]
        if words and Path(words[0]).name == 'commcheck':
            found.append((number, words[1:]))
    return found


def stale_commands(readme: Path) -> list[str]:
    return [f'{readme.name}:{number}: commcheck {shlex.join(argv)}: {problem}'
            for number, argv in command_lines(readme)
            if (problem := command_problem(argv))]


def settings_variables(readme: Path) -> list[str]:
    """The variables named in the first column of the README's settings table."""
    text = readme.read_text(encoding='utf-8')
    section = text.split('## Settings (environment)', 1)[1].split('\n## ', 1)[0]
    names = []
    for row in section.splitlines():
        if row.startswith('| `'):
            first = row.split('|')[1]
            names += [re.sub(r'=.*', '', n) for n in re.findall(r'`([^`]+)`', first)]
    return names


def read_somewhere(name: str, roots: list[Path]) -> bool:
    """Whether code under `roots` reads `name`: as a string literal, or as $NAME / ${NAME}."""
    used = re.compile(rf'''(['"]){name}\1|\$\{{?{name}\b''')
    for root in roots:
        for path in root.rglob('*'):
            if path.suffix in ('.py', '.sh', '.cmake') or path.name == 'CMakeLists.txt':
                if used.search(path.read_text(encoding='utf-8', errors='replace')):
                    return True
    return False


def dead_variables(readme: Path, roots: list[Path]) -> list[str]:
    return [name for name in settings_variables(readme)
            if not read_somewhere(name, roots)]


# -- the documents as they are --------------------------------------------------------------
def test_every_link_and_anchor_resolves():
    assert broken_links(ROOT) == []


def test_every_docs_link_in_the_code_resolves():
    assert broken_code_links(ROOT) == []


def test_every_commcheck_line_in_the_readme_parses():
    lines = command_lines(ROOT / 'README.md')
    assert len(lines) >= 5, 'the README shows its commands in code blocks'
    assert stale_commands(ROOT / 'README.md') == []


def test_every_setting_in_the_readme_is_read():
    names = settings_variables(ROOT / 'README.md')
    assert 'COMMCHECK_SITE' in names and 'SPACK_ROOT' in names
    assert dead_variables(ROOT / 'README.md', [ROOT / 'src', ROOT / 'config']) == []


def test_the_readme_lists_every_command():
    section = (ROOT / 'README.md').read_text(encoding='utf-8').split('## Commands', 1)[1]
    section = section.split('\n## ', 1)[0]
    sub = next(a for a in cli.parser()._actions if isinstance(a.choices, dict))
    missing = [name for name in sub.choices if f'`commcheck {name}' not in section]
    assert missing == []


def test_the_readme_stays_short():
    assert len((ROOT / 'README.md').read_text(encoding='utf-8').splitlines()) <= 220


# -- each check catches what it is for (planted in a temporary copy) --------------------------
@pytest.fixture
def copy(tmp_path):
    """The repository with README.md and docs/ copied (the rest linked): safe to plant in."""
    for entry in ROOT.iterdir():
        if entry.name in ('README.md', 'docs'):
            (shutil.copytree if entry.is_dir() else shutil.copy)(entry, tmp_path / entry.name)
        elif entry.name != '.git':
            (tmp_path / entry.name).symlink_to(entry)
    return tmp_path


def plant(path: Path, text: str) -> None:
    path.write_text(path.read_text(encoding='utf-8') + text, encoding='utf-8')


def test_a_broken_link_or_anchor_is_caught(copy):
    assert broken_links(copy) == []
    plant(copy / 'README.md', '\nSee [the gate](docs/gate.md#no-such-heading) and '
                              '[nothing](docs/nowhere.md).\n\n```sh\n[not a link](x.md)\n```\n')
    plant(copy / 'docs' / 'seeds.md', '\n[up](#reproducing-them) [down](#nope)\n')
    found = broken_links(copy)
    assert len(found) == 3, found
    assert 'no heading #no-such-heading in docs/gate.md' in found[0]
    assert 'docs/nowhere.md: no such file' in found[1]
    assert found[2].startswith('docs/seeds.md:') and '#nope' in found[2]


def test_github_anchors():
    assert github_anchor('Settings (environment)') == 'settings-environment'
    assert github_anchor("A whole `make run`") == 'a-whole-make-run'
    assert github_anchor("The stencil's grid") == 'the-stencils-grid'
    assert github_anchor('[Spack](x.md), step_by step') == 'spack-step_by-step'


def test_a_stale_command_line_is_caught(copy):
    readme = copy / 'README.md'
    assert stale_commands(readme) == []
    plant(readme, '\n```sh\ncommcheck compare --no-such-option     # stale\n'
                  'COMMCHECK_SITE=x .venv/bin/commcheck frobnicate\n'
                  'commcheck baseline \\\n  --last many\n'
                  'commcheck site check config/sites/not-here.yaml  # need not exist\n```\n')
    found = stale_commands(readme)
    assert len(found) == 3, found
    assert '--no-such-option' in found[0]
    assert 'frobnicate' in found[1]
    assert 'many' in found[2]


def test_a_dead_variable_is_caught(copy):
    readme = copy / 'README.md'
    roots = [copy / 'src', copy / 'config']
    assert dead_variables(readme, roots) == []
    text = readme.read_text(encoding='utf-8').replace(
        '| `COMMCHECK_BINDING` |', '| `COMMCHECK_NO_SUCH_SETTING`, `COMMCHECK_BINDING` |')
    readme.write_text(text, encoding='utf-8')
    assert dead_variables(readme, roots) == ['COMMCHECK_NO_SUCH_SETTING']


# -- the shell blocks: run by a test, or marked ------------------------------------------------
def test_every_shell_block_is_run_or_marked():
    problems, counts = docblocks.run_or_marked()
    docblocks.COUNTED.update(counts)
    print(f'documents\' shell blocks: {counts["run"]} run by tests/integration/'
          f'test_doc_blocks.py, {counts["marked"]} marked <!-- needs: ... -->, '
          f'{counts["pending"]} pending ({", ".join(docblocks.PENDING)})')
    assert problems == []
    assert counts['run'] >= 10 and counts['marked'] >= 10


def test_a_block_neither_run_nor_marked_is_caught(tmp_path):
    (tmp_path / 'docs').mkdir()
    (tmp_path / 'README.md').write_text('# x\n\n```sh\nmake run\n```\n')
    (tmp_path / 'docs' / 'a.md').write_text(
        'Text.\n\n<!-- needs: a real Slurm cluster -->\n```sh\nsbatch job.sh\n```\n\n'
        '```sh\ncommcheck frobnicate   # new\n```\n\n```yaml\nnot: shell\n```\n'
        '<!-- needs: nothing -->\n\n```sh\necho the marker is not directly above\n```\n')
    (tmp_path / 'sub').mkdir()
    (tmp_path / 'sub' / 'README.md').write_text('  ```bash\n  ls \\\n    -l\n  ```\n')
    run = {'x': (('README.md', 'make run', docblocks.CLIENT),
                 ('docs/a.md', 'gone', docblocks.CLIENT))}
    problems, counts = docblocks.run_or_marked(tmp_path, run, pending=())
    assert problems == [
        "docs/a.md:8: a shell block neither run by a test (tests/docblocks.py RUN) nor "
        "marked <!-- needs: ... --> ('commcheck frobnicate')",
        "docs/a.md:17: a shell block neither run by a test (tests/docblocks.py RUN) nor "
        "marked <!-- needs: ... --> ('echo the marker is not directly above')",
        "sub/README.md:1: a shell block neither run by a test (tests/docblocks.py RUN) nor "
        "marked <!-- needs: ... --> ('ls')",
        "docs/a.md: no shell block starts 'gone' (RUN names it)"], problems
    assert counts == {'run': 1, 'marked': 1, 'pending': 0}


def test_exit_codes_are_read_from_the_comment():
    block = docblocks.Block('d.md', 1, ((2, 'commcheck compare   # exit 0 fine, 1 regressed, 3 '
                                             'undecided'),
                                         (3, '# a comment line'),
                                         (4, "commcheck site check x.yaml  # exit 0, or 2: 'a#b'"),
                                         (5, 'echo "not # a comment" \\'),
                                         (6, '    --more')), None)
    found = [(c.line, sorted(c.codes)) for c in docblocks.commands(block)]
    assert found == [(2, [0, 1, 3]), (4, [0, 2]), (5, [0])]
    assert docblocks.codes('# (exit 2; when it is 0, this is wrong)') == {2}
    assert docblocks.codes('# exit 0 up, 1 partly up, 3 stopped') == {0, 1, 3}
    assert docblocks.codes('# exit 0, 1 or 3') == {0, 1, 3} == docblocks.codes('# exit 0, or 3, 1')
    assert docblocks.replace('a <uuid> b <uuid> PASSWORD OWNER_PASSWORD',
                             {'<uuid>': ['1', '2'], 'PASSWORD': 'p', 'OWNER_PASSWORD': 'o'}) \
        == 'a 1 b 2 p o'


BROKEN = """# A synthetic document

```sh
commcheck site show > mysite.yaml                  # this machine, as a site file
commcheck site check --renamed-option mysite.yaml  # an option the command no longer has
commcheck site check mysite.yaml                   # exit 2 (wrong: it is 0)
grep -q replaced PLACEHOLDER                        # exit 0 once the placeholder is replaced
commcheck site check mysite.yaml                   # exit 0, or 2 and one line per problem
```
"""


def test_a_broken_block_fails_its_run_naming_file_and_line(tmp_path, isolated_env):
    """The runner of the documents' blocks on a synthetic document: a renamed option and an
    exit code the document gets wrong are named by file and line; the good lines pass."""
    (tmp_path / 'README.md').write_text(BROKEN)
    (tmp_path / 'here').write_text('replaced\n')
    block, = docblocks.blocks(tmp_path)
    problems, out = docblocks.run_group([block], {'PLACEHOLDER': 'here'}, tmp_path / 'codes',
                                        env=isolated_env, cwd=tmp_path)
    assert problems == [
        'README.md:5: commcheck site check --renamed-option mysite.yaml  # an option the '
        'command no longer has: exit 2, the document says 0',
        'README.md:6: commcheck site check mysite.yaml                   # exit 2 (wrong: it '
        'is 0): exit 0, the document says 2'], out
    assert 'unrecognized arguments: --renamed-option' in out
