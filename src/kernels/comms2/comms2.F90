! Simultaneous exchange between two ranks (Parkbench COMMS2 of seed 003): both ranks send
! at once, so the link is used in both directions; exchanges are timed per size in batches,
! and the median of the batch means is reported.
#include "cc_mpi.h"
! The exchange and what it reads: module state, so that cc_sweep_run can call it.
module comms2_step
  CC_USE_MPI
  use, intrinsic :: iso_fortran_env, only: output_unit, int64
  use cc_util
  use cc_payload, sbuf => cc_sbuf, rbuf => cc_rbuf
  implicit none
  type(cc_sweep) :: sw
  integer :: rank, peer

contains

  ! One iteration: two rounds in which each rank receives while it sends (4 messages).
  subroutine exchange(nbytes, it)
    integer(int64), intent(in) :: nbytes, it
    integer :: round, ierr
    CC_REQUEST :: req
    do round = 0, 1
      call cc_payload_stamp(sbuf, nbytes, rank, seq(it, round))
      call MPI_Irecv(rbuf, int(nbytes), MPI_BYTE, peer, round, MPI_COMM_WORLD, req, ierr)
      call cc_check(ierr, 'MPI_Irecv')
      call MPI_Send(sbuf, int(nbytes), MPI_BYTE, peer, round, MPI_COMM_WORLD, ierr)
      call cc_check(ierr, 'MPI_Send')
      call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
      call cc_check(ierr, 'MPI_Wait')
      call check(nbytes, it, round, .false.)
    end do
  end subroutine

  ! Warm-up iterations are numbered -warmup..-1, timed ones 0..iters-1; two rounds each.
  integer(int64) function seq(it, round)
    integer(int64), intent(in) :: it
    integer, intent(in) :: round
    seq = 2 * it + round + 4294967296_int64
  end function

  subroutine check(nbytes, it, round, whole)
    integer(int64), intent(in) :: nbytes, it
    integer, intent(in) :: round
    logical, intent(in) :: whole
    integer(int64) :: j
    character(len=:), allocatable :: phase
    j = cc_payload_mismatch(rbuf, nbytes, peer, seq(it, round), whole)
    if (j == nbytes) return
    phase = ''
    if (it < 0) phase = ' (warm-up)'
    call cc_validation_error('size ' // cc_str(nbytes) // ', iteration ' // cc_str(it) // phase // &
      ', round ' // cc_str(round) // ', byte ' // cc_str(j) // ': got ' // &
      cc_str(rbuf(j) + 128_int64) // ', expected ' // &
      cc_str(cc_payload_byte(nbytes, peer, seq(it, round), j) + 128_int64))
  end subroutine

  ! The whole payload of the last exchange's second round.
  subroutine check_last(nbytes, it)
    integer(int64), intent(in) :: nbytes, it
    call check(nbytes, it, 1, .true.)
  end subroutine

  subroutine explain()
    write(output_unit, '(a)') '# comms2: one iteration = 2 rounds of (MPI_Irecv, ' // &
      'MPI_Send, MPI_Wait) on both ranks at once = 4 messages; per size MPI_Barrier, ' // &
      cc_str(sw%warmup) // ' untimed iterations, then ' // cc_str(sw%iters) // ' iterations in ' // &
      cc_str(sw%batches) // ' batches of consecutive ones, MPI_Wtime around each batch; ' // &
      'exchange_us = median of the batch means, exchange_mean_us = all batches'' time/iters, ' // &
      'msg_us = exchange_us/4 (Parkbench COMMS2), bw_MBps = size/msg_us (10^6 B/s); validated ' // &
      '= received messages checked (iteration stamp in first/last 8 bytes of each, whole ' // &
      'payload of the last)'
  end subroutine

  subroutine print_usage()
    write(output_unit, '(a)') 'Usage: comms2-f [options]   (exactly 2 ranks)', &
      'Both ranks send to each other at once (full duplex), two rounds per iteration;', &
      'iteration time per message size, the median of the mean times of batches of', &
      'consecutive iterations.', &
      '  --sizes LIST    sizes in bytes: a list 8,64,512 or a power-of-two range lo:hi,', &
      '                  k/m suffixes mean KiB/MiB (default 1:1048576, 21 sizes)', &
      '  --iters N       timed iterations per size (default 1000)', &
      '  --warmup N      untimed iterations per size before timing (default 100)', &
      '  --batches B     split the timed iterations into B batches, each timed on its own', &
      '                  (default 10, or N if --iters N is smaller; at most --iters)', &
      '  --floor yes|no|tcp  measure the hardware floor (same ranks, same cores, no MPI)', &
      '                  a batch after each MPI batch of the smallest and largest sizes, 8 B,', &
      '                  1 KiB and 1 MiB: shared memory on one node, TCP between nodes;', &
      '                  tcp forces TCP on one node (default yes; FLOOR records)', &
      '  --inject-error  self-test: corrupt one received byte, validation must fail (exit 3)', &
      '  --help          print this text'
  end subroutine

end module

program comms2
  use cc_util, only: cc_init, cc_rank
  use cc_payload, only: cc_sweep_args, cc_sweep_run
  use comms2_step
  implicit none

  call cc_init()
  call cc_sweep_args('comms2', print_usage, sw)
  rank = cc_rank()
  peer = 1 - rank
  call cc_sweep_run(sw, 'comms2', explain, exchange, messages=2, time='exchange', &
                    message='msg', per_time=4, check_last=check_last)

end program
