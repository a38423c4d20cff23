"""The shell blocks of the documents (README.md, docs/*.md and every other README.md): each is
either run by a test as written (:data:`RUN`: tests/integration/test_doc_blocks.py, with the
placeholders of :data:`PLACEHOLDERS` replaced) or marked in its document with what it needs
that CI lacks, an HTML comment on the line directly above its opening fence::

    <!-- needs: a real Slurm cluster -->

A block is run as a person pastes it into a terminal: the blocks of one scenario in one shell,
in order (what one exports, the next sees), each line's exit code checked against what its
comment says (``# ... exit 0, 1 or 3``: any of those; no ``exit`` in the comment: 0), prompts
answered as a person types (psql's ``\\password``).
"""

from __future__ import annotations

import dataclasses
import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHELLS = ('sh', 'bash', 'shell')
FENCE = re.compile(r'^(?P<indent>\s*)(?P<fence>```|~~~)\s*(?P<lang>[\w+-]*)\s*$')
NEEDS = re.compile(r'^\s*<!--\s*needs:\s*(?P<what>\S.*?)\s*-->\s*$')
EXIT = re.compile(r'\bexit\b(?P<rest>.*)')

#: As whom a block runs: on the database host as the ``postgres`` user, or as a client.
DBHOST, CLIENT = 'postgres on the database host', 'a client'

#: Every block a test runs, by scenario (a test of tests/integration/test_doc_blocks.py): its
#: document, its first command, and as whom, in the order run. Consecutive blocks of one
#: scenario run as the same user run in one shell.
RUN: dict[str, tuple[tuple[str, str, str], ...]] = {
    'store': (
        ('docs/shared-history.md', 'createdb commcheck', DBHOST),
        ('docs/shared-history.md',
         'export COMMCHECK_HISTORY=postgresql://commcheck_writer@db.site/commcheck', CLIENT),
        ('docs/shared-history.md', 'install -m 0600 /dev/null ~/.pgpass', CLIENT),
        ('docs/shared-history.md',
         'commcheck push --init --db postgresql://commcheck_owner@db.site/commcheck', CLIENT),
        ('docs/shared-history.md', "commcheck run -- -n 'PingPong%lang=c' --mode quick",
         CLIENT),
        ('docs/shared-history.md',
         'export COMMCHECK_HISTORY=postgresql://commcheck_reader@db.site/commcheck', CLIENT),
        ('docs/ci.md',
         'export COMMCHECK_HISTORY=postgresql://commcheck_reader@db.site/commcheck', CLIENT),
    ),
    'site': (
        ('README.md', 'commcheck site show > config/sites/mycluster.yaml', CLIENT),
        ('config/sites/README.md', 'commcheck site show > config/sites/mycluster.yaml', CLIENT),
    ),
    'retention': (
        ('docs/history-at-scale.md', 'commcheck archive --before 2026-01-01', CLIENT),
    ),
    'slurm': (
        ('.ci/README.md', '.ci/slurm-cluster start', CLIENT),
    ),
}

#: Each placeholder of the blocks a test runs and the attribute of the scenario's context that
#: replaces it (a list: one value per occurrence, in order). Names that stay as written:
#: ``db.site`` (the database host: the client reaches the test's server through
#: ``PGHOSTADDR``, and libpq still finds the name in the PGPASSFILE), ``mycluster`` (the site
#: file the blocks write), ``eiger`` (the cluster of the sessions the test gives the store).
PLACEHOLDERS = {
    '5432': 'port',                             # the database host's port
    'WRITER_PASSWORD': 'writer_password',       # typed at \password's prompt, and in ~/.pgpass
    'READER_PASSWORD': 'reader_password',
    'OWNER_PASSWORD': 'owner_password',
    '/path/to/pgpass': 'pgpass',                # the PGPASSFILE the block wrote
    'other/results.db': 'other_db',             # a results database of eiger's sessions
    '3f2a9c1e': 'session',                      # a stored session's uuid (a prefix)
    '<uuid>': 'sessions',                       # stored sessions of one cluster
    '$EDITOR': 'editor',                        # an editor that changes nothing
    'job.sh': 'job',                            # a batch script
    'cc-n3': 'node',                            # a node of the test's Slurm cluster
}
#: Documents whose blocks are not checked yet (another branch rewriting them): an entry fails
#: as soon as every shell block of its document is marked, so that it is removed then.
PENDING: tuple[str, ...] = ()
#: The counts of the last check (run, marked, pending), for the session's summary.
COUNTED: dict[str, int] = {}


@dataclasses.dataclass(frozen=True)
class Block:
    doc: str                            #: the document, relative to the repository
    line: int                           #: the opening fence's line
    body: tuple[tuple[int, str], ...]   #: (line number, text without the fence's indent)
    needs: str | None                   #: the marker's text, if marked

    @property
    def where(self) -> str:
        return f'{self.doc}:{self.line}'

    @property
    def first(self) -> str:
        """The first command, without its comment, spaces squeezed: the block's name."""
        for _, text in self.body:
            command = ' '.join(strip_comment(text).split())
            if command:
                return command.rstrip('\\').rstrip()
        return ''


@dataclasses.dataclass(frozen=True)
class Command:
    line: int           #: its first line in the document
    text: str           #: as written (continuation lines included)
    codes: frozenset    #: the exit codes its comment allows


def documents(root: Path = ROOT) -> list[Path]:
    """README.md, docs/*.md, and every other README.md outside hidden and generated trees
    (``.ci`` is not hidden: its README is a document)."""
    found = [root / 'README.md', *sorted((root / 'docs').glob('*.md'))]
    for path in sorted(root.rglob('README.md')):
        parts = path.relative_to(root).parts
        if path not in found and not any(
                (p.startswith('.') and p != '.ci') or p in ('node_modules', 'local')
                for p in parts[:-1]):
            found.append(path)
    return found


def blocks(root: Path = ROOT) -> list[Block]:
    """Every fenced shell block of the documents."""
    out = []
    for path in documents(root):
        lines = path.read_text(encoding='utf-8').splitlines()
        number = 0
        while number < len(lines):
            m = FENCE.match(lines[number])
            number += 1
            if not m:
                continue
            end = next((i for i in range(number, len(lines))
                        if lines[i].strip() == m['fence']), len(lines))
            if m['lang'] in SHELLS:
                indent = len(m['indent'])
                needs = NEEDS.match(lines[number - 2]) if number >= 2 else None
                out.append(Block(str(path.relative_to(root)), number,
                                 tuple((i + 1, lines[i][indent:]) for i in range(number, end)),
                                 needs['what'] if needs else None))
            number = end + 1
    return out


def strip_comment(text: str) -> str:
    """``text`` without its shell comment (a ``#`` outside quotes, at a word's start)."""
    quote, previous = None, ' '
    for i, c in enumerate(text):
        if quote:
            quote = None if c == quote else quote
        elif c in '\'"':
            quote = c
        elif c == '#' and previous.isspace():
            return text[:i]
        previous = c
    return text


def codes(comment: str) -> frozenset:
    """The exit codes a command's comment allows: the number after ``exit`` and each one after
    a comma or an ``or`` behind it (``exit 0 fine, 1 regressed, 3 undecided``: 0, 1, 3;
    ``exit 0, or 2 and a line``: 0, 2); none said: 0."""
    m = EXIT.search(comment)
    if not m:
        return frozenset([0])
    found = re.findall(r'(?:^\s*|,\s*(?:or\s+)?|\sor\s+)(\d{1,3})\b', m['rest'])
    return frozenset(int(n) for n in found) or frozenset([0])


def commands(block: Block) -> list[Command]:
    """The block's commands (a line and its ``\\`` continuations), comment-only lines left
    out."""
    out, pending = [], None
    for number, text in block.body:
        start, lines = pending or (number, [])
        lines.append(text)
        if text.rstrip().endswith('\\'):
            pending = (start, lines)
            continue
        pending = None
        joined = '\n'.join(lines)
        if strip_comment(joined).strip():
            comment = joined[len(strip_comment(joined)):]
            out.append(Command(start, joined, codes(comment)))
    return out


def replace(text: str, values: dict[str, str | list[str]]) -> str:
    """The placeholders of :data:`PLACEHOLDERS` in ``text`` replaced by ``values`` (by the
    placeholder; the longest first; a list: one value per occurrence)."""
    for name in sorted(values, key=len, reverse=True):
        value = values[name]
        if isinstance(value, str):
            text = text.replace(name, value)
            continue
        pieces = text.split(name)
        values_ = [*value, *[name] * len(pieces)][:len(pieces) - 1]
        text = pieces[0] + ''.join(v + rest for v, rest in zip(values_, pieces[1:]))
    return text


def run_or_marked(root: Path = ROOT, run: dict = RUN, pending=PENDING
                  ) -> tuple[list[str], dict[str, int]]:
    """(problems, counts): every shell block is run (:data:`RUN`) or marked; problems name
    ``file:line``; counts: run, marked, pending."""
    listed = {(doc, first) for steps in run.values() for doc, first, _ in steps}
    found, problems = {}, []
    counts = {'run': 0, 'marked': 0, 'pending': 0}
    for block in blocks(root):
        key = (block.doc, block.first)
        if key in found:
            problems.append(f'{block.where}: a second block starting {block.first!r} (the '
                            f'first: {found[key].where}); a test names a block by it')
        found[key] = block
        if block.needs and key in listed:
            problems.append(f'{block.where}: marked "needs: {block.needs}" but run by a test')
        elif block.needs or key in listed:
            counts['marked' if block.needs else 'run'] += 1
        elif block.doc in pending:
            counts['pending'] += 1
        else:
            problems.append(f'{block.where}: a shell block neither run by a test '
                            f'(tests/docblocks.py RUN) nor marked <!-- needs: ... --> '
                            f'({block.first!r})')
    problems += [f'{doc}: no shell block starts {first!r} (RUN names it)'
                 for doc, first in sorted(listed - set(found))]
    problems += [f'{doc}: every shell block is marked now; remove it from PENDING'
                 for doc in pending if all(b.needs for b in found.values() if b.doc == doc)]
    return problems, counts


def in_order(root: Path, steps) -> list[tuple[str, list[Block]]]:
    """A scenario's blocks, found by name, grouped into runs of one user: (user, blocks)."""
    by_key = {(b.doc, b.first): b for b in blocks(root)}
    groups: list[tuple[str, list[Block]]] = []
    for doc, first, user in steps:
        if not groups or groups[-1][0] != user:
            groups.append((user, []))
        groups[-1][1].append(by_key[doc, first])
    return groups


def script(group: list[Block], values: dict, codes_file: Path) -> str:
    """A bash script of the blocks' commands, placeholders replaced, each followed by a line
    that records ``<document>:<line> <exit code>`` in ``codes_file``."""
    out = [f'__said() {{ printf "%s %s\\n" "$1" "$2" >> {shlex.quote(str(codes_file))}; }}']
    for block in group:
        for command in commands(block):
            out.append(replace(command.text, values))
            out.append(f'__said {block.doc}:{command.line} $?')
    return '\n'.join(out) + '\n'


def verdicts(group: list[Block], codes_file: Path) -> list[str]:
    """Each command whose exit code is not one its comment allows, or that never ran."""
    said = {}
    if codes_file.exists():
        for row in codes_file.read_text().splitlines():
            where, code = row.rsplit(' ', 1)
            said[where] = int(code)
    problems = []
    for block in group:
        for command in commands(block):
            where = f'{block.doc}:{command.line}'
            first = command.text.splitlines()[0].strip()
            if where not in said:
                problems.append(f'{where}: {first}: did not run')
            elif said[where] not in command.codes:
                problems.append(f'{where}: {first}: exit {said[where]}, the document says '
                                f'{"/".join(map(str, sorted(command.codes)))}')
    return problems


def run_group(group: list[Block], values: dict, codes_file: Path, answers=(), wrap=list,
              **popen) -> tuple[list[str], str]:
    """The blocks in one shell at a terminal (``wrap``: the command line, e.g. as another
    user), prompts answered: (each line whose exit code the document does not allow, the
    output)."""
    from tests import terminal
    codes_file.touch(mode=0o666)            # written by the blocks' user, postgres too
    codes_file.chmod(0o666)
    argv = wrap(['bash', '--noprofile', '--norc', '-c', script(group, values, codes_file)])
    _, out = terminal.run(argv, answers, timeout=900, **popen)
    return verdicts(group, codes_file), out
