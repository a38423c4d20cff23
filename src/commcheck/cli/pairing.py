"""The stages of a sequential ``commcheck upgrade``: pairs until decided
(:mod:`commcheck.analysis.sequential`).

Each stage is a ReFrame run of the still undecided test cases, ``--repeat k --exec-order
random`` as a fixed count has always been (the two stacks of one repeat run back to back, in a
random order), restricted by ReFrame's ``-n`` to those test cases' exact names. After each
stage the pairs of every stage so far are pooled and each undecided test case is judged at its
look; a test case stops when every key variable is decided or its planned pairs are used.

The plan of a test case is fixed after its first stage, before its first look: its horizon is
``--max-pairs``, or what ``--budget`` of its launches (ReFrame's ``time_run`` of both stacks'
jobs, measured in that stage) holds at its measured time a pair, whichever is fewer. Test
cases that need the same number of pairs for their next look share a ReFrame run.
"""

from __future__ import annotations

import argparse
import dataclasses
import re

from commcheck import paths
from commcheck.analysis import paired, sequential
from commcheck.cli import run
from commcheck.errors import EXIT_OK, EXIT_REGRESSED
from commcheck.results import source, store

#: ReFrame's options that select test cases by name; a later stage replaces them.
NAME_OPTIONS = ('-n', '--name')
#: Why a test case's pairing stopped (the last: a stage whose launches made no new pair).
DECIDED, BUDGET, STALLED = 'decided', 'budget used', 'no new pair in its last stage'


@dataclasses.dataclass
class Case:
    """One test case being paired: its plan, its looks, its latest judgements."""
    key: tuple                          #: (system, partition, test)
    plan: sequential.Plan | None = None
    seconds_a_pair: float | None = None
    looks: list[int] = dataclasses.field(default_factory=list)
    judgements: list[paired.Judgement] = dataclasses.field(default_factory=list)
    stopped: str = ''
    pairs: int = 0                      #: the pairs its launches made so far

    @property
    def test(self) -> str:
        return self.key[2]

    @property
    def before(self) -> int:
        return self.looks[-1] if self.looks else 0

    def as_dict(self) -> dict:
        return {'system': self.key[0], 'partition': self.key[1], 'test': self.test,
                'horizon': self.plan.horizon if self.plan else None,
                'seconds_a_pair': self.seconds_a_pair, 'looks': self.looks,
                'stopped': self.stopped or 'not decided'}


@dataclasses.dataclass
class Run:
    """A staged upgrade run: its settings, the sessions of its stages, its test cases."""
    old: str
    new: str
    settings: paired.Settings
    pairs: int | None                   #: --pairs: one stage, one look
    max_pairs: int | None
    budget_s: float | None
    sessions: list[str] = dataclasses.field(default_factory=list)
    cases: dict[tuple, Case] = dataclasses.field(default_factory=dict)
    family: int | None = None           #: m: the variables judged at the first look
    failed: bool = False                #: a check failed in a stage (ReFrame said which)
    produced: list = dataclasses.field(default_factory=list)    #: run reports, in order

    def plan_of(self, seconds_a_pair: float | None, done: int) -> sequential.Plan:
        if self.pairs:
            return sequential.fixed(self.pairs, self.settings.alpha, self.family or 1)
        horizon = sequential.horizon_of(self.budget_s, seconds_a_pair, self.max_pairs)
        return sequential.Plan(horizon=max(horizon, done), alpha=self.settings.alpha,
                               m=self.family or 1)

    def as_dict(self) -> dict:
        return {'pairs': self.pairs, 'max_pairs': self.max_pairs, 'budget_s': self.budget_s,
                'first': self.pairs or sequential.FIRST, 'growth': sequential.GROWTH,
                'spending': sequential.stats.SPENDING, 'family': self.family,
                'stages': len(self.sessions),
                'cases': [c.as_dict() for c in self.cases.values()]}


def without_names(args: list[str]) -> list[str]:
    """The ReFrame arguments without their name selection (a later stage names its cases)."""
    out, skip = [], False
    for arg in args:
        if skip:
            skip = False
        elif arg in NAME_OPTIONS:
            skip = True
        elif not (arg.startswith('--name=') or (arg.startswith('-n') and len(arg) > 2)):
            out.append(arg)
    return out


def exact_name(test: str) -> str:
    """ReFrame's ``-n`` pattern of exactly this test (it matches display names without
    their spaces)."""
    return f'^{re.escape(test.replace(" ", ""))}$'


def stage_args(run_: Run, repeat: int, extra: list[str], tests: list[str] | None) -> list[str]:
    """ReFrame's arguments of one stage: ``repeat`` adjacent pairs of the two stacks, of the
    test cases ``tests`` (None: the user's selection)."""
    names = [] if tests is None else [a for t in tests for a in ('-n', exact_name(t))]
    chosen = extra if tests is None else without_names(extra)
    return [*chosen, *names, '-p', f'^({run_.old}|{run_.new})$', '--repeat', str(repeat),
            '--exec-order', 'random']


def run_stage(args, run_: Run, repeat: int, tests: list[str] | None) -> int | None:
    """One ReFrame run; None when it ran (a failed check is noted), else the code to exit
    with (ReFrame stopped by a signal, an error)."""
    before = set(paths.RUNS_DIR.glob('run-report-*.json'))
    status = run.cmd_run(argparse.Namespace(
        site=args.site, no_report=True,
        reframe_args=stage_args(run_, repeat, args.reframe_args, tests)))
    if status not in (EXIT_OK, EXIT_REGRESSED):
        return status
    run_.failed |= status == EXIT_REGRESSED
    made = sorted(set(paths.RUNS_DIR.glob('run-report-*.json')) - before)
    run_.produced += made
    for path in made:
        run_.sessions.append(store.read_run_report(path, store.warn_stderr).uuid)
    return None


def load(run_: Run, db_path, wanted) -> list[store.Session]:
    db = source.open_history(db_path or paths.RESULTS_DB)
    chosen = db.choose(uuids=run_.sessions)
    return db.load(chosen, store.warn_stderr, cases=True, wanted=wanted)


def seconds_a_pair(sessions: list[store.Session], run_: Run) -> dict[tuple, float]:
    """Per test case, the launches' time (ReFrame's ``time_run``, both stacks) over its
    repeats: the time of a pair."""
    spent: dict[tuple, list[float]] = {}
    for sess in sessions:
        for case in sess.cases:
            if case.get('fixture') or case.get('environ') not in (run_.old, run_.new):
                continue
            key = (str(case.get('system')), str(case.get('partition')),
                   store.REPEAT.sub('', str(case.get('display_name'))))
            took = case.get('time_run')
            if isinstance(took, (int, float)) and took >= 0:
                spent.setdefault(key, []).append(float(took))
    return {k: sum(v) / max(1, len(v) // 2) for k, v in spent.items()}


def pairs_of(samples: list[store.Sample], old: str, new: str) -> int:
    """The adjacent pairs a test case's launches make (its most paired variable's)."""
    sides: dict[str, dict[str, list]] = {}
    for s in samples:
        sides.setdefault(s.variable, {old: [], new: []})[s.environ].append(s)
    return max((len(paired.adjacent(v[old], v[new])) for v in sides.values()), default=0)


def _cases(samples: list[store.Sample], run_: Run) -> dict[tuple, list[store.Sample]]:
    out: dict[tuple, list[store.Sample]] = {}
    for s in samples:
        if s.environ in (run_.old, run_.new):
            out.setdefault((s.system, s.partition, s.test), []).append(s)
    return out


def first_look(run_: Run, samples: list[store.Sample], timing: dict[tuple, float]) -> None:
    """After the first stage: the test cases, the family (every variable judged), each test
    case's plan (its horizon from its measured time a pair)."""
    judged = paired.compare(samples, run_.old, run_.new, run_.settings)
    run_.family = max(1, sum(j.level is not None for j in judged))
    for key, mine in _cases(samples, run_).items():
        case = run_.cases.setdefault(key, Case(key, seconds_a_pair=timing.get(key)))
        case.plan = run_.plan_of(case.seconds_a_pair, pairs_of(mine, run_.old, run_.new))


def look(run_: Run, samples: list[store.Sample], timing: dict[tuple, float]) -> None:
    """Judges each open test case that reached a look, on all its pairs so far."""
    if run_.family is None:
        first_look(run_, samples, timing)
    for key, mine in _cases(samples, run_).items():
        case = run_.cases.get(key)
        if case is None or case.stopped:
            continue
        previous, case.pairs = case.pairs, pairs_of(mine, run_.old, run_.new)
        n = case.pairs
        if n == previous:           # its launches failed, or one stack never ran it
            case.stopped = STALLED
            continue
        waiting = n <= case.before or (n < case.plan.looks()[0] and n < case.plan.horizon)
        if waiting and not run_.pairs:
            continue                    # no new pairs, or not yet at a look that can decide
        share = 1.0 if run_.pairs else case.plan.share(case.before, n)
        case.judgements = paired.compare(mine, run_.old, run_.new, run_.settings, share,
                                         run_.family)
        case.looks.append(n)
        for j in case.judgements:
            j.looks = list(case.looks)
        if case.judgements and all(j.decided for j in case.judgements):
            case.stopped = DECIDED
        elif n >= case.plan.horizon or run_.pairs:
            case.stopped = BUDGET


def next_stages(run_: Run) -> dict[int, list[str]]:
    """The open test cases by the pairs each needs for its next look."""
    groups: dict[int, list[str]] = {}
    for case in run_.cases.values():
        if case.stopped:
            continue
        want = max(1, case.plan.next_look(case.before) - case.pairs)
        groups.setdefault(want, []).append(case.test)
    return groups


def pair_until_decided(args, run_: Run, wanted, keep) -> int | None:
    """Stages until every test case stopped; None, or the code to exit with (ReFrame was
    stopped, or failed)."""
    code = run_stage(args, run_, run_.pairs or sequential.FIRST, None)
    while code is None:
        sessions = load(run_, args.db, wanted)
        samples = [s for sess in sessions for s in sess.samples if keep(s)]
        look(run_, samples, seconds_a_pair(sessions, run_))
        groups = next_stages(run_)
        if not groups:
            return None
        for repeat, tests in sorted(groups.items()):
            code = run_stage(args, run_, repeat, sorted(set(tests)))
            if code is not None:
                break
    return code


def judgements(run_: Run) -> list[paired.Judgement]:
    """Every test case's judgements at its last look."""
    return [j for case in run_.cases.values() for j in case.judgements]
