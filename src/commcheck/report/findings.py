"""The source documents' published findings, and how today's data decide each one.

Typed in from the documents (see the seeds' README), never parsed from them: each
:class:`Finding` names its document, states the claim as published, states the rule that decides
it on today's data, and has a function computing its :class:`Outcome` from a report context.

A finding is judged per stack (or per pair of stacks it compares): ``holds``, ``does not hold``,
or ``cannot tell here`` with the reason. A quantity measured in several launches is a
:class:`Spread` (median, fastest and slowest launch); where that spread covers the rule's
threshold the stack says ``cannot tell here`` rather than a verdict the next launch could
reverse; a quantity from one launch is judged on that launch and says so. The finding then
holds on k of n stacks: ``holds`` (every stack told), ``does not hold`` (none), or ``holds on
some stacks``, naming which hold and which do not.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Callable

import numpy as np

from commcheck import experiments
from commcheck.analysis import seeds
from commcheck.report.context import Context
from commcheck.report.model import Test, checks

HOLDS, DOES_NOT_HOLD, CANNOT_TELL = 'holds', 'does not hold', 'cannot tell here'
MIXED = 'holds on some stacks'

DOCUMENTS = {
    '000/004': 'C (MPICH2 1.3.1) vs Java (MPIJava 1.2.5) ping-pong between two nodes over '
               '100 Mbit/s Ethernet',
    '001': 'Ping-pong latency on one node (C, Open MPI vader shared memory, Slurm)',
    '002': 'MPI-3 shared-memory windows vs Send/Recv for a 2-D 5-point stencil (C and '
           'Fortran 90, Cray)',
    '003': 'Java (mpiJava over JNI) vs Fortran 77 MPI: contiguous and non-contiguous messages '
           '(Parkbench COMMS1/COMMS2, Myrinet)',
}
NO_JAVA = 'no Java results in this session'


@dataclasses.dataclass(frozen=True)
class Outcome:
    status: str
    detail: str
    #: Per stack (or pair compared): where the finding holds, does not hold, cannot be told.
    holds: tuple[str, ...] = ()
    fails: tuple[str, ...] = ()
    undecided: tuple[str, ...] = ()

    @property
    def told(self) -> int:
        return len(self.holds) + len(self.fails) + len(self.undecided)


@dataclasses.dataclass(frozen=True)
class Spread:
    """A value over launches: the median, the lowest and the highest launch, how many."""
    mid: float
    lo: float
    hi: float
    launches: int

    def text(self, fmt: str = '.2f') -> str:
        if self.launches <= 1:
            return f'{self.mid:{fmt}} (one launch)'
        return f'{self.mid:{fmt}} [{self.lo:{fmt}}-{self.hi:{fmt}}, {self.launches} launches]'


def spread_of(values: list[float]) -> Spread | None:
    values = [v for v in values if v is not None and math.isfinite(v)]
    if not values:
        return None
    return Spread(statistics.median(values), min(values), max(values), len(values))


def ratio(a: Spread | None, b: Spread | None) -> Spread | None:
    """a / b, its range the widest the launches allow (lowest a over highest b, and back)."""
    if a is None or b is None or b.lo <= 0 or b.mid <= 0:
        return None
    return Spread(a.mid / b.mid, a.lo / b.hi, a.hi / b.lo, min(a.launches, b.launches))


def within(value: Spread, lo: float = -math.inf, hi: float = math.inf,
           what: str = '', fmt: str = '.2f') -> Outcome:
    """Holds where every launch lies in [lo, hi], does not where none can; else the spread of
    the launches covers a threshold and the stack cannot tell."""
    detail = f'{what} {value.text(fmt)}'.strip()
    if lo <= value.lo and value.hi <= hi:
        return Outcome(HOLDS, detail)
    if value.hi < lo or value.lo > hi:
        return Outcome(DOES_NOT_HOLD, detail)
    return Outcome(CANNOT_TELL, f'{detail}: the spread of the launches covers the threshold')


def _spread(ctx: Context, test: Test, variable: str) -> Spread | None:
    return spread_of(ctx.values.launches(test, variable))


@dataclasses.dataclass(frozen=True)
class Finding:
    id: str
    seed: str
    claim: str                      # as the document states it
    rule: str                       # how today's data decide it
    judge: Callable[[Context], Outcome]


def combine(results: dict[str, Outcome], absent: str) -> Outcome:
    """One outcome from per-stack outcomes, keeping which stacks hold, fail, cannot tell."""
    if not results:
        return Outcome(CANNOT_TELL, absent)
    detail = '; '.join(f'{label}: {o.detail}' for label, o in results.items())
    holds, fails, undecided = (tuple(label for label, o in results.items() if o.status == st)
                               for st in (HOLDS, DOES_NOT_HOLD, CANNOT_TELL))
    if not holds and not fails:
        status = CANNOT_TELL
    else:
        status = MIXED if holds and fails else HOLDS if holds else DOES_NOT_HOLD
    return Outcome(status, detail, holds, fails, undecided)


def _verdict(ok: bool, detail: str) -> Outcome:
    return Outcome(HOLDS if ok else DOES_NOT_HOLD, detail)


def _label(t: Test) -> str:
    return ' '.join(x for x in (t.environ, t.param('lang')) if x)


def _pingpongs(ctx: Context, lang: str) -> list[Test]:
    return ctx.values.tests(checks('p2p', peer=False), lang=lang)


# -- 000/004: C vs Java ping-pong ---------------------------------------------------------------
def _java_pairs(ctx: Context) -> list[tuple[Test, Test]]:
    """(Java, C) ping-pong pairs: the same environment where it offers both, else every C
    stack against every Java one."""
    java, c = _pingpongs(ctx, 'java'), _pingpongs(ctx, 'c')
    same = [(j, x) for j in java for x in c if x.environ == j.environ]
    return same or [(j, x) for j in java for x in c]


def _ratios(ctx: Context, java: Test, c: Test) -> dict[int, float]:
    a, b = ctx.values.sweep(java, 'latency'), ctx.values.sweep(c, 'latency')
    return {n: a[n] / b[n] for n in a if n in b and b[n] > 0}


def _ratio_spreads(ctx: Context, java: Test, c: Test) -> dict[int, Spread]:
    """Java/C latency per common size, over the launches of each."""
    out = {}
    for n in set(ctx.values.sweep(java, 'latency')) & set(ctx.values.sweep(c, 'latency')):
        variable = experiments.sized_name('latency', n)
        r = ratio(_spread(ctx, java, variable), _spread(ctx, c, variable))
        if r is not None:
            out[n] = r
    return dict(sorted(out.items()))


def _median_spread(spreads: list[Spread]) -> Spread:
    return Spread(statistics.median(s.mid for s in spreads),
                  statistics.median(s.lo for s in spreads),
                  statistics.median(s.hi for s in spreads), min(s.launches for s in spreads))


def _java_rule(ctx: Context, rule: Callable[[dict[int, Spread]], Outcome]) -> Outcome:
    pairs = _java_pairs(ctx)
    if not _pingpongs(ctx, 'java'):
        return Outcome(CANNOT_TELL, NO_JAVA)
    if not pairs:
        return Outcome(CANNOT_TELL, 'no C ping-pong in this session to compare Java with')
    return combine({f'{_label(j)} vs {_label(c)}': rule(_ratio_spreads(ctx, j, c))
                    for j, c in pairs}, NO_JAVA)


def java_half_of_c(ctx: Context) -> Outcome:
    def rule(ratios):
        small = [r for n, r in ratios.items() if n < 16384]
        if not small:
            return Outcome(CANNOT_TELL, 'no common size below 16 KiB')
        return within(_median_spread(small), 0.35, 0.65,
                      'Java/C round trip (median below 16 KiB)')
    return _java_rule(ctx, rule)


def converge_from_16k(ctx: Context) -> Outcome:
    def rule(ratios):
        large = {n: r for n, r in ratios.items() if n >= 16384}
        if not large:
            return Outcome(CANNOT_TELL, 'no common size from 16 KiB')
        worst = max(large.values(), key=lambda r: abs(math.log(r.mid)))
        each = [within(r, 0.8, 1.25) for r in large.values()]
        status = (DOES_NOT_HOLD if any(o.status == DOES_NOT_HOLD for o in each) else
                  HOLDS if all(o.status == HOLDS for o in each) else CANNOT_TELL)
        return Outcome(status, f'Java/C from 16 KiB at worst {worst.text()}')
    return _java_rule(ctx, rule)


def equal_at_1mib(ctx: Context) -> Outcome:
    def rule(ratios):
        if 1048576 not in ratios:
            return Outcome(CANNOT_TELL, '1 MiB not measured')
        return within(ratios[1048576], 0.9, 1.1, 'Java/C at 1 MiB')
    return _java_rule(ctx, rule)


def jit_first_message(ctx: Context) -> Outcome:
    """Java's first message slower than C's smallest message, and Java not slower after it."""
    pairs = _java_pairs(ctx)
    if not _pingpongs(ctx, 'java'):
        return Outcome(CANNOT_TELL, NO_JAVA)
    if not pairs:
        return Outcome(CANNOT_TELL, 'no C ping-pong in this session to compare Java with')
    out = {}
    for j, c in pairs:
        first = ctx.values.value(j, 'first_message')
        ratios = _ratios(ctx, j, c)
        c_sweep = ctx.values.sweep(c, 'latency')
        if first is None or not ratios or not c_sweep:
            out[f'{_label(j)} vs {_label(c)}'] = Outcome(
                CANNOT_TELL, 'no first-message time recorded' if first is None
                else 'no common size')
            continue
        smallest = c_sweep[min(c_sweep)]
        after = statistics.median(ratios.values())
        out[f'{_label(j)} vs {_label(c)}'] = _verdict(
            first > smallest and after <= 1.1,
            f'first Java message {first:.3g} µs vs C {smallest:.3g} µs at {min(c_sweep)} B; '
            f'afterwards Java/C {after:.2f}')
    return combine(out, NO_JAVA)


# -- 001: two regimes ---------------------------------------------------------------------------
def _slope(points: dict[int, float]) -> float | None:
    if len(points) < 2:
        return None
    x, y = np.log(list(points)), np.log(list(points.values()))
    return float(np.polyfit(x, y, 1)[0])


def two_regimes(ctx: Context) -> Outcome:
    out = {}
    for t in _pingpongs(ctx, 'c'):
        sweep = ctx.values.sweep(t, 'latency')
        small = _slope({n: v for n, v in sweep.items() if n <= 512})
        large = _slope({n: v for n, v in sweep.items() if n >= 4096})
        if small is None or large is None:
            out[_label(t)] = Outcome(CANNOT_TELL, 'needs two sizes up to 512 B and two from '
                                                  '4 KiB')
            continue
        out[_label(t)] = _verdict(small < 0.25 and large > 0.6,
                                  f'log-log slope {small:.2f} up to 512 B, {large:.2f} from 4 KiB')
    return combine(out, 'no C ping-pong in this session')


# -- 002: shared-memory stencil -----------------------------------------------------------------
def _stencil_times(ctx: Context, lang: str) -> dict[str, dict[str, dict[int, float]]]:
    """environment -> variant -> ranks -> time, runs that were not oversubscribed."""
    out: dict = {}
    for t in ctx.values.tests(checks('stencil'), lang=lang):
        if not t.param('ranks').isdigit() or ctx.values.oversubscribed(t):
            continue
        value = ctx.values.value(t, 'time')
        if value is not None:
            out.setdefault(t.environ, {}).setdefault(t.param('variant'), {})[
                int(t.param('ranks'))] = value
    return out


def shm_only_at_low_ranks(ctx: Context) -> Outcome:
    out = {}
    for env, variants in _stencil_times(ctx, 'c').items():
        sr, shm = variants.get('sr', {}), variants.get('shm', {})
        common = sorted(set(sr) & set(shm))
        if len(common) < 2:
            out[env] = Outcome(CANNOT_TELL, 'S/R and SHM at fewer than two common rank counts')
            continue
        low, high = common[0], common[-1]
        adv_low, adv_high = sr[low] / shm[low], sr[high] / shm[high]
        detail = (f'S/R/SHM time {adv_low:.2f} at {low} rank(s), {adv_high:.2f} at {high} '
                  f'(>1: SHM faster)')
        if adv_low <= 1:
            out[env] = Outcome(DOES_NOT_HOLD, detail + '; SHM not faster even at low counts')
        elif adv_high <= 1:
            out[env] = Outcome(HOLDS, detail)
        elif high < 16:
            out[env] = Outcome(CANNOT_TELL, detail + f'; the published crossover was at 16 '
                                                     f'ranks, this node ran up to {high} '
                                                     f'without oversubscription')
        else:
            out[env] = Outcome(DOES_NOT_HOLD, detail)
    return combine(out, 'no C stencil with both S/R and SHM in this session')


def sr_best_overall(ctx: Context) -> Outcome:
    out = {}
    for lang in ('c', 'fortran'):
        for env, variants in _stencil_times(ctx, lang).items():
            sr = variants.get('sr')
            others = {v: t for v, t in variants.items() if v != 'sr' and t}
            if not sr or not others:
                out[f'{env} {lang}'] = Outcome(CANNOT_TELL, 'S/R and another variant needed')
                continue
            common = sorted(set(sr).intersection(*others.values()))
            if not common:
                out[f'{env} {lang}'] = Outcome(CANNOT_TELL, 'no rank count with every variant')
                continue
            totals = {v: sum(t[n] for n in common) for v, t in {'sr': sr, **others}.items()}
            best = min(totals, key=totals.get)
            out[f'{env} {lang}'] = _verdict(
                totals['sr'] <= 1.02 * totals[best],
                f'best total over {common} ranks: {best} ({totals[best]:.3g} s; S/R '
                f'{totals["sr"]:.3g} s)')
    return combine(out, 'no stencil in this session')


def cptr_costs(ctx: Context) -> Outcome:
    """c_f_pointer's read over the allocatable one: the pairs of one launch
    (``read_over_alloc``) where the c_f_pointer test ran them, else the two tests' reads."""
    out = {}
    by_env: dict = {}
    for t in ctx.values.tests(checks('pointers')):
        by_env.setdefault(t.environ, {})[t.param('variant')] = t
    for env, tests in by_env.items():
        cptr, alloc = tests.get('cptr'), tests.get('alloc')
        paired = _spread(ctx, cptr, experiments.POINTER_RATIOS['read']) if cptr else None
        if paired:
            out[env] = within(paired, 1.1, what='read via c_f_pointer / allocatable (paired '
                                                'runs in one launch)')
            continue
        r = ratio(*(_spread(ctx, t, 'read') if t else None for t in (cptr, alloc)))
        if r is None:
            out[env] = Outcome(CANNOT_TELL, 'c_f_pointer or allocatable read not measured')
            continue
        out[env] = within(r, 1.1, what='read via c_f_pointer / allocatable (separate tests)')
    return combine(out, 'no Fortran pointer study in this session')


# -- 003: Parkbench and derived datatypes -------------------------------------------------------
def _datatypes(ctx: Context) -> dict[tuple[str, str], dict[str, dict]]:
    """(stack, element) -> mode -> {r_inf, slowdown}, each a Spread over launches."""
    out: dict = {}
    for t in ctx.values.tests(checks('datatypes')):
        out.setdefault((_label(t), t.param('element')), {})[t.param('mode')] = {
            'r_inf': _spread(ctx, t, 'r_inf'), 'slowdown': _spread(ctx, t, 'slowdown')}
    return out


def stride_beats_loop(ctx: Context) -> Outcome:
    out = {}
    for (stack, element), modes in _datatypes(ctx).items():
        stride = (modes.get('stride') or {}).get('r_inf')
        loop = (modes.get('loop') or {}).get('r_inf')
        if ratio(stride, loop) is None:
            out[f'{stack} {element}'] = Outcome(CANNOT_TELL, 'STRIDE or LOOP not measured')
            continue
        out[f'{stack} {element}'] = within(ratio(stride, loop), 1.0,
                                           what='r_inf STRIDE / LOOP')
    return combine(out, 'no derived-datatype results in this session')


def _stride_slowdown(element: str) -> Callable[[Context], Outcome]:
    published = (seeds.SEED003_DATATYPES[('f77', element, 'contig')][0] /
                 seeds.SEED003_DATATYPES[('f77', element, 'stride')][0])

    def judge(ctx: Context) -> Outcome:
        out = {}
        for (stack, elem), modes in _datatypes(ctx).items():
            if elem != element:
                continue
            slow = (modes.get('stride') or {}).get('slowdown')
            if slow is None:
                out[stack] = Outcome(CANNOT_TELL, 'STRIDE not measured')
                continue
            out[stack] = within(slow, published / 1.5, published * 1.5,
                                f'slowdown (published {published:.3g}x)', '.3g')
        return combine(out, f'no {element} derived-datatype results in this session')
    return judge


def _fits(ctx: Context) -> dict[tuple[str, str, str], dict]:
    """(environment, language, benchmark) -> {r_inf, t0}, each a Spread over launches."""
    return {(t.environ, t.param('lang'), t.param('benchmark')):
            {'r_inf': _spread(ctx, t, 'r_inf'), 't0': _spread(ctx, t, 't0')}
            for t in ctx.values.tests(checks('hockney'))}


def _java_vs_native(ctx: Context, variable: str,
                    rule: Callable[[Spread], Outcome]) -> Outcome:
    fits = _fits(ctx)
    java = {k: v for k, v in fits.items() if k[1] == 'java' and v[variable] is not None}
    if not java:
        return Outcome(CANNOT_TELL, NO_JAVA)
    out = {}
    for (env, _, bench), values in java.items():
        native = {k: v for k, v in fits.items() if k[2] == bench and v[variable]}
        # the document's peer is Fortran 77: Fortran on the same stack, else every Fortran
        # stack, else C likewise
        for lang in ('fortran', 'c'):
            peers = ({k: v for k, v in native.items() if k[:2] == (env, lang)} or
                     {k: v for k, v in native.items() if k[1] == lang})
            if peers:
                break
        if not peers:
            out[f'{env} {bench}'] = Outcome(CANNOT_TELL, 'no Fortran or C fit to compare')
            continue
        for (nenv, nlang, _), nvalues in peers.items():
            r = ratio(values[variable], nvalues[variable])
            out[f'{env} java vs {nenv} {nlang} {bench}'] = (
                rule(r) if r is not None else Outcome(CANNOT_TELL, f'{variable} not positive'))
    return combine(out, NO_JAVA)


def java_same_r_inf(ctx: Context) -> Outcome:
    return _java_vs_native(ctx, 'r_inf', lambda r: within(r, 0.9, 1.1, 'r_inf ratio'))


def java_startup_larger(ctx: Context) -> Outcome:
    return _java_vs_native(ctx, 't0', lambda r: within(r, 2.0, what='startup ratio'))


def java_call_share(ctx: Context) -> Outcome:
    def rule(ratios):
        if 8 not in ratios:
            return Outcome(CANNOT_TELL, '8 B not measured')
        # extra share 1 - C/Java >= 50 % <=> Java/C >= 2
        return within(ratios[8], 2.0, what='Java/C one-way at 8 B (>= 2: the extra Java time '
                                           'is at least half)')
    return _java_rule(ctx, rule)


def comms2_gain(ctx: Context) -> Outcome:
    out = {}
    fits = _fits(ctx)
    for (env, lang, bench), values in fits.items():
        if bench != 'comms1':
            continue
        gain = ratio(fits.get((env, lang, 'comms2'), {}).get('r_inf'), values['r_inf'])
        if gain is None:
            out[f'{env} {lang}'] = Outcome(CANNOT_TELL, 'COMMS1 or COMMS2 r_inf missing')
            continue
        out[f'{env} {lang}'] = within(gain, 1.2, what='COMMS2/COMMS1 r_inf')
    return combine(out, 'no Parkbench COMMS results in this session')


FINDINGS = (
    Finding('000-java-half', '000/004', "Java's round trip was about half of C's for most "
            'sizes.', 'Java/C one-way latency, median below 16 KiB, between 0.35 and 0.65.',
            java_half_of_c),
    Finding('000-converge', '000/004', 'The C and Java curves converge from 16 KiB.',
            'Java/C latency within 0.8-1.25 at every size from 16 KiB.', converge_from_16k),
    Finding('000-equal-1mib', '000/004', 'C and Java are equal at 1 MiB.',
            'Java/C latency at 1 MiB within 0.9-1.1.', equal_at_1mib),
    Finding('000-jit', '000/004', 'Java was slower only on the first message (JIT warm-up).',
            "Java's first message slower than C's smallest message, and Java/C latency at "
            'most 1.1 (median over sizes) afterwards.', jit_first_message),
    Finding('001-regimes', '001', 'Two regimes: latency-bound up to a few hundred bytes, '
            'bandwidth-bound from about 4 KiB.', 'C ping-pong, log-log slope of latency '
            'against size below 0.25 up to 512 B and above 0.6 from 4 KiB.', two_regimes),
    Finding('002-shm-low-ranks', '002', 'SHM is faster than S/R (C) only at low rank counts; '
            'contention grows with ranks.', 'C stencil, not oversubscribed: SHM faster at the '
            'lowest rank count, not at the highest.', shm_only_at_low_ranks),
    Finding('002-cptr', '002', 'The Fortran SHM versions pay for c_f_pointer (reads through '
            'it are slower).', 'Pointer study: read through c_f_pointer more than 1.1x the '
            'allocatable read, each c_f_pointer run paired with an allocatable one just before '
            'it in the same launch (the median pair).', cptr_costs),
    Finding('002-sr-best', '002', 'Conventional Send/Recv remained the best overall.',
            'Stencil, not oversubscribed: S/R total time over the common rank counts within '
            '2% of the best variant.', sr_best_overall),
    Finding('003-stride-loop', '003', 'STRIDE beats LOOP.', 'Derived datatypes: r_inf of '
            'STRIDE above LOOP, per stack and element type.', stride_beats_loop),
    Finding('003-stride-byte', '003', 'STRIDE is about 14.7x slower than contiguous for '
            'bytes.', 'Slowdown of STRIDE (bytes) within a factor 1.5 of 14.7.',
            _stride_slowdown('byte')),
    Finding('003-stride-double', '003', 'STRIDE is about 21.8x slower than contiguous for '
            'doubles.', 'Slowdown of STRIDE (doubles) within a factor 1.5 of 21.8.',
            _stride_slowdown('double')),
    Finding('003-comms2', '003', 'COMMS2 (both sides at once) reaches about 1.47x the '
            'asymptotic bandwidth of COMMS1.', 'COMMS2/COMMS1 r_inf at least 1.2.',
            comms2_gain),
    Finding('003-java-rinf', '003', "Java's asymptotic bandwidth equals Fortran's (12.47 vs "
            '12.48 MB/s).', 'Java/Fortran r_inf within 0.9-1.1 (C where no Fortran).',
            java_same_r_inf),
    Finding('003-java-startup', '003', "Java's startup time is about 5x Fortran's "
            '(219.91 vs 44.81 µs).', 'Java/Fortran t0 at least 2 (C where no Fortran).',
            java_startup_larger),
    Finding('003-java-call', '003', 'The fixed cost of the Java native call dominates small '
            'messages (76% of the time at 8 B).', 'Extra Java one-way time over C at 8 B at '
            'least half of the Java time.', java_call_share),
)


def judge_all(ctx: Context) -> list[dict]:
    out = []
    for f in FINDINGS:
        try:
            outcome = f.judge(ctx)
        except (ArithmeticError, ValueError, KeyError, TypeError) as err:
            ctx.warn(f'finding {f.id}: could not be judged ({err})')
            outcome = Outcome(CANNOT_TELL, f'could not be judged: {err}')
        out.append({'id': f.id, 'seed': f.seed, 'document': DOCUMENTS[f.seed],
                    'claim': f.claim, 'rule': f.rule, 'status': outcome.status,
                    'detail': outcome.detail, 'holds_on': list(outcome.holds),
                    'fails_on': list(outcome.fails), 'undecided_on': list(outcome.undecided),
                    'stacks': outcome.told})
    return out
