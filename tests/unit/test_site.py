"""The site model, site files and the ReFrame configuration generated from them."""

import os
import subprocess

import pytest
import reframe.core.config as rfm_config
import yaml

from commcheck.rfm.caches import last_level_cache
from commcheck.site import (
    Site,
    SiteError,
    discover,
    flavours,
    launch,
    rfmconfig,
    sitefile,
    vocabulary,
)
from tests.conftest import ALL_STACKS, STACKS, commcheck_cmd, needs_stacks

GCC = {'family': 'gnu', 'version': '12.2.0', 'cc': '/usr/bin/gcc', 'fc': '/usr/bin/gfortran'}
MPICH = {'flavour': 'mpich', 'version': '4.0.2', 'prefix': '/usr',
         'cc': '/usr/bin/mpicc.mpich', 'fc': '/usr/bin/mpifort.mpich',
         'launcher': '/usr/bin/mpiexec.mpich'}
PART = {'name': 'p', 'cores': 4}
needs_debian_mpich = pytest.mark.skipif(not os.access('/usr/bin/mpicc.mpich', os.X_OK),
                                        reason="Debian's MPICH is not installed")


def site(*stacks, partitions=(PART,), **kw) -> Site:
    return Site.model_validate({'name': 's', 'partitions': list(partitions),
                                'stacks': list(stacks), **kw})


def stack(**kw):
    return {'compiler': GCC, 'mpi': MPICH, **kw}


def site_yaml(tmp_path, text):
    path = tmp_path / 'cluster.yaml'
    path.write_text(text)
    return path


GOOD = """\
name: cluster
partitions:
  - name: pairs
    scheduler: local
    cores: 4
stacks:
  - name: gnu-mpich
    compiler: {family: gnu, version: 12.2.0, cc: /usr/bin/gcc, fc: /usr/bin/gfortran}
    mpi:
      flavour: mpich
      version: 4.0.2
      cc: /usr/bin/mpicc.mpich
      fc: /usr/bin/mpifort.mpich
      launcher: /usr/bin/mpiexec.mpich
"""


@needs_debian_mpich
def test_environment_carries_what_checks_need():
    env = rfmconfig.environment(site(stack()), site(stack()).stacks[0])
    assert env['name'] == 'gnu-mpich'
    assert env['cc'] == '/usr/bin/mpicc.mpich' and env['ftn'] == '/usr/bin/mpifort.mpich'
    assert env['extras']['mpi_version'] == '4.0.2' and env['extras']['build'] == 'cmake'
    assert set(env['features']) == {'c', 'fortran'}
    assert not set(env['features']) & set(env['extras'])   # ReFrame matches both
    assert all(k in env['extras'] for k in vocabulary.DECLARED)


@needs_debian_mpich
def test_features_follow_the_declaration():
    spack = rfmconfig.environment(site(stack(build='spack')), site(stack(build='spack')).stacks[0])
    assert 'osu' in spack['features']
    c_only = site(stack(languages=['c']))
    assert rfmconfig.features(c_only.stacks[0]) == ['c']


@needs_debian_mpich
def test_loading_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(rfmconfig.paths, 'STATE_DIR', tmp_path / 'state')
    monkeypatch.setattr(rfmconfig.paths, 'REPORTS_DIR', tmp_path / 'reports')
    rfmconfig.reframe_configuration(site(stack(build='spack')))
    assert not list(tmp_path.iterdir())


@needs_debian_mpich
def test_site_file_round_trips(tmp_path):
    loaded = sitefile.load(site_yaml(tmp_path, GOOD))
    again = sitefile.parse(sitefile.dump(loaded), 'dumped')
    assert again == loaded


@needs_debian_mpich
@pytest.mark.parametrize('change,line,words', [
    (('    cores: 4\n', '    cores: 4\n    cpus: 8\n'), 6, "unknown key 'cpus'"),
    (('    cores: 4\n', '    cores: four\n'), 5, 'partitions[0].cores'),
    (('      cc: /usr/bin/mpicc.mpich\n', '      cc: /usr/bin/nompicc\n'), 12, 'does not exist'),
    (('      cc: /usr/bin/mpicc.mpich\n', '      cc: NOT_EXECUTABLE\n'), 12, 'not an executable'),
    (('      flavour: mpich\n', '      flavour: lam\n'), 10, 'unknown MPI flavour'),
    (('    mpi:\n', '    languages: [c, fortran]\n    mpi:\n'), 7, 'cannot build it'),
    (('name: cluster\n', 'name: cluster\nspack: {bogus: 1}\n'), 2, 'bogus'),
])
def test_a_bad_site_file_is_one_line_with_file_line_and_key(tmp_path, change, line, words):
    plain = tmp_path / 'plain-file'
    plain.write_text('not a program')
    text = GOOD.replace(*change).replace('NOT_EXECUTABLE', str(plain))
    if 'cannot build' in words:
        text = text.replace(', fc: /usr/bin/gfortran', '')
    with pytest.raises(SiteError) as err:
        sitefile.load(site_yaml(tmp_path, text))
    message = str(err.value)
    assert message.startswith(f'{tmp_path / "cluster.yaml"}:{line}: '), message
    assert words in message and '\n' not in message


@needs_debian_mpich
def test_duplicate_stacks_and_unknown_partitions_are_refused(tmp_path):
    twice = GOOD + GOOD[GOOD.index('  - name: gnu-mpich'):]
    with pytest.raises(SiteError, match='stack names repeat: gnu-mpich'):
        sitefile.load(site_yaml(tmp_path, twice))
    with pytest.raises(SiteError, match='unknown partitions nowhere'):
        sitefile.load(site_yaml(tmp_path, GOOD + '    partitions: [nowhere]\n'))


def test_site_file_that_is_not_yaml_or_not_a_mapping(tmp_path):
    with pytest.raises(SiteError, match=r'cluster.yaml:4: not valid YAML'):
        sitefile.load(site_yaml(tmp_path, 'name: x\nstacks: [a,\npartitions: {\n'))
    with pytest.raises(SiteError, match='a site file is a mapping'):
        sitefile.load(site_yaml(tmp_path, '- 1\n- 2\n'))
    with pytest.raises(SiteError, match='no site'):
        sitefile.load_named('no-such-site')


@needs_debian_mpich
def test_generated_configuration_validates_against_reframe_schema(tmp_path):
    path = site_yaml(tmp_path, GOOD)
    conf = tmp_path / 'site.py'
    conf.write_text('from commcheck.site import rfmconfig, sitefile\n'
                    f'site_configuration = rfmconfig.reframe_configuration('
                    f'sitefile.load({str(path)!r}))\n')
    rfm_config.load_config(str(conf)).validate()


def test_every_flavour_launches_as_declared():
    env = {'mpi': 'openmpi', 'launcher': '/x/mpirun', 'srun_mpi': 'pmix'}
    part = {'launcher': 'mpiexec', 'binding': 'core', 'nodes': 2}
    assert launch.argv(env, part, 2, per_node=1) == [
        '/x/mpirun', '-n', '2', '--bind-to', 'core:overload-allowed', '--map-by', 'ppr:1:node']
    assert launch.argv(env, {**part, 'nodes': 1}, 4, oversubscribed=True) == [
        '/x/mpirun', '-n', '4', '--bind-to', 'none', '--oversubscribe']
    assert launch.argv(env, {**part, 'launcher': 'srun'}, 2) == [
        'srun', '--mpi=pmix', '--cpu-bind=cores']
    mpich = {'mpi': 'mpich', 'launcher': '/x/mpiexec', 'srun_mpi': 'pmi2'}
    assert launch.argv(mpich, {'launcher': 'mpiexec', 'binding': 'none'}, 2) == [
        '/x/mpiexec', '-n', '2', '-bind-to', 'none']
    java = {'mpi': 'mpj-express', 'mpj_home': '/m', 'java_build': '/b'}
    assert launch.argv(java, part, 2)[3:] == ['runtime.starter.MulticoreStarter',
                                              '/b/commcheck-kernels.jar', '2', 'smpdev',
                                              'useLocalLoader', '/b/commcheck-kernels.jar']
    for record in flavours.FLAVOURS.values():
        assert record.name and record.title and record.srun_mpi is not None


@needs_stacks()
def test_discovery_addresses_each_stack_by_its_own_wrappers():
    for s in STACKS:
        assert os.path.basename(s.mpi.c_wrapper) != 'mpicc' or s.mpi.prefix != '/usr'
        shown = subprocess.run([s.mpi.c_wrapper, s.mpi.record.show_flag],
                               capture_output=True, text=True).stdout
        if s.mpi.prefix == '/usr':
            other = {'mpich': 'openmpi', 'openmpi': 'mpich'}[s.mpi.flavour]
            assert other not in shown, shown


@needs_stacks()
def test_discovered_site_loads_pure_and_shows_as_a_site_file(tmp_path):
    env = dict(os.environ, COMMCHECK_STATE=str(tmp_path / 'state'))
    done = subprocess.run([commcheck_cmd(), 'site', 'show'], env=env, capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    shown = yaml.safe_load(done.stdout)
    assert [s['name'] for s in shown['stacks']] == [s.id for s in ALL_STACKS]
    assert not (tmp_path / 'state').exists()
    (tmp_path / 'mine.yaml').write_text(done.stdout)
    check = subprocess.run([commcheck_cmd(), 'site', 'check', str(tmp_path / 'mine.yaml')],
                           capture_output=True, text=True)
    assert check.returncode == 0 and 'mine.yaml: site local' in check.stdout


def test_bad_site_file_through_the_command_is_one_line(tmp_path):
    path = site_yaml(tmp_path, 'name: x\npartitions: []\nstacks: []\nwhat: 1\n')
    done = subprocess.run([commcheck_cmd(), 'site', 'check', str(path)], capture_output=True,
                          text=True)
    assert done.returncode == 2
    assert done.stderr.count('\n') == 1 and done.stderr.startswith(f'ERROR: {path}:4: ')


@needs_stacks()
def test_no_mpi_is_one_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv('PATH', str(tmp_path))
    monkeypatch.setattr(discover.paths, 'WHEELS_DIR', tmp_path)
    monkeypatch.setattr(discover, 'MPJ_SHARE', tmp_path / 'no-mpj')
    (tmp_path / 'gcc').symlink_to('/usr/bin/gcc')
    with pytest.raises(SiteError, match='no MPI found'):
        discover.local_site()


@needs_debian_mpich
def test_osu_module_is_loaded_and_found_on_path():
    from commcheck.rfm.build import osu_program
    s = site(stack(osu={'module': 'osu-micro-benchmarks/7.4'}, modules=['mpich/4.0.2']))
    env = rfmconfig.environment(s, s.stacks[0])
    assert env['modules'] == ['mpich/4.0.2', 'osu-micro-benchmarks/7.4']
    assert 'osu' in env['features']
    assert osu_program(env['extras'], 'osu_bw') == 'osu_bw'


# --- every result is what its label says ---------------------------------------------------

DEBIAN_MPICC = '/usr/bin/mpicc'
ALTERNATIVE = flavours.identify_wrapper(DEBIAN_MPICC) if os.path.exists(DEBIAN_MPICC) else None


@pytest.mark.skipif(not ALTERNATIVE, reason='no /usr/bin/mpicc of a known flavour here')
def test_site_check_finds_a_prefix_whose_wrapper_is_another_flavours(tmp_path):
    """As README's "Adding a stack" shows it (flavour, version, prefix /usr), for the flavour
    that /usr/bin/mpicc does NOT point at (Debian's alternatives): exit 2, one line naming
    the declared MPI and the one the wrapper is."""
    actual, version = ALTERNATIVE
    other = {'openmpi': ('mpich', '4.0.2'), 'mpich': ('openmpi', '4.1.4')}.get(actual)
    if other is None:
        pytest.skip(f'/usr/bin/mpicc is {actual}')
    site = tmp_path / 'trap.yaml'
    site.write_text('name: trap\npartitions:\n  - {name: default, cores: 2}\nstacks:\n'
                    '  - compiler: {family: gnu, version: 12.2.0}\n'
                    f'    mpi: {{flavour: {other[0]}, version: {other[1]}, prefix: /usr}}\n')
    done = subprocess.run([commcheck_cmd(), 'site', 'check', str(site)],
                          capture_output=True, text=True)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith('ERROR: ') and 'Traceback' not in lines[0]
    assert str(site) in lines[0] and DEBIAN_MPICC in lines[0]
    assert flavours.FLAVOURS[other[0]].title in lines[0]
    assert f'{flavours.FLAVOURS[actual].title} {version}' in lines[0]


@needs_stacks()
def test_site_check_accepts_each_stack_addressed_by_its_own_wrappers(tmp_path):
    site = tmp_path / 'local.yaml'
    site.write_text(sitefile.dump(discover.local_site()))
    assert sitefile.check(site).stacks
    for stack in STACKS:
        assert sitefile.wrapper_problem(stack) is None, stack.id


def test_a_wrapper_of_another_version_is_refused_too(tmp_path):
    stack = next((s for s in STACKS if s.mpi.flavour == 'mpich' and s.mpi.prefix == '/usr'), None)
    if stack is None:
        pytest.skip("no Debian MPICH")
    wrong = stack.model_copy(update={'mpi': stack.mpi.model_copy(update={'version': '3.9'})})
    assert 'declares MPICH 3.9' in sitefile.wrapper_problem(wrong)


@pytest.mark.parametrize('text,found', [
    ('MPICH Version:      5.0.2', ('mpich', '5.0.2')),
    ('Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4', ('openmpi', '4.1.4')),
    ('Intel(R) MPI Library 2021.18.1 for Linux* OS', ('intel-mpi', '2021.18.1')),
    ('MPI VERSION    : CRAY MPICH version 8.1.28.2 (ANL base 3.4a2)', ('cray-mpich', '8.1.28.2')),
    ('MPJ Express 0.44 niodev', ('mpj-express', '0.44')),
    ('Some MPI 1.0', None)])
def test_library_lines_identify_flavour_and_version(text, found):
    assert flavours.identify_library(text) == found


def test_a_launch_with_another_library_than_declared_is_one_line():
    from commcheck.rfm.mixins import label_mismatch
    extras = {'mpi_library': ['mpich', '4.0.2']}
    assert label_mismatch('gnu-mpich4', extras, ['MPICH Version: 4.0.2']) is None
    assert label_mismatch('gnu-mpich4', {'mpi_library': ['intel-mpi', '2021.18.1']},
                          ['Intel(R) MPI Library 2021.18 for Linux* OS']) is None
    line = label_mismatch('gnu-mpich4', extras, ['MPICH Version: 4.0.2', 'Open MPI v4.1.4, x'])
    assert line == ('label mismatch: gnu-mpich4 declares MPICH 4.0.2, but the kernel ran with '
                    'Open MPI 4.1.4 ("Open MPI v4.1.4, x")')
    assert 'MPICH 5.0.2' in label_mismatch('gnu-mpich4', extras, ['MPICH Version: 5.0.2'])
    assert 'unknown MPI library' in label_mismatch('gnu-mpich4', extras, ['Foo MPI'])
    assert '\n' not in line


def test_declared_library_override_is_flavour_and_version(tmp_path):
    from commcheck.site import Mpi
    assert Mpi(flavour='cray-mpich', version='8.1.28',
               library='mpich 4.0.2').expected_library == ('mpich', '4.0.2')
    assert Mpi(flavour='mpich', version='4.0.2').expected_library == ('mpich', '4.0.2')
    with pytest.raises(ValueError, match='flavour'):
        Mpi(flavour='mpich', version='4.0.2', library='4.0.2')


def test_a_partitions_declared_cache_reaches_reframes_processor_topology():
    """``llc_mib`` becomes the partition's processor topology, which the grid checks read
    before the host's; without it the configuration declares no caches."""
    declared = site(stack(), partitions=({**PART, 'llc_mib': 512},))
    config = rfmconfig.partition(declared, declared.partitions[0])
    assert last_level_cache(config['processor'].get('topology')) == 512 << 20
    plain = site(stack())
    assert 'topology' not in rfmconfig.partition(plain, plain.partitions[0])['processor']
    with pytest.raises(ValueError, match='llc_mib'):
        site(stack(), partitions=({**PART, 'llc_mib': 0},))
