package cc;

import mpi.Datatype;
import mpi.MPI;
import mpi.MPIException;

/**
 * One rank's buffer layout for one message size in Dtype: of `count` useful elements, element
 * k lives in block k / blocklen, and block b starts at element b * stride of the user buffer
 * (contig: no gaps). Buffers are byte[] or double[] (--type); values are read and written as
 * doubles, which hold every byte value exactly.
 */
final class Layout {
    static final String[] MODES = {"contig", "stride", "loop"};
    static final int CONTIG = 0, STRIDE = 1, LOOP = 2;

    final int mode, peer, count, blocklen, stride, nblocks, slots;
    final boolean isDouble;
    private final Datatype elem, vector;
    private final Object scratch; // loop: the contiguous copy

    Layout(Kernel k, int mode, boolean isDouble, int blocklen, int stride, long size)
            throws MPIException {
        this.mode = mode;
        this.isDouble = isDouble;
        this.blocklen = blocklen;
        this.stride = stride;
        peer = 1 - k.rank;
        elem = isDouble ? MPI.DOUBLE : MPI.BYTE;
        count = (int) (size / (isDouble ? 8 : 1));
        nblocks = count / blocklen;
        slots = mode == CONTIG ? count : nblocks * stride;
        vector = mode == STRIDE ? Datatype.Vector(nblocks, blocklen, stride, elem) : null;
        if (vector != null)
            vector.Commit();
        scratch = mode == LOOP ? buffer(k, count, "the loop copy") : null;
    }

    /** A buffer of `n` elements of this layout's type. */
    Object buffer(Kernel k, int n, String what) {
        return isDouble ? k.doubles(n, what) : k.bytes(n, what);
    }

    /** Slot of useful element k in the user buffer. */
    int slotOf(int k) {
        return mode == CONTIG ? k : (k / blocklen) * stride + k % blocklen;
    }

    boolean isGap(int slot) {
        return mode != CONTIG && slot % stride >= blocklen;
    }

    double get(Object buf, int slot) {
        return isDouble ? ((double[]) buf)[slot] : ((byte[]) buf)[slot] & 0xff;
    }

    void put(Object buf, int slot, double v) {
        if (isDouble)
            ((double[]) buf)[slot] = v;
        else
            ((byte[]) buf)[slot] = (byte) v;
    }

    void send(Object user) throws MPIException {
        if (mode == STRIDE) {
            MPI.COMM_WORLD.Send(user, 0, 1, vector, peer, 0);
        } else if (mode == LOOP) {
            gather(user);
            MPI.COMM_WORLD.Send(scratch, 0, count, elem, peer, 0);
        } else {
            MPI.COMM_WORLD.Send(user, 0, count, elem, peer, 0);
        }
    }

    void recv(Object user) throws MPIException {
        if (mode == STRIDE) {
            MPI.COMM_WORLD.Recv(user, 0, 1, vector, peer, 0);
        } else if (mode == LOOP) {
            MPI.COMM_WORLD.Recv(scratch, 0, count, elem, peer, 0);
            scatter(user);
        } else {
            MPI.COMM_WORLD.Recv(user, 0, count, elem, peer, 0);
        }
    }

    /** The loop mode's hand copies, one strided sweep per position in the block (as dtype.c). */
    private void gather(Object user) {
        if (isDouble) {
            double[] u = (double[]) user, c = (double[]) scratch;
            for (int j = 0; j < blocklen; j++)
                for (int b = 0; b < nblocks; b++)
                    c[b * blocklen + j] = u[b * stride + j];
        } else {
            byte[] u = (byte[]) user, c = (byte[]) scratch;
            for (int j = 0; j < blocklen; j++)
                for (int b = 0; b < nblocks; b++)
                    c[b * blocklen + j] = u[b * stride + j];
        }
    }

    private void scatter(Object user) {
        if (isDouble) {
            double[] u = (double[]) user, c = (double[]) scratch;
            for (int j = 0; j < blocklen; j++)
                for (int b = 0; b < nblocks; b++)
                    u[b * stride + j] = c[b * blocklen + j];
        } else {
            byte[] u = (byte[]) user, c = (byte[]) scratch;
            for (int j = 0; j < blocklen; j++)
                for (int b = 0; b < nblocks; b++)
                    u[b * stride + j] = c[b * blocklen + j];
        }
    }
}
