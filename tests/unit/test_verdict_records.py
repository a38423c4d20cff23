"""The gate's and the upgrade's records beside their formats (results/gaterecord.py,
results/upgraderecord.py): written in the model's order as before, read back, old formats read,
another warned about."""

from __future__ import annotations

import json

from commcheck.results import gaterecord, upgraderecord


def test_the_gate_record_is_written_and_read_back(tmp_path):
    record = gaterecord.GateRecord(['s1'], 'sessions s0', {'alpha': 0.05}, {'regressed': 1},
                                   [{'verdict': 'regressed', 'since': None}]).as_dict()
    path = gaterecord.write(gaterecord.path_of(tmp_path, 's1'), record)
    assert path == tmp_path / 'gate' / 's1.json'
    assert path.read_text() == json.dumps(record, indent=1, default=str) + '\n'
    assert list(record) == ['format_version', 'sessions', 'against', 'settings', 'counts',
                            'comparisons']
    assert gaterecord.load(path, print) == record


def test_both_upgrade_formats_are_read_and_another_is_warned(tmp_path):
    said = []
    record = upgraderecord.UpgradeRecord(['s1'], 'a', 'b', {}, None, {}, []).as_dict()
    assert record['format_version'] == 2 and record['kind'] == 'upgrade'
    path = upgraderecord.write(upgraderecord.path_of(tmp_path, 's1'), record)
    assert upgraderecord.load(path, said.append) == record
    upgraderecord.write(path, {**record, 'format_version': 1})
    assert upgraderecord.load(path, said.append)['format_version'] == 1 and said == []
    upgraderecord.write(path, {**record, 'format_version': 3})
    assert upgraderecord.load(path, said.append) is None and 'format 3' in said[-1]
