"""commcheck.spack_env: spack.yaml generation and the linked MPI prefix (no Spack needed)."""

import os
import stat

import pytest
import yaml

from commcheck import spack_env

COMPILER = {'name': 'gcc', 'version': '12.2.0', 'cc': '/usr/bin/gcc', 'cxx': '/usr/bin/g++',
            'fc': '/usr/bin/gfortran'}
TOOLS = [{'package': 'cmake', 'version': '3.25.1', 'prefix': '/usr'}]
SPECS = ['commcheck-kernels+fortran', 'osu-micro-benchmarks@7.3']


def _script(path, text):
    path.write_text(f'#!/bin/sh\n{text}\n')
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


@pytest.fixture
def debian_mpich(tmp_path):
    """A /usr/bin look-alike holding MPICH's suffixed wrappers, as Debian installs them."""
    bindir = tmp_path / 'usr' / 'bin'
    bindir.mkdir(parents=True)
    cc = _script(bindir / 'mpicc.mpich', 'echo gcc -Wl,-z,relro -I/inc/mpich -L/lib/mpich -lmpich')
    for name in ('mpicxx', 'mpiexec', 'mpifort', 'mpif90'):
        _script(bindir / f'{name}.mpich', 'true')
    _script(bindir / 'mpicc.openmpi', 'true')       # another stack's wrapper: must be left out
    return {'package': 'mpich', 'version': '4.0.2', 'prefix': str(tmp_path / 'usr'), 'cc': cc,
            'fc': str(bindir / 'mpifort.mpich')}


def _render(mpi, state_dir, mirror='/site/mirror'):
    text = spack_env.render_spack_yaml(
        compiler=COMPILER, mpi=mpi, specs=SPECS, install_root='/st/install', view='/st/view',
        package_repo='/repo/spack-env/repo/spack_repo/commcheck', develop_path='/repo/kernels',
        mirror=mirror, state_dir=str(state_dir), build_tools=TOOLS)
    return text, yaml.safe_load(text)['spack']


def test_find_spack_prefers_spack_root(tmp_path):
    (tmp_path / 'bin').mkdir()
    spack = _script(tmp_path / 'bin' / 'spack', 'true')
    assert spack_env.find_spack({'SPACK_ROOT': str(tmp_path), 'PATH': ''}) == spack
    assert spack_env.find_spack({'PATH': str(tmp_path / 'bin')}) == spack
    assert spack_env.find_spack({'SPACK_ROOT': '/nowhere', 'PATH': '/nowhere'}) is None


def test_wrappers_are_the_stacks_own(debian_mpich):
    links = spack_env.stack_wrappers(debian_mpich)
    assert sorted(links) == ['mpicc', 'mpicxx', 'mpiexec', 'mpif90', 'mpifort']
    assert all(target.endswith('.mpich') for target in links.values())


def test_linked_prefix_has_bin_include_lib(debian_mpich, tmp_path):
    prefix = spack_env.make_stack_prefix(debian_mpich, str(tmp_path / 'state'))
    assert prefix == str(tmp_path / 'state' / 'mpi-prefix' / 'mpich-4.0.2')
    assert os.readlink(os.path.join(prefix, 'bin', 'mpicc')) == debian_mpich['cc']
    assert os.readlink(os.path.join(prefix, 'include')) == '/inc/mpich'
    assert os.readlink(os.path.join(prefix, 'lib')) == '/lib/mpich'


def test_linked_prefix_is_refreshed(debian_mpich, tmp_path):
    state = str(tmp_path / 'state')
    prefix = spack_env.make_stack_prefix(debian_mpich, state)
    without_fortran = dict(debian_mpich, fc=None)
    assert spack_env.make_stack_prefix(without_fortran, state) == prefix
    assert sorted(os.listdir(os.path.join(prefix, 'bin'))) == ['mpicc', 'mpicxx', 'mpiexec']


def test_own_prefix_is_used_as_is(tmp_path):
    cray = {'package': 'cray-mpich', 'version': '8.1.28', 'prefix': '/sw/cray/mpich',
            'cc': '/sw/cray/craype/bin/cc', 'fc': '/sw/cray/craype/bin/ftn'}
    assert spack_env.make_stack_prefix(cray, str(tmp_path)) == '/sw/cray/mpich'
    plain = {'package': 'openmpi', 'version': '5.0.3', 'prefix': '/sw/ompi',
             'cc': '/sw/ompi/bin/mpicc', 'fc': None}
    assert spack_env.make_stack_prefix(plain, str(tmp_path)) == '/sw/ompi'
    assert os.listdir(tmp_path) == []


def test_environment_has_externals_only(debian_mpich, tmp_path):
    _, env = _render(debian_mpich, tmp_path / 'state')
    packages = env['packages']
    assert packages['mpi'] == {'require': ['mpich'], 'buildable': False}
    mpich = packages['mpich']['externals'][0]
    assert mpich == {'spec': 'mpich@4.0.2+fortran',
                     'prefix': str(tmp_path / 'state' / 'mpi-prefix' / 'mpich-4.0.2')}
    gcc = packages['gcc']['externals'][0]
    assert gcc['spec'] == "gcc@12.2.0 languages='c,c++,fortran'"
    assert gcc['prefix'] == '/usr'
    assert gcc['extra_attributes']['compilers']['fortran'] == '/usr/bin/gfortran'
    assert packages['cmake'] == {'externals': [{'spec': 'cmake@3.25.1', 'prefix': '/usr'}],
                                 'buildable': False}
    assert all(p['buildable'] is False for p in packages.values())


def test_environment_layout(debian_mpich, tmp_path):
    text, env = _render(debian_mpich, tmp_path / 'state')
    assert env['specs'] == SPECS
    assert env['view'] == '/st/view'
    assert env['concretizer'] == {'unify': True}
    assert env['config']['install_tree'] == {'root': '/st/install'}
    assert env['config']['develop_stage_link'].startswith(str(tmp_path / 'state'))
    assert env['repos'] == {'commcheck': '/repo/spack-env/repo/spack_repo/commcheck'}
    assert env['develop'] == {'commcheck-kernels': {'spec': 'commcheck-kernels@=main',
                                                    'path': '/repo/kernels'}}
    assert env['mirrors:'] == {'commcheck-site': '/site/mirror'}
    assert "'mirrors:':" in text        # Spack reads the quoted key as `mirrors::`


def test_no_mirror_and_no_fortran(debian_mpich, tmp_path):
    mpi = dict(debian_mpich, fc=None)
    compiler = dict(COMPILER, fc=None)
    text = spack_env.render_spack_yaml(
        compiler=compiler, mpi=mpi, specs=['commcheck-kernels~fortran'], install_root='/i',
        view='/v', package_repo='/r', develop_path='/d', mirror=None,
        state_dir=str(tmp_path), build_tools=[])
    env = yaml.safe_load(text)['spack']
    assert 'mirrors:' not in env and 'mirrors' not in env
    assert env['packages']['mpich']['externals'][0]['spec'] == 'mpich@4.0.2~fortran'
    assert env['packages']['gcc']['externals'][0]['spec'] == "gcc@12.2.0 languages='c,c++'"


def test_detect_build_tools():
    outputs = {'/usr/bin/cmake': 'cmake version 3.25.1\n', '/usr/bin/make': 'GNU Make 4.3\n'}

    class Done:
        def __init__(self, cmd, **_):
            self.stdout = outputs[cmd[0]]

    tools = spack_env.detect_build_tools(which=lambda c: f'/usr/bin/{c}', run=Done)
    assert tools == [{'package': 'cmake', 'version': '3.25.1', 'prefix': '/usr'},
                     {'package': 'gmake', 'version': '4.3', 'prefix': '/usr'}]
    assert spack_env.detect_build_tools(which=lambda c: None, run=Done) == []


def test_write_env_keeps_an_unchanged_file_and_its_lock(tmp_path):
    env_dir = tmp_path / 'env'
    path = spack_env.write_env(str(env_dir), 'spack: {}\n')
    (env_dir / 'spack.lock').write_text('{}')
    os.utime(path, (1, 1))
    spack_env.write_env(str(env_dir), 'spack: {}\n')
    assert os.stat(path).st_mtime == 1 and (env_dir / 'spack.lock').exists()
    spack_env.write_env(str(env_dir), 'spack:\n  specs: []\n')
    assert os.stat(path).st_mtime != 1 and not (env_dir / 'spack.lock').exists()
