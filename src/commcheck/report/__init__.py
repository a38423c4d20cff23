"""The report a site attaches to its acceptance ticket: ``write_report`` (see :mod:`.build`).

Modules: :mod:`.model` (cases and measurements), :mod:`.inputs` (run reports, gate JSON,
baselines, read without failing), :mod:`.sections` (one module per section, in reading order),
:mod:`.findings` (the documents' findings and their rules), :mod:`.plots`, :mod:`.render`
(Jinja2), :mod:`.build` (the directory, the files).
"""

from commcheck.report.build import write_report
from commcheck.report.inputs import load_gate, load_run_report

__all__ = ['write_report', 'load_gate', 'load_run_report']
