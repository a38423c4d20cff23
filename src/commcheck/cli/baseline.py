"""``commcheck baseline``: references and the baseline file from stored launches (the rules
are :mod:`commcheck.analysis.baseline`'s)."""

from __future__ import annotations

from commcheck.cli import options
from commcheck.cli.selection import history, ref_dir, selected
from commcheck.errors import UserError


def add_parsers(sub) -> None:
    base = sub.add_parser('baseline', help='write references from stored launches')
    options.add_selection(base, 'baseline from this')
    base.add_argument('--cluster', '--system', dest='system', type=options.name,
                      help='the system (cluster) to baseline, from its sessions only '
                           '(default: the only one)')
    from commcheck.analysis.baseline import Policy  # the defaults are the policy's, said once
    base.add_argument('--min-samples', type=options.positive_int,
                      help=f'launches a variable needs (default {Policy.min_samples})')
    base.add_argument('--floor', type=options.positive_number,
                      help="narrowest bound of ReFrame's one-launch reference, a slowdown "
                           f'factor minus 1 (default {Policy.floor}: gross breakage only)')
    base.add_argument('--own-floor', type=options.positive_number,
                      help="narrowest bound of the reference of a key variable's own cost over "
                           f'its floor (own_latency_8B ...), a slowdown factor minus 1 (default '
                           f'{Policy.own_floor}: wider than a regime moves it, narrower than TCP)')
    options.add_all(base)
    base.add_argument('--refs', type=options.output_dir,
                      help='reference directory (default: RFM_REFERENCE_PREFIX or '
                           'config/references)')
    base.set_defaults(func=cmd_baseline)


def cmd_baseline(args) -> int:
    from commcheck.analysis import baseline
    from commcheck.results import store
    refs = ref_dir(args)
    with history(args) as stored:
        sessions = selected(args, stored, store.warn_stderr)
    systems = sorted({s.system for sess in sessions for s in sess.samples})
    if args.system:
        if args.system not in systems:
            raise UserError(f'--system {args.system}: the selected sessions measured '
                            f'{", ".join(systems) or "nothing"}')
        systems = [args.system]
    if len(systems) != 1:
        raise UserError(f'the sessions measured systems {systems}: choose one with --system')
    given = {'min_samples': args.min_samples, 'floor': args.floor, 'own_floor': args.own_floor}
    policy = baseline.Policy(all_variables=args.all,
                             **{k: v for k, v in given.items() if v is not None})
    variables = baseline.compute(sessions, systems[0], policy, store.warn_stderr)
    written = baseline.write(refs, systems[0], sessions, variables, policy)
    print(f'commcheck: baselined {len(variables)} variable(s) of {systems[0]} from '
          f'{len(sessions)} session(s)')
    print(written['diff'] or f'commcheck: {written["references"]} unchanged')
    print(f'commcheck: wrote {written["references"]} and {written["baseline"]} '
          f'(previous versions kept as .prev)')
    return 0
