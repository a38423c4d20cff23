-- EMULATED HPE Cray programming environment, for commcheck's tests (tests/cray): not a Cray.
-- PrgEnv-cray: the Cray Compiling Environment (CCE). CCE's C compiler is clang-based, so the
-- emulated cc compiles with clang; its Fortran compiler is Cray's own, which nothing here
-- provides: the emulated ftn compiles with gfortran (it must read the MPI library's gfortran
-- modules anyway).
whatis("Emulated PrgEnv-cray (commcheck tests): cc -> clang, ftn -> gfortran")
family("PrgEnv")
setenv("PE_ENV", "CRAY")
load("craype")
