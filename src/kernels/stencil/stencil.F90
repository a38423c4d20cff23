! stencil: 2-D 5-point heat stencil on an N x N grid (seed 002, Tables 2 and 4; after the
! stencil codes of the "Advanced MPI" tutorial by Balaji, Gropp, Hoefler and Thakur). The same
! problem (stencil_problem, the one of stencil.c) runs with one of six halo exchanges
! (stencil_halo): sequential, blocking Send/Recv, nonblocking, MPI-3 shared windows
! (contiguous or not) whose segments c_f_pointer maps onto Fortran array pointers, and a
! hybrid of shared windows inside a node and Send/Recv between nodes. Every cell of the result
! is then compared with an independent sequential computation (stencil_verify).
#include "cc_mpi.h"
program stencil
  CC_USE_MPI
  use, intrinsic :: iso_fortran_env, only: output_unit, int64, real64
  use, intrinsic :: iso_c_binding, only: c_ptr, c_null_ptr, c_associated
  use cc_util
  use stencil_options
  use stencil_problem
  use stencil_halo
  use stencil_verify
  implicit none

  type(options) :: o
  integer(int64) :: validated
  logical :: use_win, too_big
  integer :: ierr, rank, nprocs, n, px, py, pi, pj, bx, by, row0, col0, cur
  integer :: shared_size, node_size
  integer :: dims(2), nbr(4), sr_nbr(4), src(2, NSOURCES)
  type(peer_grid) :: peer(4)
  ! This rank's block, (0:bx+1, 0:by+1) with ghosts, twice: a(:, :, cur) is the old array.
  real(real64), pointer, contiguous :: a(:, :, :)
  CC_COMM :: shared, node
  CC_WIN :: win
  CC_DATATYPE :: row
  real(real64) :: t0, th, thalo, share, time_s, updates, sums(2), verify_s
  real(real64) :: times(MAX_REPS)
  integer :: reps
  ! --baseline: the compute-only runs' own arrays (1 rank: the sequential run's), their times
  ! and each pair's ratio; which variant, and whether the window, the run at hand uses
  real(real64), pointer, contiguous :: b(:, :, :) => null(), par(:, :, :)
  real(real64) :: seq_times(MAX_REPS), ratios(MAX_REPS)
  character(len=:), allocatable :: run_variant
  logical :: run_win
  integer :: seq_cur
  ! At more ranks, the floor's runs couple each step to the node's neighbours (cc_stepsync.h)
  type(c_ptr) :: coupling = c_null_ptr

  call cc_init()
  rank = cc_rank()
  nprocs = cc_size()
  call parse_options(o)
  n = o%n
  use_win = o%variant == 'shm' .or. o%variant == 'shmnc' .or. o%variant == 'hybrid'
  run_variant = o%variant
  run_win = use_win

  call setup_grid()
  call setup_storage()
  call print_header()

  call repeated_steps(times, reps, share)
  time_s = median(times(1:reps))

  if (o%inject .and. rank == nprocs - 1) a(bx, by, cur) = a(bx, by, cur) + 1.0e-6_real64
  sums = block_sums(a(:, :, cur))
  call MPI_Allreduce(MPI_IN_PLACE, sums, 2, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call cc_check(ierr, 'MPI_Allreduce')

  validated = 0
  verify_s = MPI_Wtime()
  if (o%verify) validated = verify_grid(a(:, :, cur), bx, by, n, o%steps, sums, px, py)
  verify_s = MPI_Wtime() - verify_s
  ! Other ranks wait here while rank 0 verifies, so an abort finds them inside MPI.
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call cc_check(ierr, 'MPI_Barrier')
  if (rank == 0) call print_result()

  call release()

contains

  ! The process grid (row-major as in stencil.c), this rank's block and neighbours, the node
  ! communicators; a grid that cannot hold the ranks is a usage error.
  subroutine setup_grid()
    integer :: ierr
    dims = 0
    call MPI_Dims_create(nprocs, 2, dims, ierr)
    call cc_check(ierr, 'MPI_Dims_create')
    px = dims(1)
    py = dims(2)
    if (px > n .or. py > n) call cc_usage_error('too many ranks (' // cc_str(nprocs) // &
      ') for --n ' // cc_str(n) // ': the ' // cc_str(px) // ' x ' // cc_str(py) // &
      ' process grid needs at least ' // cc_str(px) // ' points per dimension')
    if (mod(n, px) /= 0 .or. mod(n, py) /= 0) &
      call cc_usage_error('--n ' // cc_str(n) // ' is not divisible by the ' // cc_str(px) // &
        ' x ' // cc_str(py) // ' process grid of ' // cc_str(nprocs) // &
        ' ranks (choose N as a multiple of ' // cc_str(px) // ' and ' // cc_str(py) // ')')

    call MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, shared, ierr)
    call cc_check(ierr, 'MPI_Comm_split_type')
    call MPI_Comm_size(shared, shared_size, ierr)
    call cc_check(ierr, 'MPI_Comm_size')
    if ((o%variant == 'shm' .or. o%variant == 'shmnc') .and. shared_size /= nprocs) &
      call cc_usage_error('--variant ' // o%variant // ' needs all ranks on one shared-memory ' // &
        'node, but only ' // cc_str(shared_size) // ' of ' // cc_str(nprocs) // &
        ' share memory here: use --variant hybrid')
    node = node_comm()
    call MPI_Comm_size(node, node_size, ierr)
    call cc_check(ierr, 'MPI_Comm_size')
    call MPI_Bcast(node_size, 1, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
    call cc_check(ierr, 'MPI_Bcast')

    ! Row-major process grid as in stencil.c: rank = pi * py + pj; north is pi - 1, west pj - 1.
    pi = rank / py
    pj = mod(rank, py)
    bx = n / px
    by = n / py
    row0 = pi * bx
    col0 = pj * by
    nbr = MPI_PROC_NULL
    if (pi > 0) nbr(NORTH) = rank - py
    if (pi < px - 1) nbr(SOUTH) = rank + py
    if (pj > 0) nbr(WEST) = rank - 1
    if (pj < py - 1) nbr(EAST) = rank + 1
    call heat_sources(n, src)
  end subroutine

  ! Two arrays (old, new) per rank, private or in the node's shared window, and the row type;
  ! a problem larger than the node's memory is a usage error.
  subroutine setup_storage()
    integer :: ierr
    ! A node holds its ranks' blocks (and with --baseline the twins' blocks, and at more than
    ! 1 rank the references of the twins' blocks); rank 0 also the reference's global arrays.
    too_big = .false.
    if (rank == 0) too_big = cc_exceeds_memory(16.0_real64 * (bx + 2) * (by + 2) * &
      shared_size * (1 + merge(merge(2, 1, nprocs > 1), 0, o%baseline)) + &
      merge(16.0_real64 * real(n + 2, real64)**2, 0.0_real64, o%verify))
    call MPI_Bcast(too_big, 1, MPI_LOGICAL, 0, MPI_COMM_WORLD, ierr)
    call cc_check(ierr, 'MPI_Bcast')
    if (too_big) call cc_usage_error('--n ' // cc_str(n) // ' needs more memory than this node has')

    ! Storage: two arrays (old, new) per rank, private or this rank's segment of the window.
    ! Neighbours in my node are read from the window, not sent to (sr_nbr: MPI_PROC_NULL).
    sr_nbr = nbr
    if (use_win) then
      call shm_alloc(node, o%variant == 'shm', bx, by, nbr, win, a, peer, sr_nbr)
    else
      allocate(a(0:bx + 1, 0:by + 1, 0:1))
    end if
    if (o%baseline) allocate(b(0:bx + 1, 0:by + 1, 0:1))
    if (o%baseline .and. nprocs > 1) coupling = stepsync_open(shared, nbr)

    ! A row (fixed i) is strided in Fortran's column-major storage; a column is contiguous.
    call MPI_Type_vector(by, 1, bx + 2, MPI_DOUBLE_PRECISION, row, ierr)
    call cc_check(ierr, 'MPI_Type_vector')
    call MPI_Type_commit(row, ierr)
    call cc_check(ierr, 'MPI_Type_commit')
  end subroutine

  ! What the figures mean (rank 0), and the META record.
  subroutine print_header()
    if (rank == 0) then
      write(output_unit, '(a)') '# a run: MPI_Barrier, the steps from the initial field, timed; ' // &
        'its time = max over ranks; runs repeat until --reps of them and --target-seconds of ' // &
        'time; time_s = the median run (time_min_s, time_max_s: the fastest and slowest); ' // &
        'step_us = time_s/steps; halo_share = max over ranks of the loop''s fraction ' // &
        'spent in halo exchange and window synchronisation; glups = N*N*steps/time_s/1e9; ' // &
        'mem_GBps = 16 B/update (one 8-byte load of aold, one 8-byte store of anew; neighbour ' // &
        'loads assumed cached) * N*N*steps/time_s/1e9, comparable with STREAM copy''s 16 B/element; ' // &
        'verify_s = rank 0''s time to compute the independent sequential reference, receive every ' // &
        'block and compare every cell (after the loop, not in time_s); with --baseline: ' // &
        'seq_time_s = the median sequential run, each run just before one of the variant''s, ' // &
        'seq_ratio = the median of each pair''s sequential/variant time (1 rank), ' // &
        'floor_time_s = the median compute-only run (more ranks: the same steps on each ' // &
        'rank''s block without the halo exchange, each just before one of the variant''s, ' // &
        'its time the max over ranks)'
      write(output_unit, '(a)') '# Fortran: one update subroutine on explicit-shape arrays for ' // &
        'every variant, so variants differ only in the exchange; shm/shmnc/hybrid map their own ' // &
        'and their neighbours'' window segments with c_f_pointer (the pointer-access cost itself ' // &
        'is measured by fptr-f); heat is added before the exchange, so ghost copies include it'
      flush(output_unit)
    end if
    call cc_print_meta('stencil', 'variant=' // o%variant // ' n=' // cc_str(n) // ' steps=' // &
      cc_str(o%steps) // ' px=' // cc_str(px) // ' py=' // cc_str(py) // ' node_size=' // &
      cc_str(node_size) // ' verify=' // trim(merge('yes', 'no ', o%verify)) // ' min_reps=' // &
      cc_str(o%reps) // ' target_s=' // cc_fixed(o%target_s, 3))
  end subroutine

  ! The RESULT record (rank 0): the median run and its spread, and PASS when verified.
  subroutine print_result()
    character(len=:), allocatable :: baseline
    baseline = ''
    if (o%baseline .and. nprocs == 1) baseline = ' seq_time_s=' // &
      cc_fixed(median(seq_times(1:reps)), 6) // ' seq_ratio=' // cc_fixed(median(ratios(1:reps)), 4)
    if (o%baseline .and. nprocs > 1) baseline = ' floor_time_s=' // &
      cc_fixed(median(seq_times(1:reps)), 6)
    updates = real(n, real64) * real(n, real64) * real(o%steps, real64)
    write(output_unit, '(a)') 'RESULT time_s=' // cc_fixed(time_s, 6) // ' step_us=' // &
      cc_fixed(time_s / real(o%steps, real64) * 1.0e6_real64, 3) // ' halo_share=' // &
      cc_fixed(share, 4) // ' glups=' // cc_fixed(updates / time_s / 1.0e9_real64, 4) // &
      ' mem_GBps=' // cc_fixed(16 * updates / time_s / 1.0e9_real64, 3) // ' total_heat=' // &
      cc_g17(sums(1)) // ' checksum=' // cc_g17(sums(2)) // ' verify_s=' // &
      cc_fixed(verify_s, 3) // ' verified=' // cc_str(merge(1, 0, o%verify)) // ' reps=' // &
      cc_str(reps) // ' time_min_s=' // cc_fixed(times(1), 6) // ' time_max_s=' // &
      cc_fixed(times(reps), 6) // baseline
    if (o%verify) write(output_unit, '(a)') 'PASS validated=' // cc_str(validated)
    flush(output_unit)
  end subroutine

  ! Frees what setup_grid and setup_storage made, then ends MPI.
  subroutine release()
    integer :: ierr
    call MPI_Type_free(row, ierr)
    call cc_check(ierr, 'MPI_Type_free')
    if (use_win) then
      call shm_free(win)
    else
      deallocate(a)
    end if
    if (associated(b)) deallocate(b)
    if (c_associated(coupling)) call stepsync_close(coupling)
    if (o%variant == 'hybrid' .and. o%node_size > 0) then
      call MPI_Comm_free(node, ierr)
      call cc_check(ierr, 'MPI_Comm_free')
    end if
    call MPI_Comm_free(shared, ierr)
    call cc_check(ierr, 'MPI_Comm_free')
    call MPI_Finalize(ierr)
    call cc_check(ierr, 'MPI_Finalize')
  end subroutine

  ! Window epochs, per step (every rank of the node in lockstep; order as in stencil.c):
  !   1. sources into my old array (stores to my block only)
  !   2. hybrid: Send/Recv with the neighbours in other nodes
  !   3. shm_fence: my old array is visible to the node, and every neighbour has finished
  !      the previous step's loads of what is now its new array
  !   4. loads of the node neighbours' old boundaries into my ghosts
  !   5. stencil into my new array: no one reads it before the next step's shm_fence
  ! One fence per step suffices because this rank's stores never touch another's block.
  ! One run starts from the initial field, after a barrier (every rank has finished the
  ! previous run), and returns this rank's loop time; thalo gets its halo part, cur says
  ! which array holds the result.
  function timed_steps() result(tloop)
    real(real64) :: tloop
    integer(int64) :: t
    call MPI_Barrier(MPI_COMM_WORLD, ierr)
    call cc_check(ierr, 'MPI_Barrier')
    call block_fill(a(:, :, 0))
    a(:, :, 1) = 0
    cur = 0
    thalo = 0
    call MPI_Barrier(MPI_COMM_WORLD, ierr)
    call cc_check(ierr, 'MPI_Barrier')
    t0 = MPI_Wtime()
    do t = 1, o%steps
      call add_sources(a(:, :, cur))
      th = MPI_Wtime()
      select case (run_variant)
      case ('seq')
        if (c_associated(coupling)) call stepsync_step(coupling)
      case ('sr', 'hybrid')
        call exchange_sr(a(:, :, cur), bx, by, sr_nbr, pi, pj, row)
      case ('nb')
        call exchange_nb(a(:, :, cur), bx, by, sr_nbr, row)
      end select
      if (run_win) then
        call shm_fence(win, node)
        call halo_shm(a(:, :, cur), bx, by, peer, cur)
      end if
      thalo = thalo + (MPI_Wtime() - th)
      call update(a(:, :, cur), a(:, :, 1 - cur))
      cur = 1 - cur
    end do
    tloop = MPI_Wtime() - t0
  end function

  ! Runs of the steps until there are o%reps of them and their times (max over ranks, the
  ! same on every rank, so every rank stops together) add up to o%target_s; times(1:reps)
  ! sorted; share is the largest halo share of any rank. With --baseline, a compute-only run
  ! on its own arrays precedes each run: a pair, timed back to back, so their ratio does not
  ! depend on what the machine did between launches. At 1 rank it is the sequential run and
  ! must end with the variant's field; at more, each rank's block computed alone, checked cell
  ! by cell against the block's own reference.
  subroutine repeated_steps(times, reps, share)
    real(real64), intent(out) :: times(:), share
    integer, intent(out) :: reps
    real(real64) :: tr, ts, total, halo, loop, both(2)
    reps = 0
    total = 0
    halo = 0
    loop = 0
    ts = 0
    do
      if (o%baseline) ts = sequential_steps()
      tr = timed_steps()
      halo = halo + thalo
      loop = loop + tr
      both = [tr, ts]     ! the variant's run and its twin's, each the max over ranks
      call MPI_Allreduce(MPI_IN_PLACE, both, 2, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, ierr)
      call cc_check(ierr, 'MPI_Allreduce')
      tr = both(1)
      ts = both(2)
      reps = reps + 1
      times(reps) = tr
      seq_times(reps) = ts
      ratios(reps) = ts / tr
      total = total + tr + ts      ! a launch lasts as long with a baseline as without
      if (reps >= size(times) .or. (reps >= o%reps .and. total >= o%target_s)) exit
    end do
    share = 0
    if (loop > 0) share = halo / loop
    call MPI_Allreduce(MPI_IN_PLACE, share, 1, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, ierr)
    call cc_check(ierr, 'MPI_Allreduce')
    call insertion_sort(times(1:reps))
    call insertion_sort(seq_times(1:reps))
    call insertion_sort(ratios(1:reps))
    ! The baseline computed the variant's field, bit for bit (1 rank: one block, the same
    ! sources and update), or the job fails: a ratio is only shown between runs of the same work.
    if (o%baseline .and. nprocs > 1) then
      call verify_alone(b(:, :, seq_cur), bx, by, row0, col0, n, o%steps)
    else if (o%baseline) then
      if (any(block_sums(b(:, :, seq_cur)) /= block_sums(a(:, :, cur)))) &
        call cc_validation_error('the baseline''s sequential run ended with another total ' // &
                                 'heat or checksum than the variant''s')
    end if
  end subroutine

  ! One compute-only run on the baseline's arrays: this rank's block (the whole grid at 1
  ! rank: the sequential run), the same sources and updates, no exchange, no window, its
  ! ghosts 0, each step coupled to the node's neighbours as the exchange couples it (more
  ! ranks: cc_stepsync.h); the variant's arrays and result are left as they were.
  function sequential_steps() result(ts)
    real(real64) :: ts
    integer :: kept
    kept = cur
    par => a
    a => b
    run_variant = 'seq'
    run_win = .false.
    ts = timed_steps()
    seq_cur = cur
    a => par
    run_variant = o%variant
    run_win = use_win
    cur = kept
  end function

  ! The median of sorted values.
  pure function median(x) result(m)
    real(real64), intent(in) :: x(:)
    real(real64) :: m
    m = x((size(x) + 1) / 2)
    if (mod(size(x), 2) == 0) m = (x(size(x) / 2) + x(size(x) / 2 + 1)) / 2
  end function

  subroutine insertion_sort(x)
    real(real64), intent(inout) :: x(:)
    real(real64) :: v
    integer :: i, j
    do i = 2, size(x)
      v = x(i)
      j = i - 1
      do while (j >= 1)
        if (x(j) <= v) exit
        x(j + 1) = x(j)
        j = j - 1
      end do
      x(j + 1) = v
    end do
  end subroutine

  ! The node of the window variants: every rank sharing memory, or for hybrid --node-size K
  ! runs of K consecutive ranks split out of it (so that they really share memory).
  CC_COMM function node_comm() result(node)
    integer :: size
    logical :: fits
    node = shared
    if (o%variant /= 'hybrid' .or. o%node_size == 0) return
    if (o%node_size > nprocs .or. mod(nprocs, o%node_size) /= 0) &
      call cc_usage_error('--node-size ' // cc_str(o%node_size) // ' does not divide the ' // &
                          cc_str(nprocs) // ' ranks into whole nodes')
    call MPI_Comm_split(shared, rank / o%node_size, rank, node, ierr)
    call cc_check(ierr, 'MPI_Comm_split')
    call MPI_Comm_size(node, size, ierr)
    call cc_check(ierr, 'MPI_Comm_size')
    fits = size == o%node_size
    call MPI_Allreduce(MPI_IN_PLACE, fits, 1, MPI_LOGICAL, MPI_LAND, MPI_COMM_WORLD, ierr)
    call cc_check(ierr, 'MPI_Allreduce')
    if (.not. fits) call cc_usage_error('--node-size ' // cc_str(o%node_size) // ': some run ' // &
      'of ' // cc_str(o%node_size) // ' consecutive ranks does not share memory (see the ' // &
      'MPI_COMM_TYPE_SHARED nodes)')
  end function

  ! The initial field in my interior; ghosts 0 (the Dirichlet border, or not yet received).
  subroutine block_fill(aold)
    real(real64), intent(out) :: aold(0:bx + 1, 0:by + 1)
    integer :: i, j
    aold = 0
    do j = 1, by
      do i = 1, bx
        aold(i, j) = initial_value(row0 + i, col0 + j)
      end do
    end do
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

  ! Local total heat and checksum, column by column (partial sums keep the rounding small).
  function block_sums(aold) result(s)
    real(real64), intent(in) :: aold(0:bx + 1, 0:by + 1)
    real(real64) :: s(2), heat, check
    integer :: i, j
    s = 0
    do j = 1, by
      heat = 0
      check = 0
      do i = 1, bx
        heat = heat + aold(i, j)
        check = check + aold(i, j) * checksum_weight(row0 + i, col0 + j)
      end do
      s = s + [heat, check]
    end do
  end function

end program
