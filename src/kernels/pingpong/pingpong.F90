! Ping-pong between two ranks (seeds 000/004 and 001; Parkbench COMMS1 of seed 003):
! rank 0 sends a message, rank 1 sends one back; the mean round trip is timed per size.
#include "cc_mpi.h"
program pingpong
  CC_USE_MPI
  use, intrinsic :: iso_fortran_env, only: output_unit, int8, int64, real64
  use cc_util
  implicit none
  character(len=:), allocatable :: arg, sizes_text
  integer(int64), allocatable :: sizes(:)
  integer(int8), allocatable :: sbuf(:), rbuf(:)
  integer(int64) :: iters, warmup, nbytes, it, j, validated, total
  real(real64) :: t0, rtt_us, oneway_us
  logical :: inject
  integer :: i, k, rank, peer, ierr

  call cc_init()
  sizes_text = '1:1048576'
  iters = 1000
  warmup = 100
  inject = .false.
  i = 1
  do while (i <= cc_nargs())
    arg = cc_arg(i)
    select case (arg)
    case ('--help')
      if (cc_rank() == 0) call print_usage()
      call MPI_Finalize(ierr)
      call cc_check(ierr, 'MPI_Finalize')
      stop
    case ('--sizes')
      sizes_text = next_value(i)
    case ('--iters')
      iters = cc_parse_int('--iters', next_value(i), 1_int64, 1000000000_int64)
    case ('--warmup')
      warmup = cc_parse_int('--warmup', next_value(i), 0_int64, 1000000000_int64)
    case ('--inject-error')
      inject = .true.
    case default
      call cc_usage_error("unknown option '" // arg // "' (see --help)")
    end select
    i = i + 1
  end do
  call cc_parse_sizes('--sizes', sizes_text, sizes)
  do k = 1, size(sizes)
    if (sizes(k) > huge(0)) call cc_usage_error('--sizes: ' // str(sizes(k)) // &
        ' bytes do not fit in one message (at most ' // str(int(huge(0), int64)) // ')')
  end do
  if (cc_size() /= 2) call cc_usage_error('pingpong needs exactly 2 ranks, got ' // &
                                          str(int(cc_size(), int64)))

  rank = cc_rank()
  peer = 1 - rank
  ! Zero-based like the byte offsets in the messages.
  allocate(sbuf(0:maxval(sizes) - 1), rbuf(0:maxval(sizes) - 1))
  if (rank == 0) write(output_unit, '(a)') '# pingpong: per size MPI_Barrier, ' // str(warmup) // &
    ' untimed round trips, then MPI_Wtime around ' // str(iters) // ' round trips; ' // &
    'rtt_us = elapsed/iters, oneway_us = rtt_us/2, bw_MBps = size/oneway_us (10^6 B/s); ' // &
    'validated = received messages checked (iteration stamp in first/last 8 bytes of each, ' // &
    'whole payload of the last)'
  call cc_print_meta('pingpong', 'iters=' // str(iters) // ' warmup=' // str(warmup) // &
                     ' sizes=' // str(int(size(sizes), int64)))

  validated = 0
  do k = 1, size(sizes)
    nbytes = sizes(k)
    do j = 0, nbytes - 1
      sbuf(j) = pattern(nbytes, rank, j)
    end do
    rbuf(0:nbytes - 1) = 0
    call MPI_Barrier(MPI_COMM_WORLD, ierr)
    call cc_check(ierr, 'MPI_Barrier')
    do it = -warmup, -1
      call round_trip(nbytes, it)
    end do
    t0 = MPI_Wtime()
    do it = 0, iters - 1
      call round_trip(nbytes, it)
    end do
    rtt_us = (MPI_Wtime() - t0) / real(iters, real64) * 1.0e6_real64

    ! The middle byte lies outside the stamps, so only the whole-payload check sees it.
    if (inject .and. rank == 0 .and. k == 1) rbuf(nbytes / 2) = not(rbuf(nbytes / 2))
    call check(nbytes, peer, iters - 1, 0_int64, nbytes)
    validated = validated + warmup + iters
    if (rank == 0) then
      oneway_us = rtt_us / 2
      write(output_unit, '(a)') 'DATA size=' // str(nbytes) // ' iters=' // str(iters) // &
        ' rtt_us=' // fix(rtt_us) // ' oneway_us=' // fix(oneway_us) // &
        ' bw_MBps=' // fix(real(nbytes, real64) / oneway_us)
      flush(output_unit)
    end if
  end do

  call MPI_Reduce(validated, total, 1, MPI_INTEGER8, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  call cc_check(ierr, 'MPI_Reduce')
  if (rank == 0) write(output_unit, '(a)') 'PASS validated=' // str(total)
  call MPI_Finalize(ierr)
  call cc_check(ierr, 'MPI_Finalize')

contains

  subroutine round_trip(nbytes, it)
    integer(int64), intent(in) :: nbytes, it
    call stamp(nbytes, it)
    if (rank == 0) then
      call MPI_Send(sbuf, int(nbytes), MPI_BYTE, peer, 0, MPI_COMM_WORLD, ierr)
      call cc_check(ierr, 'MPI_Send')
      call MPI_Recv(rbuf, int(nbytes), MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
      call cc_check(ierr, 'MPI_Recv')
    else
      call MPI_Recv(rbuf, int(nbytes), MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
      call cc_check(ierr, 'MPI_Recv')
      call MPI_Send(sbuf, int(nbytes), MPI_BYTE, peer, 0, MPI_COMM_WORLD, ierr)
      call cc_check(ierr, 'MPI_Send')
    end if
    if (nbytes < 16) then
      call check(nbytes, peer, it, 0_int64, nbytes)
    else
      call check(nbytes, peer, it, 0_int64, 8_int64)
      call check(nbytes, peer, it, nbytes - 8, nbytes)
    end if
  end subroutine

  ! The payload depends on size and sender, so a message of the wrong size or from the wrong
  ! rank is caught, not only a missing one. Bytes are stored as value - 128 to fit int8.
  integer(int8) function pattern(nbytes, sender, j)
    integer(int64), intent(in) :: nbytes, j
    integer, intent(in) :: sender
    pattern = int(iand(j * 13 + ishft(j, -8) + nbytes * 7 + sender * 101 + 1, 255_int64) - 128, int8)
  end function

  ! Each message also carries a stamp of its iteration in its first and last 8 bytes (all of
  ! it when shorter than 16 bytes): a buffer left over from an earlier iteration is caught.
  ! Warm-up iterations are numbered -warmup..-1, timed ones 0..iters-1.
  integer(int8) function expected(nbytes, sender, it, j)
    integer(int64), intent(in) :: nbytes, it, j
    integer, intent(in) :: sender
    integer(int64) :: stamp_value, b
    if (nbytes < 16) then
      b = mod(j, 8_int64)
    else if (j < 8) then
      b = j
    else if (j >= nbytes - 8) then
      b = j - (nbytes - 8)
    else
      expected = pattern(nbytes, sender, j)
      return
    end if
    stamp_value = ieor(ieor((it + 2147483648_int64) * 1000003_int64, ishft(nbytes, 1)), &
                       int(sender, int64))
    expected = int(ibits(stamp_value, int(8 * b), 8) - 128, int8)
  end function

  subroutine stamp(nbytes, it)
    integer(int64), intent(in) :: nbytes, it
    integer(int64) :: j
    do j = 0, min(nbytes, 8_int64) - 1
      sbuf(j) = expected(nbytes, rank, it, j)
    end do
    do j = merge(8_int64, nbytes - 8, nbytes < 16), nbytes - 1
      sbuf(j) = expected(nbytes, rank, it, j)
    end do
  end subroutine

  subroutine check(nbytes, sender, it, lo, hi)
    integer(int64), intent(in) :: nbytes, it, lo, hi
    integer, intent(in) :: sender
    integer(int64) :: j
    integer(int8) :: want
    character(len=:), allocatable :: phase
    do j = lo, hi - 1
      want = expected(nbytes, sender, it, j)
      if (rbuf(j) /= want) then
        phase = ''
        if (it < 0) phase = ' (warm-up)'
        call cc_validation_error('size ' // str(nbytes) // ', iteration ' // str(it) // phase // &
          ', byte ' // str(j) // ': got ' // str(rbuf(j) + 128_int64) // ', expected ' // &
          str(want + 128_int64))
      end if
    end do
  end subroutine

  function next_value(i) result(text)
    integer, intent(inout) :: i
    character(len=:), allocatable :: text
    if (i + 1 > cc_nargs()) call cc_usage_error(cc_arg(i) // ' needs a value')
    i = i + 1
    text = cc_arg(i)
  end function

  function str(n) result(text)
    integer(int64), intent(in) :: n
    character(len=:), allocatable :: text
    character(len=24) :: buf
    write(buf, '(i0)') n
    text = trim(buf)
  end function

  function fix(x) result(text)
    real(real64), intent(in) :: x
    character(len=:), allocatable :: text
    character(len=32) :: buf
    write(buf, '(f32.4)') x
    text = trim(adjustl(buf))
  end function

  subroutine print_usage()
    write(output_unit, '(a)') 'Usage: pingpong-f [options]   (exactly 2 ranks)', &
      'Rank 0 sends a message, rank 1 answers; mean round-trip time per message size.', &
      '  --sizes LIST    sizes in bytes: a list 8,64,512 or a power-of-two range lo:hi,', &
      '                  k/m suffixes mean KiB/MiB (default 1:1048576, 21 sizes)', &
      '  --iters N       timed round trips per size (default 1000)', &
      '  --warmup N      untimed round trips per size before timing (default 100)', &
      '  --inject-error  self-test: corrupt one received byte, validation must fail (exit 3)', &
      '  --help          print this text'
  end subroutine

end program
