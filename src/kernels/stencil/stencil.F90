! stencil: 2-D 5-point heat stencil on an N x N grid (seed 002, Tables 2 and 4; after the
! stencil codes of the "Advanced MPI" tutorial by Balaji, Gropp, Hoefler and Thakur). The same
! problem runs with one of six halo exchanges: sequential, blocking Send/Recv, nonblocking,
! MPI-3 shared windows (contiguous or not) whose segments c_f_pointer maps onto Fortran array
! pointers, and a hybrid of shared windows inside a node and Send/Recv between nodes. The
! problem definition is shared with stencil.c: results agree up to the order of the final sums.
#include "cc_mpi.h"
program stencil
  CC_USE_MPI
  use, intrinsic :: iso_fortran_env, only: output_unit, int64, real64
  use, intrinsic :: iso_c_binding, only: c_ptr, c_f_pointer
  use cc_util
  implicit none

  integer, parameter :: NORTH = 1, SOUTH = 2, WEST = 3, EAST = 4, NSOURCES = 3
  integer(int64), parameter :: VERIFY_MAX_POINTS = 4000000
  real(real64), parameter :: TOLERANCE = 1.0e-12_real64
  ! A neighbour's two arrays in the shared window; null when it is not in this node.
  type peer_grid
    real(real64), pointer, contiguous :: a(:, :, :) => null()
  end type

  character(len=:), allocatable :: arg, variant, verify_text
  integer(int64) :: n, steps, node_size, t, wbytes
  logical :: verify, inject, use_win, fits, too_big
  integer :: i, d, ierr, rank, nprocs, px, py, pi, pj, bx, by, row0, col0, cur, shared_size
  integer :: meta_node_size, node_n
  integer :: dims(2), nbr(4), sr_nbr(4), node_nbr(4), src(2, NSOURCES)
  type(peer_grid) :: peer(4)
  ! This rank's block, (0:bx+1, 0:by+1) with ghosts, twice: a(:, :, cur) is the old array.
  real(real64), pointer, contiguous :: a(:, :, :)
  type(c_ptr) :: base
  integer(MPI_ADDRESS_KIND) :: qsize
  integer :: qdisp
  CC_COMM :: shared, node
  CC_WIN :: win
  CC_INFO :: info
  CC_GROUP :: world_group, node_group
  CC_DATATYPE :: row
  real(real64) :: t0, th, tloop, thalo, share, time_s, updates, sums(2), ref(2)

  call cc_init()
  rank = cc_rank()
  nprocs = cc_size()
  variant = 'sr'
  n = 480
  steps = 100
  node_size = 0
  verify_text = ''
  inject = .false.
  i = 1
  do while (i <= cc_nargs())
    arg = cc_arg(i)
    select case (arg)
    case ('--help')
      call cc_help(print_usage)
    case ('--variant')
      variant = cc_next_value(i)
      select case (variant)
      case ('seq', 'sr', 'nb', 'shm', 'shmnc', 'hybrid')
      case default
        call cc_usage_error("--variant: '" // variant // "' is not one of seq, sr, nb, shm, " // &
                            'shmnc, hybrid')
      end select
    case ('--n')
      n = cc_parse_int('--n', cc_next_value(i), 1_int64, 1000000_int64)
    case ('--steps')
      steps = cc_parse_int('--steps', cc_next_value(i), 1_int64, 1000000000_int64)
    case ('--node-size')
      node_size = cc_parse_int('--node-size', cc_next_value(i), 1_int64, int(huge(0), int64))
    case ('--verify')
      verify_text = cc_next_value(i)
      if (verify_text /= 'yes' .and. verify_text /= 'no') &
        call cc_usage_error("--verify: '" // verify_text // "' is not yes or no")
    case ('--inject-error')
      inject = .true.
    case default
      call cc_unknown_option(arg)
    end select
    i = i + 1
  end do
  if (inject .and. verify_text == 'no') &
    call cc_usage_error('--inject-error needs verification: drop --verify no')
  verify = verify_text == 'yes' .or. (verify_text == '' .and. (inject .or. n * n <= VERIFY_MAX_POINTS))
  if (variant == 'seq' .and. nprocs /= 1) &
    call cc_usage_error('--variant seq needs 1 rank, got ' // cc_str(nprocs))
  if (node_size > 0 .and. variant /= 'hybrid') &
    call cc_usage_error('--node-size applies to --variant hybrid only')

  dims = 0
  call MPI_Dims_create(nprocs, 2, dims, ierr)
  call cc_check(ierr, 'MPI_Dims_create')
  px = dims(1)
  py = dims(2)
  if (px > n .or. py > n) call cc_usage_error('too many ranks (' // cc_str(nprocs) // &
    ') for --n ' // cc_str(n) // ': the ' // cc_str(px) // ' x ' // cc_str(py) // &
    ' process grid needs at least ' // cc_str(px) // ' points per dimension')
  if (mod(n, int(px, int64)) /= 0 .or. mod(n, int(py, int64)) /= 0) &
    call cc_usage_error('--n ' // cc_str(n) // ' is not divisible by the ' // cc_str(px) // &
      ' x ' // cc_str(py) // ' process grid of ' // cc_str(nprocs) // &
      ' ranks (choose N as a multiple of ' // cc_str(px) // ' and ' // &
      cc_str(py) // ')')

  ! Ranks sharing memory with this one; for hybrid, the (possibly emulated) node.
  call MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, shared, ierr)
  call cc_check(ierr, 'MPI_Comm_split_type')
  call MPI_Comm_size(shared, shared_size, ierr)
  call cc_check(ierr, 'MPI_Comm_size')
  use_win = variant == 'shm' .or. variant == 'shmnc' .or. variant == 'hybrid'
  if ((variant == 'shm' .or. variant == 'shmnc') .and. shared_size /= nprocs) &
    call cc_usage_error('--variant ' // variant // ' needs all ranks on one shared-memory node, ' // &
      'but only ' // cc_str(shared_size) // ' of ' // cc_str(nprocs) // &
      ' share memory here: use --variant hybrid')
  node = shared
  if (variant == 'hybrid' .and. node_size > 0) then
    if (node_size > nprocs .or. mod(int(nprocs, int64), node_size) /= 0) &
      call cc_usage_error('--node-size ' // cc_str(node_size) // ' does not divide the ' // &
                          cc_str(nprocs) // ' ranks into whole nodes')
    ! Emulated nodes are runs of K consecutive ranks, split out of the real node so that
    ! their members really share memory.
    call MPI_Comm_split(shared, rank / int(node_size), rank, node, ierr)
    call cc_check(ierr, 'MPI_Comm_split')
    call MPI_Comm_size(node, node_n, ierr)
    call cc_check(ierr, 'MPI_Comm_size')
    fits = node_n == node_size
    call MPI_Allreduce(MPI_IN_PLACE, fits, 1, MPI_LOGICAL, MPI_LAND, MPI_COMM_WORLD, ierr)
    call cc_check(ierr, 'MPI_Allreduce')
    if (.not. fits) call cc_usage_error('--node-size ' // cc_str(node_size) // ': some run of ' // &
      cc_str(node_size) // ' consecutive ranks does not share memory (see the ' // &
      'MPI_COMM_TYPE_SHARED nodes)')
  end if
  call MPI_Comm_size(node, meta_node_size, ierr)
  call cc_check(ierr, 'MPI_Comm_size')
  call MPI_Bcast(meta_node_size, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  call cc_check(ierr, 'MPI_Bcast')

  ! Row-major process grid as in stencil.c: rank = pi * py + pj; north is pi - 1, west pj - 1.
  pi = rank / py
  pj = mod(rank, py)
  bx = int(n) / px
  by = int(n) / py
  row0 = pi * bx
  col0 = pj * by
  nbr = MPI_PROC_NULL
  if (pi > 0) nbr(NORTH) = rank - py
  if (pi < px - 1) nbr(SOUTH) = rank + py
  if (pj > 0) nbr(WEST) = rank - 1
  if (pj < py - 1) nbr(EAST) = rank + 1
  call heat_sources(int(n), src)
  wbytes = 16_int64 * (bx + 2) * (by + 2)

  too_big = .false.
  if (rank == 0) too_big = cc_exceeds_memory(real(wbytes, real64) * shared_size + &
    merge(16.0_real64 * real(n + 2, real64)**2, 0.0_real64, verify))
  call MPI_Bcast(too_big, 1, MPI_LOGICAL, 0, MPI_COMM_WORLD, ierr)
  call cc_check(ierr, 'MPI_Bcast')
  if (too_big) call cc_usage_error('--n ' // cc_str(n) // ' needs more memory than this node has')

  ! Storage: two arrays (old, new) per rank, private or this rank's segment of the window.
  sr_nbr = nbr
  if (use_win) then
    info = MPI_INFO_NULL
    if (variant /= 'shm') then
      call MPI_Info_create(info, ierr)
      call cc_check(ierr, 'MPI_Info_create')
      call MPI_Info_set(info, 'alloc_shared_noncontig', 'true', ierr)
      call cc_check(ierr, 'MPI_Info_set')
    end if
    call MPI_Win_allocate_shared(int(wbytes, MPI_ADDRESS_KIND), 8, info, node, base, win, ierr)
    call cc_check(ierr, 'MPI_Win_allocate_shared')
    call MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN, ierr)
    call cc_check(ierr, 'MPI_Win_set_errhandler')
    if (variant /= 'shm') then
      call MPI_Info_free(info, ierr)
      call cc_check(ierr, 'MPI_Info_free')
    end if
    call map_grid(base, a)

    ! Neighbours in my node are read from the window, the others (hybrid only) are reached
    ! by Send/Recv; MPI_Group_translate_ranks says which is which (MPI_UNDEFINED: elsewhere).
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
      call map_grid(base, peer(d)%a)
      sr_nbr(d) = MPI_PROC_NULL
    end do
    call MPI_Group_free(world_group, ierr)
    call cc_check(ierr, 'MPI_Group_free')
    call MPI_Group_free(node_group, ierr)
    call cc_check(ierr, 'MPI_Group_free')
  else
    allocate(a(0:bx + 1, 0:by + 1, 0:1))
  end if
  a = 0
  if (use_win) then
    ! One passive-target epoch for the whole run; order comes from shm_fence.
    call MPI_Win_lock_all(MPI_MODE_NOCHECK, win, ierr)
    call cc_check(ierr, 'MPI_Win_lock_all')
  end if

  ! A row (fixed i) is strided in Fortran's column-major storage; a column is contiguous.
  call MPI_Type_vector(by, 1, bx + 2, MPI_DOUBLE_PRECISION, row, ierr)
  call cc_check(ierr, 'MPI_Type_vector')
  call MPI_Type_commit(row, ierr)
  call cc_check(ierr, 'MPI_Type_commit')

  if (rank == 0) then
    write(output_unit, '(a)') '# time_s = max over ranks of the timed step loop (MPI_Barrier ' // &
      'before); step_us = time_s/steps; halo_share = max over ranks of the loop''s fraction ' // &
      'spent in halo exchange and window synchronisation; glups = N*N*steps/time_s/1e9; ' // &
      'mem_GBps = 16 B/update (one 8-byte load of aold, one 8-byte store of anew; neighbour ' // &
      'loads assumed cached) * N*N*steps/time_s/1e9, comparable with STREAM copy''s 16 B/element'
    write(output_unit, '(a)') '# Fortran: one update subroutine on explicit-shape arrays for ' // &
      'every variant, so variants differ only in the exchange; shm/shmnc/hybrid map their own ' // &
      'and their neighbours'' window segments with c_f_pointer (the pointer-access cost itself ' // &
      'is measured by fptr-f); heat is added before the exchange, so ghost copies include it'
    flush(output_unit)
  end if
  call cc_print_meta('stencil', 'variant=' // variant // ' n=' // cc_str(n) // ' steps=' // &
    cc_str(steps) // ' px=' // cc_str(px) // ' py=' // cc_str(py) // &
    ' node_size=' // cc_str(meta_node_size))

  ! Window epochs, per step (every rank of the node in lockstep; order as in stencil.c):
  !   1. sources into my old array (stores to my block only)
  !   2. hybrid: Send/Recv with the neighbours in other nodes
  !   3. shm_fence: my old array is visible to the node, and every neighbour has finished
  !      the previous step's loads of what is now its new array
  !   4. loads of the node neighbours' old boundaries into my ghosts
  !   5. stencil into my new array: no one reads it before the next step's shm_fence
  ! One fence per step suffices because this rank's stores never touch another's block.
  cur = 0
  thalo = 0
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call cc_check(ierr, 'MPI_Barrier')
  t0 = MPI_Wtime()
  do t = 1, steps
    call add_sources(a(:, :, cur))
    th = MPI_Wtime()
    select case (variant)
    case ('sr', 'hybrid')
      call exchange_sr()
    case ('nb')
      call exchange_nb()
    end select
    if (use_win) then
      call shm_fence()
      call halo_shm(a(:, :, cur))
    end if
    thalo = thalo + (MPI_Wtime() - th)
    call update(a(:, :, cur), a(:, :, 1 - cur))
    cur = 1 - cur
  end do
  tloop = MPI_Wtime() - t0

  share = 0
  if (tloop > 0) share = thalo / tloop
  time_s = tloop
  call MPI_Allreduce(MPI_IN_PLACE, time_s, 1, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, ierr)
  call cc_check(ierr, 'MPI_Allreduce')
  call MPI_Allreduce(MPI_IN_PLACE, share, 1, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, ierr)
  call cc_check(ierr, 'MPI_Allreduce')

  if (inject .and. rank == 0) a(1, 1, cur) = a(1, 1, cur) + 1
  sums = block_sums(a(:, :, cur))
  call MPI_Allreduce(MPI_IN_PLACE, sums, 2, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call cc_check(ierr, 'MPI_Allreduce')

  if (verify .and. rank == 0) then
    call sequential(ref)
    call compare('total_heat', sums(1), ref(1))
    call compare('checksum', sums(2), ref(2))
  end if
  ! Other ranks wait here while rank 0 verifies, so an abort finds them inside MPI.
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call cc_check(ierr, 'MPI_Barrier')
  if (rank == 0) then
    updates = real(n, real64) * real(n, real64) * real(steps, real64)
    write(output_unit, '(a)') 'RESULT time_s=' // cc_fixed(time_s, 6) // ' step_us=' // &
      cc_fixed(time_s / real(steps, real64) * 1.0e6_real64, 3) // ' halo_share=' // &
      cc_fixed(share, 4) // ' glups=' // cc_fixed(updates / time_s / 1.0e9_real64, 4) // &
      ' mem_GBps=' // cc_fixed(16 * updates / time_s / 1.0e9_real64, 3) // ' total_heat=' // &
      cc_g17(sums(1)) // ' checksum=' // cc_g17(sums(2))
    write(output_unit, '(a)') 'PASS validated=' // cc_str(merge(1_int64, 0_int64, verify))
    flush(output_unit)
  end if

  call MPI_Type_free(row, ierr)
  call cc_check(ierr, 'MPI_Type_free')
  if (use_win) then
    call MPI_Win_unlock_all(win, ierr)
    call cc_check(ierr, 'MPI_Win_unlock_all')
    call MPI_Win_free(win, ierr)
    call cc_check(ierr, 'MPI_Win_free')
  else
    deallocate(a)
  end if
  if (variant == 'hybrid' .and. node_size > 0) then
    call MPI_Comm_free(node, ierr)
    call cc_check(ierr, 'MPI_Comm_free')
  end if
  call MPI_Comm_free(shared, ierr)
  call cc_check(ierr, 'MPI_Comm_free')
  call MPI_Finalize(ierr)
  call cc_check(ierr, 'MPI_Finalize')

contains

  ! The shared LCG: s = mod(1103515245 s + 12345, 2**31) in 64-bit integers; row, then column.
  subroutine heat_sources(n, src)
    integer, intent(in) :: n
    integer, intent(out) :: src(2, NSOURCES)
    integer(int64) :: s
    integer :: k, m
    s = 12345
    do k = 1, NSOURCES
      do m = 1, 2
        s = mod(1103515245_int64 * s + 12345_int64, 2_int64**31)
        src(m, k) = 1 + int(mod(s, int(n, int64)))
      end do
    end do
  end subroutine

  ! A segment of the window as this rank's (0:bx+1, 0:by+1, 0:1) arrays, as in the paper.
  subroutine map_grid(p, grid)
    type(c_ptr), intent(in) :: p
    real(real64), pointer, contiguous, intent(out) :: grid(:, :, :)
    call c_f_pointer(p, grid, [bx + 2, by + 2, 2])
    grid(0:, 0:, 0:) => grid
  end subroutine

  ! Heat goes in by the owner only, before the exchange: a source on a block edge then reaches
  ! the neighbour's ghost as in the sequential code, so results do not depend on the grid.
  subroutine add_sources(aold)
    real(real64), intent(inout) :: aold(0:bx + 1, 0:by + 1)
    integer :: k, i, j
    do k = 1, NSOURCES
      i = src(1, k) - row0
      j = src(2, k) - col0
      if (i >= 1 .and. i <= bx .and. j >= 1 .and. j <= by) aold(i, j) = aold(i, j) + 1
    end do
  end subroutine

  ! The shared update; the neighbour sum is evaluated left to right in this order.
  subroutine update(aold, anew)
    real(real64), intent(in) :: aold(0:bx + 1, 0:by + 1)
    real(real64), intent(inout) :: anew(0:bx + 1, 0:by + 1)
    integer :: i, j
    do j = 1, by
      do i = 1, bx
        anew(i, j) = aold(i, j) / 2 + (aold(i - 1, j) + aold(i + 1, j) + aold(i, j - 1) &
                                       + aold(i, j + 1)) / 8
      end do
    end do
  end subroutine

  ! Local total heat and checksum; the checksum weights use global indices.
  function block_sums(aold) result(s)
    real(real64), intent(in) :: aold(0:bx + 1, 0:by + 1)
    real(real64) :: s(2)
    integer(int64) :: gi, gj
    integer :: i, j
    s = 0
    do j = 1, by
      do i = 1, bx
        gi = row0 + i
        gj = col0 + j
        s(1) = s(1) + aold(i, j)
        s(2) = s(2) + aold(i, j) * real(1 + mod(gi * 131 + gj * 137, 17_int64), real64)
      end do
    end do
  end function

  ! Inside the MPI_Win_lock_all epoch, make this rank's stores visible to the node and the
  ! others' stores visible here (MPI-3.1 sec. 11.7, shared-memory synchronisation).
  subroutine shm_fence()
    call MPI_Win_sync(win, ierr)
    call cc_check(ierr, 'MPI_Win_sync')
    call MPI_Barrier(node, ierr)
    call cc_check(ierr, 'MPI_Barrier')
    call MPI_Win_sync(win, ierr)
    call cc_check(ierr, 'MPI_Win_sync')
  end subroutine

  ! Shared-window halo: plain loads of the neighbours' boundary values (their old array,
  ! the same index cur on every rank) into this block's ghosts.
  subroutine halo_shm(aold)
    real(real64), intent(inout) :: aold(0:bx + 1, 0:by + 1)
    if (associated(peer(NORTH)%a)) aold(0, 1:by) = peer(NORTH)%a(bx, 1:by, cur)
    if (associated(peer(SOUTH)%a)) aold(bx + 1, 1:by) = peer(SOUTH)%a(1, 1:by, cur)
    if (associated(peer(WEST)%a)) aold(1:bx, 0) = peer(WEST)%a(1:bx, by, cur)
    if (associated(peer(EAST)%a)) aold(1:bx, by + 1) = peer(EAST)%a(1:bx, 1, cur)
  end subroutine

  ! Blocking halo exchange with the neighbours in sr_nbr (MPI_PROC_NULL: none, or same node).
  ! Rows travel north/south as one strided `row`, columns east/west as bx contiguous values.
  subroutine exchange_sr()
    call shift(bx, 1, sr_nbr(SOUTH), 0, 1, sr_nbr(NORTH), 1, row, mod(pi, 2) == 0, SOUTH)
    call shift(1, 1, sr_nbr(NORTH), bx + 1, 1, sr_nbr(SOUTH), 1, row, mod(pi, 2) == 0, NORTH)
    call shift(1, by, sr_nbr(EAST), 1, 0, sr_nbr(WEST), bx, MPI_DOUBLE_PRECISION, &
               mod(pj, 2) == 0, EAST)
    call shift(1, 1, sr_nbr(WEST), 1, by + 1, sr_nbr(EAST), bx, MPI_DOUBLE_PRECISION, &
               mod(pj, 2) == 0, WEST)
  end subroutine

  ! One blocking shift along a line of ranks, from a(si, sj) to `to` and into a(ri, rj) from
  ! `from`: even coordinates send first, odd ones receive first, so every Send meets a posted
  ! Recv and the line cannot deadlock (no MPI_Sendrecv).
  subroutine shift(si, sj, to, ri, rj, from, count, dtype, even, tag)
    integer, intent(in) :: si, sj, to, ri, rj, from, count, tag
    CC_DATATYPE, intent(in) :: dtype
    logical, intent(in) :: even
    if (even) then
      call MPI_Send(a(si, sj, cur), count, dtype, to, tag, MPI_COMM_WORLD, ierr)
      call cc_check(ierr, 'MPI_Send')
      call MPI_Recv(a(ri, rj, cur), count, dtype, from, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
      call cc_check(ierr, 'MPI_Recv')
    else
      call MPI_Recv(a(ri, rj, cur), count, dtype, from, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
      call cc_check(ierr, 'MPI_Recv')
      call MPI_Send(a(si, sj, cur), count, dtype, to, tag, MPI_COMM_WORLD, ierr)
      call cc_check(ierr, 'MPI_Send')
    end if
  end subroutine

  subroutine exchange_nb()
    CC_REQUEST :: req(8)
    call MPI_Irecv(a(0, 1, cur), 1, row, sr_nbr(NORTH), SOUTH, MPI_COMM_WORLD, req(1), ierr)
    call cc_check(ierr, 'MPI_Irecv')
    call MPI_Irecv(a(bx + 1, 1, cur), 1, row, sr_nbr(SOUTH), NORTH, MPI_COMM_WORLD, req(2), ierr)
    call cc_check(ierr, 'MPI_Irecv')
    call MPI_Irecv(a(1, 0, cur), bx, MPI_DOUBLE_PRECISION, sr_nbr(WEST), EAST, MPI_COMM_WORLD, &
                   req(3), ierr)
    call cc_check(ierr, 'MPI_Irecv')
    call MPI_Irecv(a(1, by + 1, cur), bx, MPI_DOUBLE_PRECISION, sr_nbr(EAST), WEST, &
                   MPI_COMM_WORLD, req(4), ierr)
    call cc_check(ierr, 'MPI_Irecv')
    call MPI_Isend(a(bx, 1, cur), 1, row, sr_nbr(SOUTH), SOUTH, MPI_COMM_WORLD, req(5), ierr)
    call cc_check(ierr, 'MPI_Isend')
    call MPI_Isend(a(1, 1, cur), 1, row, sr_nbr(NORTH), NORTH, MPI_COMM_WORLD, req(6), ierr)
    call cc_check(ierr, 'MPI_Isend')
    call MPI_Isend(a(1, by, cur), bx, MPI_DOUBLE_PRECISION, sr_nbr(EAST), EAST, MPI_COMM_WORLD, &
                   req(7), ierr)
    call cc_check(ierr, 'MPI_Isend')
    call MPI_Isend(a(1, 1, cur), bx, MPI_DOUBLE_PRECISION, sr_nbr(WEST), WEST, MPI_COMM_WORLD, &
                   req(8), ierr)
    call cc_check(ierr, 'MPI_Isend')
    call MPI_Waitall(8, req, MPI_STATUSES_IGNORE, ierr)
    call cc_check(ierr, 'MPI_Waitall')
  end subroutine

  ! The whole grid on rank 0 alone, written independently of the block code: the reference.
  subroutine sequential(sums)
    real(real64), intent(out) :: sums(2)
    real(real64), allocatable :: g(:, :), gnew(:, :), tmp(:, :)
    integer :: i, j, k, s(2, NSOURCES), m
    integer(int64) :: step
    m = int(n)
    call heat_sources(m, s)
    allocate(g(0:m + 1, 0:m + 1), gnew(0:m + 1, 0:m + 1))
    g = 0
    gnew = 0
    do step = 1, steps
      do k = 1, NSOURCES
        g(s(1, k), s(2, k)) = g(s(1, k), s(2, k)) + 1
      end do
      do j = 1, m
        do i = 1, m
          gnew(i, j) = g(i, j) / 2 + (g(i - 1, j) + g(i + 1, j) + g(i, j - 1) + g(i, j + 1)) / 8
        end do
      end do
      call move_alloc(g, tmp)
      call move_alloc(gnew, g)
      call move_alloc(tmp, gnew)
    end do
    sums = 0
    do j = 1, m
      do i = 1, m
        sums(1) = sums(1) + g(i, j)
        sums(2) = sums(2) + g(i, j) * real(1 + mod(i * 131_int64 + j * 137_int64, 17_int64), real64)
      end do
    end do
  end subroutine

  subroutine compare(what, got, want)
    character(len=*), intent(in) :: what
    real(real64), intent(in) :: got, want
    if (.not. (abs(got - want) <= TOLERANCE * abs(want))) &
      call cc_validation_error(what // ' ' // cc_g17(got) // ' differs from the sequential ' // &
        cc_g17(want) // ' (relative ' // cc_fixed(abs(got - want) / abs(want), 6) // ' > 1e-12)')
  end subroutine

  subroutine print_usage()
    write(output_unit, '(a)') 'usage: stencil-f [options]', &
      '  2-D 5-point heat stencil on an N x N grid, three heat sources, Dirichlet 0 border.', &
      '  --variant V      seq | sr | nb | shm | shmnc | hybrid (default sr)', &
      '                   seq: 1 rank; sr: blocking MPI_Send/MPI_Recv halo exchange;', &
      '                   nb: MPI_Isend/MPI_Irecv + MPI_Waitall; shm: ranks read neighbours''', &
      '                   boundaries from an MPI-3 shared window mapped with c_f_pointer', &
      '                   (all ranks on one node); shmnc: shm with', &
      '                   alloc_shared_noncontig=true; hybrid: shmnc inside a node,', &
      '                   blocking Send/Recv between nodes', &
      '  --n N            interior points per dimension (default 480); N must be divisible', &
      '                   by both sides of the MPI_Dims_create process grid', &
      '  --steps T        time steps (default 100)', &
      '  --node-size K    hybrid only: emulate nodes of K consecutive ranks (K divides the', &
      '                   rank count; the K ranks must share memory); default: the real', &
      '                   MPI_COMM_TYPE_SHARED node', &
      '  --verify yes|no  rank 0 also runs the sequential code and compares total heat and', &
      '                   checksum (relative difference <= 1e-12); default yes if N*N <= 4e6', &
      '  --inject-error   self-test: perturb one grid value after the run, so verification', &
      '                   must fail with exit code 3 (implies --verify yes)', &
      '  --help           this text'
  end subroutine

end program
