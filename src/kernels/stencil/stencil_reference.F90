! The verification reference: the whole problem on one rank, written apart from the code under
! test. It shares only the problem definition (stencil_problem) with stencil.F90: its own
! global (0:n+1, 0:n+1) arrays, its own loops, its own source and update code; no blocks, no
! ghosts, no halo exchange. A part of the grid alone (reference_block) is the same problem on
! that part, its border 0: what a rank computes without its neighbours.
module stencil_reference
  use, intrinsic :: iso_fortran_env, only: int64, real64
  use stencil_problem
  implicit none
  private
  public :: reference_grid, reference_block, reference_sums

contains

  ! The grid g(0:n+1, 0:n+1), border 0, after `steps` steps; stat /= 0 when memory runs out.
  subroutine reference_grid(n, steps, g, stat)
    integer, intent(in) :: n
    integer(int64), intent(in) :: steps
    real(real64), allocatable, intent(out) :: g(:, :)
    integer, intent(out) :: stat
    call reference_block(n, steps, 0, 0, n, n, g, stat)
  end subroutine

  ! The same steps on the rows x cols part of the grid whose cell (1, 1) is global (row0+1,
  ! col0+1), alone: g(0:rows+1, 0:cols+1), its border 0 (no neighbours), its initial values
  ! and the sources inside it; stat /= 0 when memory runs out.
  subroutine reference_block(n, steps, row0, col0, rows, cols, g, stat)
    integer, intent(in) :: n, row0, col0, rows, cols
    integer(int64), intent(in) :: steps
    real(real64), allocatable, intent(out) :: g(:, :)
    integer, intent(out) :: stat
    real(real64), allocatable :: next(:, :), swap(:, :)
    integer :: src(2, NSOURCES), i, j, k
    integer(int64) :: t
    allocate(g(0:rows + 1, 0:cols + 1), next(0:rows + 1, 0:cols + 1), stat=stat)
    if (stat /= 0) return
    g = 0
    next = 0
    do j = 1, cols
      do i = 1, rows
        g(i, j) = initial_value(row0 + i, col0 + j)
      end do
    end do
    call heat_sources(n, src)
    src(1, :) = src(1, :) - row0
    src(2, :) = src(2, :) - col0
    do t = 1, steps
      do k = 1, NSOURCES
        if (src(1, k) < 1 .or. src(1, k) > rows .or. src(2, k) < 1 .or. src(2, k) > cols) cycle
        g(src(1, k), src(2, k)) = g(src(1, k), src(2, k)) + 1
      end do
      do j = 1, cols
        do i = 1, rows
          next(i, j) = g(i, j) / 2 + (g(i - 1, j) + g(i + 1, j) + g(i, j - 1) + g(i, j + 1)) / 8
        end do
      end do
      call move_alloc(g, swap)
      call move_alloc(next, g)
      call move_alloc(swap, next)
    end do
  end subroutine

  ! Total heat and checksum of a reference grid, column by column.
  function reference_sums(n, g) result(sums)
    integer, intent(in) :: n
    real(real64), intent(in) :: g(0:, 0:)
    real(real64) :: sums(2), heat, check
    integer :: i, j
    sums = 0
    do j = 1, n
      heat = 0
      check = 0
      do i = 1, n
        heat = heat + g(i, j)
        check = check + g(i, j) * checksum_weight(i, j)
      end do
      sums = sums + [heat, check]
    end do
  end function

end module stencil_reference
