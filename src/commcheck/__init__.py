"""commcheck: MPI communication regression checks for ReFrame + Spack."""

__version__ = '0.1.0'
