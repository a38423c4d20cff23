-- EMULATED HPE Cray programming environment, for commcheck's tests (tests/cray): not a Cray.
-- PrgEnv-gnu: the craype drivers cc/ftn compile with GCC (gcc, gfortran).
whatis("Emulated PrgEnv-gnu (commcheck tests): cc -> gcc, ftn -> gfortran")
family("PrgEnv")
setenv("PE_ENV", "GNU")
load("craype")
