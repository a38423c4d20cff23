! Ping-pong between two ranks (seeds 000/004 and 001; Parkbench COMMS1 of seed 003):
! rank 0 sends a message, rank 1 sends one back; round trips are timed per size in batches,
! and the median of the batch means is reported.
#include "cc_mpi.h"
! The round trip and what it reads: module state, so that cc_sweep_run can call it.
module pingpong_step
  CC_USE_MPI
  use, intrinsic :: iso_fortran_env, only: output_unit, int64
  use cc_util
  use cc_payload, sbuf => cc_sbuf, rbuf => cc_rbuf
  implicit none
  type(cc_sweep) :: sw
  integer :: rank, peer

contains

  subroutine round_trip(nbytes, it)
    integer(int64), intent(in) :: nbytes, it
    integer :: ierr
    call cc_payload_stamp(sbuf, nbytes, rank, seq(it))
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
    call check(nbytes, it, .false.)
  end subroutine

  ! Warm-up iterations are numbered -warmup..-1, timed ones 0..iters-1.
  integer(int64) function seq(it)
    integer(int64), intent(in) :: it
    seq = it + 2147483648_int64
  end function

  subroutine check(nbytes, it, whole)
    integer(int64), intent(in) :: nbytes, it
    logical, intent(in) :: whole
    integer(int64) :: j
    character(len=:), allocatable :: phase
    j = cc_payload_mismatch(rbuf, nbytes, peer, seq(it), whole)
    if (j == nbytes) return
    phase = ''
    if (it < 0) phase = ' (warm-up)'
    call cc_validation_error('size ' // cc_str(nbytes) // ', iteration ' // cc_str(it) // phase // &
      ', byte ' // cc_str(j) // ': got ' // cc_str(rbuf(j) + 128_int64) // ', expected ' // &
      cc_str(cc_payload_byte(nbytes, peer, seq(it), j) + 128_int64))
  end subroutine

  ! The whole payload of the last round trip's answer.
  subroutine check_last(nbytes, it)
    integer(int64), intent(in) :: nbytes, it
    call check(nbytes, it, .true.)
  end subroutine

  subroutine explain()
    write(output_unit, '(a)') '# pingpong: per size MPI_Barrier, ' // &
      cc_str(sw%warmup) // ' untimed round trips, then ' // cc_str(sw%iters) // &
      ' round trips in ' // cc_str(sw%batches) // ' batches of consecutive ones, MPI_Wtime ' // &
      'around each batch; rtt_us = median of the batch means, rtt_mean_us = all batches'' ' // &
      'time/iters, oneway_us = rtt_us/2, bw_MBps = size/oneway_us (10^6 B/s); ' // &
      'validated = received messages checked (iteration stamp in first/last 8 bytes of each, ' // &
      'whole payload of the last)'
  end subroutine

  subroutine print_usage()
    write(output_unit, '(a)') 'Usage: pingpong-f [options]   (exactly 2 ranks)', &
      'Rank 0 sends a message, rank 1 answers; round-trip time per message size, the median', &
      'of the mean times of batches of consecutive round trips.', &
      '  --sizes LIST    sizes in bytes: a list 8,64,512 or a power-of-two range lo:hi,', &
      '                  k/m suffixes mean KiB/MiB (default 1:1048576, 21 sizes)', &
      '  --iters N       timed round trips per size (default 1000)', &
      '  --warmup N      untimed round trips per size before timing (default 100)', &
      '  --batches B     split the timed round trips into B batches, each timed on its own', &
      '                  (default 10, or N if --iters N is smaller; at most --iters)', &
      '  --floor yes|no|tcp  measure the hardware floor (same ranks, same cores, no MPI)', &
      '                  a batch after each MPI batch of the smallest and largest sizes, 8 B,', &
      '                  1 KiB and 1 MiB: shared memory on one node, TCP between nodes;', &
      '                  tcp forces TCP on one node (default yes; FLOOR records)', &
      '  --inject-error  self-test: corrupt one received byte, validation must fail (exit 3)', &
      '  --help          print this text'
  end subroutine

end module

program pingpong
  use cc_util, only: cc_init, cc_rank
  use cc_payload, only: cc_sweep_args, cc_sweep_run
  use pingpong_step
  implicit none

  call cc_init()
  call cc_sweep_args('pingpong', print_usage, sw)
  rank = cc_rank()
  peer = 1 - rank
  call cc_sweep_run(sw, 'pingpong', explain, round_trip, messages=1, time='rtt', &
                    message='oneway', per_time=2, check_last=check_last)

end program
