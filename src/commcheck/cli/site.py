"""``commcheck site show|check``: a site in site-file syntax, or a site file checked."""

from __future__ import annotations

import json

from commcheck.cli import options


def add_parsers(sub) -> None:
    site = sub.add_parser('site', help='show a site in site-file syntax, or check a site file')
    site_sub = site.add_subparsers(dest='action', required=True, parser_class=options.Parser)
    show = site_sub.add_parser('show', help='print a site as a site file')
    options.add_site(show)
    show.add_argument('--reframe', action='store_true',
                      help='print the generated ReFrame configuration instead')
    check = site_sub.add_parser('check', help='validate a site file')
    check.add_argument('file', type=options.existing_file)
    site.set_defaults(func=cmd_site)


def cmd_site(args) -> int:
    from commcheck.site import sitefile
    if args.action == 'check':
        site = sitefile.check(args.file)
        print(f'{args.file}: site {site.name}: {len(site.partitions)} partition(s), '
              f'{len(site.stacks)} stack(s): {", ".join(s.id for s in site.stacks)}')
        return 0
    site = options.load_site(args)
    if args.reframe:
        from commcheck.site.rfmconfig import reframe_configuration
        print(json.dumps(reframe_configuration(site), indent=2))
    else:
        print(sitefile.dump(site), end='')
    return 0
