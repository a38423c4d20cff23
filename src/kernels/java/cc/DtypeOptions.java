package cc;

/** Dtype's command line, read as dtype.c reads it (the usage text is Dtype.USAGE). */
final class DtypeOptions {
    boolean isDouble, inject;
    int stride, blocklen = 1, batches;
    final int[] mode = {Layout.CONTIG, Layout.CONTIG}; // rank 0 (--send-mode), rank 1
    long iters = 200, warmup = 20;
    long[] sizes;

    private static int parseMode(String opt, String text) {
        for (int m = 0; m < Layout.MODES.length; m++)
            if (Layout.MODES[m].equals(text))
                return m;
        if (text.equals("pack") || text.equals("subarray"))
            throw new Kernel.UsageError(opt + ": mode '" + text + "' has no mpiJava 1.2 equivalent"
                    + " in MPJ Express (Java modes: contig, stride, loop)");
        throw new Kernel.UsageError(opt + ": unknown mode '" + text + "' (contig, stride, loop)");
    }

    DtypeOptions(Kernel k) {
        String type = "byte", strideText = null, sizesText = "8:65536", batchesText = null, v;
        Args a = new Args(k.args);
        while (a.next()) {
            if (a.is("--help"))
                throw new Kernel.Help(Dtype.USAGE);
            else if (a.is("--inject-error"))
                inject = true;
            else if ((v = a.value("--type")) != null)
                type = v;
            else if ((v = a.value("--stride")) != null)
                strideText = v;
            else if ((v = a.value("--blocklen")) != null)
                blocklen = (int) Args.parseLong("--blocklen", v, 1, Integer.MAX_VALUE);
            else if ((v = a.value("--send-mode")) != null)
                mode[0] = parseMode("--send-mode", v);
            else if ((v = a.value("--recv-mode")) != null)
                mode[1] = parseMode("--recv-mode", v);
            else if ((v = a.value("--sizes")) != null)
                sizesText = v;
            else if ((v = a.value("--iters")) != null)
                iters = Args.parseLong("--iters", v, 1, 1000000000);
            else if ((v = a.value("--warmup")) != null)
                warmup = Args.parseLong("--warmup", v, 0, 1000000000);
            else if ((v = a.value("--batches")) != null)
                batchesText = v;
            else
                throw a.unknown();
        }
        if (!type.equals("byte") && !type.equals("double"))
            throw k.usage("--type: unknown type '" + type + "' (byte, double)");
        isDouble = type.equals("double");
        stride = strideText == null ? (isDouble ? 8 : 64)
                : (int) Args.parseLong("--stride", strideText, 1, Integer.MAX_VALUE);
        if (stride < blocklen)
            throw k.usage("--stride " + stride + " is smaller than --blocklen " + blocklen);
        batches = Args.batches(batchesText, iters);
        sizes = Args.parseSizes("--sizes", sizesText);
        long esize = isDouble ? 8 : 1, block = esize * blocklen;
        for (long size : sizes) {
            if (size % block != 0)
                throw k.usage("--sizes: " + size + " is not a multiple of " + block
                        + " bytes (element size x blocklen)");
            if (size / block > (Integer.MAX_VALUE - 8) / stride)
                throw k.usage("--sizes: " + size + " bytes need more elements than a Java array"
                        + " holds");
            if (size / block * stride * esize > Args.physicalMemory() / 4)
                throw k.usage("--sizes: the strided buffers of " + size + " bytes do not fit in"
                        + " memory");
        }
        if (k.size != 2)
            throw k.usage("dtype needs exactly 2 ranks, got " + k.size);
    }
}
