! Helpers shared by the Fortran kernels: checked MPI calls, argument parsing, records.
! Conventions (records, exit codes) are described in ../README.md.
#include "cc_mpi.h"
module cc_util
  CC_USE_MPI
  use, intrinsic :: iso_fortran_env, only: error_unit, output_unit, int64, real64
  implicit none
  private
  public :: cc_init, cc_rank, cc_size, cc_check, cc_usage_error, cc_validation_error, &
            cc_arg, cc_nargs, cc_parse_int, cc_parse_bytes, cc_parse_sizes, cc_print_meta, &
            CC_EXIT_USAGE, CC_EXIT_VALIDATION, CC_EXIT_MPI

  integer, parameter :: CC_EXIT_USAGE = 2, CC_EXIT_VALIDATION = 3, CC_EXIT_MPI = 4
  integer, parameter :: MAX_SIZES = 64

contains

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
    call MPI_Abort(MPI_COMM_WORLD, CC_EXIT_MPI, ignored)
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
    integer :: ierr
    double precision :: until
    write(error_unit, '(a,i0,a)') 'ERROR: validation failed on rank ', cc_rank(), ': ' // msg
    flush(error_unit)
    ! Give the launcher a moment to relay the line: hydra may kill the job on MPI_Abort first.
    until = MPI_Wtime() + 0.3d0
    do while (MPI_Wtime() < until)
    end do
    call MPI_Abort(MPI_COMM_WORLD, CC_EXIT_VALIDATION, ierr)
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

  integer(int64) function cc_parse_int(opt, text, lo, hi) result(v)
    character(len=*), intent(in) :: opt, text
    integer(int64), intent(in) :: lo, hi
    integer :: ios
    character(len=32) :: lo_s, hi_s
    if (len_trim(text) == 0 .or. verify(trim(text), '-0123456789') /= 0) &
      call cc_usage_error(opt // ": '" // text // "' is not a whole number")
    read(text, *, iostat=ios) v
    if (ios /= 0) call cc_usage_error(opt // ": '" // text // "' is not a whole number")
    if (v < lo .or. v > hi) then
      write(lo_s, '(i0)') lo
      write(hi_s, '(i0)') hi
      call cc_usage_error(opt // ": " // text // " is out of range [" // trim(lo_s) // ", " &
                          // trim(hi_s) // "]")
    end if
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

end module cc_util
