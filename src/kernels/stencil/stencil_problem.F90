! The stencil's problem, and nothing else: what the code under test (stencil.F90 and
! stencil_halo.F90) and the independent reference (stencil_reference.F90) share. It is the
! problem of problem.h/problem.c, number for number, so C and Fortran compute the same grid:
!   grid:    N x N interior cells (i, j) = 1..N, a border of zeros (Dirichlet 0)
!   start:   cell (i, j) holds initial_value(i, j), in [1, 2), different in every cell
!   step:    first one unit of heat is added at each of the NSOURCES cells heat_sources(),
!            then every interior cell becomes a/2 + (north + south + west + east)/8
!   summary: total heat and the checksum sum(a(i, j) * checksum_weight(i, j))
! Integer arithmetic in int64 with every value below 2**62, as in problem.c.
module stencil_problem
  use, intrinsic :: iso_fortran_env, only: int64, real64
  implicit none
  private
  public :: NSOURCES, heat_sources, initial_value, checksum_weight

  integer, parameter :: NSOURCES = 3
  integer(int64), parameter :: M31 = 2_int64**31

contains

  ! One step of the LCG s = mod(1103515245 s + 12345, 2**31).
  pure integer(int64) function lcg(s)
    integer(int64), intent(in) :: s
    lcg = mod(1103515245_int64 * s + 12345_int64, M31)
  end function

  ! A hash of x >= 0 into [0, 2**31): two LCG steps, each followed by an xor-shift that mixes
  ! the high bits into the low ones (an LCG alone is affine, hence regular in x).
  pure integer(int64) function mix(x)
    integer(int64), intent(in) :: x
    integer(int64) :: s
    s = lcg(mod(x, M31))
    s = ieor(s, ishft(s, -15))
    s = lcg(s)
    mix = ieor(s, ishft(s, -13))
  end function

  ! Global (row, column) of the sources, 1..n each: src(1, k) is the row, src(2, k) the column.
  pure subroutine heat_sources(n, src)
    integer, intent(in) :: n
    integer, intent(out) :: src(2, NSOURCES)
    integer(int64) :: s
    integer :: k, d
    s = 12345
    do k = 1, NSOURCES
      do d = 1, 2
        s = lcg(s)
        src(d, k) = 1 + int(mod(s, int(n, int64)))
      end do
    end do
  end subroutine

  ! The initial heat of interior cell (i, j): a hash of the position, so that every halo
  ! carries nonzero data that change from step to step.
  pure real(real64) function initial_value(i, j)
    integer, intent(in) :: i, j
    initial_value = 1 + real(mix(int(i, int64) * 1000003_int64 + j), real64) / real(M31, real64)
  end function

  ! The checksum weight of cell (i, j), in [1, 2): another hash, not periodic in any stride,
  ! so that values moved to a wrong cell change the checksum.
  pure real(real64) function checksum_weight(i, j)
    integer, intent(in) :: i, j
    checksum_weight = 1 + real(mix(mix(int(j, int64) * 1000003_int64 + i)), real64) / &
                      real(M31, real64)
  end function

end module stencil_problem
