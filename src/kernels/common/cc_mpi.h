! Handle types that differ between `use mpi_f08` and `use mpi`; CMake defines
! CC_HAVE_MPI_F08 when the stack's Fortran wrapper provides mpi_f08.
#ifdef CC_HAVE_MPI_F08
#define CC_USE_MPI use mpi_f08
#define CC_COMM type(MPI_Comm)
#define CC_DATATYPE type(MPI_Datatype)
#define CC_WIN type(MPI_Win)
#define CC_INFO type(MPI_Info)
#define CC_GROUP type(MPI_Group)
#define CC_REQUEST type(MPI_Request)
#define CC_STATUS type(MPI_Status)
#define CC_FINT(handle) handle%MPI_VAL
#else
#define CC_USE_MPI use mpi
#define CC_COMM integer
#define CC_DATATYPE integer
#define CC_WIN integer
#define CC_INFO integer
#define CC_GROUP integer
#define CC_REQUEST integer
#define CC_STATUS integer, dimension(MPI_STATUS_SIZE)
#define CC_FINT(handle) handle
#endif
