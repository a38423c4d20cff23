"""Kernel builds kept across sessions, keyed by their inputs: real CMake builds with a
stack's own wrappers, in a copy of src/kernels and a cache of the test's own."""

from __future__ import annotations

import shutil

import pytest

from commcheck import paths
from commcheck.site import Stack, kbuild
from tests.conftest import REFERENCE_STACKS

pytestmark = pytest.mark.skipif(not REFERENCE_STACKS, reason='no Debian MPICH or Open MPI')


@pytest.fixture
def c_stack():
    """A reference stack's C kernels only (a build of a few seconds)."""
    stack = REFERENCE_STACKS[0]
    return Stack.model_validate({**stack.model_dump(), 'languages': ['c']})


def test_an_edited_source_rebuilds_and_an_untouched_tree_is_reused(tmp_path, c_stack):
    source, cache = tmp_path / 'src', tmp_path / 'cache'
    shutil.copytree(paths.KERNELS_SRC, source)
    first, how = kbuild.cached_cmake_build(c_stack, tmp_path / 'w1', source, cache)
    assert how == 'built' and (first / 'stencil-c').exists()
    assert first.parent.parent == cache and (first.parent / kbuild.DONE).exists()

    again, how = kbuild.cached_cmake_build(c_stack, tmp_path / 'w2', source, cache)
    assert (again, how) == (first, 'reused')
    assert not (tmp_path / 'w2').exists()           # nothing was built

    edited = source / 'stencil' / 'problem.c'
    edited.write_text(edited.read_text() + '\n/* one line more */\n')
    third, how = kbuild.cached_cmake_build(c_stack, tmp_path / 'w3', source, cache)
    assert how == 'built' and third != first and (third / 'stencil-c').exists()
    assert sorted(p.name for p in cache.iterdir()) == sorted([first.parent.name,
                                                              third.parent.name])


def test_the_key_follows_every_input_and_nothing_else(tmp_path, c_stack):
    source = tmp_path / 'src'
    shutil.copytree(paths.KERNELS_SRC, source)
    wrappers = {'c': c_stack.mpi.c_wrapper}

    def key(env=None, options=('-DCOMMCHECK_FORTRAN=OFF',), wrap=None):
        return kbuild.build_key(c_stack.id, kbuild.build_inputs(
            wrap or wrappers, c_stack.mpi.flavour, env or {}, list(options), source))

    base = key()
    assert key() == base
    # not compiled: the Python kernels are scripts, run from the tree
    (source / 'python' / 'pingpong.py').write_text('# edited\n')
    assert key() == base
    assert key(options=('-DCOMMCHECK_FORTRAN=ON',)) != base
    assert key(env={c_stack.mpi.record.compiler_env['c']: 'clang'}) != base
    other = [s for s in REFERENCE_STACKS if s.mpi.flavour != c_stack.mpi.flavour]
    if other:
        assert key(wrap={'c': other[0].mpi.c_wrapper}) != base
    (source / 'stencil' / 'new.h').write_text('/* a new file */\n')
    assert key() != base


def test_a_second_store_of_one_key_keeps_the_first(tmp_path):
    install = tmp_path / 'install'
    (install / 'bin').mkdir(parents=True)
    (install / 'bin' / 'prog').write_text('first')
    target = kbuild.store(install, 'k-1', {'sources': 'x'}, tmp_path / 'cache')
    (install / 'bin' / 'prog').write_text('second')
    assert kbuild.store(install, 'k-1', {'sources': 'x'}, tmp_path / 'cache') == target
    assert (target / 'bin' / 'prog').read_text() == 'first'
    assert [p.name for p in (tmp_path / 'cache').iterdir()] == ['k-1']    # no scratch left
