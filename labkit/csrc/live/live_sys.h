/*
 * live_sys.h - timed loops of read-family system calls on the running kernel.
 *
 * lk_time_syscall() issues `iters` calls of one read variant (an LK_RV_* id
 * of read_variants.h whose `call` is not LK_CALL_NONE) on `fd`, reading
 * `len` bytes into `buf`, and returns the elapsed time per call in
 * nanoseconds (the live clock read once before and once after the batch).
 * Every return value is checked: on a failed call the loop stops and the
 * function returns -errno; on a short transfer (fewer than `len` bytes, e.g.
 * end of file) it returns -EIO.  Bad arguments (an unknown variant, len 0,
 * iters 0, a length above LK_MAX_RW_COUNT, a length the variant's layout
 * cannot split) give -EINVAL before any call is made; a batch that runs
 * past the time budget (lk_clock.h) stops with -ETIMEDOUT.
 *
 * `off` selects the file position: -1 reads at the file's current position
 * (read, readv, preadv2 with offset -1); off >= 0 reads at that offset every
 * time without moving the file position (pread64, preadv, preadv2), which is
 * what a small regular file needs to be read over and over.
 *
 * The caller owns `buf` and guarantees it holds `len` writable bytes; the
 * Python layer (labkit.live.syscalls) checks that before calling.
 */
#ifndef LK_LIVE_SYS_H
#define LK_LIVE_SYS_H

#include <stddef.h>
#include <stdint.h>

#include "read_variants.h"

double lk_time_syscall(int variant, int fd, void *buf, size_t len, int64_t off, uint64_t iters);

/* One call of a variant, untimed: bytes transferred or -errno (for correctness checks). */
int64_t lk_sys_read_once(int variant, int fd, void *buf, size_t len, int64_t off);

/*
 * The clock the live loops read before and after a batch.  WALL is
 * lk_clock_ns() (CLOCK_MONOTONIC_RAW), the default.  THREAD_CPU is the
 * calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID, user + system): on a
 * shared machine it leaves out the time the thread sat preempted, which wall
 * time counts.  It suits work done entirely in the calling thread (system
 * calls; io_uring requests completed inline), not work handed to other
 * threads.  Reading it costs a few hundred ns, twice per batch.
 * lk_live_set_clock returns the previous setting, or -EINVAL.
 */
#define LK_LIVE_CLOCK_WALL 0
#define LK_LIVE_CLOCK_THREAD_CPU 1
int lk_live_set_clock(int which);
int lk_live_get_clock(void);
uint64_t lk_live_now(void);

#endif
