"""``commcheck setup-mpi`` and ``commcheck mirror``: what a site installs before it runs."""

from __future__ import annotations

from commcheck.cli import options
from commcheck.errors import EXIT_OK, EXIT_USAGE


def add_parsers(sub) -> None:
    setup = sub.add_parser('setup-mpi', help='install the PyPI MPI wheels (COMMCHECK_WHEELS)')
    setup.set_defaults(func=cmd_setup_mpi)
    mirror = sub.add_parser('mirror', help='make the Spack source mirror an air-gapped site '
                                           'needs (OSU and what it needs)')
    mirror.add_argument('dir', type=options.output_dir,
                        help='mirror directory (created, or added to)')
    options.add_site(mirror)
    mirror.set_defaults(func=cmd_mirror)


def cmd_setup_mpi(args) -> int:
    from commcheck.site import wheels
    status = wheels.ensure_mpi()
    return status if status in (EXIT_OK, EXIT_USAGE) else EXIT_USAGE   # pip's 1 is no regression


def cmd_mirror(args) -> int:
    from commcheck.site import mirror
    options.load_site(args)     # named by its option or variable, before Spack is looked for
    return mirror.main(args)
