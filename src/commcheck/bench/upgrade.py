"""Benchmark, not a test: the paired upgrade rule (:mod:`commcheck.analysis.paired`) on real
sessions, with its floor as a fitted covariate, over the floor, and pairs until decided, beside
today's between-session gate, ``compare --environ/--against`` and a 10 % rule on ReFrame's
``--performance-compare``, all on the same launches (:mod:`commcheck.bench.upgrade_rules`).

A session is ``--pairs`` pairs of launches of ``pingpong-c`` per stack (sizes 8 B, 1 KiB,
1 MiB, the floor measured in every launch): per pair the "old" and the "new" side, in random
order, the stacks alternating pair by pair. Both sides load the slowmpi interposer
(``src/kernels/tools/slowmpi``), so the only difference between them is its wait: the old side
at 0 %, the new side at the session kind's size, a percentage of each launch's own 8 B one-way
time and of its 1 MiB one-way time (each launch sizes it in its own regime; what it added,
measured, is recorded, and each launch's wall time). Kinds, interleaved round by round,
sessions ``--gap`` seconds apart: A/A, +2 %, +5 %, +10 %, +20 %, and A/A with a busy loop on
every core for the whole session; ``--kinds aa:20,busy:10,+5:20`` chooses them and how many.

``--rejudge FILE`` (repeatable) judges recorded sessions again under every rule, launching
nothing: records of format 1 (before issue 44: no launch times, so pairs until decided may use
every recorded pair) and 2.
"""

from __future__ import annotations

import json
import random
import tempfile
import time
from pathlib import Path

from commcheck import console as textconsole
from commcheck import experiments, paths
from commcheck.bench import gate as bench_gate
from commcheck.bench import upgrade_rules as rules
from commcheck.bench.upgrade_rules import AA_BUSY, KINDS
from commcheck.errors import UserError
from commcheck.site import kbuild, slowmpi

#: ``--kinds`` names of the kinds.
SHORT = {'aa': rules.AA, '+2': '+2 %', '+5': '+5 %', '+10': '+10 %', '+20': '+20 %',
         'busy': AA_BUSY}
#: The version of the record ``--json`` writes (2: each launch's wall time); ``--rejudge``
#: reads these.
FORMAT_VERSION = 2
FORMATS_READ = (1, 2)
console = textconsole.make()


def kinds_spec(text: str) -> dict[str, int]:
    """``aa:20,busy:10,+5`` -> {kind: sessions} (a kind without a count: ``--per-kind``'s,
    given as 0 here); a bad one: ValueError naming what is accepted."""
    out = {}
    for part in text.split(','):
        name, _, count = part.strip().partition(':')
        if name not in SHORT:
            raise ValueError(f'{name!r} is not a kind: {", ".join(SHORT)}')
        if count and not (count.isdigit() and 0 < int(count) <= 1000):
            raise ValueError(f'{part!r}: the count must be a whole number from 1 to 1000')
        out[SHORT[name]] = int(count or 0)
    return out


def schedule(chosen: dict[str, int] | None, per_kind: int) -> list[str]:
    """The sessions' kinds, interleaved round by round in the kinds' order."""
    counts = {k: (chosen or {}).get(k, 0) or per_kind for k in KINDS if not chosen or k in chosen}
    out = []
    for i in range(max(counts.values())):
        out += [k for k, n in counts.items() if i < n]
    return out


# ---- recording -------------------------------------------------------------------------------

def _launch(stack, program: Path, library: Path, binding: str, percent: float) -> dict:
    started = time.monotonic()
    values, stderr = bench_gate.launch_with_stderr(stack, program, binding,
                                                   slowmpi.environment(library, percent))
    said = slowmpi.added(stderr)
    if said is None:
        raise UserError(f'slowmpi on {stack.id}: no account of the added delay on stderr '
                        f'(not loaded?): {stderr.strip()[-300:]}')
    return {'values': values, 'added_small_ns': said['small'], 'added_large_ns': said['large'],
            'seconds': time.monotonic() - started}


def run_session(index: int, kind: str, stacks, programs, libraries, binding: str,
                pairs: int) -> dict:
    """One session: ``pairs`` pairs per stack, old and new in random order within a pair."""
    loops = bench_gate.busy_loops() if kind == AA_BUSY else []
    rng, seq = random.Random(index), 0
    out = {s.id: {'old': [], 'new': []} for s in stacks}
    started = time.time()
    try:
        for _ in range(pairs):
            for stack in stacks:
                sides = ['old', 'new']
                rng.shuffle(sides)
                for side in sides:
                    launch = _launch(stack, programs[stack.id], libraries[stack.id], binding,
                                     KINDS[kind] if side == 'new' else 0.0)
                    launch['seq'] = seq = seq + 1
                    out[stack.id][side].append(launch)
    finally:
        for proc in loops:
            proc.kill()
            proc.wait()
    return {'index': index, 'kind': kind, 'started': started, 'ended': time.time(),
            'stacks': out}


def record_sessions(args, stacks, binding: str, save) -> list[dict]:
    """The sessions, kinds interleaved; ``save(sessions)`` after each one, so a benchmark of
    hours stopped part-way keeps what it recorded (``--rejudge`` reads it)."""
    kinds = schedule(args.kinds, args.per_kind)
    sessions = []
    with tempfile.TemporaryDirectory(prefix='commcheck-upgrade-') as tmp:
        programs = {s.id: kbuild.cmake_build(s, Path(tmp) / s.id, targets=('pingpong-c',))
                    / 'pingpong-c' for s in stacks}
        libraries = {s.id: slowmpi.build(s, Path(tmp) / s.id) for s in stacks}
        for i, kind in enumerate(kinds):
            if i:
                time.sleep(args.gap)
            with console.status(f'session {i + 1}/{len(kinds)} ({kind}): {args.pairs} pairs '
                                f'per stack'):
                sessions.append(run_session(i, kind, stacks, programs, libraries, binding,
                                            args.pairs))
            save(sessions)
    return sessions


# ---- command ---------------------------------------------------------------------------------

def recorded(path: Path) -> tuple[list[dict], dict]:
    """(sessions, header) of a ``bench upgrade --json`` file, checked: one line naming the
    file when it is not one."""
    try:
        data = json.loads(Path(path).read_text(encoding='utf-8'))
        if data.get('format_version') not in FORMATS_READ or data.get('kind') != 'bench upgrade':
            raise ValueError(f'not format {" or ".join(map(str, FORMATS_READ))} of bench upgrade')
        sessions = list(data['sessions'])
        for s in sessions:
            _check_session(s)
        if not sessions:
            raise ValueError('no sessions recorded')
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
        raise UserError(f'{path}: not a `commcheck bench upgrade --json` record ({err})') \
            from None
    return sessions, data


def _check_session(s: dict) -> None:
    if s['kind'] not in KINDS:
        raise ValueError(f'session {s.get("index")}: kind {s["kind"]!r}')
    for sides in s['stacks'].values():
        if not (sides['old'] and sides['new']):
            raise ValueError(f'session {s["index"]}: a side without launches')
        for launch in sides['old'] + sides['new']:
            # a figure is positive; the share of time the ranks waited for a CPU may be 0
            if not all(v >= 0 if name == experiments.CPU_WAIT else v > 0
                       for name, v in launch['values'].items()):
                raise ValueError(f'session {s["index"]}: a value not positive')
            float(launch['seq']), float(launch['added_small_ns'])
            if float(launch.get('seconds', 1.0)) <= 0:
                raise ValueError(f'session {s["index"]}: a launch time not positive')


def _write(out: Path, header: dict, sessions: list[dict]) -> None:
    """The record so far, replaced whole (a reader never sees half a file)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    part = out.with_name(out.name + '.part')
    part.write_text(json.dumps({**header, 'sessions': sessions}, indent=1) + '\n')
    part.replace(out)


def rejudged(paths_: list[Path]) -> tuple[list[dict], dict]:
    """The sessions of every record given, renumbered in the order given."""
    sessions, header = [], {}
    for path in paths_:
        found, header = recorded(path)
        console.print(f're-judging {path}: recorded '
                      f'{time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(found[0]["started"]))}')
        sessions += found
    return [{**s, 'index': i} for i, s in enumerate(sessions)], header


def main(args) -> int:
    if args.rejudge:
        sessions, header = rejudged(args.rejudge)
    else:
        sessions, header, out = _record(args)
    stack_ids = sorted({k for s in sessions for k in s['stacks']})
    pairs = min(len(sd['old']) for s in sessions for sd in s['stacks'].values())
    counts = [n for n in rules.PAIR_COUNTS if n <= pairs] or [pairs]
    accept = args.accept or 0.05
    console.print(rules.table(rules.evaluate(sessions, stack_ids, counts)))
    console.print(rules.sequential_table(
        rules.evaluate_sequential(sessions, stack_ids, args.budget, accept, args.max_pairs),
        accept))
    console.print(f'{len(sessions)} sessions ({", ".join(stack_ids)}), {pairs} pairs per stack '
                  f'each, {header.get("gap_s", 0):.0f} s apart, recorded '
                  f'{time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(sessions[0]["started"]))}'
                  + (f'; pairs until decided within {args.budget / 60:g} min of launches a '
                     f'session and stack' if args.budget else ''))
    if not args.rejudge:
        console.print(f'commcheck: wrote the launches to {out}')
    return 0


def _record(args) -> tuple[list[dict], dict, Path]:
    stacks, binding = bench_gate._stacks(args)
    started = time.time()
    stamp = time.strftime('%Y%m%dT%H%M%S')
    out = args.json or paths.REPORTS_DIR / 'bench' / f'upgrade-{stamp}.json'
    header = {'format_version': FORMAT_VERSION, 'kind': 'bench upgrade',
              'sizes': bench_gate.SIZES, 'iters': bench_gate.ITERS, 'gap_s': args.gap,
              'binding': binding}

    def save(done: list[dict]) -> None:
        _write(out, {**header, 'minutes': (time.time() - started) / 60}, done)

    console.print(f'commcheck: the launches go to {out}, session by session')
    return record_sessions(args, stacks, binding, save), header, out
