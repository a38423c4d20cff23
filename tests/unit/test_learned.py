"""What the checks learn of a site's own environments, and how they select them
(commcheck.site.probe, commcheck.site.vocabulary, commcheck.rfm.learned): on this machine's
real compilers and MPI wrappers, and ReFrame's own matching of ``valid_prog_environs``."""

from __future__ import annotations

import shutil

import pytest
from reframe.core import runtime
from reframe.core.environments import ProgEnvironment

from commcheck.rfm import learned
from commcheck.site import flavours, probe, vocabulary
from tests.conftest import IN_CI


def selected(environs: list[str], features: list[str], extras: dict | None = None) -> bool:
    env = ProgEnvironment('e', features=features, extras=extras or {})
    return runtime._is_valid_env(env, environs)


def test_a_language_selects_environments_that_name_it_or_name_no_language():
    c, fortran = vocabulary.environments_for(('c',)), vocabulary.environments_for(('fortran',))
    assert selected(c, ['serial', 'mpi'])                    # a site's: languages learned
    assert selected(c, ['cuda-aware-mpi'])
    assert selected(c, ['c', 'fortran'], {'mpi': 'mpich'})   # commcheck's generated
    assert not selected(fortran, ['c'], {'mpi': 'mpich'})    # names C only
    assert not selected(c, ['java'], {'mpi': 'mpj-express'})
    assert not selected(c, ['serial'])                       # not an MPI environment
    assert not selected(vocabulary.environments_for(('osu',)), ['c'], {'mpi': 'openmpi'})


def test_mvapich_and_the_known_libraries_are_identified():
    assert flavours.identify_library('MVAPICH2 Version      :\t2.3.7') == ('mvapich', '2.3.7')
    assert flavours.identify_library('MVAPICH Version : 3.0') == ('mvapich', '3.0')
    assert flavours.identify_library('MPICH Version:\t4.0.2') == ('mpich', '4.0.2')
    assert flavours.identify_library('FooMPI 1.0') is None


def compilers() -> list[tuple[str, str]]:
    found = [(cc, family) for cc, family in (('gcc', 'gnu'), ('clang', 'clang'))
             if shutil.which(cc)]
    if not found and IN_CI:
        pytest.fail('no C compiler (gcc, clang) on PATH')
    return found


@pytest.mark.parametrize('cc,family', compilers())
def test_the_compiler_family_and_version_come_from_its_macros(tmp_path, cc, family):
    got, version = probe.compiler_of(shutil.which(cc), tmp_path)
    assert got == family and version.split('.')[0].isdigit(), (got, version)


def debian_wrapper(flavour: str) -> str:
    found = shutil.which(f'mpicc.{flavour}')
    if not found:
        if IN_CI:
            pytest.fail(f'mpicc.{flavour} not installed')
        pytest.skip(f'mpicc.{flavour} not installed')
    return found


@pytest.mark.parametrize('flavour', ['mpich', 'openmpi'])
def test_an_environment_is_learned_from_its_wrappers_and_its_library(tmp_path, flavour):
    found = probe.learn('site-env', debian_wrapper(flavour), f'mpifort.{flavour}', tmp_path)
    assert found['mpi'] == flavour and found['mpi_version'][0].isdigit(), found
    assert found['mpi_library'] == [flavour, found['mpi_version']]
    assert found['compiler'] == 'gnu' and found['languages'] == ['c', 'fortran'], found
    assert found['unknown'] == {}


def test_no_mpi_compiler_names_the_environment_and_cc(tmp_path, monkeypatch):
    (tmp_path / 'bin').mkdir()
    (tmp_path / 'bin' / 'gcc').symlink_to(shutil.which('gcc') or '/usr/bin/gcc')
    monkeypatch.setenv('PATH', str(tmp_path / 'bin'))
    with pytest.raises(probe.ProbeError, match=r"environment 'x': no C compiler builds an MPI "
                                               r"program .*set its cc"):
        probe.learn('x', 'gcc', None, tmp_path / 'work')


def test_a_library_no_flavour_matches_is_unknown_with_its_text(tmp_path):
    program = tmp_path / 'probe'
    program.write_text('#!/bin/sh\necho "FooMPI Version 1.0"\n')
    program.chmod(0o755)
    assert probe.library_of(program, tmp_path) == ('unknown', 'unknown', 'FooMPI Version 1.0')


def test_launcher_options_follow_the_launcher_and_the_flavour():
    mpich, ompi = {'mpi': 'mpich'}, {'mpi': 'openmpi', 'srun_mpi': 'pmix'}
    assert learned.launcher_options('mpirun', mpich, 'core', None, False)[0] == [
        '-bind-to', 'core']
    opts, said = learned.launcher_options('mpiexec', ompi, 'core', 1, True)
    assert opts == ['--bind-to', 'none', '--map-by', 'ppr:1:node', '--oversubscribe']
    assert said.startswith('none (Open MPI mpiexec')
    assert learned.launcher_options('srun', ompi, 'core', None, False)[0] == [
        '--cpu-bind=cores', '--mpi=pmix']
    opts, said = learned.launcher_options('mpirun', {'mpi': 'unknown'}, 'core', None, False)
    assert opts == [] and said.startswith('unknown: MPI flavour unknown')


def test_wrong_extras_are_refused_in_one_line():
    assert learned.checked_extras('e', {'mpi': 'MVAPICH2'})['mpi'] == 'mvapich'
    with pytest.raises(learned.ConfigurationProblem, match=r"extras 'mpi'='foompi' is no MPI "
                                                           r"flavour commcheck knows"):
        learned.checked_extras('e', {'mpi': 'foompi'})
    with pytest.raises(learned.ConfigurationProblem, match=r"extras 'languages'=\['cobol'\]"):
        learned.checked_extras('e', {'languages': ['cobol']})


def test_a_flavour_given_without_a_version_checks_the_flavour_only():
    from commcheck.rfm.mixins import label_mismatch
    given = {'mpi_library': ['openmpi', '']}
    assert label_mismatch('e', given, ['Open MPI v4.1.4, package: Debian OpenMPI']) is None
    assert label_mismatch('e', given, ['MPICH Version:\t4.0.2']) == (
        'label mismatch: e declares Open MPI, but the kernel ran with MPICH 4.0.2 '
        '("MPICH Version:\t4.0.2")')
