/* Message payloads of the sweeps (pingpong, comms2, the hardware floor, the fabric kernels).
 * Every byte depends on size and sender, so a message of the wrong size or from the wrong
 * rank is caught, not only a missing one. The first and last 8 bytes (all of a message shorter
 * than 16 bytes) carry a stamp of the message's number `seq`, so a buffer left over from an
 * earlier message is caught too; checking only those ends is cheap enough for every timed
 * message. The caller numbers its messages. Stands alone (no MPI, no sweep, no floor), so the
 * sweep (cc_sweep.h) and the floor (cc_floor.c) both use it without including each other. */
#ifndef CC_PAYLOAD_H
#define CC_PAYLOAD_H

#include <stddef.h>
#include <stdint.h>

static inline unsigned char cc_payload_pattern(size_t size, int sender, size_t j)
{
    return (unsigned char)(j * 13 + (j >> 8) + size * 7 + (size_t)sender * 101 + 1);
}

/* The byte at offset j of message `seq` from `sender`. */
static inline unsigned char cc_payload_byte(size_t size, int sender, uint64_t seq, size_t j)
{
    size_t k;
    if (size < 16)
        k = j % 8;
    else if (j < 8)
        k = j;
    else if (j >= size - 8)
        k = j - (size - 8);
    else
        return cc_payload_pattern(size, sender, j);
    uint64_t stamp = seq * 1000003u ^ ((uint64_t)size << 1) ^ (uint64_t)sender;
    return (unsigned char)(stamp >> (8 * k));
}

/* The message body, stamps aside: once per size, outside the timing. */
static inline void cc_payload_fill(unsigned char *buf, size_t size, int sender)
{
    for (size_t j = 0; j < size; j++)
        buf[j] = cc_payload_pattern(size, sender, j);
}

static inline void cc_payload_stamp(unsigned char *buf, size_t size, int sender, uint64_t seq)
{
    for (size_t j = 0; j < size && j < 8; j++)
        buf[j] = cc_payload_byte(size, sender, seq, j);
    for (size_t j = size < 16 ? 8 : size - 8; j < size; j++)
        buf[j] = cc_payload_byte(size, sender, seq, j);
}

/* Offset of the first wrong byte of the whole message, or of its stamped ends only; size
 * when there is none. */
static inline size_t cc_payload_mismatch(const unsigned char *buf, size_t size, int sender,
                                         uint64_t seq, int whole)
{
    for (size_t j = 0; j < size; j++) {
        if (!whole && size >= 16 && j == 8)
            j = size - 8;
        if (buf[j] != cc_payload_byte(size, sender, seq, j))
            return j;
    }
    return size;
}

#endif
