"""The published figures of the five source documents, for the report to show beside today's.

Documents (see shared seeds README): 000/004 C vs Java ping-pong over 100 Mbit/s Ethernet;
001 ping-pong on one node (Open MPI vader, Slurm); 002 MPI-3 shared-memory stencil (Cray, C and
Fortran 90); 003 mpiJava vs Fortran 77 Parkbench COMMS1/COMMS2 and derived datatypes (Myrinet).
Values are transcribed as published; units are in the names.
"""

# 001: mean round-trip time (µs) per message size (bytes), C, Open MPI shared memory.
SEED001_RTT_US = {8: 0.50, 64: 0.49, 512: 0.63, 4096: 4.13, 32768: 10.04, 262144: 74.20,
                  1048576: 290.47}

# 000/004: 21 sizes, 1 B doubling to 1 MiB, 2000 repetitions (no table of values published).
SEED000_SIZES = tuple(2 ** k for k in range(21))
SEED000_REPETITIONS = 2000

# 002 Tables 1 and 2: time (s), 4800 x 4800 grid, 500 steps, per variant and rank count.
SEED002_RANKS = (1, 4, 9, 16, 25, 36)
SEED002_GRID = {'n': 4800, 'steps': 500}
SEED002_TIME_S = {
    'c': {
        'seq': 43.14,
        'sr': (43.31, 10.88, 5.22, 4.51, 3.90, 2.77),
        'shm': (38.08, 9.48, 5.02, 4.52, 4.59, 5.64),
        'shmnc': (37.95, 9.64, 4.98, 4.45, 4.23, 2.88),
    },
    'fortran': {
        'seq': 33.30,
        'sr': (34.67, 7.93, 4.72, 4.40, 3.87, 2.67),
        'shm': (46.18, 11.79, 5.56, 4.68, 5.26, 5.81),
        'shmnc': (46.12, 11.65, 5.54, 4.62, 4.90, 2.79),
    },
}

# 002 Table 3: Fortran sequential pointer study, 10000 x 10000, 100 steps (s).
SEED002_POINTER_GRID = {'n': 10000, 'steps': 100}
SEED002_POINTER_S = {
    'alloc': {'init': 3, 'read': 95, 'write': 70, 'total': 168},
    'pointer': {'init': 3, 'read': 162, 'write': 0, 'total': 165},   # write published as ~0
    'cptr': {'init': 2, 'read': 218, 'write': 0, 'total': 220},      # write published as ~0
}

# 003 Table 1: Hockney fits, r_inf (MB/s), n_1/2 (bytes), startup t0 (µs).
SEED003_HOCKNEY = {
    ('comms1', 'f77'): {'r_inf': 12.48, 'n_half': 559, 't0': 44.81},
    ('comms1', 'java'): {'r_inf': 12.47, 'n_half': 2742, 't0': 219.91},
    ('comms2', 'f77'): {'r_inf': 18.31, 'n_half': 1138, 't0': 62.17},
    ('comms2', 'java'): {'r_inf': 18.29, 'n_half': 7147, 't0': 390.77},
}

# 003 Table 2: r_inf (MB/s) and startup (µs) per language, element type and mode.
SEED003_DATATYPES = {
    ('f77', 'byte', 'contig'): (14.01, 44.78), ('f77', 'double', 'contig'): (13.51, 44.74),
    ('java', 'byte', 'contig'): (13.95, 209.15), ('java', 'double', 'contig'): (13.47, 219.15),
    ('f77', 'byte', 'stride'): (0.95, 45.89), ('f77', 'double', 'stride'): (0.62, 45.89),
    ('java', 'byte', 'stride'): (0.94, 218.19), ('java', 'double', 'stride'): (0.61, 225.64),
    ('f77', 'byte', 'loop'): (0.41, 41.22), ('f77', 'double', 'loop'): (0.24, 40.48),
    ('java', 'byte', 'loop'): (0.19, 219.12), ('java', 'double', 'loop'): (0.13, 221.13),
}
SEED003_STRIDES = {'byte': 64, 'double': 8}
