/*
 * iov_folioq.h - ITER_FOLIOQ: an iterator over a queue of folios (Linux 6.12+).
 *
 * A folio queue is a doubly linked chain of segments, each with a fixed
 * number of folio slots (PAGEVEC_SIZE, 31) and each slot's folio order, as
 * the kernel's struct folio_queue (include/linux/folio_queue.h).  The
 * iterator keeps the current segment, the slot in it and the offset in that
 * slot's folio.  It follows today's kernel (iov_iter_folio_queue(),
 * iterate_folioq(), iov_iter_folioq_advance()/revert(),
 * iov_iter_extract_folioq_pages()); the code is labkit's own.
 */
#ifndef LK_IOV_FOLIOQ_H
#define LK_IOV_FOLIOQ_H

#include <sys/types.h>

#include "iov_iter.h"
#include "iov_step.h"

/* PAGEVEC_SIZE: folio slots in one segment (folioq_nr_slots()). */
#define LK_FOLIOQ_NR_SLOTS 31
/* MAX_PAGE_ORDER on x86-64: the largest folio the page allocator gives. */
#define LK_MAX_FOLIO_ORDER 10

struct lk_folioq {
	uintptr_t folios[LK_FOLIOQ_NR_SLOTS]; /* first byte of each folio; 0: none */
	uint8_t orders[LK_FOLIOQ_NR_SLOTS];   /* kept when a slot is cleared */
	uint8_t nr;			      /* slots filled so far (folioq_count()) */
	struct lk_folioq *next;
	struct lk_folioq *prev;
};

int lk_folioq_append(struct lk_folioq *fq, uintptr_t addr, unsigned int order);
int lk_folioq_clear(struct lk_folioq *fq, unsigned int slot);
size_t lk_folioq_capacity(const struct lk_folioq *fq, unsigned int slot, size_t offset);
const struct lk_folioq *lk_iter_folioq(const struct lk_iov_iter *i);

int lk_iter_folio_queue(struct lk_iov_iter *i, int direction, const struct lk_folioq *fq,
			unsigned int first_slot, unsigned int offset, size_t count);

/* Per-type steps called from iov_iter.c and iov_extract.c. */
void lk_folioq_advance(struct lk_iov_iter *i, size_t size);
int lk_folioq_revert(struct lk_iov_iter *i, size_t unroll);
size_t lk_folioq_iterate(struct lk_iov_iter *i, size_t len, void *priv, lk_step_f step);
int lk_folioq_current(const struct lk_iov_iter *i, uintptr_t *addr, size_t *len);
size_t lk_folioq_single_seg_count(const struct lk_iov_iter *i);
unsigned long lk_folioq_seg_index(const struct lk_iov_iter *i);
ssize_t lk_folioq_extract(struct lk_iov_iter *i, uintptr_t *pages, size_t maxsize,
			  unsigned int maxpages, size_t *offset0, unsigned int *nr_pages);

#endif
