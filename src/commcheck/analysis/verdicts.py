"""The verdicts, in one place: their names, which of them fail, the rule that picks one from a
quantity's outcome and its floor's (:func:`verdict`), and the words that say what decided one or
what would. Both rules that give verdicts read it: the gate between sessions
(:mod:`commcheck.analysis.gate`, its notes :func:`explain` and :func:`machine_notes`) and the
paired upgrade (:mod:`commcheck.analysis.paired`, its notes :func:`paired_notes` and the
acceptance's words :func:`accepted`). The statistics behind the outcomes are
:mod:`commcheck.analysis.stats`; this module computes none.

The rule (:func:`verdict`): ``MPI regressed`` (own cost worse, floor not, and worse by more
than the floor's estimated move where that move is undecided), ``machine changed`` (floor
moved, own cost not worse by more than that move: :func:`beyond_the_floor`), ``both``,
``improved``, ``unchanged``, ``cannot tell``; without a floor ``regressed``, ``improved``,
``unchanged`` or ``cannot tell`` on the value. Module docstrings of the gate and the paired
rule say how each reads its launches.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Protocol

from commcheck import experiments
from commcheck.analysis import stats
from commcheck.analysis.stats import BETTER, SAME, UNKNOWN, WORSE, Outcome
from commcheck.results.store import SampleKey, key_label

MPI_REGRESSED, BOTH, REGRESSED = 'MPI regressed', 'both', 'regressed'
MACHINE_CHANGED, CANNOT_TELL = 'machine changed', 'cannot tell'
IMPROVED, UNCHANGED, NO_BASELINE, NOT_COMPARABLE = (
    'improved', 'unchanged', 'no baseline', 'not comparable')
VERDICTS = (MPI_REGRESSED, BOTH, REGRESSED, MACHINE_CHANGED, CANNOT_TELL, IMPROVED, UNCHANGED,
            NO_BASELINE, NOT_COMPARABLE)
#: Verdicts that mean the software got slower: ``commcheck compare`` exits 1 on them.
SOFTWARE_REGRESSED = (MPI_REGRESSED, BOTH, REGRESSED)
#: Verdicts that decided something (``commcheck compare`` exits 3 when it has none).
DECIDED = (MPI_REGRESSED, BOTH, REGRESSED, MACHINE_CHANGED, IMPROVED, UNCHANGED)
#: Verdicts that decide nothing: the samples cannot tell, or there is nothing to compare with.
UNDECIDED = tuple(v for v in VERDICTS if v not in DECIDED)
#: The acceptance's results (``commcheck upgrade --accept``): not slower by more than the
#: margin, or slower by more.
PASS, FAIL = 'pass', 'fail'
#: Provenance fields that must match for two samples to measure the same thing.
SAME_SETUP = ('binding', 'placement')


class Judged(Protocol):
    """What the words read of a judged variable: a gate's ``Comparison`` or a paired
    ``Judgement``."""
    key: SampleKey
    verdict: str
    cost: Outcome | None
    floor: Outcome | None
    floor_variable: str | None
    note: str


def fails(verdict: str, fail_on_machine_change: bool = False) -> bool:
    """Whether a verdict fails the gate (``commcheck compare`` exits 1, its JUnit test case
    fails): the software regressed, or the machine changed and the site asked to fail on it."""
    return verdict in SOFTWARE_REGRESSED or (fail_on_machine_change and
                                             verdict == MACHINE_CHANGED)


def counts(judged: list) -> dict[str, int]:
    """How many of each verdict, every verdict named (0 where none)."""
    found = Counter(c.verdict for c in judged)
    return {v: found.get(v, 0) for v in VERDICTS}


# ---- the rule ---------------------------------------------------------------------------------

def beyond_the_floor(cost: Outcome, floor: Outcome) -> bool:
    """Whether MPI's figure moved by more than a move of the floor can explain.

    MPI's figure is not proportional to the floor (measured: docs/gate.md#the-model): a
    machine whose floor moved by d (log) can move MPI's figure by anywhere from 0 to 2d
    (:data:`stats.MAX_SLOPE`). ``cost`` is the figure adjusted by theta times the floor's
    move (``cost.slope``; over the floor: 1), so the machine alone can leave up to
    (2 - theta) d of a worse floor's move in it, and up to theta |d| of a better one's: only
    the part of the cost's interval beyond that is the software's. Over the floor (theta 1)
    both are |d|, the rule before the slope was fitted."""
    theta = 1.0 if cost.slope is None else cost.slope
    move = floor.change
    return cost.low > (stats.MAX_SLOPE - theta) * move if move > 0 else cost.low > -theta * move


def verdict(cost: Outcome, floor: Outcome | None, mpi_floor: bool = False,
            undecided_bounds: bool = True, own_ratio: bool = False) -> str:
    """The verdict from MPI's own cost (or the raw value, without a floor) and the floor.
    ``mpi_floor``: the floor is an MPI figure itself (:func:`experiments.mpi_floor`): its move
    is the MPI's or the machine's, so what a hardware floor's move makes ``machine changed``
    is ``cannot tell``, and a cost beyond a worse floor is ``MPI regressed``, not ``both``.
    ``undecided_bounds``: a floor's move that is not decided bounds what is the software's
    too (between sessions; the paired rule with a fitted slope leaves that to the slope, see
    :mod:`commcheck.analysis.paired`). ``own_ratio``: the value is a ratio of two MPI figures
    of the same job and ranks (:func:`experiments.is_own_ratio`), which a slower machine moves
    alike: regressed on the value is ``MPI regressed``."""
    said = _verdict(cost, floor, undecided_bounds)
    if mpi_floor:
        return {MACHINE_CHANGED: CANNOT_TELL, BOTH: MPI_REGRESSED}.get(said, said)
    if own_ratio and said == REGRESSED:
        return MPI_REGRESSED
    return said


def _verdict(cost: Outcome, floor: Outcome | None, undecided_bounds: bool = True) -> str:
    if floor is None:
        return {WORSE: REGRESSED, BETTER: IMPROVED, SAME: UNCHANGED,
                UNKNOWN: CANNOT_TELL}[cost.outcome]
    moved = floor.outcome in (WORSE, BETTER)
    if cost.outcome == WORSE:
        # Unless the floor held, its move bounds what is the software's, decided or not: an
        # undecided one too (a measured case: docs/gate.md#verdicts).
        bounds = moved or (undecided_bounds and floor.outcome == UNKNOWN)
        if bounds and not beyond_the_floor(cost, floor):
            return MACHINE_CHANGED if moved else CANNOT_TELL
        return BOTH if floor.outcome == WORSE else MPI_REGRESSED
    if cost.outcome == UNKNOWN:
        # The floor moved for sure; whatever MPI's own cost did within that move is the
        # machine's by the same bound: "machine changed" (the note gives the cost's interval).
        return MACHINE_CHANGED if moved and not beyond_the_floor(cost, floor) else CANNOT_TELL
    if moved:
        return MACHINE_CHANGED
    return IMPROVED if cost.outcome == BETTER else UNCHANGED


def floor_moved(judged: Judged) -> bool:
    """Whether the judged variable's floor moved beyond doubt, either way."""
    return judged.floor is not None and judged.floor.outcome in (WORSE, BETTER)


def not_comparable(direction: str | None, changes: dict[str, tuple[str, str]],
                   positive: bool) -> str | None:
    """Why the two sides' launches cannot be compared (the note of ``not comparable``), or
    None: no direction, a setup field of :data:`SAME_SETUP` that differs (``changes``: field ->
    (before, after)), or a value not positive."""
    differ = [f for f in SAME_SETUP if f in changes]
    if direction is None:
        return 'no direction (not a performance figure)'
    if differ:
        return '; '.join(f'{f} {changes[f][0]} -> {changes[f][1]}' for f in differ)
    if not positive:
        return 'a value not positive'
    return None


# ---- the gate's words -------------------------------------------------------------------------

def explain(comp: Judged, mpi_floor: str, max_needed: int) -> str:
    """The gate's note on a verdict: what decided it, or what would (``comp.note`` so far,
    kept where nothing here replaces it)."""
    note = comp.note
    if comp.verdict == MPI_REGRESSED and comp.floor is None:     # an own ratio (verdict())
        note = ('a ratio of two MPI figures of the same job and ranks, which a slower '
                'machine moves alike')
    elif mpi_floor and floor_moved(comp):
        # said first: what decided the verdict (the launches-needed note follows it)
        note = (f"its floor {comp.floor_variable} is {mpi_floor}: its move "
                f"({comp.floor.interval(0)} worse-positive) is the MPI's or the "
                f"machine's, not told apart here (the ping-pong's hardware floors in the "
                f"same session tell whether the machine moved); MPI's own cost over it "
                f"{comp.cost.interval(0)}")
    elif comp.verdict == MACHINE_CHANGED and comp.cost.outcome == WORSE:
        note = (f"MPI's own cost {math.expm1(comp.cost.change):+.0%} too, within what the "
                f"floor's move ({math.expm1(comp.floor.change):+.0%}) can explain")
    elif comp.verdict == MACHINE_CHANGED and comp.cost.outcome == UNKNOWN:
        note = (f"MPI's own cost {comp.cost.interval(0)} cannot be told apart, and is "
                f"within what the floor's move ({math.expm1(comp.floor.change):+.0%}) "
                f"can explain")
    elif comp.verdict == CANNOT_TELL and comp.cost.outcome == WORSE:
        note = (f"MPI's own cost {comp.cost.interval(0)} is within what the floor's move, "
                f"itself undecided ({comp.floor.interval(0)}), can explain")
    if comp.verdict == CANNOT_TELL and not (mpi_floor and floor_moved(comp)):
        # what would decide: MPI's own cost, or where that is decided, the floor's move (an
        # MPI floor's decided move: no number of launches, the note above says what would)
        told = comp.cost if comp.cost.outcome == UNKNOWN or not comp.floor else comp.floor
        need = told.needed
        unit = told.level
        said = (f'about {need} {unit} a side would decide' if need and
                need <= max_needed else f'more than {max_needed} '
                f'{unit} a side would be needed' if need else 'on the threshold')
        note = '; '.join(x for x in (said, note) if x)
    return note


def machine_notes(comparisons: list[Judged]) -> None:
    """Notes where another floor of the same launches (same system, partition, environment and
    test) moved: on each variable that cannot be told, and on each MPI regressed whose own
    floor did not move. A floor measures one size's path: on this project's 2-core VM the 8 B
    floor rose 4x in some stretches (0.07 to 0.26-0.31 us) while the 1 MiB floor held, and
    Intel MPI's 1 MiB bandwidth fell about 12x in them; the verdict stays the rule's, and the
    note puts the machine's move beside it."""
    moved: dict[tuple, dict[str, str]] = {}
    for c in comparisons:
        if floor_moved(c) and not experiments.mpi_floor(c.key.check):  # an MPI figure's move
            # may be the MPI's: not "the machine changed"
            moved.setdefault(c.key.launches, {})[c.floor_variable] = (
                f'{c.floor_variable} {c.floor.interval(0)} worse-positive')
    for c in comparisons:
        floors = moved.get(c.key.launches, {})
        if c.verdict == CANNOT_TELL and floors:
            said = 'the machine changed in these launches: ' + '; '.join(floors.values())
        elif c.verdict == MPI_REGRESSED and floors and not floor_moved(c):
            said = ('its own floor held, but the machine changed in these launches: '
                    + '; '.join(floors.values()))
        else:
            continue
        c.note = '; '.join(x for x in (c.note, said) if x)


def contended_note(waited_new: float, waited_base: float | None, was: str, note: str) -> str:
    """The note of a verdict made ``machine changed`` by CPU contention: how long the ranks
    waited (upper quartiles), and what the rule alone had said (``was``, its ``note`` kept
    unless it said what would decide an undecided verdict, which no longer applies)."""
    said = (f'the ranks waited for a CPU {waited_new:.0%} of the measuring time (upper '
            f'quartile)' + (f', baseline {waited_base:.0%}' if waited_base is not None else '')
            + f': CPU contention, MPI not judged (without it: {was})')
    kept = '' if was == CANNOT_TELL else note
    return '; '.join(x for x in (said, kept) if x)


def describe(comp) -> str:
    """A gate comparison in one line: verdict, variable, change, and the judged quantity's
    change with its interval."""
    change = f' {comp.change:+.1%}' if comp.change is not None else ''
    cost = ''
    if comp.cost:
        what = 'MPI cost' if comp.floor else 'value'
        cost = (f' ({what} {math.expm1(comp.cost.change):+.1%} [{math.expm1(comp.cost.low):+.1%},'
                f' {math.expm1(comp.cost.high):+.1%}] worse-positive)')
    return f'{comp.verdict:>15}  {key_label(comp.key)}{change}{cost}'


# ---- the paired rule's words ------------------------------------------------------------------

def paired_notes(j, flagged: int, max_needed: int) -> list[str]:
    """What decided a paired verdict, or what would: the pairs needed, the floor's move, the
    pairs left out, an MPI figure for a floor."""
    said = []
    if j.verdict == CANNOT_TELL or (j.accept is not None and not j.decided):
        told = j.cost if j.cost.outcome == UNKNOWN or not j.floor else j.floor
        need = told.needed
        decides = need and need <= max_needed
        said.append(f'about {need} pairs in all would decide' if decides
                    else f'more than {max_needed} pairs would be needed' if need
                    else 'on the threshold')
    if j.verdict == MACHINE_CHANGED or floor_moved(j):
        said.append(f'the floor moved between the stacks: {j.floor.interval()}')
    if flagged:
        said.append(f'{flagged} of {len(j.pairs)} pairs left out: their floors differ beyond '
                    f'doubt (a machine change between the two launches)')
    mpi_floor = experiments.mpi_floor(j.key.check)
    if mpi_floor and experiments.floor_of(j.key.check, j.variable):
        said.insert(0, f'judged on the value: its floor, {mpi_floor}, is each stack\'s own')
    return said


def machine_pairs_note(flagged: int, pairs: int) -> str:
    """The note of a paired ``machine changed``: more than half the pairs' floors differ."""
    return (f'{flagged} of {pairs} pairs: the floors of the two launches differ beyond doubt '
            f'(the machine changed between them); MPI not judged')


def accepted(result: str | None, margin: float, bound: float | None) -> str:
    """The acceptance in words: what was reached against the margin."""
    if bound is None:
        return f'accept {margin:.0%}: no interval yet'
    if result == PASS:
        return f'accepted: not slower by more than {margin:.0%} (worse end {bound:+.1%})'
    if result == FAIL:
        return f'refused: slower by more than {margin:.0%} (better end {bound:+.1%})'
    return f'accept {margin:.0%}: not decided (worse end {bound:+.1%})'
