! Halo exchanges of stencil-f on a block aold(0:bx+1, 0:by+1) with ghosts: by messages
! (blocking Send/Recv for sr and hybrid between nodes, nonblocking for nb) and through an
! MPI-3 shared window (shm, shmnc, hybrid inside a node). A column (fixed j) is contiguous in
! Fortran's storage; a row (fixed i) is the strided `row` type.
#include "cc_mpi.h"
module stencil_halo
  CC_USE_MPI
  use, intrinsic :: iso_fortran_env, only: real64
  use, intrinsic :: iso_c_binding, only: c_ptr, c_f_pointer, c_int
  use cc_util
  implicit none
  private
  public :: NORTH, SOUTH, WEST, EAST, peer_grid, exchange_sr, exchange_nb, shm_alloc, &
            shm_fence, halo_shm, shm_free, stepsync_open, stepsync_step, stepsync_close

  integer, parameter :: NORTH = 1, SOUTH = 2, WEST = 3, EAST = 4

  ! A neighbour's two arrays in the shared window; null when it is not in this node.
  type peer_grid
    real(real64), pointer, contiguous :: a(:, :, :) => null()
  end type

  ! The steps' coupling of the floor's runs (common/cc_stepsync.h), shared with stencil-c.
  interface
    type(c_ptr) function stepsync_open_c(shared, nbr) bind(C, name='cc_stepsync_open_f')
      import :: c_ptr, c_int
      integer(c_int), value :: shared
      integer(c_int), intent(in) :: nbr(4)
    end function
    subroutine stepsync_step(s) bind(C, name='cc_stepsync_step_f')
      import :: c_ptr
      type(c_ptr), value :: s
    end subroutine
    subroutine stepsync_close(s) bind(C, name='cc_stepsync_close_f')
      import :: c_ptr
      type(c_ptr), value :: s
    end subroutine
  end interface

contains

  ! Collective over `shared` (the ranks sharing memory): the coupling of each step to the
  ! neighbours in nbr (world ranks, MPI_PROC_NULL: none) that share it.
  type(c_ptr) function stepsync_open(shared, nbr)
    CC_COMM, intent(in) :: shared
    integer, intent(in) :: nbr(4)
    stepsync_open = stepsync_open_c(int(CC_FINT(shared), c_int), int(nbr, c_int))
  end function

  ! A segment of the window as a (0:bx+1, 0:by+1, 0:1) array: a rank's old and new arrays.
  subroutine map_grid(p, bx, by, grid)
    type(c_ptr), intent(in) :: p
    integer, intent(in) :: bx, by
    real(real64), pointer, contiguous, intent(out) :: grid(:, :, :)
    call c_f_pointer(p, grid, [bx + 2, by + 2, 2])
    grid(0:, 0:, 0:) => grid
  end subroutine

  ! Allocates every rank's two (0:bx+1, 0:by+1) arrays in a window over `node` (contiguous:
  ! one block of memory for the node, else alloc_shared_noncontig), maps mine onto `a` and
  ! those of the neighbours in nbr (world ranks) that are in this node onto peer(d)%a; such a
  ! neighbour is read from the window, so its sr_nbr(d) becomes MPI_PROC_NULL. Opens one
  ! passive-target epoch for the whole run; order within it comes from shm_fence.
  subroutine shm_alloc(node, contiguous, bx, by, nbr, win, a, peer, sr_nbr)
    CC_COMM, intent(in) :: node
    logical, intent(in) :: contiguous
    integer, intent(in) :: bx, by, nbr(4)
    CC_WIN, intent(out) :: win
    real(real64), pointer, contiguous, intent(out) :: a(:, :, :)
    type(peer_grid), intent(out) :: peer(4)
    integer, intent(inout) :: sr_nbr(4)
    CC_INFO :: info
    CC_GROUP :: world_group, node_group
    type(c_ptr) :: base
    integer(MPI_ADDRESS_KIND) :: wbytes, qsize
    integer :: node_nbr(4), qdisp, d, ierr
    info = MPI_INFO_NULL
    if (.not. contiguous) then
      call MPI_Info_create(info, ierr)
      call cc_check(ierr, 'MPI_Info_create')
      call MPI_Info_set(info, 'alloc_shared_noncontig', 'true', ierr)
      call cc_check(ierr, 'MPI_Info_set')
    end if
    wbytes = 16_MPI_ADDRESS_KIND * (bx + 2) * (by + 2)
    call MPI_Win_allocate_shared(wbytes, 8, info, node, base, win, ierr)
    call cc_check(ierr, 'MPI_Win_allocate_shared')
    call MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN, ierr)
    call cc_check(ierr, 'MPI_Win_set_errhandler')
    if (.not. contiguous) then
      call MPI_Info_free(info, ierr)
      call cc_check(ierr, 'MPI_Info_free')
    end if
    call map_grid(base, bx, by, a)

    ! A neighbour's rank in the node, or MPI_UNDEFINED when it lives elsewhere.
    call MPI_Comm_group(MPI_COMM_WORLD, world_group, ierr)
    call cc_check(ierr, 'MPI_Comm_group')
    call MPI_Comm_group(node, node_group, ierr)
    call cc_check(ierr, 'MPI_Comm_group')
    call MPI_Group_translate_ranks(world_group, 4, nbr, node_group, node_nbr, ierr)
    call cc_check(ierr, 'MPI_Group_translate_ranks')
    do d = 1, 4
      if (node_nbr(d) == MPI_UNDEFINED .or. node_nbr(d) == MPI_PROC_NULL) cycle
      call MPI_Win_shared_query(win, node_nbr(d), qsize, qdisp, base, ierr)
      call cc_check(ierr, 'MPI_Win_shared_query')
      call map_grid(base, bx, by, peer(d)%a)
      sr_nbr(d) = MPI_PROC_NULL
    end do
    call MPI_Group_free(world_group, ierr)
    call cc_check(ierr, 'MPI_Group_free')
    call MPI_Group_free(node_group, ierr)
    call cc_check(ierr, 'MPI_Group_free')
    call MPI_Win_lock_all(MPI_MODE_NOCHECK, win, ierr)
    call cc_check(ierr, 'MPI_Win_lock_all')
  end subroutine

  subroutine shm_free(win)
    CC_WIN, intent(inout) :: win
    integer :: ierr
    call MPI_Win_unlock_all(win, ierr)
    call cc_check(ierr, 'MPI_Win_unlock_all')
    call MPI_Win_free(win, ierr)
    call cc_check(ierr, 'MPI_Win_free')
  end subroutine

  ! One blocking shift along a line of ranks, from aold(si, sj) to `to` and into aold(ri, rj)
  ! from `from`: even coordinates send first, odd ones receive first, so every Send meets a
  ! posted Recv and the line cannot deadlock (no MPI_Sendrecv).
  subroutine shift(aold, si, sj, to, ri, rj, from, count, dtype, even, tag)
    real(real64), intent(inout) :: aold(0:, 0:)
    integer, intent(in) :: si, sj, to, ri, rj, from, count, tag
    CC_DATATYPE, intent(in) :: dtype
    logical, intent(in) :: even
    integer :: ierr
    if (even) then
      call MPI_Send(aold(si, sj), count, dtype, to, tag, MPI_COMM_WORLD, ierr)
      call cc_check(ierr, 'MPI_Send')
      call MPI_Recv(aold(ri, rj), count, dtype, from, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
      call cc_check(ierr, 'MPI_Recv')
    else
      call MPI_Recv(aold(ri, rj), count, dtype, from, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
      call cc_check(ierr, 'MPI_Recv')
      call MPI_Send(aold(si, sj), count, dtype, to, tag, MPI_COMM_WORLD, ierr)
      call cc_check(ierr, 'MPI_Send')
    end if
  end subroutine

  ! Blocking exchange with the neighbours in nbr (MPI_PROC_NULL: none, or same node); pi, pj
  ! are this rank's coordinates in the process grid.
  subroutine exchange_sr(aold, bx, by, nbr, pi, pj, row)
    integer, intent(in) :: bx, by, nbr(4), pi, pj
    real(real64), intent(inout) :: aold(0:bx + 1, 0:by + 1)
    CC_DATATYPE, intent(in) :: row
    ! rows: my last row goes south (into the southern neighbour's north ghost), and back
    call shift(aold, bx, 1, nbr(SOUTH), 0, 1, nbr(NORTH), 1, row, mod(pi, 2) == 0, SOUTH)
    call shift(aold, 1, 1, nbr(NORTH), bx + 1, 1, nbr(SOUTH), 1, row, mod(pi, 2) == 0, NORTH)
    ! columns: my last column goes east, my first west
    call shift(aold, 1, by, nbr(EAST), 1, 0, nbr(WEST), bx, MPI_DOUBLE_PRECISION, &
               mod(pj, 2) == 0, EAST)
    call shift(aold, 1, 1, nbr(WEST), 1, by + 1, nbr(EAST), bx, MPI_DOUBLE_PRECISION, &
               mod(pj, 2) == 0, WEST)
  end subroutine

  subroutine exchange_nb(aold, bx, by, nbr, row)
    integer, intent(in) :: bx, by, nbr(4)
    real(real64), intent(inout), asynchronous :: aold(0:bx + 1, 0:by + 1)
    CC_DATATYPE, intent(in) :: row
    CC_REQUEST :: req(8)
    integer :: ierr
    call MPI_Irecv(aold(0, 1), 1, row, nbr(NORTH), SOUTH, MPI_COMM_WORLD, req(1), ierr)
    call cc_check(ierr, 'MPI_Irecv')
    call MPI_Irecv(aold(bx + 1, 1), 1, row, nbr(SOUTH), NORTH, MPI_COMM_WORLD, req(2), ierr)
    call cc_check(ierr, 'MPI_Irecv')
    call MPI_Irecv(aold(1, 0), bx, MPI_DOUBLE_PRECISION, nbr(WEST), EAST, MPI_COMM_WORLD, &
                   req(3), ierr)
    call cc_check(ierr, 'MPI_Irecv')
    call MPI_Irecv(aold(1, by + 1), bx, MPI_DOUBLE_PRECISION, nbr(EAST), WEST, MPI_COMM_WORLD, &
                   req(4), ierr)
    call cc_check(ierr, 'MPI_Irecv')
    call MPI_Isend(aold(bx, 1), 1, row, nbr(SOUTH), SOUTH, MPI_COMM_WORLD, req(5), ierr)
    call cc_check(ierr, 'MPI_Isend')
    call MPI_Isend(aold(1, 1), 1, row, nbr(NORTH), NORTH, MPI_COMM_WORLD, req(6), ierr)
    call cc_check(ierr, 'MPI_Isend')
    call MPI_Isend(aold(1, by), bx, MPI_DOUBLE_PRECISION, nbr(EAST), EAST, MPI_COMM_WORLD, &
                   req(7), ierr)
    call cc_check(ierr, 'MPI_Isend')
    call MPI_Isend(aold(1, 1), bx, MPI_DOUBLE_PRECISION, nbr(WEST), WEST, MPI_COMM_WORLD, &
                   req(8), ierr)
    call cc_check(ierr, 'MPI_Isend')
    call MPI_Waitall(8, req, MPI_STATUSES_IGNORE, ierr)
    call cc_check(ierr, 'MPI_Waitall')
  end subroutine

  ! Inside the MPI_Win_lock_all epoch, make this rank's stores visible to the node and the
  ! others' stores visible here (MPI-3.1 sec. 11.7, shared-memory synchronisation).
  subroutine shm_fence(win, node)
    CC_WIN, intent(in) :: win
    CC_COMM, intent(in) :: node
    integer :: ierr
    call MPI_Win_sync(win, ierr)
    call cc_check(ierr, 'MPI_Win_sync')
    call MPI_Barrier(node, ierr)
    call cc_check(ierr, 'MPI_Barrier')
    call MPI_Win_sync(win, ierr)
    call cc_check(ierr, 'MPI_Win_sync')
  end subroutine

  ! Plain loads of the node neighbours' boundary values from their old array, peer(d)%a(:, :,
  ! cur) (cur is the same on every rank), into this block's ghosts.
  subroutine halo_shm(aold, bx, by, peer, cur)
    integer, intent(in) :: bx, by, cur
    real(real64), intent(inout) :: aold(0:bx + 1, 0:by + 1)
    type(peer_grid), intent(in) :: peer(4)
    if (associated(peer(NORTH)%a)) aold(0, 1:by) = peer(NORTH)%a(bx, 1:by, cur)
    if (associated(peer(SOUTH)%a)) aold(bx + 1, 1:by) = peer(SOUTH)%a(1, 1:by, cur)
    if (associated(peer(WEST)%a)) aold(1:bx, 0) = peer(WEST)%a(1:bx, by, cur)
    if (associated(peer(EAST)%a)) aold(1:bx, by + 1) = peer(EAST)%a(1:bx, 1, cur)
  end subroutine

end module stencil_halo
