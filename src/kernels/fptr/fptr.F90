! fptr: what the way a Fortran array is declared costs a sequential 5-point stencil (seed 002,
! Table 3): `allocatable` (F-Alloc), `pointer` (F-Point), or a pointer that c_f_pointer sets
! onto memory from MPI_Win_allocate_shared (F-Cptr), as the SHM versions of the stencil need.
! Each variant has its own copy of the same loops, so the compiler sees the declaration.
#include "cc_mpi.h"
program fptr
  CC_USE_MPI
  use, intrinsic :: iso_fortran_env, only: output_unit, int64, real64
  use, intrinsic :: iso_c_binding, only: c_ptr, c_f_pointer
  use cc_util
  implicit none

  real(real64), parameter :: PI = acos(-1.0_real64), TOLERANCE = 1.0e-10_real64
  integer, parameter :: MAX_REPS = 1000
  character(len=:), allocatable :: arg, variant
  integer(int64) :: n64, steps
  integer :: i, n, ierr
  logical :: inject, baseline
  real(real64) :: t_init, t_read, t_write, checksum, expected, lambda
  ! runs(:, k): init, read, write and total time of run k; with --baseline, base(:, k) the same
  ! of the allocatable run just before it
  real(real64) :: runs(4, MAX_REPS), base(4, MAX_REPS), target_s, spent
  integer :: min_reps, reps
  real(real64), allocatable :: s(:)

  call cc_init()
  call read_options()
  call print_header()
  call initial_mode()

  ! Whole runs (allocate, fill, steps, validate) until min_reps of them and target_s seconds
  ! (a baseline run's time counts: a launch lasts as long with a baseline as without).
  reps = 0
  spent = 0
  do
    reps = reps + 1
    if (baseline) then
      call one_run('alloc')
      base(:, reps) = [t_init, t_read, t_write, t_init + t_read + t_write]
      spent = spent + base(4, reps)
    end if
    call one_run(variant)
    runs(:, reps) = [t_init, t_read, t_write, t_init + t_read + t_write]
    spent = spent + runs(4, reps)
    if (reps >= MAX_REPS .or. (reps >= min_reps .and. spent >= target_s)) exit
  end do

  call check_and_print_result()
  call MPI_Finalize(ierr)
  call cc_check(ierr, 'MPI_Finalize')

contains

  ! One whole run of variant `which`, its phases' times in t_init, t_read, t_write.
  subroutine one_run(which)
    character(len=*), intent(in) :: which
    t_init = 0
    t_read = 0
    t_write = 0
    select case (which)
    case ('alloc')
      call run_alloc()
    case ('pointer')
      call run_pointer()
    case ('cptr')
      call run_cptr()
    end select
  end subroutine

  ! The options (defaults first); fptr-f runs on 1 rank, in the node's memory.
  subroutine read_options()
    variant = 'alloc'
    n64 = 2000
    steps = 20
    inject = .false.
    baseline = .false.
    min_reps = 1
    target_s = 0
    i = 1
    do while (i <= cc_nargs())
      arg = cc_arg(i)
      select case (arg)
      case ('--help')
        call cc_help(print_usage)
      case ('--variant')
        variant = cc_next_value(i)
        if (variant /= 'alloc' .and. variant /= 'pointer' .and. variant /= 'cptr') &
          call cc_usage_error("--variant: '" // variant // "' is not one of alloc, pointer, cptr")
      case ('--n')
        n64 = cc_parse_int('--n', cc_next_value(i), 1_int64, 20000_int64)
      case ('--steps')
        steps = cc_parse_int('--steps', cc_next_value(i), 1_int64, 1000000_int64)
      case ('--reps')
        min_reps = int(cc_parse_int('--reps', cc_next_value(i), 1_int64, int(MAX_REPS, int64)))
      case ('--target-seconds')
        target_s = cc_parse_seconds('--target-seconds', cc_next_value(i))
      case ('--baseline')
        baseline = cc_parse_yes_no('--baseline', cc_next_value(i))
      case ('--inject-error')
        inject = .true.
      case default
        call cc_unknown_option(arg)
      end select
      i = i + 1
    end do
    ! Several ranks would only share the node's memory bandwidth and blur the comparison.
    if (cc_size() /= 1) call cc_usage_error('fptr-f runs on 1 rank, got ' // cc_str(cc_size()))
    n = int(n64)
    if (cc_exceeds_memory(16.0_real64 * real(n + 2, real64)**2)) &
      call cc_usage_error('--n ' // cc_str(n64) // ' needs more memory than this node has')
  end subroutine

  ! What the figures mean, the validation, and the META record.
  subroutine print_header()
    write(output_unit, '(a)') '# per variant, MPI_Wtime sums over a run as in Table 3, each the ' // &
      'median of --reps runs (at least; more until --target-seconds): ' // &
      'init_s = allocate both (N+2)^2 arrays (cptr: MPI_Win_allocate_shared + c_f_pointer) and ' // &
      'fill them; read_s = the steps'' sweeps anew = a/2 + (4 neighbours)/8 that read the current ' // &
      'values; write_s = making the updated values current: a copy anew -> a for allocatable ' // &
      '(F90 cannot swap allocatables), a pointer swap for pointer and cptr (hence ~0 in Table 3); ' // &
      'total_s = init_s + read_s + write_s; with --baseline yes, each run just after one of ' // &
      'the allocatable variant (the reference, validated the same way): base_read_s and ' // &
      'base_total_s = its median run, read_ratio and total_ratio = the median of each pair''s ' // &
      'variant/allocatable time (total_ratio_min, total_ratio_max: the lowest and highest pair)'
    write(output_unit, '(a)') '# validation: a starts as the mode sin(pi i/(N+1)) sin(pi j/(N+1)) ' // &
      'with a zero border, which each step multiplies by cos(pi/(2(N+1)))^2, so every cell ' // &
      '(to 1e-10 of the peak value) and checksum = sum of a (relative tolerance 1e-10) are ' // &
      'known exactly after the steps'
    flush(output_unit)
    call cc_print_meta('fptr', 'variant=' // variant // ' n=' // cc_str(n64) // ' steps=' // &
                       cc_str(steps) // ' min_reps=' // cc_str(min_reps) // ' target_s=' // &
                       cc_fixed(target_s, 3) // ' baseline=' // trim(merge('yes', 'no ', baseline)))
  end subroutine

  ! The 1-D factor s of the initial mode, shared by all variants (outside the timing).
  subroutine initial_mode()
    allocate(s(0:n + 1))
    do i = 0, n + 1
      s(i) = sin(PI * real(i, real64) / real(n + 1, real64))
    end do
    s(0) = 0
    s(n + 1) = 0
  end subroutine

  ! The checksum against the exact one (a validation error otherwise), then the RESULT record:
  ! the median of the runs and the total's spread (and the pairs', with --baseline).
  subroutine check_and_print_result()
    character(len=:), allocatable :: paired
    real(real64) :: ratios(reps)
    expected = lambda**steps * sum(s(1:n))**2
    if (.not. (abs(checksum - expected) <= TOLERANCE * abs(expected))) &
      call cc_validation_error('checksum ' // cc_g17(checksum) // ' differs from the exact ' // &
        cc_g17(expected) // ' (relative ' // cc_g17(abs(checksum - expected) / abs(expected)) // &
        ' > 1e-10)')
    paired = ''
    if (baseline) then
      ratios = runs(4, 1:reps) / base(4, 1:reps)
      paired = ' base_read_s=' // cc_fixed(median(base(2, 1:reps)), 6) // &
        ' base_total_s=' // cc_fixed(median(base(4, 1:reps)), 6) // &
        ' read_ratio=' // cc_fixed(median(runs(2, 1:reps) / base(2, 1:reps)), 4) // &
        ' total_ratio=' // cc_fixed(median(ratios), 4) // &
        ' total_ratio_min=' // cc_fixed(minval(ratios), 4) // &
        ' total_ratio_max=' // cc_fixed(maxval(ratios), 4)
    end if
    write(output_unit, '(a)') 'RESULT init_s=' // cc_fixed(median(runs(1, 1:reps)), 6) // &
      ' read_s=' // cc_fixed(median(runs(2, 1:reps)), 6) // ' write_s=' // &
      cc_fixed(median(runs(3, 1:reps)), 6) // ' total_s=' // cc_fixed(median(runs(4, 1:reps)), 6) // &
      ' total_min_s=' // cc_fixed(minval(runs(4, 1:reps)), 6) // ' total_max_s=' // &
      cc_fixed(maxval(runs(4, 1:reps)), 6) // ' reps=' // cc_str(reps) // ' checksum=' // &
      cc_g17(checksum) // paired
    flush(output_unit)
    write(output_unit, '(a)') 'PASS validated=1'
  end subroutine

  subroutine run_alloc()
    real(real64), allocatable :: a(:, :), anew(:, :)
    real(real64) :: t0
    integer(int64) :: step
    integer :: i, j
    t0 = MPI_Wtime()
    allocate(a(0:n + 1, 0:n + 1), anew(0:n + 1, 0:n + 1))
    do j = 0, n + 1
      do i = 0, n + 1
        a(i, j) = s(i) * s(j)
        anew(i, j) = 0
      end do
    end do
    t_init = MPI_Wtime() - t0
    do step = 1, steps
      t0 = MPI_Wtime()
      do j = 1, n
        do i = 1, n
          anew(i, j) = a(i, j) / 2 + (a(i - 1, j) + a(i + 1, j) + a(i, j - 1) + a(i, j + 1)) / 8
        end do
      end do
      t_read = t_read + (MPI_Wtime() - t0)
      t0 = MPI_Wtime()
      do j = 1, n
        do i = 1, n
          a(i, j) = anew(i, j)
        end do
      end do
      t_write = t_write + (MPI_Wtime() - t0)
    end do
    call finish(a)
  end subroutine

  subroutine run_pointer()
    real(real64), pointer :: a(:, :), anew(:, :), tmp(:, :)
    real(real64) :: t0
    integer(int64) :: step
    integer :: i, j
    t0 = MPI_Wtime()
    allocate(a(0:n + 1, 0:n + 1), anew(0:n + 1, 0:n + 1))
    do j = 0, n + 1
      do i = 0, n + 1
        a(i, j) = s(i) * s(j)
        anew(i, j) = 0
      end do
    end do
    t_init = MPI_Wtime() - t0
    do step = 1, steps
      t0 = MPI_Wtime()
      do j = 1, n
        do i = 1, n
          anew(i, j) = a(i, j) / 2 + (a(i - 1, j) + a(i + 1, j) + a(i, j - 1) + a(i, j + 1)) / 8
        end do
      end do
      t_read = t_read + (MPI_Wtime() - t0)
      t0 = MPI_Wtime()
      tmp => a
      a => anew
      anew => tmp
      t_write = t_write + (MPI_Wtime() - t0)
    end do
    call finish(a)
    deallocate(a, anew)
  end subroutine

  ! The paper's F-Cptr: one shared window per array on a communicator of this rank alone.
  subroutine run_cptr()
    real(real64), pointer :: a(:, :), anew(:, :), tmp(:, :)
    real(real64) :: t0
    integer(int64) :: step
    integer :: i, j
    CC_COMM :: self
    CC_WIN :: win(2)
    type(c_ptr) :: mem(2)
    call MPI_Comm_split_type(MPI_COMM_SELF, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, self, ierr)
    call cc_check(ierr, 'MPI_Comm_split_type')
    t0 = MPI_Wtime()
    do i = 1, 2
      call MPI_Win_allocate_shared(8_MPI_ADDRESS_KIND * (n + 2) * (n + 2), 8, MPI_INFO_NULL, &
                                   self, mem(i), win(i), ierr)
      call cc_check(ierr, 'MPI_Win_allocate_shared')
    end do
    call c_f_pointer(mem(1), a, [n + 2, n + 2])
    call c_f_pointer(mem(2), anew, [n + 2, n + 2])
    ! Same 0-based indices as the other variants, so the loops are the same text.
    a(0:, 0:) => a
    anew(0:, 0:) => anew
    do j = 0, n + 1
      do i = 0, n + 1
        a(i, j) = s(i) * s(j)
        anew(i, j) = 0
      end do
    end do
    t_init = MPI_Wtime() - t0
    do step = 1, steps
      t0 = MPI_Wtime()
      do j = 1, n
        do i = 1, n
          anew(i, j) = a(i, j) / 2 + (a(i - 1, j) + a(i + 1, j) + a(i, j - 1) + a(i, j + 1)) / 8
        end do
      end do
      t_read = t_read + (MPI_Wtime() - t0)
      t0 = MPI_Wtime()
      tmp => a
      a => anew
      anew => tmp
      t_write = t_write + (MPI_Wtime() - t0)
    end do
    call finish(a)
    do i = 1, 2
      call MPI_Win_free(win(i), ierr)
      call cc_check(ierr, 'MPI_Win_free')
    end do
    call MPI_Comm_free(self, ierr)
    call cc_check(ierr, 'MPI_Comm_free')
  end subroutine

  ! Untimed: the self-test perturbation, then every cell against the exact mode
  ! lambda**steps s(i) s(j) (to TOLERANCE times its peak: a cell the sweep missed differs by
  ! far more, even where the checksum would hardly move), then the checksum (column sums
  ! first, which keeps the rounding error of the N*N additions far below the tolerance).
  subroutine finish(a)
    real(real64), intent(inout) :: a(0:n + 1, 0:n + 1)
    real(real64) :: col, peak, want
    integer :: i, j
    if (inject) a(n / 2 + 1, n / 2 + 1) = a(n / 2 + 1, n / 2 + 1) + 1
    lambda = cos(PI / real(2 * (n + 1), real64))**2
    peak = lambda**steps
    do j = 1, n
      do i = 1, n
        want = peak * s(i) * s(j)
        if (.not. (abs(a(i, j) - want) <= TOLERANCE * peak)) &
          call cc_validation_error('cell (' // cc_str(i) // ', ' // cc_str(j) // '): got ' // &
            cc_g17(a(i, j)) // ', expected ' // cc_g17(want) // ' (the exact mode; tolerance ' // &
            '1e-10 of its peak)')
      end do
    end do
    checksum = 0
    do j = 1, n
      col = 0
      do i = 1, n
        col = col + a(i, j)
      end do
      checksum = checksum + col
    end do
  end subroutine

  ! The median of x (x is not changed).
  function median(x) result(m)
    real(real64), intent(in) :: x(:)
    real(real64) :: m, y(size(x)), v
    integer :: i, j, k
    y = x
    do i = 2, size(y)
      v = y(i)
      j = i - 1
      do while (j >= 1)
        if (y(j) <= v) exit
        y(j + 1) = y(j)
        j = j - 1
      end do
      y(j + 1) = v
    end do
    k = size(y)
    m = y((k + 1) / 2)
    if (mod(k, 2) == 0) m = (y(k / 2) + y(k / 2 + 1)) / 2
  end function

  subroutine print_usage()
    write(output_unit, '(a)') 'usage: fptr-f [options]   (1 rank)', &
      '  Sequential 5-point stencil on an (N+2) x (N+2) array declared three ways (seed 002,', &
      '  Table 3); times the allocation and fill, the sweeps that read current values, and', &
      '  the step that makes the updated values current.', &
      '  --variant V      alloc | pointer | cptr (default alloc)', &
      '                   alloc: allocatable arrays, updated values copied back;', &
      '                   pointer: Fortran pointers from allocate, swapped each step;', &
      '                   cptr: MPI_Win_allocate_shared on a 1-rank shared communicator,', &
      '                   mapped with c_f_pointer, swapped each step', &
      '  --n N            interior points per dimension (default 2000, at most 20000)', &
      '  --steps T        time steps (default 20)', &
      '  --reps R         whole runs, at least (default 1); RESULT gives each phase''s median', &
      '                   run, total_min_s and total_max_s the spread, reps how many ran', &
      '  --target-seconds S  then more runs until their totals add up to S seconds', &
      '                   (default 0; at most 1000 runs)', &
      '  --baseline yes|no  each run just after one of the allocatable variant; RESULT adds', &
      '                   its medians and the median ratio of the pairs (default no)', &
      '  --inject-error   self-test: perturb one value after the run, so validation against', &
      '                   the exact solution must fail with exit code 3', &
      '  --help           this text'
  end subroutine

end program
