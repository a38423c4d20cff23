"""mpi4py's binary wheel where it serves a stack, the source build where it does not: real
stacks, real pip (the wheel from PyPI, seconds), the choice made by loading the library.

The Python kernels' runs on every stack (validation, label) are test_managed_kernels.py's;
here: which stacks the wheel serves, that it loads the stack's own library and no other, and
that a stack's choice is kept and reused.
"""

from __future__ import annotations

import os

import pytest

from commcheck.site import discover, flavours, kbuild, mpi4py_build

STACKS = [s for s in discover.local_stacks()
          if not s.mpi.record.java and s.compiler.family == 'gnu']
SERVED = [s for s in STACKS if mpi4py_build.wheel_library(s.mpi.cc, s.mpi.flavour)]
DEBIAN_MPICH = [s for s in STACKS if s.mpi.prefix == '/usr' and s.mpi.flavour == 'mpich']


def test_the_wheels_library_is_the_flavours_soname_found_beside_the_wrapper():
    for stack in SERVED:
        found = mpi4py_build.wheel_library(stack.mpi.cc, stack.mpi.flavour)
        record = stack.mpi.record
        assert os.path.basename(found) in (record.mpi4py_wheel_library,
                                           *record.mpi4py_wheel_aliases), stack.name
    assert mpi4py_build.wheel_library('/usr/bin/mpicc.openmpi', 'mpj-express') is None


@pytest.mark.skipif(not DEBIAN_MPICH, reason="no Debian MPICH (mpicc.mpich) here")
def test_debian_mpich_gets_the_wheel_through_a_link_of_the_wheels_name(tmp_path):
    """Debian's MPICH has libmpich.so.12 only (the same ABI): the wheel serves it through a
    link named libmpi.so.12 in the stack's directory, on LD_LIBRARY_PATH; it loads MPICH 4."""
    stack = DEBIAN_MPICH[0]
    target = mpi4py_build.ensure_mpi4py(stack.mpi.cc, stack.mpi.version, tmp_path,
                                        flavour='mpich')
    info = mpi4py_build.build_info(target)
    assert info['source'] == 'wheel' and 'wheel_refused' not in info
    settings = mpi4py_build.kernel_settings(tmp_path, stack.mpi.cc, stack.mpi.version)
    link = target / 'lib' / 'libmpi.so.12'
    assert settings['MPI4PY_LIBMPI'] == str(link)
    assert settings['LD_LIBRARY_PATH'] == str(link.parent)
    assert os.path.basename(os.path.realpath(link)).startswith('libmpich.so.12')
    library = mpi4py_build.library_version(target, settings)
    assert flavours.identify_library(library) == ('mpich', stack.mpi.version), library
    # without the link's directory on the loader's path the extension cannot load
    bare = mpi4py_build.library_version(target, {'MPI4PY_LIBMPI': str(link)})
    assert bare.startswith('(import failed') and 'libmpi.so.12' in bare


def test_a_library_line_of_another_stack_is_not_the_stacks():
    debian_ompi = 'Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4'
    assert mpi4py_build.names_stack(debian_ompi, '4.1.4', 'openmpi')
    assert not mpi4py_build.names_stack(debian_ompi, '5.0.11', 'openmpi')
    assert not mpi4py_build.names_stack(debian_ompi, '4.1.4', 'mpich')
    assert not mpi4py_build.names_stack('(import failed: ...)', '4.1.4', 'openmpi')


@pytest.mark.skipif(not SERVED, reason='no stack the mpi4py wheel serves here')
def test_a_served_stack_gets_the_wheel_loading_its_own_library_then_reuses_it(tmp_path,
                                                                              monkeypatch):
    for stack in SERVED:
        for key, value in kbuild.stack_environment(stack).items():   # OPAL_PREFIX, ...
            monkeypatch.setenv(key, value)
        target = mpi4py_build.ensure_mpi4py(stack.mpi.cc, stack.mpi.version, tmp_path,
                                            flavour=stack.mpi.flavour)
        info = mpi4py_build.build_info(target)
        assert info['source'] == 'wheel' and 'wheel_refused' not in info, stack.name
        settings = mpi4py_build.kernel_settings(tmp_path, stack.mpi.cc, stack.mpi.version)
        assert settings['PYTHONPATH'] == str(target)
        assert settings['MPI4PY_LIBMPI'].endswith(stack.mpi.record.mpi4py_wheel_library)
        library = mpi4py_build.library_version(target, settings)
        assert flavours.identify_library(library)[0] == stack.mpi.flavour, library
        assert flavours.versions_agree(stack.mpi.version,
                                       flavours.identify_library(library)[1]), library
        line = mpi4py_build.describe(target, reused=True)
        assert 'the binary wheel, reused' in line and stack.mpi.version in line
    made = [p for p in (tmp_path / 'mpi4py').iterdir() if not p.name.startswith('.')]
    assert len([p for p in made if '-wheel-' in p.name]) == 1   # one wheel serves them all
    assert len(made) == len(SERVED) + 1
    before = {p.name: p.stat().st_mtime for p in (tmp_path / 'mpi4py').iterdir()}
    again = mpi4py_build.ensure_mpi4py(SERVED[0].mpi.cc, SERVED[0].mpi.version, tmp_path,
                                       flavour=SERVED[0].mpi.flavour)
    assert again.parent == tmp_path / 'mpi4py'
    assert {p.name: p.stat().st_mtime for p in (tmp_path / 'mpi4py').iterdir()} == before
