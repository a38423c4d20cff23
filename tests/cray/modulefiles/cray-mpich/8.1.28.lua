-- EMULATED HPE Cray MPICH, for commcheck's tests (tests/cray): not a Cray.
-- Cray MPICH derives from MPICH; the emulation is Debian's MPICH (packages mpich and
-- libmpich-dev, MPICH 4.0.2 in /usr). cc and ftn link it while this module is loaded, and
-- srun starts its ranks with PMI-2 (a real Cray EX: srun --mpi=cray_shasta).
whatis("Emulated cray-mpich 8.1.28 (commcheck tests): Debian's MPICH behind cc and ftn")
prereq("craype")
setenv("CRAY_MPICH_VERSION", "8.1.28")
setenv("CRAY_MPICH_DIR", "/usr")
