"""commcheck.site.spack_env: spack.yaml generation and the linked MPI prefix (no Spack needed)."""

import os
import stat
import subprocess

import pytest
import yaml

from commcheck.site import spack_env

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
    assert spack_env.find_spack({'PATH': '/nowhere'}) is None


def test_a_spack_root_without_spack_says_what_to_set(tmp_path):
    """Not a quiet fall-back to the CMake path: one line naming SPACK_ROOT and the way out."""
    with pytest.raises(spack_env.SpackSetupError) as err:
        spack_env.find_spack({'SPACK_ROOT': str(tmp_path), 'PATH': ''})
    message = str(err.value)
    assert f'SPACK_ROOT={tmp_path} is not a Spack installation' in message
    assert 'COMMCHECK_BUILD=cmake' in message and '\n' not in message


def test_spack_python_that_is_not_there_says_what_to_set(tmp_path):
    assert spack_env.spack_python_problem({}) is None
    assert spack_env.spack_python_problem({'SPACK_PYTHON': '/usr/bin/env'}) is None
    problem = spack_env.spack_python_problem({'SPACK_PYTHON': str(tmp_path / 'python')})
    assert problem.startswith(f'SPACK_PYTHON={tmp_path / "python"} is not') and 'clingo' in problem


def test_disabled_bootstrapping_becomes_one_line_about_spack_python():
    output = ('==> Error: cannot bootstrap the "clingo" Python module from spec "clingo-bootstrap" '
              'due to the following failures:\n    bootstrapping is currently disabled. Use '
              '"spack bootstrap enable" to enable it\n')
    line = spack_env.explain_failure(output)
    assert 'SPACK_PYTHON' in line and 'clingo' in line and '\n' not in line
    assert 'SPACK_USER_CACHE_PATH' in spack_env.explain_failure(
        '==> Error: Timed out waiting for a write lock after 120.000s')
    assert spack_env.explain_failure('==> Error: something else') is None


def test_run_spack_turns_a_failure_into_one_line_and_the_tail(tmp_path):
    spack = _script(tmp_path / 'spack', 'echo "==> Error: bootstrapping is currently disabled"'
                                        ' >&2; exit 1')
    with pytest.raises(spack_env.SpackSetupError) as err:
        spack_env.run_spack(spack, ['concretize'], timeout=30, environ={'PATH': '/usr/bin:/bin'})
    first, *rest = str(err.value).splitlines()
    assert 'SPACK_PYTHON' in first and rest == ['==> Error: bootstrapping is currently disabled']
    with pytest.raises(spack_env.SpackSetupError, match='SPACK_PYTHON=/nowhere'):
        spack_env.run_spack(spack, [], timeout=30, environ={'SPACK_PYTHON': '/nowhere'})


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


def test_linked_prefix_is_per_stack(debian_mpich, tmp_path):
    """gcc with Fortran and clang without, on one MPICH: neither removes the other's links."""
    state = str(tmp_path / 'state')
    gnu = spack_env.make_stack_prefix(dict(debian_mpich, stack='gnu-mpich4'), state)
    clang = spack_env.make_stack_prefix(dict(debian_mpich, stack='clang-mpich4', fc=None), state)
    assert gnu != clang
    assert {'mpifort', 'mpif90'} <= set(os.listdir(os.path.join(gnu, 'bin')))
    assert 'mpifort' not in os.listdir(os.path.join(clang, 'bin'))


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
    assert env['config']['build_stage'] == [str(tmp_path / 'state' / 'stage')]
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


@pytest.fixture
def impi_wheel(tmp_path):
    """Intel MPI as the PyPI wheel lays it out: flat, bin/mpicc and lib/libmpi.so."""
    prefix = tmp_path / 'wheels' / 'impi'
    (prefix / 'bin').mkdir(parents=True)
    (prefix / 'lib').mkdir()
    cc = _script(prefix / 'bin' / 'mpicc', 'true')
    fc = _script(prefix / 'bin' / 'mpif90', 'true')
    return {'package': 'intel-oneapi-mpi', 'version': '2021.18.1', 'prefix': str(prefix),
            'cc': cc, 'fc': fc, 'stack': 'gnu-impi2021'}


def test_intel_mpi_wheel_gets_the_oneapi_layout(impi_wheel, tmp_path):
    """Spack's recipe looks under <prefix>/mpi/<major.minor>: a link to the flat wheel."""
    _, env = _render(impi_wheel, tmp_path / 'state')
    external = env['packages']['intel-oneapi-mpi']['externals'][0]
    assert external['spec'] == 'intel-oneapi-mpi@2021.18.1+generic-names~envmods'
    prefix = external['prefix']
    assert prefix == str(tmp_path / 'state' / 'mpi-prefix' / 'gnu-impi2021')
    assert os.readlink(os.path.join(prefix, 'mpi', '2021.18')) == impi_wheel['prefix']
    assert env['packages']['mpi'] == {'require': ['intel-oneapi-mpi'], 'buildable': False}


def test_intel_mpi_in_its_own_layout_is_used_as_is(impi_wheel, tmp_path):
    oneapi = tmp_path / 'oneapi'
    (oneapi / 'mpi' / '2021.18' / 'bin').mkdir(parents=True)
    mpi = dict(impi_wheel, prefix=str(oneapi))
    assert spack_env.make_stack_prefix(mpi, str(tmp_path / 'state')) == str(oneapi)


def test_mirror_that_is_not_there_is_noticed(tmp_path):
    assert spack_env.mirror_problem(None) is None
    problem = spack_env.mirror_problem(str(tmp_path / 'none'))
    assert problem.startswith(f'the Spack source mirror {tmp_path / "none"} does not exist')
    assert 'COMMCHECK_SPACK_MIRROR' in problem
    assert 'does not exist' in spack_env.mirror_problem(f'file://{tmp_path}/none')
    assert spack_env.mirror_problem(f'file://{tmp_path}') is None
    assert spack_env.mirror_problem('https://mirror.example.org/spack') is None


def test_mirror_without_the_osu_version_is_noticed(tmp_path):
    named = tmp_path / 'osu-micro-benchmarks'
    named.mkdir()
    (named / 'osu-micro-benchmarks-7.3.tar.gz').write_text('')
    assert spack_env.mirror_problem(str(tmp_path), 'osu-micro-benchmarks@7.3') is None
    problem = spack_env.mirror_problem(str(tmp_path), 'osu-micro-benchmarks@7.5.1')
    assert 'has no osu-micro-benchmarks@7.5.1' in problem and 'commcheck mirror' in problem


def _run_lines(lines, tmp_path, spack_exit):
    bindir = tmp_path / 'fakebin'
    bindir.mkdir(exist_ok=True)
    _script(bindir / 'spack', f'echo spack "$@"; exit {spack_exit}')
    script = '\n'.join(['set -e', 'trap "exit 9" ERR', *lines, 'echo done'])
    return subprocess.run(['bash', '-c', script], capture_output=True, text=True,
                          env={'PATH': f'{bindir}:/usr/bin:/bin'})


def test_a_failed_osu_install_is_recorded_not_fatal(tmp_path):
    env_dir = tmp_path / 'env'
    env_dir.mkdir()
    marker = spack_env.osu_failure_marker(str(env_dir))
    lines = spack_env.osu_install_commands(str(env_dir), 'osu-micro-benchmarks@7.3', 'gnu-x',
                                           None)
    failed = _run_lines(lines, tmp_path, 1)
    assert failed.returncode == 0 and failed.stdout.endswith('done\n')
    assert 'install --fail-fast osu-micro-benchmarks@7.3' in failed.stdout
    assert 'failed to install for gnu-x' in open(marker).read()
    assert _run_lines(lines, tmp_path, 0).returncode == 0 and not os.path.exists(marker)


def test_a_bad_mirror_skips_the_osu_install_and_says_why(tmp_path):
    env_dir = tmp_path / 'env'
    env_dir.mkdir()
    lines = spack_env.osu_install_commands(str(env_dir), 'osu-micro-benchmarks@7.3', 'gnu-x',
                                           'the Spack source mirror /m does not exist: set X')
    done = _run_lines(lines, tmp_path, 0)
    assert done.returncode == 0 and 'spack' not in done.stdout
    assert 'mirror /m does not exist' in open(spack_env.osu_failure_marker(str(env_dir))).read()


def test_osu_program_ignores_a_view_whose_osu_failed(tmp_path):
    from commcheck.rfm.build import osu_program
    view, env_dir = tmp_path / 'view', tmp_path / 'env'
    env_dir.mkdir()
    program = _script((view / 'libexec').mkdir(parents=True) or view / 'libexec' / 'osu_bw', '')
    extras = {'build': 'spack', 'spack_view': str(view), 'spack_env': str(env_dir)}
    assert osu_program(extras, 'osu_bw') == program
    (env_dir / 'commcheck-osu.failed').write_text('commcheck: OSU ... failed')
    assert osu_program(extras, 'osu_bw') is None


def test_recipe_digest_follows_the_recipes(tmp_path):
    repo = tmp_path / 'repo'
    (repo / 'packages' / 'k').mkdir(parents=True)
    (repo / 'packages' / 'k' / 'package.py').write_text('version("main")\n')
    before = spack_env.repo_digest(str(repo))
    assert spack_env.repo_digest(str(repo)) == before
    (repo / 'packages' / 'k' / 'package.py').write_text('version("main")\n# changed\n')
    assert spack_env.repo_digest(str(repo)) != before


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


def _stack(tmp_path, **mpi):
    from commcheck.site import Compiler, Mpi, Stack
    bindir = tmp_path / 'sw' / 'bin'
    bindir.mkdir(parents=True, exist_ok=True)
    gcc = _script(bindir / 'gcc', 'true')
    cc = _script(bindir / 'mpicc', 'echo gcc -I/inc -L/lib')
    return Stack(name='gnu-mpich5', compiler=Compiler(family='gnu', version='12.2.0', cc=gcc),
                 mpi=Mpi(flavour='mpich', version='5.0.2', prefix=str(tmp_path / 'sw'), cc=cc,
                         **mpi))


def test_stack_environment_lives_in_the_state_and_takes_the_osu_spec(tmp_path, monkeypatch):
    monkeypatch.delenv('COMMCHECK_SPACK_MIRROR', raising=False)
    monkeypatch.delenv('COMMCHECK_SPACK_INSTALL_TREE', raising=False)
    monkeypatch.setenv('COMMCHECK_OSU_SPEC', 'osu-micro-benchmarks@7.5.1')
    stack, state = _stack(tmp_path), tmp_path / 'state'
    text = spack_env.stack_env_text(stack, spack_settings={'osu_spec': 'osu-micro-benchmarks@7.3'},
                                    view=str(state / 'view'), state_dir=str(state))
    assert text.startswith('# Generated by commcheck for stack gnu-mpich5')
    env = yaml.safe_load(text)['spack']
    assert env['specs'] == ['commcheck-kernels~fortran', 'osu-micro-benchmarks@7.5.1']
    assert env['config']['install_tree']['root'] == str(state / 'spack' / 'opt')
    assert env['packages']['mpich']['externals'][0] == {'spec': 'mpich@5.0.2~fortran',
                                                        'prefix': str(tmp_path / 'sw')}
    assert 'mirrors:' not in env
    monkeypatch.delenv('COMMCHECK_OSU_SPEC')
    assert spack_env.osu_spec({}) == 'osu-micro-benchmarks@7.3'
    assert spack_env.osu_spec({'osu_spec': 'osu-micro-benchmarks@7.5'}) == \
        'osu-micro-benchmarks@7.5'


def test_java_stack_has_no_spack_environment(tmp_path):
    from commcheck.site import Compiler, Mpi, Stack
    javac = _script(tmp_path / 'javac', 'true')
    java = Stack(name='java-mpj', compiler=Compiler(family='openjdk', version='17', java=javac),
                 mpi=Mpi(flavour='mpj-express', version='0.44', prefix=str(tmp_path)))
    assert not spack_env.has_spack_environment(java)
    assert spack_env.has_spack_environment(_stack(tmp_path))


def test_an_mpi_spack_builds_is_required_not_external(debian_mpich, tmp_path):
    mpi = dict(debian_mpich, spec='mpich@4.2.3 netmod=ofi')
    _, env = _render(mpi, tmp_path / 'state')
    assert env['packages']['mpi'] == {'require': ['mpich']}
    assert env['packages']['mpich'] == {'require': ['mpich@4.2.3 netmod=ofi']}
    assert not (tmp_path / 'state' / 'mpi-prefix').exists()


def test_cray_stacks_are_externals_by_module(tmp_path):
    """config/sites/cray-ex-emulated.yaml as Cray sites declare Spack externals: cray-mpich (an
    external-only package in Spack) by module and prefix, the PrgEnv's compiler by module."""
    import yaml

    from commcheck import paths
    from commcheck.site import sitefile
    site = sitefile.load(paths.CONFIG_DIR / 'sites' / 'cray-ex-emulated.yaml')
    for stack in site.stacks:
        text = spack_env.stack_env_text(stack, spack_settings={}, view=str(tmp_path / 'view'),
                                        state_dir=str(tmp_path / 'state'), mirror=None)
        packages = yaml.safe_load(text)['spack']['packages']
        assert packages['mpi'] == {'require': ['cray-mpich'], 'buildable': False}
        assert packages['cray-mpich']['externals'] == [
            {'spec': 'cray-mpich@8.1.28~wrappers', 'modules': ['cray-mpich/8.1.28'],
             'prefix': stack.mpi.prefix}]
        compiler = packages[stack.compiler.spack_package]
        assert compiler['buildable'] is False
        (entry,) = compiler['externals']
        assert entry['modules'] == list(stack.modules) and 'prefix' not in entry
        assert entry['extra_attributes']['compilers'] == {'c': 'cc', 'cxx': 'CC', 'fortran': 'ftn'}
    assert not (tmp_path / 'state' / 'mpi-prefix').exists()
