"""Regenerate the report tests' fixtures from real ReFrame sessions on this machine.

    .venv/bin/python tests/report/make_fixtures.py

Runs four small sessions of the suite on two stacks (``gnu-mpich4``, ``gnu-openmpi4``) into a
temporary ``COMMCHECK_REPORTS``:

- ``h1``, ``h2``: PingPong, three launches each (the baseline);
- ``h3``: the same with Open MPI forced onto TCP (``OMPI_MCA_btl=self,tcp``): a real regression,
  and a provenance change (``env.OMPI_MCA_btl``) for the gate to name;
- ``main``: the session the tests report on: PingPong, ParkbenchComms, DerivedDatatypes (C,
  doubles), Stencil (S/R and SHM, 1/2/4 ranks: 4 is oversubscribed on a 2-core node),
  FortranPointers and OSU latency (skipped where OSU is absent), with the same TCP setting;

then ``commcheck compare`` of ``main`` against ``h1`` + ``h2`` (the gate JSON) and
``commcheck baseline`` from ``h1`` + ``h2``. The run reports are saved with this machine's paths
replaced by placeholders (``<repo>``, ``<state>``, ``<reports>``), gzip-compressed (a
session of the suite is a few hundred kB of JSON).
"""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
OUT = HERE / 'fixtures'
BIN = Path(sys.executable).parent

SMALL = ['-S', 'sizes=1:1048576', '-S', 'iters=40', '-S', 'warmup=10']
STACKS = ['-p', 'gnu-mpich4', '-p', 'gnu-openmpi4']
PINGPONG = ['-n', 'PingPong%lang=c']
MAIN = ['-n', 'PingPong%lang=c', '-n', 'ParkbenchComms%lang=c',
        '-n', 'DerivedDatatypes%lang=c%element=double', '-n', 'Stencil', '-n', 'FortranPointers',
        '-n', 'OsuPt2Pt%benchmark=osu_latency',
        # fixture parameters cannot be selected with -n: C stencils, S/R and SHM only
        '-E', "'seq' not in vars() or variant in ('sr', 'shm') and '%seq.lang=c' in "
              "_rfm_display_name",
        '-S', 'Stencil.max_ranks=4', '-S', 'Stencil.n=1024', '-S', 'Stencil.steps=10',
        '-S', 'StencilSequential.n=1024', '-S', 'StencilSequential.steps=10',
        '-S', 'FortranPointers.n=400', '-S', 'FortranPointers.steps=4',
        '-S', 'DerivedDatatypes.sizes=8:262144']
TCP = {'OMPI_MCA_btl': 'self,tcp'}
# label: (selection, environment, launches per test). Five launches in the baseline sessions and
# three in the judged one: enough for the gate's Mann-Whitney test to flag a clear shift.
SESSIONS = {'h1': (PINGPONG, {}, 5), 'h2': (PINGPONG, {}, 5), 'h3': (PINGPONG, TCP, 5),
            'main': (MAIN, TCP, 3)}


def sanitise(text: str, tmp: Path) -> str:
    for path, label in ((tmp / 'state', '<state>'), (tmp / 'reports', '<reports>'),
                        (tmp / 'refs', '<references>'), (REPO, '<repo>'), (BIN, '<venv>/bin')):
        text = text.replace(str(path), label)
    return re.sub(r'/tmp/[^"\s]*', '<tmp>', text)


def main() -> int:
    with tempfile.TemporaryDirectory(prefix='commcheck-fixtures-') as name:
        tmp = Path(name)
        env = dict(os.environ, COMMCHECK_STATE=str(tmp / 'state'),
                   COMMCHECK_REPORTS=str(tmp / 'reports'), RFM_REFERENCE_PREFIX=str(tmp / 'refs'))
        (tmp / 'refs').mkdir()
        runs = tmp / 'reports' / 'runs'
        uuids = {}
        for label, (selection, extra, repeat) in SESSIONS.items():
            before = set(runs.glob('*.json')) if runs.exists() else set()
            # generic -S first: of two settings of one variable, ReFrame keeps the last
            cmd = [str(BIN / 'reframe'), '-C', 'config/local.py', '-c', 'checks', '-r',
                   *SMALL, *selection, *STACKS, '--repeat', str(repeat)]
            print('+', ' '.join(cmd), extra or '', flush=True)
            subprocess.run(cmd, cwd=REPO, env={**env, **extra}, check=False)
            produced = sorted(set(runs.glob('*.json')) - before)
            report = json.loads(produced[-1].read_text())
            uuids[label] = report['session_info']['uuid']
            text = sanitise(json.dumps(report, indent=1), tmp) + '\n'
            (OUT / f'session-{label}.json.gz').write_bytes(
                gzip.compress(text.encode(), mtime=0))
        commcheck = str(BIN / 'commcheck')
        db = str(tmp / 'reports' / 'results.db')
        subprocess.run([commcheck, 'compare', '--db', db, '--session', uuids['main'],
                        '--baseline-session', uuids['h1'], '--baseline-session', uuids['h2'],
                        '--json', str(tmp / 'gate.json')], cwd=REPO, env=env, check=False)
        (OUT / 'gate.json').write_text(sanitise((tmp / 'gate.json').read_text(), tmp))
        subprocess.run([commcheck, 'baseline', '--db', db, '--session', uuids['h1'],
                        '--session', uuids['h2'], '--min-samples', '3', '--refs',
                        str(tmp / 'refs')], cwd=REPO, env=env, check=True)
        (OUT / 'local.baseline.json').write_text(
            sanitise((tmp / 'refs' / 'local.baseline.json').read_text(), tmp))
    return 0


if __name__ == '__main__':
    sys.exit(main())
