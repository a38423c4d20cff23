! dtype: ping-pong of non-contiguous data (seed 003, commByte / commDouble).
! Rank 0 sends and receives the echo in the layout of --send-mode, rank 1 receives and echoes
! in the layout of --recv-mode. Of `count` useful elements, element k (from 0) lives in block
! k / blocklen, and block b (from 0) starts at element b * stride of the user buffer.
#include "cc_mpi.h"
program dtype
  CC_USE_MPI
  use, intrinsic :: iso_fortran_env, only: int8, int64, real64, output_unit, error_unit
  use cc_util
  implicit none

  integer, parameter :: CONTIG = 1, STRIDE = 2, LOOP = 3, PACK = 4, SUBARRAY = 5
  character(len=8), parameter :: mode_name(5) = &
    [character(len=8) :: 'contig', 'stride', 'loop', 'pack', 'subarray']
  ! Stored byte values are -125..125 and doubles whole numbers >= 0: the gap value never occurs.
  real(real64), parameter :: BYTE_GAP = -128, DOUBLE_GAP = -1

  type :: opts
    logical :: dbl = .false., inject = .false.
    integer :: stride, blocklen = 1, iters = 200, warmup = 20, batches
    integer :: mode(0:1) = [CONTIG, CONTIG]   ! layout of rank 0 (--send-mode), rank 1 (--recv-mode)
    integer(int64), allocatable :: sizes(:)
  end type

  ! The elements of one buffer: only the array of the run's element type is allocated.
  type :: elems
    integer(int8), allocatable :: b(:)
    real(real64), allocatable :: d(:)
  end type

  ! One rank's layout for one message size.
  type :: layout
    integer :: mode, peer, count, blocklen, stride, nblocks, slots, pack_bytes
    logical :: dbl
    CC_DATATYPE :: elem, dtype        ! dtype: vector (stride, pack) or subarray view
    type(elems) :: scratch            ! loop: the contiguous copy
    integer(int8), allocatable :: packed(:)
  end type

  type(opts) :: o
  integer :: s, rank, ierr
  integer(int64) :: checked, total
  real(real64) :: t_begin, wait_begin, wait
  character(len=200) :: extra

  call cc_init()
  call parse_args(o)
  rank = cc_rank()
  if (rank == 0) then
    write(output_unit, '(a)') '# dtype: rank 0 times each round trip with MPI_Wtime (warmup ' // &
      'excluded) and sums the times of ' // cc_str(o%batches) // ' batches of consecutive ' // &
      'round trips; rtt_us = median of the batch means, rtt_mean_us = all batches'' ' // &
      'time/iters, oneway_us = rtt_us/2, bw_MBps = useful bytes / oneway_us; size counts ' // &
      'useful bytes only; loop and pack copies are inside the timing'
    flush(output_unit)
  end if
  write(extra, '(a,i0,a,i0,5a,i0,a,i0,a,i0)') 'type=' // trim(merge('double', 'byte  ', o%dbl)) // &
    ' stride=', o%stride, ' blocklen=', o%blocklen, ' send_mode=', trim(mode_name(o%mode(0))), &
    ' recv_mode=', trim(mode_name(o%mode(1))), ' iters=', o%iters, ' warmup=', o%warmup, &
    ' batches=', o%batches
  call cc_print_meta('dtype', trim(extra))

  checked = 0
  t_begin = MPI_Wtime()
  wait_begin = cc_run_delay_s()
  do s = 1, size(o%sizes)
    checked = checked + run_size(o, o%sizes(s), s == 1, rank)
  end do
  wait = cc_cpu_wait(t_begin, wait_begin)
  call MPI_Reduce(checked, total, 1, MPI_INTEGER8, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  call cc_check(ierr, 'MPI_Reduce')
  ! the sweep's share of waiting for a CPU, both ranks' max
  if (rank == 0 .and. wait >= 0) write(output_unit, '(a,f6.4)') 'WAIT cpu_wait=', wait
  if (rank == 0) write(output_unit, '(a,i0)') 'PASS validated=', total
  call MPI_Finalize(ierr)
  call cc_check(ierr, 'MPI_Finalize')

contains

  subroutine usage()
    write(output_unit, '(a)') &
      'usage: dtype-f [options]   (exactly 2 ranks)', &
      'Ping-pong of non-contiguous data: rank 0 sends in the layout of --send-mode and', &
      'receives the echo in it, rank 1 receives and echoes in the layout of --recv-mode.', &
      'Block b of the user buffer starts at element b*stride and holds blocklen elements.', &
      '  --type byte|double   element type (default byte)', &
      '  --stride S           elements from block to block (default 64 byte, 8 double)', &
      '  --blocklen B         consecutive elements per block, B <= S (default 1)', &
      '  --send-mode M        rank 0 layout (default contig)', &
      '  --recv-mode M        rank 1 layout (default contig)', &
      '      M: contig   elements packed in user memory, sent as count x type', &
      '         stride   one MPI_Type_vector over the strided buffer', &
      '         loop     hand copy to/from a contiguous buffer (copies are timed)', &
      '         pack     MPI_Pack/MPI_Unpack with the vector type, sent as MPI_PACKED', &
      '         subarray one MPI_Type_create_subarray view (stride x nblocks array,', &
      '                  first B rows)', &
      '  --sizes LIST         useful payload bytes, multiples of element size x B:', &
      "                       '8,64' or power-of-two range 'lo:hi' (default 8:65536)", &
      '  --iters N            timed round trips per size (default 200)', &
      '  --warmup N           untimed round trips before them (default 20)', &
      '  --batches B          split the timed round trips into B batches of consecutive', &
      '                       ones (default 10, or N if --iters N is smaller; at most', &
      '                       --iters); rtt_us is the median of the batch means', &
      '  --inject-error       self-test: corrupt one received element so that the', &
      '                       validation must fail (exit 3)', &
      '  --help               this text', &
      'Records: META, one DATA per size, WAIT cpu_wait=<the sweep''s share waiting for a CPU>,', &
      'PASS validated=<elements checked on both ranks>.'
  end subroutine

  integer function parse_mode(opt, text)
    character(len=*), intent(in) :: opt, text
    integer :: m
    do m = CONTIG, SUBARRAY
      parse_mode = m
      if (text == trim(mode_name(m))) return
    end do
    call cc_usage_error(opt // ": unknown mode '" // text // &
                        "' (contig, stride, loop, pack, subarray)")
  end function

  subroutine parse_args(o)
    type(opts), intent(out) :: o
    character(len=:), allocatable :: opt, val, typ, stride_text, sizes_text
    integer(int64), parameter :: INT_MAX = huge(1)
    integer(int64) :: esize, block, nblocks, batches
    integer :: i, k
    logical :: have_stride
    character(len=80) :: num
    have_stride = .false.
    batches = 0
    typ = 'byte'
    stride_text = ''
    sizes_text = '8:65536'
    i = 1
    do while (i <= cc_nargs())
      opt = cc_arg(i)
      select case (opt)
      case ('--help')
        call cc_help(usage)
      case ('--inject-error')
        o%inject = .true.
      case ('--type', '--stride', '--blocklen', '--send-mode', '--recv-mode', '--sizes', &
            '--iters', '--warmup', '--batches')
        val = cc_next_value(i)
        select case (opt)
        case ('--type');      typ = val
        case ('--stride');    stride_text = val
          have_stride = .true.
        case ('--blocklen');  o%blocklen = int(cc_parse_int(opt, val, 1_int64, INT_MAX))
        case ('--send-mode'); o%mode(0) = parse_mode(opt, val)
        case ('--recv-mode'); o%mode(1) = parse_mode(opt, val)
        case ('--sizes');     sizes_text = val
        case ('--iters');     o%iters = int(cc_parse_int(opt, val, 1_int64, 1000000000_int64))
        case ('--warmup');    o%warmup = int(cc_parse_int(opt, val, 0_int64, 1000000000_int64))
        case ('--batches');   batches = cc_parse_int(opt, val, 1_int64, 1000000000_int64)
        end select
      case default
        call cc_unknown_option(opt)
      end select
      i = i + 1
    end do
    o%batches = cc_batch_count(batches, int(o%iters, int64))
    select case (typ)
    case ('byte');   o%dbl = .false.
    case ('double'); o%dbl = .true.
    case default;    call cc_usage_error("--type: unknown type '" // typ // "' (byte, double)")
    end select
    if (have_stride) then
      o%stride = int(cc_parse_int('--stride', stride_text, 1_int64, INT_MAX))
    else
      o%stride = merge(8, 64, o%dbl)
    end if
    write(num, '(i0,a,i0)') o%stride, ' is smaller than --blocklen ', o%blocklen
    if (o%stride < o%blocklen) call cc_usage_error('--stride ' // trim(num))

    call cc_parse_sizes('--sizes', sizes_text, o%sizes)
    esize = merge(8, 1, o%dbl)
    block = esize * o%blocklen
    do k = 1, size(o%sizes)
      nblocks = o%sizes(k) / block
      write(num, '(i0,a,i0,a)') o%sizes(k), ' is not a multiple of ', block, ' bytes'
      if (mod(o%sizes(k), block) /= 0) &
        call cc_usage_error('--sizes: ' // trim(num) // ' (element size x blocklen)')
      write(num, '(i0,a)') o%sizes(k), ' bytes need more than huge(1) buffer elements'
      if (nblocks > INT_MAX / o%stride) call cc_usage_error('--sizes: ' // trim(num))
    end do
    write(num, '(i0)') cc_size()
    if (cc_size() /= 2) call cc_usage_error('dtype needs exactly 2 ranks, got ' // trim(num))
  end subroutine

  ! Out of memory on one rank only: no collective exit is possible, so abort with the usage code.
  subroutine alloc_elems(x, dbl, n)
    type(elems), intent(inout) :: x
    logical, intent(in) :: dbl
    integer, intent(in) :: n
    integer :: stat
    if (dbl) then
      allocate(x%d(n), stat=stat)
    else
      allocate(x%b(n), stat=stat)
    end if
    if (stat /= 0) then
      write(error_unit, '(a,i0,a)') 'ERROR: cannot allocate ', n, ' buffer elements'
      call cc_abort(CC_EXIT_USAGE)
    end if
  end subroutine

  subroutine layout_init(l, o, bytes, rank)
    type(layout), intent(out) :: l
    type(opts), intent(in) :: o
    integer(int64), intent(in) :: bytes
    integer, intent(in) :: rank
    integer :: ierr
    l%mode = o%mode(rank)
    l%peer = 1 - rank
    l%dbl = o%dbl
    l%blocklen = o%blocklen
    l%stride = o%stride
    l%count = int(bytes / merge(8, 1, o%dbl))
    l%nblocks = l%count / l%blocklen
    l%slots = merge(l%count, l%nblocks * l%stride, l%mode == CONTIG)
    l%elem = merge(MPI_DOUBLE_PRECISION, MPI_BYTE, o%dbl)
    select case (l%mode)
    case (STRIDE, PACK)
      call MPI_Type_vector(l%nblocks, l%blocklen, l%stride, l%elem, l%dtype, ierr)
      call cc_check(ierr, 'MPI_Type_vector')
    case (SUBARRAY)
      ! Fortran order: a stride x nblocks array, first blocklen rows of every column.
      call MPI_Type_create_subarray(2, [l%stride, l%nblocks], [l%blocklen, l%nblocks], [0, 0], &
                                    MPI_ORDER_FORTRAN, l%elem, l%dtype, ierr)
      call cc_check(ierr, 'MPI_Type_create_subarray')
    end select
    if (has_dtype(l)) then
      call MPI_Type_commit(l%dtype, ierr)
      call cc_check(ierr, 'MPI_Type_commit')
    end if
    if (l%mode == LOOP) call alloc_elems(l%scratch, l%dbl, l%count)
    if (l%mode == PACK) then
      call MPI_Pack_size(1, l%dtype, MPI_COMM_WORLD, l%pack_bytes, ierr)
      call cc_check(ierr, 'MPI_Pack_size')
      allocate(l%packed(l%pack_bytes))
    end if
  end subroutine

  logical function has_dtype(l)
    type(layout), intent(in) :: l
    has_dtype = l%mode == STRIDE .or. l%mode == PACK .or. l%mode == SUBARRAY
  end function

  subroutine layout_free(l)
    type(layout), intent(inout) :: l
    integer :: ierr
    if (has_dtype(l)) then
      call MPI_Type_free(l%dtype, ierr)
      call cc_check(ierr, 'MPI_Type_free')
    end if
  end subroutine

  ! The LOOP mode's hand copies, typed as an application would write them: one strided sweep
  ! per position in the block, like the seed's DO loop over a row of a column-major matrix.
  subroutine gather(l, user)
    type(layout), intent(inout) :: l
    type(elems), intent(in) :: user
    integer :: b, j
    if (l%dbl) then
      do j = 1, l%blocklen
        do b = 0, l%nblocks - 1
          l%scratch%d(b * l%blocklen + j) = user%d(b * l%stride + j)
        end do
      end do
    else
      do j = 1, l%blocklen
        do b = 0, l%nblocks - 1
          l%scratch%b(b * l%blocklen + j) = user%b(b * l%stride + j)
        end do
      end do
    end if
  end subroutine

  subroutine scatter(l, user)
    type(layout), intent(in) :: l
    type(elems), intent(inout) :: user
    integer :: b, j
    if (l%dbl) then
      do j = 1, l%blocklen
        do b = 0, l%nblocks - 1
          user%d(b * l%stride + j) = l%scratch%d(b * l%blocklen + j)
        end do
      end do
    else
      do j = 1, l%blocklen
        do b = 0, l%nblocks - 1
          user%b(b * l%stride + j) = l%scratch%b(b * l%blocklen + j)
        end do
      end do
    end if
  end subroutine

  subroutine send_elems(x, n, t, peer)
    type(elems), intent(in) :: x
    integer, intent(in) :: n, peer
    CC_DATATYPE, intent(in) :: t
    integer :: ierr
    if (allocated(x%d)) then
      call MPI_Send(x%d, n, t, peer, 0, MPI_COMM_WORLD, ierr)
    else
      call MPI_Send(x%b, n, t, peer, 0, MPI_COMM_WORLD, ierr)
    end if
    call cc_check(ierr, 'MPI_Send')
  end subroutine

  subroutine recv_elems(x, n, t, peer)
    type(elems), intent(inout) :: x
    integer, intent(in) :: n, peer
    CC_DATATYPE, intent(in) :: t
    integer :: ierr
    if (allocated(x%d)) then
      call MPI_Recv(x%d, n, t, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    else
      call MPI_Recv(x%b, n, t, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
    end if
    call cc_check(ierr, 'MPI_Recv')
  end subroutine

  subroutine send_msg(l, user)
    type(layout), intent(inout) :: l
    type(elems), intent(in) :: user
    integer :: pos, ierr
    select case (l%mode)
    case (CONTIG)
      call send_elems(user, l%count, l%elem, l%peer)
    case (STRIDE, SUBARRAY)
      call send_elems(user, 1, l%dtype, l%peer)
    case (LOOP)
      call gather(l, user)
      call send_elems(l%scratch, l%count, l%elem, l%peer)
    case (PACK)
      pos = 0
      if (l%dbl) then
        call MPI_Pack(user%d, 1, l%dtype, l%packed, l%pack_bytes, pos, MPI_COMM_WORLD, ierr)
      else
        call MPI_Pack(user%b, 1, l%dtype, l%packed, l%pack_bytes, pos, MPI_COMM_WORLD, ierr)
      end if
      call cc_check(ierr, 'MPI_Pack')
      call MPI_Send(l%packed, pos, MPI_PACKED, l%peer, 0, MPI_COMM_WORLD, ierr)
      call cc_check(ierr, 'MPI_Send')
    end select
  end subroutine

  subroutine recv_msg(l, user)
    type(layout), intent(inout) :: l
    type(elems), intent(inout) :: user
    integer :: pos, ierr
    select case (l%mode)
    case (CONTIG)
      call recv_elems(user, l%count, l%elem, l%peer)
    case (STRIDE, SUBARRAY)
      call recv_elems(user, 1, l%dtype, l%peer)
    case (LOOP)
      call recv_elems(l%scratch, l%count, l%elem, l%peer)
      call scatter(l, user)
    case (PACK)
      call MPI_Recv(l%packed, l%pack_bytes, MPI_PACKED, l%peer, 0, MPI_COMM_WORLD, &
                    MPI_STATUS_IGNORE, ierr)
      call cc_check(ierr, 'MPI_Recv')
      pos = 0
      if (l%dbl) then
        call MPI_Unpack(l%packed, l%pack_bytes, pos, user%d, 1, l%dtype, MPI_COMM_WORLD, ierr)
      else
        call MPI_Unpack(l%packed, l%pack_bytes, pos, user%b, 1, l%dtype, MPI_COMM_WORLD, ierr)
      end if
      call cc_check(ierr, 'MPI_Unpack')
    end select
  end subroutine

  ! The stored value of element k (from 0) in round trip `iter` of a message of `bytes` bytes.
  real(real64) function elem_value(l, bytes, iter, k)
    type(layout), intent(in) :: l
    integer(int64), intent(in) :: bytes, iter, k
    integer(int64) :: v
    v = bytes * 31 + iter * 1009 + k
    if (l%dbl) then
      elem_value = real(mod(v, 1000003_int64), real64)
    else
      elem_value = real(mod(v, 251_int64) - 125, real64)
    end if
  end function

  ! Buffer index (from 1) of element k (from 0).
  integer function slot_of(l, k)
    type(layout), intent(in) :: l
    integer(int64), intent(in) :: k
    if (l%mode == CONTIG) then
      slot_of = int(k) + 1
    else
      slot_of = int(k / l%blocklen) * l%stride + int(mod(k, int(l%blocklen, int64))) + 1
    end if
  end function

  real(real64) function get(x, slot)
    type(elems), intent(in) :: x
    integer, intent(in) :: slot
    if (allocated(x%d)) then
      get = x%d(slot)
    else
      get = real(x%b(slot), real64)
    end if
  end function

  subroutine put(x, slot, v)
    type(elems), intent(inout) :: x
    integer, intent(in) :: slot
    real(real64), intent(in) :: v
    if (allocated(x%d)) then
      x%d(slot) = v
    else
      x%b(slot) = int(v, int8)
    end if
  end subroutine

  subroutine fill_values(l, x, bytes, iter)
    type(layout), intent(in) :: l
    type(elems), intent(inout) :: x
    integer(int64), intent(in) :: bytes, iter
    integer(int64) :: k
    do k = 0, l%count - 1
      call put(x, slot_of(l, k), elem_value(l, bytes, iter, k))
    end do
  end subroutine

  subroutine expect(l, x, bytes, iter, k)
    type(layout), intent(in) :: l
    type(elems), intent(in) :: x
    integer(int64), intent(in) :: bytes, iter, k
    character(len=160) :: msg
    if (get(x, slot_of(l, k)) /= elem_value(l, bytes, iter, k)) then
      write(msg, '(a,i0,a,i0,a,i0,a,i0,a,i0)') 'size ', bytes, ' iteration ', iter, ': element ', &
        k, ' is ', nint(get(x, slot_of(l, k)), int64), ', expected ', &
        nint(elem_value(l, bytes, iter, k), int64)
      call cc_validation_error(trim(msg))
    end if
  end subroutine

  ! Every useful element of the last round trip, and every gap still holding its sentinel.
  integer(int64) function check_all(l, x, bytes, iter)
    type(layout), intent(in) :: l
    type(elems), intent(in) :: x
    integer(int64), intent(in) :: bytes, iter
    integer(int64) :: k
    integer :: slot
    character(len=160) :: msg
    do k = 0, l%count - 1
      call expect(l, x, bytes, iter, k)
    end do
    do slot = 1, l%slots
      if (l%mode /= CONTIG .and. mod(slot - 1, l%stride) >= l%blocklen .and. &
          get(x, slot) /= merge(DOUBLE_GAP, BYTE_GAP, l%dbl)) then
        write(msg, '(a,i0,a,i0,a)') 'size ', bytes, ': gap element ', slot, ' of the ' // &
          trim(mode_name(l%mode)) // ' buffer was written'
        call cc_validation_error(trim(msg))
      end if
    end do
    check_all = l%slots
  end function

  ! One message size: returns the number of buffer elements this rank checked at the end.
  integer(int64) function run_size(o, bytes, first, rank)
    type(opts), intent(in) :: o
    integer(int64), intent(in) :: bytes
    logical, intent(in) :: first
    integer, intent(in) :: rank
    type(layout) :: l
    type(elems) :: user, echo
    integer(int64) :: it, last, k
    integer(int64), allocatable :: counts(:)
    integer :: ierr, b
    real(real64), allocatable :: elapsed(:)
    real(real64) :: t0, t, rtt, rtt_mean, v
    call layout_init(l, o, bytes, rank)
    call alloc_elems(user, l%dbl, l%slots)
    if (l%dbl) user%d = DOUBLE_GAP
    if (.not. l%dbl) user%b = int(BYTE_GAP, int8)
    if (rank == 0) then
      ! Rank 0 receives the echo into its own buffer: an echo that never arrived cannot pass.
      echo = user
      call fill_values(l, user, bytes, 0_int64)
    end if
    last = int(o%warmup, int64) + o%iters - 1
    allocate(elapsed(o%batches), counts(o%batches))
    elapsed = 0
    counts = 0
    call MPI_Barrier(MPI_COMM_WORLD, ierr)
    call cc_check(ierr, 'MPI_Barrier')
    do it = 0, last
      if (rank == 0) then
        ! Untimed: a per-iteration stamp on the ends, and every element once at the end.
        if (it == last) then
          call fill_values(l, user, bytes, it)
        else
          call put(user, slot_of(l, 0_int64), elem_value(l, bytes, it, 0_int64))
          call put(user, slot_of(l, l%count - 1_int64), elem_value(l, bytes, it, l%count - 1_int64))
        end if
        t0 = MPI_Wtime()
        call send_msg(l, user)
        call recv_msg(l, echo)
        t = MPI_Wtime() - t0
        if (it >= o%warmup) then
          b = 1 + cc_batch_of(it - o%warmup, o%batches, int(o%iters, int64))
          elapsed(b) = elapsed(b) + t
          counts(b) = counts(b) + 1
        end if
        call expect(l, echo, bytes, it, 0_int64)
        call expect(l, echo, bytes, it, l%count - 1_int64)
      else
        call recv_msg(l, user)
        call expect(l, user, bytes, it, 0_int64)
        call expect(l, user, bytes, it, l%count - 1_int64)
        call send_msg(l, user)
      end if
    end do
    if (rank == 0) then
      if (o%inject .and. first) then
        k = l%count / 2
        v = elem_value(l, bytes, last, k)
        if (.not. l%dbl .and. v >= 125) v = -126
        call put(echo, slot_of(l, k), v + 1)
      end if
      run_size = check_all(l, echo, bytes, last)
      call cc_batch_timing(elapsed, counts, rtt, rtt_mean)
      write(output_unit, '(a,i0,a,i0,a,i0,a,i0,8a)') 'DATA size=', bytes, ' count=', l%count, &
        ' iters=', o%iters, ' batches=', o%batches, ' rtt_us=', cc_fixed(rtt, 3), ' oneway_us=', &
        cc_fixed(rtt / 2, 3), ' bw_MBps=', cc_fixed(real(bytes, real64) / (rtt / 2), 2), &
        ' rtt_mean_us=', cc_fixed(rtt_mean, 3)
      flush(output_unit)
    else
      run_size = check_all(l, user, bytes, last)
    end if
    call layout_free(l)
  end function

end program
