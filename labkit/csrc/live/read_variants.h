/*
 * read_variants.h - the read variants labkit issues and models, in one table.
 *
 * A read variant is one way for user space to ask for `len` bytes into one
 * buffer: which system call or io_uring opcode, which iovec array it passes,
 * and which RWF_* flags.  Each row of LK_READ_VARIANTS is one variant, and
 * everything else is generated from the rows:
 *   - the ids, enum lk_rv_id (LK_RV_READ, ...; LK_RV_COUNT of them);
 *   - the table the Python side reads at import (lk_read_variant(),
 *     labkit/live/variants.py: names, labels, which interface has it);
 *   - the segments every caller passes, built by one function
 *     (lk_rv_segments(): the system calls in live_sys.c, the SQEs in
 *     live_uring.c, and the user's iovec arrays of the R2/R3 models);
 *   - one timed loop per variant in live_sys.c, each specialised at compile
 *     time so that the loop body is a single system call.
 * A new variant is one row here.  Only a new kind of system call (LK_CALL_*)
 * or io_uring opcode (LK_RING_*) also needs its case in lk_sys_call()
 * (live_sys.c) or lk_template() (live_uring.c).
 *
 * Columns: X(ID, name, label, call, ring, layout, rwf)
 *   ID      the C id is LK_RV_<ID>
 *   name    the Python name (labkit.live.SYSCALL_VARIANTS / URING_OPS)
 *   label   for plots and tables (labkit.live.variants.LABELS)
 *   call    the system call: LK_CALL_READ (read, or pread64 at an offset),
 *           LK_CALL_READV (readv / preadv), LK_CALL_PREADV2 (preadv2 with
 *           `rwf`), LK_CALL_NONE (io_uring only)
 *   ring    the io_uring opcode: LK_RING_READ, LK_RING_READV,
 *           LK_RING_READ_FIXED (into registered buffer 0), LK_RING_NONE
 *           (system call only); READ and READV pass `rwf` as rw_flags
 *   layout  the segments: LK_IOV_BUF (the buffer itself, no iovec array),
 *           LK_IOV_ONE ({buf, len}), LK_IOV_EMPTY ({buf, len} and an empty
 *           {buf + len, 0}: ITER_IOVEC for the same bytes), LK_IOV_SPLIT
 *           (two halves {buf, len/2} {buf + len/2, len - len/2}),
 *           LK_IOV_EMPTY2 ({buf, len} and two empty {buf + len, 0}: one
 *           empty iovec more than LK_IOV_EMPTY, so that the cost of the
 *           live R2 proxy's extra iovec is measured in the same run)
 *   rwf     RWF_* flags (values as in <linux/fs.h>)
 */
#ifndef LK_READ_VARIANTS_H
#define LK_READ_VARIANTS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#define LK_CALL_NONE 0
#define LK_CALL_READ 1
#define LK_CALL_READV 2
#define LK_CALL_PREADV2 3

#define LK_RING_NONE 0
#define LK_RING_READ 1
#define LK_RING_READV 2
#define LK_RING_READ_FIXED 3

#define LK_IOV_BUF 0
#define LK_IOV_ONE 1
#define LK_IOV_EMPTY 2
#define LK_IOV_SPLIT 3
#define LK_IOV_EMPTY2 4

/* The kernel's RWF_HIPRI and RWF_NOWAIT (ABI values). */
#define LK_RWF_HIPRI 0x1
#define LK_RWF_NOWAIT 0x8

/* clang-format off */
#define LK_READ_VARIANTS(X)                                                                      \
	X(READ,        "read",        "read",              LK_CALL_READ,    LK_RING_READ,       LK_IOV_BUF,   0) \
	X(READV1,      "readv1",      "readv(1 x 4K)",     LK_CALL_READV,   LK_RING_READV,      LK_IOV_ONE,   0) \
	X(READV_EMPTY, "readv_empty", "readv(4K + empty)", LK_CALL_READV,   LK_RING_READV,      LK_IOV_EMPTY, 0) \
	X(READV_SPLIT, "readv_split", "readv(2 x 2K)",     LK_CALL_READV,   LK_RING_READV,      LK_IOV_SPLIT, 0) \
	X(PREADV2,     "preadv2",     "preadv2(1 x 4K)",   LK_CALL_PREADV2, LK_RING_NONE,       LK_IOV_ONE,   0) \
	X(READ_FIXED,  "read_fixed",  "READ_FIXED",        LK_CALL_NONE,    LK_RING_READ_FIXED, LK_IOV_BUF,   0) \
	X(READV_EMPTY2, "readv_empty2", "readv(4K + 2 empty)", LK_CALL_READV, LK_RING_NONE,     LK_IOV_EMPTY2, 0)
/* clang-format on */

enum lk_rv_id {
#define LK_RV_ENUM(ID, name, label, call, ring, layout, rwf) LK_RV_##ID,
	LK_READ_VARIANTS(LK_RV_ENUM)
#undef LK_RV_ENUM
		LK_RV_COUNT
};

/* One row of the table, as the Python side reads it. */
struct lk_read_variant {
	int id;
	const char *name;
	const char *label;
	int call;   /* LK_CALL_* */
	int ring;   /* LK_RING_* */
	int layout; /* LK_IOV_* */
	int rwf;
};

/* Row `id`, or NULL when there is no such variant. */
const struct lk_read_variant *lk_read_variant(int id);

/* Most segments a layout has. */
#define LK_RV_MAX_SEGS 3

/* One segment of a layout, as an offset into the buffer and a length. */
struct lk_rv_seg {
	size_t off;
	size_t len;
};

/*
 * The segments a `len`-byte read of variant `id` passes: their number (1 for
 * LK_IOV_BUF, the buffer itself), or -EINVAL for an unknown id or a length
 * the layout cannot split (LK_IOV_SPLIT needs 2 bytes or more).
 */
int lk_rv_segments(int id, size_t len, struct lk_rv_seg seg[LK_RV_MAX_SEGS]);

/* The same segments as struct iovec over `buf`: their number, or -EINVAL. */
static inline int lk_rv_iovec(int id, void *buf, size_t len, struct iovec iov[LK_RV_MAX_SEGS])
{
	struct lk_rv_seg seg[LK_RV_MAX_SEGS];
	int n = lk_rv_segments(id, len, seg);

	for (int k = 0; k < n; k++) {
		iov[k].iov_base = (char *)buf + seg[k].off;
		iov[k].iov_len = seg[k].len;
	}
	return n;
}

#endif
