from spack_repo.builtin.build_systems.cmake import CMakePackage

from spack.package import *


class CommcheckKernels(CMakePackage):
    """MPI communication kernels of commcheck (ping-pong, exchange, datatypes, stencil, ...).

    There is no release tarball: the package is built from the commcheck checkout itself.
    Environments made by ``commcheck.site.spack_env`` list it under ``develop:`` with the path of
    ``src/kernels``, so Spack builds those local sources in place (``spack develop``
    semantics) and the version ``main`` needs no download URL.

    The CMake project takes the MPI stack's compiler wrappers as its compilers, so the
    programs are compiled and linked against exactly the ``mpi`` this spec depends on.
    """

    version("main")

    variant("fortran", default=True, description="Build the Fortran programs")

    depends_on("c", type="build")
    depends_on("fortran", type="build", when="+fortran")
    depends_on("cmake@3.18:", type="build")
    depends_on("mpi")

    def cmake_args(self):
        mpi = self.spec["mpi"]
        args = [
            self.define("CMAKE_C_COMPILER", mpi.mpicc),
            self.define_from_variant("COMMCHECK_FORTRAN", "fortran"),
        ]
        if self.spec.satisfies("+fortran"):
            # mpifc is the provider-neutral name: mpif90 for MPICH and Open MPI, ftn on Cray.
            args.append(self.define("CMAKE_Fortran_COMPILER", mpi.mpifc))
            if mpi.name == "intel-oneapi-mpi" and self.spec["fortran"].name == "gcc":
                # Intel MPI's mpif90 adds this for gfortran >= 10 only when it is called by
                # the bare name gfortran; under Spack it is given the full path of Spack's
                # compiler wrapper, and its `mpi` module then rejects MPI_Pack/Unpack buffers.
                args.append(self.define("CMAKE_Fortran_FLAGS", "-fallow-argument-mismatch"))
        return args
