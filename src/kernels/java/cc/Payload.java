package cc;

/**
 * Message payloads of the sweeps, byte for byte those of cc_payload.h: every byte depends on
 * size and sender, and the first and last 8 bytes (all of a message shorter than 16 bytes)
 * carry a stamp of the message's number `seq`, so a message left over from an earlier one is
 * caught by the cheap per-message check, not only by the whole-payload check of the last.
 */
final class Payload {
    private Payload() {
    }

    static byte pattern(long size, int sender, long j) {
        return (byte) (j * 13 + (j >> 8) + size * 7 + sender * 101L + 1);
    }

    /** 64 bits, wrapping like the C uint64_t arithmetic. */
    static long stamp(long size, int sender, long seq) {
        return seq * 1000003L ^ (size << 1) ^ sender;
    }

    /** The byte at offset j of message `seq` from `sender`. */
    static byte at(long size, int sender, long seq, long j) {
        long k;
        if (size < 16)
            k = j % 8;
        else if (j < 8)
            k = j;
        else if (j >= size - 8)
            k = j - (size - 8);
        else
            return pattern(size, sender, j);
        return (byte) (stamp(size, sender, seq) >>> (8 * k));
    }

    /** The body, stamps aside: once per size, outside the timing. */
    static void fill(byte[] buf, int size, int sender) {
        for (int j = 0; j < size; j++)
            buf[j] = pattern(size, sender, j);
    }

    static void stamp(byte[] buf, int size, int sender, long seq) {
        long st = stamp(size, sender, seq);
        for (int j = 0; j < size && j < 8; j++)
            buf[j] = (byte) (st >>> (8 * j));
        for (int j = size < 16 ? 8 : size - 8; j < size; j++)
            buf[j] = (byte) (st >>> (8 * (size < 16 ? j % 8 : j - (size - 8))));
    }

    /** Offset of the first wrong byte of the whole message (`whole`) or of its stamped ends;
     *  size when there is none. */
    static int mismatch(byte[] buf, int size, int sender, long seq, boolean whole) {
        for (int j = 0; j < size; j++) {
            if (!whole && size >= 16 && j == 8)
                j = size - 8;
            if (buf[j] != at(size, sender, seq, j))
                return j;
        }
        return size;
    }

    /** The validation message for a mismatch at offset j. */
    static String describe(byte[] buf, int size, int sender, long seq, int j, String where) {
        return "size " + size + ", " + where + ", byte " + j + ": got " + (buf[j] & 0xff)
                + ", expected " + (at(size, sender, seq, j) & 0xff);
    }
}
