"""The site model and the ReFrame configuration generated from it."""

import os
import subprocess

import pytest
import reframe.core.config as rfm_config

from commcheck import discover
from commcheck.site import Compiler, MpiStack, Partition, Site, SiteError, Stack
from tests.conftest import STACKS, commcheck_cmd, needs_stacks

GCC = Compiler(family='gnu', version='12.2.0', cc='/usr/bin/gcc', fc='/usr/bin/gfortran')
MPICH = MpiStack(flavour='mpich', version='4.0.2', cc='/usr/bin/mpicc.mpich',
                 fc='/usr/bin/mpifort.mpich', launcher_cmd='/usr/bin/mpiexec.mpich')


def site(*stacks, **kw):
    return Site(name='s', description='test', hostnames=('.*',),
                partitions=(Partition(name='p', cores=4),), stacks=stacks, **kw)


def test_environment_carries_what_checks_need():
    env = site(Stack(GCC, MPICH)).reframe_configuration()['environments'][0]
    assert env['name'] == 'gnu-mpich'
    assert env['cc'] == '/usr/bin/mpicc.mpich' and env['ftn'] == '/usr/bin/mpifort.mpich'
    assert env['extras']['mpi_version'] == '4.0.2' and env['extras']['build'] == 'cmake'
    assert 'fortran' in env['features'] and 'osu' not in env['features']


def test_spack_stack_gets_osu_and_a_spack_environment():
    env = site(Stack(GCC, MPICH, build='spack')).reframe_configuration()['environments'][0]
    assert 'osu' in env['features']
    assert env['extras']['spack_env'].endswith('spack-env/s/gnu-mpich')


@pytest.mark.parametrize('bad', [
    lambda: site(),
    lambda: site(Stack(GCC, MPICH), Stack(GCC, MPICH)),
    lambda: Stack(GCC, MPICH, build='make'),
    lambda: MpiStack(flavour='lam', version='7', cc='x', fc=None, launcher_cmd='y'),
])
def test_bad_declarations_are_site_errors(bad):
    with pytest.raises(SiteError):
        bad()


def test_generated_configuration_validates_against_reframe_schema(tmp_path):
    conf = tmp_path / 'site.py'
    conf.write_text('from tests.unit.test_site import site, Stack, GCC, MPICH\n'
                    'site_configuration = site(Stack(GCC, MPICH)).reframe_configuration()\n')
    loaded = rfm_config.load_config(str(conf))
    loaded.validate()


@needs_stacks()
def test_discovery_addresses_each_stack_by_its_own_wrappers():
    for stack in STACKS:
        assert os.path.basename(stack.mpi.cc) != 'mpicc' or stack.mpi.prefix != '/usr'
        bindir = discover.local_site().stack_bindir(stack)
        shown = subprocess.run([str(bindir / 'mpicc'), '-show'], capture_output=True,
                               text=True).stdout
        other = {'mpich': 'openmpi', 'openmpi': 'mpich'}[stack.mpi.flavour]
        assert other not in shown, shown


@needs_stacks()
def test_no_mpi_is_one_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv('PATH', str(tmp_path))
    monkeypatch.setattr(discover.paths, 'STATE_DIR', tmp_path)
    with pytest.raises(SiteError, match='no MPI found'):
        discover.local_site()


def test_report_of_a_corrupt_run_report_is_one_error_line(tmp_path):
    bad = tmp_path / 'run-report-0.json'
    bad.write_text('{"session_info": {}, "runs": [')
    done = subprocess.run([commcheck_cmd(), 'report', '--run-report', str(bad), '--out',
                           str(tmp_path / 'out')], capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.strip().count('\n') == 0 and done.stderr.startswith('ERROR:')
    assert 'run-report-0.json' in done.stderr


def test_site_osu_module_is_loaded_and_found_on_path():
    from commcheck.rfm.build import osu_program
    stack = Stack(GCC, MPICH, osu_module='osu-micro-benchmarks/7.4', modules=('mpich/4.0.2',))
    env = site(stack).reframe_configuration()['environments'][0]
    assert env['modules'] == ['mpich/4.0.2', 'osu-micro-benchmarks/7.4']
    assert 'osu' in env['features']
    assert osu_program(env['extras'], 'osu_bw') == 'osu_bw'
