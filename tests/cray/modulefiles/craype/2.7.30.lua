-- EMULATED HPE Cray craype, for commcheck's tests (tests/cray): not a Cray.
-- Puts the compiler drivers cc and ftn (tests/cray/bin) on PATH. They compile with the loaded
-- PrgEnv's compilers (PE_ENV) and, when cray-mpich is loaded, link it, as craype does.
whatis("Emulated craype (commcheck tests): the cc and ftn compiler drivers")
local emulation = myFileName():gsub("/modulefiles/craype/[^/]*$", "")
prepend_path("PATH", pathJoin(emulation, "bin"))
setenv("CRAYPE_VERSION", "2.7.30")
