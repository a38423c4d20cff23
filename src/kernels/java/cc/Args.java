package cc;

import com.sun.management.OperatingSystemMXBean;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The command line, as the C kernels read it (cc_util.h): long options only, `--name value`;
 * every rank parses the same arguments and so reaches the same usage error.
 */
final class Args {
    static final int MAX_SIZES = 64;
    private static final Pattern INT = Pattern.compile("\\s*[+-]?[0-9]+");
    private static final Pattern BYTES = Pattern.compile("\\s*([+-]?[0-9]+)([kKmMgG]?)");

    private final String[] argv;
    private int i = -1;

    Args(String[] argv) {
        this.argv = argv;
    }

    /** Advances to the next argument; false at the end. */
    boolean next() {
        return ++i < argv.length;
    }

    boolean is(String flag) {
        return argv[i].equals(flag);
    }

    /** The value of option `name` if the current argument is it, else null. */
    String value(String name) {
        if (!argv[i].equals(name))
            return null;
        if (i + 1 >= argv.length)
            throw new Kernel.UsageError(name + " needs a value");
        return argv[++i];
    }

    Kernel.UsageError unknown() {
        return new Kernel.UsageError("unknown option '" + argv[i] + "' (see --help)");
    }

    static long parseLong(String opt, String text, long min, long max) {
        long v;
        try {
            if (!INT.matcher(text).matches())
                throw new NumberFormatException();
            v = Long.parseLong(text.strip());
        } catch (NumberFormatException e) {
            throw new Kernel.UsageError(opt + ": '" + text + "' is not a whole number");
        }
        if (v < min || v > max)
            throw new Kernel.UsageError(opt + ": " + v + " is out of range [" + min + ", " + max
                    + "]");
        return v;
    }

    static long physicalMemory() {
        Object os = ManagementFactory.getOperatingSystemMXBean();
        return os instanceof OperatingSystemMXBean
                ? ((OperatingSystemMXBean) os).getTotalMemorySize() : Long.MAX_VALUE;
    }

    /** A byte count: digits with an optional k/m/g suffix (KiB, MiB, GiB); at least 1 and no
     *  more than the node's physical memory. */
    static long parseBytes(String opt, String text) {
        Matcher m = BYTES.matcher(text);
        long v;
        try {
            if (!m.matches())
                throw new NumberFormatException();
            v = Long.parseLong(m.group(1));
        } catch (NumberFormatException e) {
            throw new Kernel.UsageError(opt + ": '" + text + "' is not a byte count");
        }
        if (v <= 0)
            throw new Kernel.UsageError(opt + ": sizes must be positive, got '" + text + "'");
        String suffix = m.group(2).toLowerCase();
        int shift = suffix.equals("k") ? 10 : suffix.equals("m") ? 20 : suffix.equals("g") ? 30 : 0;
        long memory = physicalMemory();
        if (v > (Long.MAX_VALUE >> shift) || (v << shift) > memory)
            throw new Kernel.UsageError(opt + ": " + text + " bytes is more than this node's"
                    + " memory (" + memory + " bytes)");
        return v << shift;
    }

    /** A size list: "8,64,512" (kept in the given order) or a power-of-two range "lo:hi". */
    static long[] parseSizes(String opt, String text) {
        List<Long> sizes = new ArrayList<>();
        int colon = text.indexOf(':');
        if (colon >= 0) {
            if (colon == 0 || colon == text.length() - 1)
                throw new Kernel.UsageError(opt + ": '" + text + "' is not a range lo:hi");
            long lo = parseBytes(opt, text.substring(0, colon));
            long hi = parseBytes(opt, text.substring(colon + 1));
            if (lo > hi)
                throw new Kernel.UsageError(opt + ": range '" + text + "' runs backwards");
            for (long s = lo; s <= hi && sizes.size() < MAX_SIZES; s *= 2)
                sizes.add(s);
        } else {
            for (String token : text.split(",")) {
                if (token.isEmpty())
                    continue;
                if (sizes.size() == MAX_SIZES)
                    throw new Kernel.UsageError(opt + ": more than " + MAX_SIZES + " sizes");
                sizes.add(parseBytes(opt, token));
            }
            if (sizes.isEmpty())
                throw new Kernel.UsageError(opt + ": no sizes in '" + text + "'");
        }
        return sizes.stream().mapToLong(Long::longValue).toArray();
    }

    /** --batches: 10 by default, or iters when fewer; an explicit value must lie in [1, iters]. */
    static int batches(String text, long iters) {
        if (text == null)
            return (int) Math.min(10, iters);
        long b = parseLong("--batches", text, 1, 1000000000);
        if (b > iters)
            throw new Kernel.UsageError("--batches " + b + " is more than --iters " + iters
                    + ": every batch needs an iteration");
        return (int) b;
    }
}
