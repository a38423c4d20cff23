"""``commcheck bench [pingpong|gate|history|upgrade|firstrun]``: benchmarks, not tests, whose
code is the :mod:`commcheck.bench` layer; this module is their parser. Their options are checked
here before anything is built: the stack by name (unknown: the known ones listed), ``--iters``
within the range the kernels accept (``src/kernels/common/cc_sweep.h``), ``--launches`` enough
for one comparison.
"""

from __future__ import annotations

import argparse

from commcheck.cli import options
from commcheck.errors import UserError

#: The largest ``--iters`` the C kernels accept (cc_parse_int in cc_sweep.h).
KERNEL_MAX_ITERS = 1_000_000_000


def _min_launches() -> int:
    from commcheck.analysis.gate import Settings
    return Settings().min_samples     # below this a side, the gate computes nothing


def add_parsers(sub) -> None:
    bench = sub.add_parser('bench', help='benchmarks: our ping-pong beside NetPIPE/OSU, or the '
                                         "gate's false-positive rate and power")
    bench.add_argument('what', nargs='?', default='pingpong',
                       choices=('pingpong', 'gate', 'history', 'upgrade', 'firstrun'))
    bench.add_argument('--iters', type=options.whole(1, KERNEL_MAX_ITERS), default=20000,
                       help='round trips per launch (pingpong)')
    _gate_options(bench)
    _upgrade_options(bench)
    bench.add_argument('--json', type=options.output_file,
                       help='where the launches go (gate; default reports/bench/gate-<time>.json'
                            '); the runs\' figures and machine (firstrun)')
    bench.add_argument('--rejudge', type=options.existing_file, metavar='FILE', action='append',
                       help='judge the launches a previous run recorded (its --json) under '
                            'the current rules, launching nothing (gate: one file; upgrade: '
                            'repeatable, their sessions pooled)')
    bench.add_argument('--stack', type=options.name,
                       help='one stack (default: the Debian MPICH and Open MPI)')
    _history_options(bench)
    bench.add_argument('--repo', type=options.nonempty, metavar='SOURCE',
                       help='the repository a fresh clone is made of, a path or URL (firstrun; '
                            'default: this checkout, its HEAD)')
    bench.set_defaults(func=cmd_bench)


def _gate_options(bench) -> None:
    """The options of ``bench gate`` (some shared with the others, as their help says)."""
    bench.add_argument('--launches', type=options.whole(1, 100000), default=12,
                       help='launches per stack in each session (gate; at least 3)')
    bench.add_argument('--clean', type=options.whole(1, 1000), default=24,
                       help='clean sessions, the first 3 the first baseline (gate; at least 4)')
    bench.add_argument('--slowed', type=options.whole(0, 100), default=4,
                       help='sessions with both cores shared with busy loops (gate)')
    bench.add_argument('--degraded', type=options.whole(0, 100), default=4,
                       help='sessions with Open MPI off shared memory (gate)')
    bench.add_argument('--stencil', action='store_true',
                       help="each launch also runs the stencil (S/R, 2 ranks, paired with its "
                            "compute-only floor, the check's grid): time against floor_time (gate)")
    bench.add_argument('--ucx', action='store_true',
                       help="degraded sessions also put MPICH's UCX on TCP (gate)")
    bench.add_argument('--gap', type=options.positive_number, default=180.0,
                       help='seconds between sessions (gate)')


def kinds(text: str) -> dict[str, int]:
    """``--kinds aa:20,busy:10,+5``: the kinds of ``bench upgrade`` and their sessions."""
    from commcheck.bench import upgrade
    try:
        return upgrade.kinds_spec(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


kinds.__name__ = 'kinds'


def _upgrade_options(bench) -> None:
    """The options of ``bench upgrade``."""
    bench.add_argument('--per-kind', type=options.whole(1, 1000), default=20,
                       help='sessions of each kind: A/A, +2/5/10/20 %%, A/A with busy loops '
                            '(upgrade)')
    bench.add_argument('--kinds', type=kinds, metavar='KIND[:N],...',
                       help='the kinds and their sessions, of aa, +2, +5, +10, +20, busy (a '
                            'kind without :N has --per-kind) (upgrade; default every kind)')
    bench.add_argument('--pairs', type=options.whole(1, 1000), default=64,
                       help='pairs of launches per stack in each session: the most pairs '
                            'until decided may use (upgrade)')
    bench.add_argument('--budget', type=options.duration,
                       help="pairs until decided: at most this much of a session's launches "
                            'per stack, e.g. 10m (upgrade; default: every recorded pair)')
    bench.add_argument('--max-pairs', type=options.whole_list(1, 10000), metavar='N,N,...',
                       help="pairs until decided: at most this many of a session's pairs, as "
                            "commcheck upgrade --max-pairs; each cap its rows (upgrade; "
                            'default: every recorded pair)')
    bench.add_argument('--accept', type=options.percent, metavar='MARGIN',
                       help='the acceptance margin judged beside (upgrade; default 5%%)')


def _history_options(bench) -> None:
    """The options of ``bench history``."""
    bench.add_argument('--sessions', type=options.whole_list(1, 100000), metavar='N,N,...',
                       help='history sizes in nightly sessions (history; default 30,120,365)')
    bench.add_argument('--repeat', type=options.whole(1, 1000), default=1,
                       help='launches of each test per session (history)')
    bench.add_argument('--widen', type=options.whole(1, 1000), default=1,
                       help='distinct copies of each test, for a larger suite (history)')
    bench.add_argument('--source', type=options.existing_file,
                       help='run report the history is made from (history; default: the '
                            "report tests' session)")
    bench.add_argument('--clusters', type=options.whole(1, 26), default=1,
                       help='clusters in the history, each with --sessions nightly sessions; '
                            'the steps time the first cluster (history)')
    bench.add_argument('--store', type=options.store_url, metavar='URL',
                       help='also push the same history into this shared store (postgresql://'
                            ', its owner role, an empty store: emptied again after) and time '
                            'the same steps on it, and one push (history)')
    bench.add_argument('--keep', type=options.output_dir,
                       help='make the histories under this directory (history; default: /tmp)'
                            '; the clone and its logs, kept (firstrun)')


def check_stack(args) -> None:
    """``--stack`` names a stack of this machine that the benchmark can run."""
    from commcheck.site import discover
    site = discover.local_site()
    usable = [s.id for s in site.stacks if 'c' in s.tested_languages]
    if args.stack not in usable:
        raise UserError(f'--stack {args.stack}: no such stack with C kernels on this machine; '
                        f'known: {", ".join(usable)}')


def cmd_bench(args) -> int:
    if args.what == 'gate' and args.launches < _min_launches():
        raise UserError(f'--launches {args.launches}: the gate benchmark needs at least '
                        f'{_min_launches()} per session')
    if args.stack:
        check_stack(args)
    if args.what == 'gate':
        from commcheck.bench import gate, gate_sequential
        if args.rejudge and len(args.rejudge) > 1:
            raise UserError(f'--rejudge: bench gate judges one record, not '
                            f'{len(args.rejudge)}')
        return gate.main(args, gate_sequential.evaluated)
    if args.what == 'upgrade':
        from commcheck.bench import upgrade
        return upgrade.main(args)
    if args.what == 'history':
        from commcheck.bench import history
        return history.main(args)
    if args.what == 'firstrun':
        from commcheck.bench import firstrun
        return firstrun.main(args)
    from commcheck.bench import pingpong
    return pingpong.main(args)
