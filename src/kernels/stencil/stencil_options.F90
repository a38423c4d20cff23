! The command line of stencil-f.
module stencil_options
  use, intrinsic :: iso_fortran_env, only: output_unit, int64, real64
  use cc_util
  implicit none
  private
  public :: options, parse_options, MAX_REPS

  !> Timed runs of the steps are repeated up to this many times at most.
  integer, parameter :: MAX_REPS = 1000

  type options
    character(len=:), allocatable :: variant
    integer :: n = 480, node_size = 0
    integer(int64) :: steps = 100
    logical :: verify = .true., inject = .false.
    logical :: baseline = .false.        ! a compute-only run (1 rank: sequential) before each
    integer :: reps = 1                  ! at least this many timed runs of the steps
    real(real64) :: target_s = 0         ! and more until their times add up to this
  end type

contains

  subroutine parse_options(o)
    type(options), intent(out) :: o
    character(len=:), allocatable :: arg
    integer :: i
    o%variant = 'sr'
    i = 1
    do while (i <= cc_nargs())
      arg = cc_arg(i)
      select case (arg)
      case ('--help')
        call cc_help(print_usage)
      case ('--variant')
        o%variant = cc_next_value(i)
        select case (o%variant)
        case ('seq', 'sr', 'nb', 'shm', 'shmnc', 'hybrid')
        case default
          call cc_usage_error("--variant: '" // o%variant // "' is not one of seq, sr, nb, " // &
                              'shm, shmnc, hybrid')
        end select
      case ('--n')
        o%n = int(cc_parse_int('--n', cc_next_value(i), 1_int64, 1000000_int64))
      case ('--steps')
        o%steps = cc_parse_int('--steps', cc_next_value(i), 1_int64, 1000000000_int64)
      case ('--reps')
        o%reps = int(cc_parse_int('--reps', cc_next_value(i), 1_int64, int(MAX_REPS, int64)))
      case ('--target-seconds')
        o%target_s = cc_parse_seconds('--target-seconds', cc_next_value(i))
      case ('--node-size')
        o%node_size = int(cc_parse_int('--node-size', cc_next_value(i), 1_int64, &
                                       int(huge(0), int64)))
      case ('--verify')
        o%verify = cc_parse_yes_no('--verify', cc_next_value(i))
      case ('--baseline')
        o%baseline = cc_parse_yes_no('--baseline', cc_next_value(i))
      case ('--inject-error')
        o%inject = .true.
      case default
        call cc_unknown_option(arg)
      end select
      i = i + 1
    end do
    if (o%inject .and. .not. o%verify) &
      call cc_usage_error('--inject-error needs verification: drop --verify no')
    if (o%variant == 'seq' .and. cc_size() /= 1) &
      call cc_usage_error('--variant seq needs 1 rank, got ' // cc_str(cc_size()))
    if (o%baseline .and. o%variant == 'seq') &
      call cc_usage_error('--baseline yes needs a parallel variant (got --variant seq)')
    if (o%node_size > 0 .and. o%variant /= 'hybrid') &
      call cc_usage_error('--node-size applies to --variant hybrid only')
  end subroutine

  subroutine print_usage()
    write(output_unit, '(a)') 'usage: stencil-f [options]', &
      '  2-D 5-point heat stencil on an N x N grid: a pseudo-random initial field in [1, 2),', &
      '  one unit of heat added at three fixed cells every step, Dirichlet 0 border.', &
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
      '  --reps R         time the steps R times at least, each from the initial field', &
      '                   (default 1); RESULT time_s is the median run, time_min_s and', &
      '                   time_max_s the spread, reps how many ran', &
      '  --target-seconds S  then repeat until the runs'' times add up to S seconds', &
      '                   (default 0; at most 1000 runs; with --baseline, the pairs'' times)', &
      '  --node-size K    hybrid only: emulate nodes of K consecutive ranks (K divides the', &
      '                   rank count; the K ranks must share memory); default: the real', &
      '                   MPI_COMM_TYPE_SHARED node', &
      '  --verify yes|no  yes (default, any N): rank 0 recomputes the grid with separate', &
      '                   sequential code, receives every block and compares every cell,', &
      '                   then total heat and checksum (relative difference <= 1e-12);', &
      '                   the first difference fails with exit code 3. Needs 16 (N+2)^2', &
      '                   bytes more on rank 0. no: RESULT says verified=0 and there is', &
      '                   no PASS line', &
      '  --baseline yes|no  a parallel variant: before each timed run of the variant, one', &
      '                   run of the same steps on the same ranks without the halo exchange,', &
      '                   on private arrays (default no). 1 rank: the sequential run; RESULT', &
      '                   adds seq_time_s, the median sequential run, and seq_ratio, the', &
      '                   median over pairs of sequential/variant time: the speedup at 1', &
      '                   rank from one launch, whatever the machine did between launches.', &
      '                   More ranks: each rank''s block alone, ghosts 0 (compute only);', &
      '                   RESULT adds floor_time_s, the median such run (max over ranks),', &
      '                   the floor of time_s; every cell of it is checked against the', &
      '                   independent reference of the block alone (exit 3 on a difference)', &
      '  --inject-error   self-test: perturb one grid value of the last rank by 1e-6 after', &
      '                   the run, so verification must fail with exit code 3', &
      '  --help           this text', &
      'Records: META; RESULT time_s step_us halo_share glups mem_GBps total_heat checksum', &
      'verify_s verified reps time_min_s time_max_s [with --baseline yes: seq_time_s', &
      'seq_ratio at 1 rank, floor_time_s at more]; PASS validated=<cells compared> when', &
      'verified.'
  end subroutine

end module stencil_options
