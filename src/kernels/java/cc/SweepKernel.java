package cc;

import mpi.MPIException;

/**
 * What a two-rank sweep (PingPong, Comms2) gives {@link Sweep#run}, as cc_sweep_kernel in
 * cc_sweep.h.
 *
 * @param name      the META record's kernel=
 * @param time      the DATA and RESULT name of the step's time (rtt, exchange)
 * @param message   the DATA name of one message's time (oneway, msg)
 * @param perTime   messages in the step's time
 * @param messages  messages a rank receives (and checks) per step
 * @param step      one size's step on the sweep's buffers
 * @param checkLast the whole payload of iteration `it`'s last message
 */
record SweepKernel(String name, String time, String message, int perTime, int messages,
                   Maker step, LastCheck checkLast) {

    /** The step of messages of `size` bytes; rank 0 sends timed iteration `stale` without its
     *  new stamp (--inject-error; Long.MIN_VALUE: never). */
    interface Maker {
        Sweep.Step at(int size, long stale, byte[] sbuf, byte[] rbuf);
    }

    /** Checks the whole payload of iteration `it`'s last message from `sender`. */
    interface LastCheck {
        void check(byte[] buf, int size, int sender, long it) throws MPIException;
    }
}
