! Verification: rank 0 computes the independent reference (stencil_reference), then receives
! the blocks one at a time (each rank sends when rank 0 asks for it) and compares every cell;
! the first difference ends the run with exit code 3. The printed total heat and checksum are
! compared with the reference's too.
#include "cc_mpi.h"
module stencil_verify
  CC_USE_MPI
  use, intrinsic :: iso_fortran_env, only: error_unit, int64, real64
  use, intrinsic :: iso_c_binding, only: c_int
  use cc_util
  use stencil_reference
  implicit none
  private
  public :: verify_grid, verify_alone

  character(len=*), parameter :: GLOBAL = 'independent sequential reference'
  ! Tags of the exchange with rank 0: its go-ahead (no data), then the block.
  integer, parameter :: TAG_BLOCK = 0, TAG_GO = 1

  ! Same operations in the same order give the same bits; the tolerance only leaves room for
  ! a compiler that contracts a*b+c into one instruction in one code and not in the other.
  real(real64), parameter :: TOLERANCE = 1.0e-12_real64

  interface
    integer(c_int) function usleep(microseconds) bind(C, name='usleep')
      import :: c_int
      integer(c_int), value :: microseconds
    end function
  end interface

contains

  logical function differs(got, want)
    real(real64), intent(in) :: got, want
    differs = .not. (abs(got - want) <= TOLERANCE * abs(want))
  end function

  ! Every cell of the distributed grid against the reference; on rank 0 the number of cells
  ! compared, elsewhere 0. aold is this rank's block, the one at (pi, pj) = (rank / py,
  ! mod(rank, py)) of a px x py process grid; sums are the reduced total heat and checksum.
  integer(int64) function verify_grid(aold, bx, by, n, steps, sums, px, py) result(validated)
    integer, intent(in) :: bx, by, n, px, py
    real(real64), intent(in) :: aold(0:bx + 1, 0:by + 1), sums(2)
    integer(int64), intent(in) :: steps
    real(real64), allocatable :: ref(:, :), got(:, :)
    real(real64) :: want(2)
    integer :: r, stat, ierr, nothing(1)
    validated = 0
    if (cc_rank() /= 0) then
      call send_block(aold, bx, by)
      return
    end if
    call reference_grid(n, steps, ref, stat)
    if (stat /= 0) then
      write(error_unit, '(a)') 'ERROR: cannot allocate the reference grid for --n ' // cc_str(n)
      call cc_abort(CC_EXIT_USAGE)
    end if
    allocate(got(bx, by))
    call compare_block(ref(1:bx, 1:by), aold(1:bx, 1:by), 0, 0, 0, GLOBAL)
    do r = 1, px * py - 1
      call MPI_Send(nothing, 0, MPI_INTEGER, r, TAG_GO, MPI_COMM_WORLD, ierr)
      call cc_check(ierr, 'MPI_Send')
      call MPI_Recv(got, bx * by, MPI_DOUBLE_PRECISION, r, TAG_BLOCK, MPI_COMM_WORLD, &
                    MPI_STATUS_IGNORE, ierr)
      call cc_check(ierr, 'MPI_Recv')
      call compare_block(ref(r / py * bx + 1:(r / py + 1) * bx, mod(r, py) * by + 1:&
        (mod(r, py) + 1) * by), got, r / py * bx, mod(r, py) * by, r, GLOBAL)
    end do
    want = reference_sums(n, ref)
    call compare_sum('total_heat', sums(1), want(1))
    call compare_sum('checksum', sums(2), want(2))
    validated = int(n, int64) * n
  end function

  ! `owner`'s block interior got, whose cell (1, 1) is global (row0+1, col0+1), against ref,
  ! what its cells must hold (the same shape; `what` names it). On a difference it names the
  ! first cell that differs (scanning columns), how many do, and the one that differs most: a
  ! missing halo shows as a small error far into the block and a large one at its edge.
  subroutine compare_block(ref, got, row0, col0, owner, what)
    real(real64), intent(in) :: ref(:, :), got(:, :)
    integer, intent(in) :: row0, col0, owner
    character(len=*), intent(in) :: what
    integer :: i, j, first(2), worst(2)
    integer(int64) :: bad
    real(real64) :: most
    bad = 0
    most = -1
    first = 0
    worst = 0
    do j = 1, size(got, 2)
      do i = 1, size(got, 1)
        if (.not. differs(got(i, j), ref(i, j))) cycle
        bad = bad + 1
        if (bad == 1) first = [i, j]
        if (.not. (abs(got(i, j) - ref(i, j)) <= most)) then   ! NaN: the most
          most = abs(got(i, j) - ref(i, j))
          worst = [i, j]
        end if
      end do
    end do
    if (bad == 0) return
    call cc_validation_error(cell(first, .true.) // ' (' // what // '); ' // &
      cc_str(bad) // ' of its ' // cc_str(size(got, kind=int64)) // ' cells differ, the most ' // &
      cell(worst, .false.))
  contains
    function cell(ij, named) result(text)
      integer, intent(in) :: ij(2)
      logical, intent(in) :: named
      character(len=:), allocatable :: text
      text = 'cell (' // cc_str(row0 + ij(1)) // ', ' // cc_str(col0 + ij(2)) // ')'
      if (named) text = text // ' of rank ' // cc_str(owner) // '''s block'
      text = text // ': got ' // cc_g17(got(ij(1), ij(2))) // ', expected ' // &
        cc_g17(ref(ij(1), ij(2)))
    end function
  end subroutine

  ! Every cell of a block computed alone (the floor's compute-only run: no halo, ghosts 0)
  ! against the independent reference of that block alone; the first difference exits 3.
  subroutine verify_alone(aold, bx, by, row0, col0, n, steps)
    integer, intent(in) :: bx, by, row0, col0, n
    real(real64), intent(in) :: aold(0:bx + 1, 0:by + 1)
    integer(int64), intent(in) :: steps
    real(real64), allocatable :: ref(:, :)
    integer :: stat
    call reference_block(n, steps, row0, col0, bx, by, ref, stat)
    if (stat /= 0) then
      write(error_unit, '(a)') 'ERROR: cannot allocate the floor''s reference block for --n ' &
        // cc_str(n)
      call cc_abort(CC_EXIT_USAGE)
    end if
    call compare_block(ref(1:bx, 1:by), aold(1:bx, 1:by), row0, col0, cc_rank(), &
                       'the floor: the block alone, border 0, independent reference')
  end subroutine

  subroutine compare_sum(what, got, want)
    character(len=*), intent(in) :: what
    real(real64), intent(in) :: got, want
    if (differs(got, want)) &
      call cc_validation_error(what // ' ' // cc_g17(got) // ' differs from the reference''s ' // &
        cc_g17(want) // ' (relative ' // cc_g17(abs(got - want) / abs(want)) // ' > 1e-12)')
  end subroutine

  ! A rank other than 0 waits for rank 0's go-ahead without spinning (on a full node the
  ! waiting ranks would take the cores rank 0's reference needs), then sends its block's
  ! interior while rank 0 receives it: both sides drive the transfer, which a sender that only
  ! looked at its request every millisecond slowed to seconds (MPICH 5, 69 MB).
  subroutine send_block(aold, bx, by)
    integer, intent(in) :: bx, by
    real(real64), intent(in) :: aold(0:bx + 1, 0:by + 1)
    CC_DATATYPE :: interior
    CC_REQUEST :: go
    logical :: done
    integer :: ierr, nothing(1)
    call MPI_Irecv(nothing, 0, MPI_INTEGER, 0, TAG_GO, MPI_COMM_WORLD, go, ierr)
    call cc_check(ierr, 'MPI_Irecv')
    do
      call MPI_Test(go, done, MPI_STATUS_IGNORE, ierr)
      call cc_check(ierr, 'MPI_Test')
      if (done) exit
      ierr = usleep(1000_c_int)
    end do
    call MPI_Type_create_subarray(2, [bx + 2, by + 2], [bx, by], [1, 1], MPI_ORDER_FORTRAN, &
                                  MPI_DOUBLE_PRECISION, interior, ierr)
    call cc_check(ierr, 'MPI_Type_create_subarray')
    call MPI_Type_commit(interior, ierr)
    call cc_check(ierr, 'MPI_Type_commit')
    call MPI_Send(aold, 1, interior, 0, TAG_BLOCK, MPI_COMM_WORLD, ierr)
    call cc_check(ierr, 'MPI_Send')
    call MPI_Type_free(interior, ierr)
    call cc_check(ierr, 'MPI_Type_free')
  end subroutine

end module stencil_verify
