/*
 * iov_step.h - the step function every byte-moving walk calls (see iov_iter.c).
 *
 * A step moves len bytes between the iterator's memory at base and the
 * caller's buffer at offset progress, and returns how many it could NOT move
 * (0: all of them), as the kernel's iov_step_f in include/linux/iov_iter.h.
 */
#ifndef LK_IOV_STEP_H
#define LK_IOV_STEP_H

#include <stddef.h>

typedef size_t (*lk_step_f)(void *base, size_t progress, size_t len, void *priv);

#endif
