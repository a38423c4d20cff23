"""The report's sections, in reading order: the one registry of ids and titles.

Each module has ``build(ctx: Context) -> Section``; its template is
``templates/sections/<name>.html.j2``. A section never imports :mod:`commcheck.report.build`.
"""

from commcheck.report.sections import (
                                       datatypes,
                                       fabric,
                                       history,
                                       p2p,
                                       provenance,
                                       seeds,
                                       stencil,
                                       upgrade,
                                       verdict,
)

#: (id, title, module): the page reads top to bottom in this order.
SECTIONS = (
    ('verdict', 'Verdict', verdict),
    ('upgrade', 'Upgrade: old against new stack, paired', upgrade),
    ('p2p', 'Stacks side by side', p2p),
    ('datatypes', 'Derived datatypes', datatypes),
    ('stencil', 'Shared-memory stencil', stencil),
    ('fabric', 'Fabric: node pairs and collectives', fabric),
    ('history', 'History', history),
    ('seeds', 'The seeds: published figures beside today', seeds),
    ('provenance', 'Provenance', provenance),
)
