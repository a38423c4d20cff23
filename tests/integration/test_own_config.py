"""The checks under a site's own ReFrame configuration (docs/own-config.md), for real.

The configuration is written as CSCS and EESSI keep theirs: system ``mysite``, partition ``cpu``
with ReFrame's ``mpirun`` launcher, environments ``PrgEnv-gnu-mpich`` and ``PrgEnv-gnu-openmpi``
with the features ``serial`` and ``mpi``, each putting its MPI (Debian's MPICH 4 or Open MPI 4)
first on ``PATH``; no commcheck feature, no commcheck extra. Its variants: no ``mpi`` feature
(nothing selected, then hpctestlib's ``-S`` convention), a partition without environments, an
environment without an MPI compiler, an unknown flavour named in the extras, a Slurm partition
with ``srun`` on the emulated cluster, and the oldest ReFrame release the checks support.
Across all of them: no traceback and no ``key error``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from commcheck import paths
from tests.conftest import BIN, IN_CI

pytestmark = [pytest.mark.integration]

#: Debian's MPI stacks: environment -> (flavour, suffix of its tools in /usr/bin).
STACKS = {'PrgEnv-gnu-mpich': ('mpich', 'mpich'), 'PrgEnv-gnu-openmpi': ('openmpi', 'openmpi')}
TOOLS = ('mpicc', 'mpicxx', 'mpif90', 'mpifort', 'mpiexec', 'mpirun')
#: The oldest ReFrame release the checks support (pyproject.toml; docs/own-config.md).
OLDEST_REFRAME = '4.7.4'
TIMEOUT = 1500

#: The main selection: every kind of check, C and Fortran, on both stacks.
SELECTION = ['-n', 'PingPong', '-n', 'ParkbenchComms%benchmark=comms2',
             '-n', 'DerivedDatatypes%lang=c%element=double%mode=stride',
             '-n', 'DerivedDatatypes%lang=fortran%element=double%mode=stride',
             '-n', 'Stencil%variant=sr%ranks=2', '-n', 'FortranPointers%variant=cptr',
             '-n', '^Collectives', '-x', 'java|python']


def base_config(bin_dir: Path, data: Path | None = None, launcher: str = 'mpirun') -> dict:
    """The site's configuration, as written by hand (``bin_dir/<flavour>/bin``: its MPIs;
    its results database and run reports in ``data``, default ``bin_dir``)."""
    data = data or bin_dir
    environments = [{
        'name': name, 'features': ['serial', 'mpi'],
        'cc': 'mpicc', 'cxx': 'mpicxx', 'ftn': 'mpif90',
        'env_vars': [['PATH', f'{bin_dir / flavour / "bin"}:$PATH']]
                    + ([['OMPI_ALLOW_RUN_AS_ROOT', '1'], ['OMPI_ALLOW_RUN_AS_ROOT_CONFIRM', '1']]
                       if flavour == 'openmpi' else []),
    } for name, (flavour, _) in STACKS.items()]
    return {
        'systems': [{'name': 'mysite', 'descr': 'a site', 'hostnames': ['.*'],
                     'modules_system': 'nomod', 'stagedir': str(data / 'stage'),
                     'outputdir': str(data / 'output'),
                     'partitions': [{'name': 'cpu', 'scheduler': 'local', 'launcher': launcher,
                                     'environs': list(STACKS), 'max_jobs': 1}]}],
        'environments': environments,
        'storage': [{'enable': True, 'sqlite_db_file': str(data / 'results.db')}],
        'general': [{'report_file': str(data / 'run-report-{sessionid}.json')}],
    }


def write(config: dict, where: Path) -> Path:
    where.write_text(f'site_configuration = {config!r}\n')
    return where


@pytest.fixture(scope='module')
def site(tmp_path_factory) -> Path:
    """The site's MPI installs: per flavour a bin/ of links to Debian's tools."""
    root = tmp_path_factory.mktemp('mysite')
    for flavour, suffix in STACKS.values():
        (root / flavour / 'bin').mkdir(parents=True)
        tools = [*TOOLS, *(('hydra_pmi_proxy',) if flavour == 'mpich' else ())]
        for tool in tools:
            found = shutil.which(f'{tool}.{suffix}') or shutil.which(tool)
            if not found:
                why = f'{tool}.{suffix} not installed (Debian: mpich, openmpi-bin)'
                if IN_CI:
                    pytest.fail(why)
                pytest.skip(why)
            (root / flavour / 'bin' / tool).symlink_to(found)
    return root


def reframe(config: Path, *args: str, cwd: Path, exe: Path = BIN / 'reframe',
            env: dict | None = None) -> subprocess.CompletedProcess:
    refs = cwd / 'norefs'
    refs.mkdir(exist_ok=True)
    environ = dict(os.environ, RFM_REFERENCE_PREFIX=str(refs),
                   RFM_PERFLOG_DIR=str(cwd / 'perflogs'), **(env or {}))
    return subprocess.run([str(exe), '-C', str(config), '-c', str(paths.CHECKS_DIR), *args],
                          cwd=cwd, env=environ, capture_output=True, text=True, timeout=TIMEOUT)


def commcheck(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, RFM_REFERENCE_PREFIX=str(cwd / 'refs'),
               COMMCHECK_REPORTS=str(cwd / 'reports'))
    return subprocess.run([str(BIN / 'commcheck'), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


def clean(done: subprocess.CompletedProcess) -> str:
    """The run's output, asserted free of tracebacks and key errors."""
    text = done.stdout + done.stderr
    for bad in ('Traceback', 'key error', 'KeyError'):
        assert bad not in text, text[-4000:]
    return text


def cases(report_file: Path) -> list[dict]:
    report = json.loads(report_file.read_text())
    return [tc for run in report['runs'] for tc in run['testcases'] if not tc.get('fixture')]


@pytest.fixture(scope='module')
def session(site) -> dict:
    """The main selection on both stacks, unchanged configuration."""
    config = write(base_config(site), site / 'mysite.py')
    done = reframe(config, *SELECTION, '-r', cwd=site)
    reports = sorted(site.glob('run-report-*.json'))
    return {'done': done, 'text': clean(done), 'cases': cases(reports[-1]) if reports else []}


def test_every_check_runs_on_both_stacks_and_passes(session):
    assert session['done'].returncode == 0, session['text'][-6000:]
    ran = [c for c in session['cases'] if c['result'] != 'skip']
    for env in STACKS:
        names = {c['display_name'].split()[0] for c in ran if c['environ'] == env}
        assert names >= {'PingPong', 'ParkbenchComms', 'DerivedDatatypes', 'Stencil',
                         'FortranPointers', 'Collectives'}, (env, names)
    assert all(c['result'] == 'pass' for c in ran), [
        (c['display_name'], c['fail_reason']) for c in ran if c['result'] != 'pass']
    skipped = [c for c in session['cases'] if c['result'] == 'skip']
    assert not skipped, [(c['display_name'], c.get('fail_reason')) for c in skipped]


def test_each_launch_used_its_own_mpi_through_the_partitions_launcher(session, site):
    for case in session['cases']:
        if case['result'] != 'pass':
            continue
        flavour = STACKS[case['environ']][0]
        prov = case['provenance']
        assert prov['mpi'] == flavour, (case['display_name'], prov)
        assert prov['launcher'] == 'mpirun' and prov['binding'] == 'core', prov
        assert prov['compiler'] == 'gnu' and prov['compiler_version'][0].isdigit(), prov
        assert prov['node_exclusive'] == 'yes' and 'max_jobs 1' in prov['node_exclusive_basis']
        assert 'mpi' in prov['learned'] and prov['binding_applied'].startswith('core ('), prov
        out = Path(case['outputdir'])
        script = (out / 'rfm_job.sh').read_text()
        assert 'mpirun -np ' in script, script
        meta = (out / 'rfm_job.out').read_text()
        assert ('MPICH Version' if flavour == 'mpich' else 'Open MPI v') in meta, meta[:400]


def test_the_gate_judges_sessions_of_the_sites_configuration(session, site):
    """Two more sessions of PingPong: one baselined, the other judged from the results
    database the site's configuration names."""
    config = site / 'mysite.py'
    for _ in range(2):
        done = reframe(config, '-n', 'PingPong%lang=c', '-r', '--repeat', '3', cwd=site)
        assert done.returncode == 0, clean(done)[-3000:]
    db = str(site / 'results.db')
    listed = commcheck('sessions', '--db', db, cwd=site)
    uuids = [line.split()[0] for line in listed.stdout.splitlines() if ' mysite ' in line]
    assert listed.returncode == 0 and len(uuids) >= 3, clean(listed)
    (site / 'refs').mkdir(exist_ok=True)
    first = uuids[-2]
    made = commcheck('baseline', '--db', db, '--session', first, '--min-samples', '3',
                     cwd=site)
    assert made.returncode == 0, clean(made)
    judged = commcheck('compare', '--db', db, cwd=site)
    text = clean(judged)
    assert judged.returncode in (0, 1, 3), text
    assert 'PrgEnv-gnu-mpich' in text and 'PrgEnv-gnu-openmpi' in text, text
    # storage off: the run report itself (reframe --report-file) is read the same way
    report = str(max(site.glob('run-report-*.json'), key=os.path.getmtime))
    judged = commcheck('compare', '--db', report, cwd=site)
    assert judged.returncode in (0, 1, 3) and uuids[-1] in clean(judged), judged.stdout


def test_nothing_selected_fails_with_one_line_then_the_S_convention_selects(site):
    config = base_config(site)
    for env in config['environments']:
        env['features'] = ['serial']
    path = write(config, site / 'nompi.py')
    done = reframe(path, '-n', 'PingPong%lang=c', '-r', cwd=site)
    text = clean(done)
    assert done.returncode != 0, text
    assert "nothing to measure on mysite:cpu: none of its environments" in text, text
    assert "add 'mpi' to the features" in text and '-S valid_prog_environs=' in text
    done = reframe(path, '-n', 'PingPong%lang=c', '-S', 'valid_systems=mysite:cpu',
                   '-S', 'valid_prog_environs=PrgEnv-gnu-openmpi', '-r', cwd=site)
    text = clean(done)
    assert done.returncode == 0, text[-3000:]
    assert 'PingPong %lang=c' in text and '@mysite:cpu+PrgEnv-gnu-openmpi' in text
    assert '+PrgEnv-gnu-mpich' not in text.split('[==========] Running')[-1], text


@pytest.mark.parametrize('case', ['empty partition', 'no MPI compiler', 'unknown flavour',
                                  'flavour another than the library'])
def test_a_wrong_configuration_says_what_to_put(site, tmp_path, case):
    config = base_config(site, tmp_path)
    env = config['environments'][0]
    select = ['-n', 'PingPong%lang=c', '-p', 'PrgEnv-gnu-mpich']
    if case == 'empty partition':
        config['systems'][0]['partitions'][0]['environs'] = []
        want = "nothing to measure on mysite:cpu: it has no environments"
        select = ['-n', 'PingPong%lang=c']
    elif case == 'no MPI compiler':
        (tmp_path / 'bin').mkdir()
        (tmp_path / 'bin' / 'gcc').symlink_to(shutil.which('gcc'))
        env.update(cc='gcc', ftn='gfortran', env_vars=[['PATH', str(tmp_path / 'bin')]])
        want = "environment 'PrgEnv-gnu-mpich': no C compiler builds an MPI program"
    elif case == 'unknown flavour':
        env['extras'] = {'mpi': 'foompi'}
        want = "extras 'mpi'='foompi' is no MPI flavour commcheck knows"
    else:
        env['extras'] = {'mpi': 'mvapich2', 'mpi_version': '2.3.7'}
        want = 'label mismatch: PrgEnv-gnu-mpich declares MVAPICH 2.3.7, but the kernel ran ' \
               'with MPICH 4.0.2'
    done = reframe(write(config, tmp_path / 'case.py'), *select, '-r', cwd=tmp_path)
    text = clean(done)
    assert done.returncode != 0 and want in text, text[-4000:]


def oldest_reframe(where: Path) -> Path:
    """A venv with ReFrame OLDEST_REFRAME (and its dependencies) and, behind it, this venv's
    packages (commcheck and its dependencies)."""
    subprocess.run([sys.executable, '-m', 'venv', '--without-pip', str(where)], check=True)
    site_packages = next(where.glob('lib/python*/site-packages'))
    ours = next(Path(sys.prefix).glob('lib/python*/site-packages'))
    (site_packages / 'zz_commcheck_venv.pth').write_text(
        f'import site; site.addsitedir({str(ours)!r})\n')
    done = subprocess.run([sys.executable, '-m', 'pip', 'install', '-q', '--target',
                           str(site_packages), f'reframe-hpc=={OLDEST_REFRAME}'],
                          capture_output=True, text=True, timeout=600)
    if done.returncode:
        why = f'reframe-hpc=={OLDEST_REFRAME} could not be installed: {done.stderr[-500:]}'
        if IN_CI:
            pytest.fail(why)
        pytest.skip(why)
    launcher = where / 'bin' / 'reframe'
    launcher.write_text(f'#!{where / "bin" / "python"}\nfrom reframe.frontend.cli import main\n'
                        f'main()\n')
    launcher.chmod(0o755)
    return launcher


def test_the_oldest_supported_reframe_runs_the_checks(site, tmp_path):
    exe = oldest_reframe(tmp_path / 'venv')
    version = subprocess.run([str(exe), '--version'], capture_output=True, text=True)
    assert version.stdout.strip() == OLDEST_REFRAME, version.stdout + version.stderr
    config = base_config(site, tmp_path)
    config['systems'][0]['partitions'][0]['environs'] = ['PrgEnv-gnu-openmpi']
    done = reframe(write(config, tmp_path / 'mysite.py'), '-n', 'PingPong%lang=c', '-r',
                   cwd=tmp_path, exe=exe)
    text = clean(done)
    assert done.returncode == 0 and 'PASSED' in text, text[-4000:]
    listed = commcheck('sessions', '--db', str(tmp_path / 'results.db'), cwd=tmp_path)
    assert listed.returncode == 0 and 'mysite' in listed.stdout, clean(listed)


def test_a_slurm_partition_runs_through_srun_with_each_stacks_pmi(site, tmp_path, request):
    """The emulated cluster (.ci/slurm-cluster): the partition's own ``srun`` and scheduler,
    the PMI plugin from the environment's ``SLURM_MPI_TYPE``, as sites set it."""
    from tests.integration.test_slurm import start_cluster
    cluster = start_cluster(request)
    config = base_config(site, tmp_path)
    config['systems'][0].update(hostnames=['^cc-login$'])
    config['systems'][0]['partitions'][0].update(
        scheduler='squeue', launcher='srun', access=['-p all'], max_jobs=2, time_limit='5m',
        processor={'num_cpus': 2})
    plugins = {'mpich': [['SLURM_MPI_TYPE', 'pmi2']],
               'openmpi': [['SLURM_MPI_TYPE', 'pmix'], ['PMIX_MCA_gds', 'hash']]}
    for env in config['environments']:
        env['env_vars'] += plugins[STACKS[env['name']][0]]
    path = write(config, tmp_path / 'mysite-slurm.py')
    (tmp_path / 'norefs').mkdir()
    done = cluster.run([str(BIN / 'reframe'), '-C', str(path), '-c', str(paths.CHECKS_DIR),
                        '-n', 'PingPong%lang=c', '-r', '--max-retries', '1'],
                       env=dict(os.environ, RFM_REFERENCE_PREFIX=str(tmp_path / 'norefs'),
                                RFM_PERFLOG_DIR=str(tmp_path / 'perflogs')),
                       timeout=TIMEOUT)
    text = clean(done)
    assert done.returncode == 0, text[-6000:]
    ran = cases(sorted(tmp_path.glob('run-report-*.json'))[-1])
    assert {c['environ'] for c in ran if c['result'] == 'pass'} == set(STACKS), text[-3000:]
    for case in ran:
        prov = case['provenance']
        assert prov['mpi'] == STACKS[case['environ']][0] and prov['scheduler'] == 'squeue'
        assert prov['launcher'] == 'srun' and '--cpu-bind' in prov['binding_applied'], prov
        assert prov['node_exclusive'] == 'unknown' and 'exclusive' in prov[
            'node_exclusive_basis'], prov
        script = (Path(case['outputdir']) / 'rfm_job.sh').read_text()
        assert '#SBATCH' in script and 'srun --cpu-bind=cores' in script, script
