! Helpers shared by the Fortran kernels: checked MPI calls, argument parsing, records
! (module cc_util), and the message payloads of pingpong and comms2 (module cc_payload).
! Conventions (records, exit codes) are described in ../README.md.
#include "cc_mpi.h"
module cc_util
  CC_USE_MPI
  use, intrinsic :: iso_fortran_env, only: error_unit, output_unit, int64, real64
  use, intrinsic :: iso_c_binding, only: c_int
  implicit none
  private
  public :: cc_init, cc_rank, cc_size, cc_check, cc_abort, cc_usage_error, cc_validation_error, &
            cc_arg, cc_nargs, cc_next_value, cc_help, cc_unknown_option, cc_parse_int, &
            cc_parse_seconds, cc_parse_yes_no, &
            cc_parse_bytes, cc_parse_sizes, cc_print_meta, cc_str, cc_fixed, cc_g17, &
            cc_physical_memory, cc_exceeds_memory, cc_run_delay_s, cc_cpu_wait, cc_batch_count, cc_batch_start, cc_batch_of, &
            cc_batch_timing, CC_EXIT_USAGE, CC_EXIT_VALIDATION, CC_EXIT_MPI

  integer, parameter :: CC_EXIT_USAGE = 2, CC_EXIT_VALIDATION = 3, CC_EXIT_MPI = 4
  integer, parameter :: MAX_SIZES = 64, DEFAULT_BATCHES = 10

  interface cc_str
    module procedure str_int, str_int64
  end interface

  interface
    subroutine c_exit(status) bind(C, name='_exit')
      import :: c_int
      integer(c_int), value :: status
    end subroutine
  end interface

contains

  !> A number of seconds in [0, 3600] given to option opt (--target-seconds); else exit 2.
  function cc_parse_seconds(opt, text) result(v)
    character(len=*), intent(in) :: opt, text
    real(real64) :: v
    integer :: ios
    v = -1
    ios = 1
    if (verify(text, '0123456789.eE+-') == 0) read(text, *, iostat=ios) v
    if (ios /= 0) call cc_usage_error(opt // ": '" // text // "' is not a number")
    if (.not. (v >= 0 .and. v <= 3600)) &
      call cc_usage_error(opt // ': ' // text // ' is out of range [0, 3600]')
  end function

  ! MPI_COMM_WORLD returns errors to us so that a failing call is named before aborting.
  subroutine cc_init()
    integer :: ierr
    call MPI_Init(ierr)
    call cc_check(ierr, 'MPI_Init')
    call MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN, ierr)
    call cc_check(ierr, 'MPI_Comm_set_errhandler')
  end subroutine

  subroutine cc_check(ierr, what)
    integer, intent(in) :: ierr
    character(len=*), intent(in) :: what
    character(len=MPI_MAX_ERROR_STRING) :: msg
    integer :: length, ignored
    if (ierr == MPI_SUCCESS) return
    call MPI_Error_string(ierr, msg, length, ignored)
    write(error_unit, '(a)') 'ERROR: ' // what // ' failed: ' // msg(1:length)
    flush(error_unit)
    call cc_abort(CC_EXIT_MPI)
  end subroutine

  ! Ends the whole job with exit code `code`. MPI_Abort need not return, but a library may only
  ! ask its process manager to end the job and return (MPICH 5 does): this rank must not then
  ! go on (to a PASS line, say), so it ends itself at once.
  subroutine cc_abort(code)
    integer, intent(in) :: code
    integer :: ierr
    call MPI_Abort(MPI_COMM_WORLD, code, ierr)
    call c_exit(int(code, c_int))
  end subroutine

  integer function cc_rank()
    integer :: ierr
    call MPI_Comm_rank(MPI_COMM_WORLD, cc_rank, ierr)
    call cc_check(ierr, 'MPI_Comm_rank')
  end function

  integer function cc_size()
    integer :: ierr
    call MPI_Comm_size(MPI_COMM_WORLD, cc_size, ierr)
    call cc_check(ierr, 'MPI_Comm_size')
  end function

  ! Bad input: every rank parses the same arguments, so every rank gets here; rank 0 says
  ! what is wrong in one line, all finalize, the job exits 2.
  subroutine cc_usage_error(msg)
    character(len=*), intent(in) :: msg
    integer :: ierr
    if (cc_rank() == 0) then
      write(error_unit, '(a)') 'ERROR: ' // msg
      flush(error_unit)
    end if
    call MPI_Finalize(ierr)
    stop CC_EXIT_USAGE, quiet=.true.
  end subroutine

  ! Received data differ from what was sent: only this rank knows, so abort the job.
  subroutine cc_validation_error(msg)
    character(len=*), intent(in) :: msg
    double precision :: until
    write(error_unit, '(a,i0,a)') 'ERROR: validation failed on rank ', cc_rank(), ': ' // msg
    flush(error_unit)
    ! Give the launcher a moment to relay the line: hydra may kill the job on MPI_Abort first.
    until = MPI_Wtime() + 0.3d0
    do while (MPI_Wtime() < until)
    end do
    call cc_abort(CC_EXIT_VALIDATION)
  end subroutine

  integer function cc_nargs()
    cc_nargs = command_argument_count()
  end function

  function cc_arg(i) result(text)
    integer, intent(in) :: i
    character(len=:), allocatable :: text
    integer :: length
    if (i > command_argument_count()) then
      text = ''
      return
    end if
    call get_command_argument(i, length=length)
    allocate(character(len=length) :: text)
    call get_command_argument(i, text)
  end function

  ! The value of option cc_arg(i); i moves on to it.
  function cc_next_value(i) result(text)
    integer, intent(inout) :: i
    character(len=:), allocatable :: text
    if (i + 1 > cc_nargs()) call cc_usage_error(cc_arg(i) // ' needs a value')
    i = i + 1
    text = cc_arg(i)
  end function

  ! --help: rank 0 prints the usage text, every rank finalizes, the program exits 0.
  ! print_usage must not use its host's variables: passing an internal procedure that does
  ! needs a trampoline, and so an executable stack.
  subroutine cc_help(print_usage)
    interface
      subroutine print_usage()
      end subroutine
    end interface
    integer :: ierr
    if (cc_rank() == 0) call print_usage()
    call MPI_Finalize(ierr)
    call cc_check(ierr, 'MPI_Finalize')
    stop
  end subroutine

  subroutine cc_unknown_option(arg)
    character(len=*), intent(in) :: arg
    call cc_usage_error("unknown option '" // arg // "' (see --help)")
  end subroutine

  integer(int64) function cc_parse_int(opt, text, lo, hi) result(v)
    character(len=*), intent(in) :: opt, text
    integer(int64), intent(in) :: lo, hi
    integer :: ios
    if (len_trim(text) == 0 .or. verify(trim(text), '-0123456789') /= 0) &
      call cc_usage_error(opt // ": '" // text // "' is not a whole number")
    read(text, *, iostat=ios) v
    if (ios /= 0) call cc_usage_error(opt // ": '" // text // "' is not a whole number")
    if (v < lo .or. v > hi) call cc_usage_error(opt // ": " // text // " is out of range [" // &
                                                cc_str(lo) // ", " // cc_str(hi) // "]")
  end function

  ! `yes` or `no` (a usage error otherwise).
  logical function cc_parse_yes_no(opt, text)
    character(len=*), intent(in) :: opt, text
    if (text /= 'yes' .and. text /= 'no') &
      call cc_usage_error(opt // ": '" // text // "' is not yes or no")
    cc_parse_yes_no = text == 'yes'
  end function

  ! Digits with an optional k/m/g suffix (KiB, MiB, GiB); at least 1 byte.
  integer(int64) function cc_parse_bytes(opt, text) result(v)
    character(len=*), intent(in) :: opt, text
    integer(int64) :: mult
    integer :: last
    last = len_trim(text)
    mult = 1
    if (last > 0) then
      select case (text(last:last))
      case ('k', 'K'); mult = 2_int64**10; last = last - 1
      case ('m', 'M'); mult = 2_int64**20; last = last - 1
      case ('g', 'G'); mult = 2_int64**30; last = last - 1
      end select
    end if
    if (last < 1 .or. verify(text(1:max(last, 1)), '-0123456789') /= 0) &
      call cc_usage_error(opt // ": '" // text // "' is not a byte count")
    v = cc_parse_int(opt, text(1:last), -huge(v), huge(v))
    if (v <= 0) call cc_usage_error(opt // ": sizes must be positive, got '" // text // "'")
    if (v > huge(v) / mult) call cc_usage_error(opt // ": '" // text // "' is too large")
    v = v * mult
  end function

  ! A size list "8,64,512" or a power-of-two range "lo:hi".
  subroutine cc_parse_sizes(opt, text, sizes)
    character(len=*), intent(in) :: opt, text
    integer(int64), allocatable, intent(out) :: sizes(:)
    integer(int64) :: buf(MAX_SIZES), lo, hi, s
    integer :: n, colon, start, comma
    n = 0
    colon = index(text, ':')
    if (colon > 0) then
      lo = cc_parse_bytes(opt, text(1:colon - 1))
      hi = cc_parse_bytes(opt, text(colon + 1:))
      if (lo > hi) call cc_usage_error(opt // ": range '" // text // "' runs backwards")
      s = lo
      do while (s <= hi .and. n < MAX_SIZES)
        n = n + 1
        buf(n) = s
        s = s * 2
      end do
    else
      start = 1
      do
        comma = index(text(start:), ',')
        if (n == MAX_SIZES) call cc_usage_error(opt // ': too many sizes')
        n = n + 1
        if (comma == 0) then
          buf(n) = cc_parse_bytes(opt, text(start:))
          exit
        end if
        buf(n) = cc_parse_bytes(opt, text(start:start + comma - 2))
        start = start + comma
      end do
    end if
    sizes = buf(1:n)
  end subroutine

  ! META record on rank 0: kernel, language, ranks, MPI library, then `extra` (key=value ...).
  subroutine cc_print_meta(kernel, extra)
    character(len=*), intent(in) :: kernel, extra
    character(len=MPI_MAX_LIBRARY_VERSION_STRING) :: lib
    integer :: length, ierr, eol, i
    if (cc_rank() /= 0) return
    call MPI_Get_library_version(lib, length, ierr)
    call cc_check(ierr, 'MPI_Get_library_version')
    eol = scan(lib(1:length), achar(10) // achar(13))
    if (eol > 0) length = eol - 1
    do i = 1, length
      if (lib(i:i) == '"' .or. lib(i:i) == achar(9)) lib(i:i) = ' '
    end do
    write(output_unit, '(a,i0,a)') 'META kernel=' // kernel // ' lang=fortran ranks=', cc_size(), &
      ' mpi="' // trim(lib(1:length)) // '" ' // extra
    flush(output_unit)
  end subroutine

  function str_int(n) result(text)
    integer, intent(in) :: n
    character(len=:), allocatable :: text
    text = str_int64(int(n, int64))
  end function

  function str_int64(n) result(text)
    integer(int64), intent(in) :: n
    character(len=:), allocatable :: text
    character(len=24) :: buf
    write(buf, '(i0)') n
    text = trim(buf)
  end function

  ! Fixed point with `decimals` digits, no blanks, and a leading zero below 1 (unlike f0.d).
  function cc_fixed(x, decimals) result(text)
    real(real64), intent(in) :: x
    integer, intent(in) :: decimals
    character(len=:), allocatable :: text
    character(len=64) :: buf, form
    write(form, '(a,i0,a)') '(f64.', decimals, ')'
    write(buf, form) x
    text = trim(adjustl(buf))
  end function

  ! 17 significant digits, enough to tell any two doubles apart.
  function cc_g17(x) result(text)
    real(real64), intent(in) :: x
    character(len=:), allocatable :: text
    character(len=32) :: buf
    write(buf, '(es32.16e3)') x
    text = trim(adjustl(buf))
  end function

  ! This process's run delay so far in seconds: the time it was ready to run but waited for
  ! a CPU (the second field of /proc/self/schedstat, ns); negative where the kernel has none.
  real(real64) function cc_run_delay_s()
    integer(int64) :: cpu_ns, wait_ns
    integer :: u, ios
    cc_run_delay_s = -1
    open(newunit=u, file='/proc/self/schedstat', action='read', status='old', iostat=ios)
    if (ios /= 0) return
    read(u, *, iostat=ios) cpu_ns, wait_ns
    if (ios == 0) cc_run_delay_s = real(wait_ns, real64) * 1.0e-9_real64
    close(u)
  end function

  ! The larger of the ranks' shares of the span since (t_begin, wait_begin: MPI_Wtime and
  ! cc_run_delay_s then) spent waiting for a CPU, on every rank; negative where a rank could
  ! not read its run delay. Collective over MPI_COMM_WORLD.
  real(real64) function cc_cpu_wait(t_begin, wait_begin)
    real(real64), intent(in) :: t_begin, wait_begin
    real(real64) :: span, wait, share(2)
    integer :: ierr
    span = MPI_Wtime() - t_begin
    wait = cc_run_delay_s()
    share(1) = -1
    if (wait >= 0 .and. wait_begin >= 0) share(1) = (wait - wait_begin) / span
    share(2) = -share(1)
    call MPI_Allreduce(MPI_IN_PLACE, share, 2, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, &
                       ierr)
    call cc_check(ierr, 'MPI_Allreduce')
    cc_cpu_wait = share(1)
    if (share(2) > 0) cc_cpu_wait = -1     ! the smallest was negative: unknown
  end function

  ! MemTotal of /proc/meminfo in bytes; "unlimited" where that file is missing.
  real(real64) function cc_physical_memory()
    character(len=256) :: line
    integer :: u, ios
    integer(int64) :: kib
    cc_physical_memory = huge(1.0_real64)
    open(newunit=u, file='/proc/meminfo', action='read', status='old', iostat=ios)
    if (ios /= 0) return
    do
      read(u, '(a)', iostat=ios) line
      if (ios /= 0) exit
      if (line(1:9) == 'MemTotal:') then
        read(line(10:), *, iostat=ios) kib
        if (ios == 0) cc_physical_memory = 1024.0_real64 * real(kib, real64)
        exit
      end if
    end do
    close(u)
  end function

  ! More than 90% of the node's memory: the rest is left to the system and the MPI library.
  logical function cc_exceeds_memory(bytes)
    real(real64), intent(in) :: bytes
    cc_exceeds_memory = bytes > 0.9_real64 * cc_physical_memory()
  end function

  ! Timing in batches, as in cc_util.h: the timed iterations 0..iters-1 are split into
  ! `batches` runs of consecutive iterations, iteration k going to batch k * batches / iters
  ! (from 0; sizes differ by at most one). A figure is the median of the batch means, which one
  ! disturbed batch cannot move; the overall mean is reported beside it.

  ! The batch count: `given` (0: not given, then 10 or iters if fewer); more than iters is bad
  ! input.
  integer function cc_batch_count(given, iters)
    integer(int64), intent(in) :: given, iters
    if (given > iters) call cc_usage_error('--batches ' // cc_str(given) // ' is more than ' // &
      '--iters ' // cc_str(iters) // ': every batch needs an iteration')
    if (given > 0) then
      cc_batch_count = int(given)
    else
      cc_batch_count = int(min(iters, int(DEFAULT_BATCHES, int64)))
    end if
  end function

  ! The first timed iteration of batch b (from 0; b = batches: one past the last iteration).
  integer(int64) function cc_batch_start(b, batches, iters)
    integer, intent(in) :: b, batches
    integer(int64), intent(in) :: iters
    cc_batch_start = (b * iters + batches - 1) / batches
  end function

  ! The batch (from 0) of timed iteration k (from 0).
  integer function cc_batch_of(k, batches, iters)
    integer(int64), intent(in) :: k, iters
    integer, intent(in) :: batches
    cc_batch_of = int(k * batches / iters)
  end function

  ! From the seconds each batch took and its iteration count: the median of the batch means
  ! (the middle one, or the mean of the two middle ones) and the mean over all iterations,
  ! both in microseconds per iteration.
  subroutine cc_batch_timing(elapsed, counts, median_us, mean_us)
    real(real64), intent(in) :: elapsed(:)
    integer(int64), intent(in) :: counts(:)
    real(real64), intent(out) :: median_us, mean_us
    real(real64), allocatable :: means(:)
    integer :: m
    allocate(means(size(elapsed)))
    means = elapsed / real(counts, real64) * 1.0e6_real64
    call heap_sort(means)
    m = size(means)
    if (mod(m, 2) == 1) then
      median_us = means(m / 2 + 1)
    else
      median_us = (means(m / 2) + means(m / 2 + 1)) / 2
    end if
    mean_us = sum(elapsed) / real(sum(counts), real64) * 1.0e6_real64
  end subroutine

  ! Ascending order in place, O(n log n) for any batch count.
  subroutine heap_sort(x)
    real(real64), intent(inout) :: x(:)
    integer :: n, i
    n = size(x)
    do i = n / 2, 1, -1
      call sift_down(x, i, n)
    end do
    do i = n, 2, -1
      x([1, i]) = x([i, 1])
      call sift_down(x, 1, i - 1)
    end do
  end subroutine

  ! Restores the max-heap below x(root) within x(1:last).
  subroutine sift_down(x, root, last)
    real(real64), intent(inout) :: x(:)
    integer, intent(in) :: root, last
    integer :: parent, child
    parent = root
    do while (2 * parent <= last)
      child = 2 * parent
      if (child < last) then
        if (x(child + 1) > x(child)) child = child + 1
      end if
      if (x(parent) >= x(child)) return
      x([parent, child]) = x([child, parent])
      parent = child
    end do
  end subroutine

end module cc_util

! The two-rank message sweeps (pingpong, comms2): their command line and their payloads.
! Every byte depends on size and sender, so a message of the wrong size or from the wrong rank
! is caught, not only a missing one. The first and last 8 bytes (all of a message shorter than
! 16 bytes) carry a stamp of the message's number `seq`, so a buffer left over from an earlier
! message is caught too; checking only those ends is cheap enough for every timed message.
! Bytes are stored as value - 128 to fit int8; buffers are zero-based like the offsets.
module cc_payload
  CC_USE_MPI
  use, intrinsic :: iso_fortran_env, only: output_unit, int8, int64, real64
  use, intrinsic :: iso_c_binding, only: c_ptr, c_int, c_int64_t
  use cc_util
  implicit none
  private
  public :: cc_sweep, cc_sweep_args, cc_sweep_step, cc_sweep_time, cc_sweep_run, cc_sbuf, &
            cc_rbuf, cc_payload_fill, cc_payload_stamp, cc_payload_byte, cc_payload_mismatch, &
            cc_floor_open, cc_floor_begin, cc_floor_batch, cc_floor_end, cc_floor_close
  integer, parameter :: FLOOR_NO = 0, FLOOR_YES = 1, FLOOR_TCP = 2

  ! The hardware floor (common/cc_floor.h), shared with the C kernels.
  interface
    type(c_ptr) function floor_open_c(comm, max, mode) bind(C, name='cc_floor_open_f')
      import :: c_ptr, c_int, c_int64_t
      integer(c_int), value :: comm, mode
      integer(c_int64_t), value :: max
    end function
    integer(c_int) function floor_wanted_c(nbytes, sizes, n) bind(C, name='cc_floor_wanted_f')
      import :: c_int, c_int64_t
      integer(c_int64_t), value :: nbytes
      integer(c_int64_t), intent(in) :: sizes(*)
      integer(c_int), value :: n
    end function
    subroutine floor_begin_c(f, nbytes, warmup, batches, wanted) bind(C, name='cc_floor_begin_f')
      import :: c_ptr, c_int, c_int64_t
      type(c_ptr), value :: f
      integer(c_int64_t), value :: nbytes, warmup
      integer(c_int), value :: batches, wanted
    end subroutine
    subroutine floor_batch_c(f, count) bind(C, name='cc_floor_batch_f')
      import :: c_ptr, c_int64_t
      type(c_ptr), value :: f
      integer(c_int64_t), value :: count
    end subroutine
    subroutine cc_floor_end(f) bind(C, name='cc_floor_end_f')
      import :: c_ptr
      type(c_ptr), value :: f
    end subroutine
    subroutine cc_floor_close(f) bind(C, name='cc_floor_close_f')
      import :: c_ptr
      type(c_ptr), value :: f
    end subroutine
  end interface

  ! What the command line asks for (see the programs' --help).
  type cc_sweep
    integer(int64), allocatable :: sizes(:)
    integer(int64) :: iters = 1000, warmup = 100
    integer :: batches = 0
    logical :: inject = .false.
    integer :: floor = FLOOR_YES    ! --floor yes|no|tcp
  end type

  ! One step of a sweep (a round trip, an exchange) with messages of nbytes, numbered it
  ! (-warmup..-1 untimed, 0..iters-1 timed). A module procedure of the kernel, its buffers the
  ! module's: an internal procedure passed here would need a trampoline (an executable stack).
  abstract interface
    subroutine cc_sweep_step(nbytes, it)
      import :: int64
      integer(int64), intent(in) :: nbytes, it
    end subroutine
    ! Rank 0's '# ...' line: what is timed.
    subroutine cc_sweep_explain()
    end subroutine
    ! The whole payload of iteration it's last message, in cc_rbuf (exit 3 if wrong).
    subroutine cc_sweep_check_last(nbytes, it)
      import :: int64
      integer(int64), intent(in) :: nbytes, it
    end subroutine
  end interface

  ! The sweep's send and receive buffers (cc_sweep_run allocates them), zero-based like the
  ! byte offsets in the messages; the kernel's step and check read them.
  integer(int8), allocatable :: cc_sbuf(:)
  integer(int8), allocatable, asynchronous :: cc_rbuf(:)

contains

  ! One size of a sweep (C: cc_sweep_time): MPI_Barrier, sw%warmup untimed steps, then
  ! sw%iters timed ones in sw%batches batches, MPI_Wtime around each batch and one floor batch
  ! after each (the floor measured at this size if the sweep wants it there). The median of the
  ! batch means and the mean over all steps, in microseconds per step (cc_batch_timing).
  subroutine cc_sweep_time(sw, step, hw_floor, nbytes, median_us, mean_us)
    type(cc_sweep), intent(in) :: sw
    procedure(cc_sweep_step) :: step
    type(c_ptr), intent(in) :: hw_floor
    integer(int64), intent(in) :: nbytes
    real(real64), intent(out) :: median_us, mean_us
    real(real64) :: elapsed(sw%batches), t0
    integer(int64) :: counts(sw%batches), first, it
    integer :: b, ierr
    call cc_floor_begin(hw_floor, sw, nbytes)
    call MPI_Barrier(MPI_COMM_WORLD, ierr)
    call cc_check(ierr, 'MPI_Barrier')
    do it = -sw%warmup, -1
      call step(nbytes, it)
    end do
    do b = 1, sw%batches
      first = cc_batch_start(b - 1, sw%batches, sw%iters)
      counts(b) = cc_batch_start(b, sw%batches, sw%iters) - first
      t0 = MPI_Wtime()
      do it = first, first + counts(b) - 1
        call step(nbytes, it)
      end do
      elapsed(b) = MPI_Wtime() - t0
      call cc_floor_batch(hw_floor, counts(b))
    end do
    call cc_floor_end(hw_floor)
    call cc_batch_timing(elapsed, counts, median_us, mean_us)
  end subroutine

  ! The sweep over every size in the given order (C: cc_sweep_run), for a parsed command line:
  ! the buffers, rank 0's explanation and META record, the floor; per size the timing
  ! (cc_sweep_time), the whole payload of the last message checked (--inject-error first
  ! corrupts its middle byte, outside the stamps, at the first size on rank 0) and rank 0's DATA
  ! record, named `time` for the step and `message` for one of its per_time messages; then
  ! 'PASS validated=N' (the messages both ranks checked, `messages` a step each) and MPI_Finalize.
  subroutine cc_sweep_run(sw, kernel, explain, step, messages, time, message, per_time, &
                          check_last)
    type(cc_sweep), intent(in) :: sw
    character(len=*), intent(in) :: kernel, time, message
    procedure(cc_sweep_explain) :: explain
    procedure(cc_sweep_step) :: step
    integer, intent(in) :: messages, per_time
    procedure(cc_sweep_check_last) :: check_last
    type(c_ptr) :: hw_floor
    integer(int64) :: nbytes, validated, total
    real(real64) :: median_us, mean_us, message_us
    integer :: rank, k, ierr
    rank = cc_rank()
    allocate(cc_sbuf(0:maxval(sw%sizes) - 1), cc_rbuf(0:maxval(sw%sizes) - 1))
    if (rank == 0) call explain()
    call cc_print_meta(kernel, 'iters=' // cc_str(sw%iters) // ' warmup=' // &
                       cc_str(sw%warmup) // ' batches=' // cc_str(sw%batches) // ' sizes=' // &
                       cc_str(size(sw%sizes)))

    hw_floor = cc_floor_open(sw)
    validated = 0
    do k = 1, size(sw%sizes)
      nbytes = sw%sizes(k)
      call cc_payload_fill(cc_sbuf, nbytes, rank)
      cc_rbuf(0:nbytes - 1) = 0
      call cc_sweep_time(sw, step, hw_floor, nbytes, median_us, mean_us)
      if (sw%inject .and. rank == 0 .and. k == 1) cc_rbuf(nbytes / 2) = not(cc_rbuf(nbytes / 2))
      call check_last(nbytes, sw%iters - 1)
      validated = validated + messages * (sw%warmup + sw%iters)
      if (rank == 0) then
        message_us = median_us / per_time
        write(output_unit, '(a)') 'DATA size=' // cc_str(nbytes) // ' iters=' // &
          cc_str(sw%iters) // ' batches=' // cc_str(sw%batches) // ' ' // time // '_us=' // &
          cc_fixed(median_us, 4) // ' ' // message // '_us=' // cc_fixed(message_us, 4) // &
          ' bw_MBps=' // cc_fixed(real(nbytes, real64) / message_us, 4) // ' ' // time // &
          '_mean_us=' // cc_fixed(mean_us, 4)
        flush(output_unit)
      end if
    end do

    call cc_floor_close(hw_floor)
    call MPI_Reduce(validated, total, 1, MPI_INTEGER8, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
    call cc_check(ierr, 'MPI_Reduce')
    if (rank == 0) write(output_unit, '(a)') 'PASS validated=' // cc_str(total)
    call MPI_Finalize(ierr)
    call cc_check(ierr, 'MPI_Finalize')
  end subroutine

  ! Parses the command line; a sweep runs on exactly 2 ranks.
  subroutine cc_sweep_args(kernel, print_usage, sw)
    character(len=*), intent(in) :: kernel
    interface
      subroutine print_usage()
      end subroutine
    end interface
    type(cc_sweep), intent(out) :: sw
    character(len=:), allocatable :: arg, sizes_text
    integer(int64) :: batches
    integer :: i, k
    sizes_text = '1:1048576'
    batches = 0
    i = 1
    do while (i <= cc_nargs())
      arg = cc_arg(i)
      select case (arg)
      case ('--help')
        call cc_help(print_usage)
      case ('--sizes')
        sizes_text = cc_next_value(i)
      case ('--iters')
        sw%iters = cc_parse_int('--iters', cc_next_value(i), 1_int64, 1000000000_int64)
      case ('--warmup')
        sw%warmup = cc_parse_int('--warmup', cc_next_value(i), 0_int64, 1000000000_int64)
      case ('--batches')
        batches = cc_parse_int('--batches', cc_next_value(i), 1_int64, 1000000000_int64)
      case ('--floor')
        sw%floor = floor_mode(cc_next_value(i))
      case ('--inject-error')
        sw%inject = .true.
      case default
        call cc_unknown_option(arg)
      end select
      i = i + 1
    end do
    sw%batches = cc_batch_count(batches, sw%iters)
    call cc_parse_sizes('--sizes', sizes_text, sw%sizes)
    do k = 1, size(sw%sizes)
      if (sw%sizes(k) > huge(0)) call cc_usage_error('--sizes: ' // cc_str(sw%sizes(k)) // &
          ' bytes do not fit in one message (at most ' // cc_str(huge(0)) // ')')
    end do
    if (cc_size() /= 2) call cc_usage_error(kernel // ' needs exactly 2 ranks, got ' // &
                                            cc_str(cc_size()))
  end subroutine

  integer function floor_mode(text)
    character(len=*), intent(in) :: text
    select case (text)
    case ('yes')
      floor_mode = FLOOR_YES
    case ('no')
      floor_mode = FLOOR_NO
    case ('tcp')
      floor_mode = FLOOR_TCP
    case default
      floor_mode = FLOOR_NO
      call cc_usage_error("--floor: '" // text // "' is not yes, no or tcp")
    end select
  end function

  ! The floor of this sweep on MPI_COMM_WORLD (collective; see common/cc_floor.h).
  type(c_ptr) function cc_floor_open(sw)
    type(cc_sweep), intent(in) :: sw
    cc_floor_open = floor_open_c(int(CC_FINT(MPI_COMM_WORLD), c_int), &
                                 int(maxval(sw%sizes), c_int64_t), int(sw%floor, c_int))
  end function

  ! Starts the floor at size nbytes, if the sweep wants it there (collective): one floor batch
  ! then follows each MPI batch (cc_floor_batch), and cc_floor_end prints it.
  subroutine cc_floor_begin(f, sw, nbytes)
    type(c_ptr), intent(in) :: f
    type(cc_sweep), intent(in) :: sw
    integer(int64), intent(in) :: nbytes
    integer(c_int64_t), allocatable :: sizes(:)
    sizes = int(sw%sizes, c_int64_t)
    call floor_begin_c(f, int(nbytes, c_int64_t), int(sw%warmup, c_int64_t), &
                       int(sw%batches, c_int), &
                       floor_wanted_c(int(nbytes, c_int64_t), sizes, int(size(sizes), c_int)))
  end subroutine

  subroutine cc_floor_batch(f, count)
    type(c_ptr), intent(in) :: f
    integer(int64), intent(in) :: count
    call floor_batch_c(f, int(count, c_int64_t))
  end subroutine

  integer(int8) function pattern(nbytes, sender, j)
    integer(int64), intent(in) :: nbytes, j
    integer, intent(in) :: sender
    pattern = int(iand(j * 13 + ishft(j, -8) + nbytes * 7 + sender * 101 + 1, 255_int64) - 128, &
                  int8)
  end function

  ! The byte at offset j of message `seq` from `sender`.
  integer(int8) function cc_payload_byte(nbytes, sender, seq, j)
    integer(int64), intent(in) :: nbytes, seq, j
    integer, intent(in) :: sender
    integer(int64) :: stamp, b
    if (nbytes < 16) then
      b = mod(j, 8_int64)
    else if (j < 8) then
      b = j
    else if (j >= nbytes - 8) then
      b = j - (nbytes - 8)
    else
      cc_payload_byte = pattern(nbytes, sender, j)
      return
    end if
    stamp = ieor(ieor(seq * 1000003_int64, ishft(nbytes, 1)), int(sender, int64))
    cc_payload_byte = int(ibits(stamp, int(8 * b), 8) - 128, int8)
  end function

  ! The message body, stamps aside: once per size, outside the timing.
  subroutine cc_payload_fill(buf, nbytes, sender)
    integer(int8), intent(inout) :: buf(0:)
    integer(int64), intent(in) :: nbytes
    integer, intent(in) :: sender
    integer(int64) :: j
    do j = 0, nbytes - 1
      buf(j) = pattern(nbytes, sender, j)
    end do
  end subroutine

  subroutine cc_payload_stamp(buf, nbytes, sender, seq)
    integer(int8), intent(inout) :: buf(0:)
    integer(int64), intent(in) :: nbytes, seq
    integer, intent(in) :: sender
    integer(int64) :: j
    do j = 0, min(nbytes, 8_int64) - 1
      buf(j) = cc_payload_byte(nbytes, sender, seq, j)
    end do
    do j = merge(8_int64, nbytes - 8, nbytes < 16), nbytes - 1
      buf(j) = cc_payload_byte(nbytes, sender, seq, j)
    end do
  end subroutine

  ! Offset of the first wrong byte of the whole message, or of its stamped ends only;
  ! nbytes when there is none.
  integer(int64) function cc_payload_mismatch(buf, nbytes, sender, seq, whole) result(j)
    integer(int8), intent(in) :: buf(0:)
    integer(int64), intent(in) :: nbytes, seq
    integer, intent(in) :: sender
    logical, intent(in) :: whole
    j = 0
    do while (j < nbytes)
      if (.not. whole .and. nbytes >= 16 .and. j == 8) j = nbytes - 8
      if (buf(j) /= cc_payload_byte(nbytes, sender, seq, j)) return
      j = j + 1
    end do
  end function

end module cc_payload
