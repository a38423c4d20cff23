package cc;

import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.Properties;
import mpi.MPI;
import mpi.MPIException;

/**
 * One run of a kernel under MPJ Express: start-up, shut-down, the exit codes and the record
 * lines of ../README.md.
 *
 * MPJ Express 0.44's Comm.Abort does nothing, and its multicore device runs the ranks as threads
 * of one JVM, so System.exit on any rank ends every rank with that code: a validation failure
 * prints its line and exits 3 that way. (Through starter.jar the code is lost: see
 * commcheck.mpj.)
 */
final class Kernel {
    static final int EXIT_USAGE = 2, EXIT_VALIDATION = 3, EXIT_FAILURE = 4;

    /** Bad input: rank 0 prints it, every rank finalizes, the run exits 2. */
    static final class UsageError extends RuntimeException {
        private static final long serialVersionUID = 1L;

        UsageError(String message) {
            super(message);
        }
    }

    /** --help: rank 0 prints the text, every rank finalizes, the run exits 0. */
    static final class Help extends RuntimeException {
        private static final long serialVersionUID = 1L;

        Help(String text) {
            super(text);
        }
    }

    interface Body {
        void run(Kernel k) throws MPIException;
    }

    final String[] args;
    final int rank, size;
    private final String device;

    private Kernel(String[] args, String device) throws MPIException {
        this.args = args;
        this.device = device;
        rank = MPI.COMM_WORLD.Rank();
        size = MPI.COMM_WORLD.Size();
    }

    /** Runs `body` as rank MPI.Init says; never returns with an error, it exits. */
    static void main(String[] argv, Body body) {
        Kernel k = null;
        int code = 0;
        try {
            String device = argv.length > 2 ? argv[2] : "unknown"; // MPJ: rank, size, device, ...
            k = new Kernel(MPI.Init(argv), device);
            body.run(k);
        } catch (Help h) {
            if (k.rank == 0)
                System.out.print(h.getMessage());
        } catch (UsageError e) {
            if (k.rank == 0)
                System.err.println("ERROR: " + e.getMessage());
            code = EXIT_USAGE;
        } catch (MPIException e) {
            exit(EXIT_FAILURE, "ERROR: MPI call failed on rank " + rankOf(k) + ": " + e);
        } catch (RuntimeException | Error e) {
            exit(EXIT_FAILURE, "ERROR: rank " + rankOf(k) + " failed: " + e);
        }
        try {
            MPI.Finalize();
        } catch (MPIException e) {
            exit(EXIT_FAILURE, "ERROR: MPI.Finalize failed on rank " + rankOf(k) + ": " + e);
        }
        System.out.flush();
        System.err.flush();
        if (code != 0)
            System.exit(code);
    }

    private static int rankOf(Kernel k) {
        return k == null ? -1 : k.rank;
    }

    /** Prints one line to stderr and ends every rank of the JVM with `code`. */
    static void exit(int code, String line) {
        System.out.flush();
        System.err.println(line);
        System.err.flush();
        System.exit(code);
    }

    /** Received data differ from what was sent: only this rank knows, so it ends the run. */
    void validationFailed(String what) {
        exit(EXIT_VALIDATION, "ERROR: validation failed on rank " + rank + ": " + what);
    }

    UsageError usage(String what) {
        return new UsageError(what);
    }

    /** A buffer, or exit 2 from this rank (like cc_malloc) when the JVM heap cannot hold it. */
    byte[] bytes(long n, String what) {
        try {
            return new byte[(int) n];
        } catch (OutOfMemoryError e) {
            exit(EXIT_USAGE, "ERROR: cannot allocate " + n + " bytes for " + what
                    + " (JVM heap " + Runtime.getRuntime().maxMemory() + " bytes; raise -Xmx)");
            return null;
        }
    }

    double[] doubles(long n, String what) {
        try {
            return new double[(int) n];
        } catch (OutOfMemoryError e) {
            exit(EXIT_USAGE, "ERROR: cannot allocate " + 8 * n + " bytes for " + what
                    + " (JVM heap " + Runtime.getRuntime().maxMemory() + " bytes; raise -Xmx)");
            return null;
        }
    }

    /** Free text or a record, from rank 0 only, flushed at once. */
    void print(String line) {
        if (rank != 0)
            return;
        System.out.println(line);
        System.out.flush();
    }

    /** META: kernel, language, ranks, MPI library and device, then `params` (key=value ...). */
    void meta(String kernel, String params) {
        print("META kernel=" + kernel + " lang=java ranks=" + size + " mpi=\"" + library() + "\" "
                + params);
    }

    /** "MPJ Express <version> <device>", the version from MPJ_HOME/conf/mpjexpress.conf. */
    private String library() {
        String version = "unknown", home = System.getenv("MPJ_HOME");
        if (home != null) {
            Properties conf = new Properties();
            try (InputStream in = new FileInputStream(home + "/conf/mpjexpress.conf")) {
                conf.load(in);
                version = conf.getProperty("mpjexpress.version", version).trim();
            } catch (IOException e) {
                // the version stays unknown
            }
        }
        return "MPJ Express " + version + " " + ("smpdev".equals(device) ? "multicore" : device);
    }

    /** Sum of `value` over the ranks, at rank 0. */
    long sum(long value) throws MPIException {
        long[] in = {value}, out = {0};
        MPI.COMM_WORLD.Reduce(in, 0, out, 0, 1, MPI.LONG, MPI.SUM, 0);
        return out[0];
    }
}
