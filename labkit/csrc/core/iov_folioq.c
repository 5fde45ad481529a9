/*
 * iov_folioq.c - folio queues and ITER_FOLIOQ (see iov_folioq.h).
 *
 * Positions, as in the kernel: (segment, slot, iov_offset).  A slot number
 * equal to LK_FOLIOQ_NR_SLOTS means "past the last slot of this segment"; the
 * walks move to the next segment's slot 0 when they start from there (the
 * queue may have been extended since).  A walk that finishes a folio moves to
 * the next slot, except the page-listing walk, which stops with iov_offset
 * equal to the folio's size, as the kernel's does.
 *
 * Where the kernel reads past the end of a segment or follows a NULL pointer
 * when its caller breaks the rules (a count beyond the queue, a revert past
 * the head, a cleared slot in the page listing), the model stops instead; the
 * count given at construction and reexpand are checked against the queue, so
 * these guards never change a result the kernel would give.
 */

#include "iov_folioq.h"

static inline size_t slot_size(const struct lk_folioq *fq, unsigned int slot)
{
	return LK_PAGE_SIZE << fq->orders[slot]; /* folioq_folio_size() */
}

/**
 * lk_folioq_append - put a folio in the next free slot of a queue segment
 * @fq: the segment
 * @addr: the folio's first byte
 * @order: its size, 2^order pages
 *
 * folioq_append(): the folio goes in the next free slot; -ENOSPC when the segment is full.
 *
 * Return: the slot used, or -ENOSPC when the segment is full (-EINVAL for a bad order).
 */
int lk_folioq_append(struct lk_folioq *fq, uintptr_t addr, unsigned int order)
{
	unsigned int slot;

	if (!fq || !addr || addr % LK_PAGE_SIZE || order > LK_MAX_FOLIO_ORDER)
		return -EINVAL;
	if (fq->nr >= LK_FOLIOQ_NR_SLOTS)
		return -ENOSPC;
	slot = fq->nr;
	fq->orders[slot] = (uint8_t)order;
	fq->folios[slot] = addr;
	fq->nr++;
	return (int)slot;
}

/**
 * lk_folioq_clear - empty a slot of a queue segment
 * @fq: the segment
 * @slot: the slot
 *
 * folioq_clear(): the slot no longer holds a folio; its order (and so its size) stays.
 *
 * Return: 0, or -EINVAL for a slot never filled.
 */
int lk_folioq_clear(struct lk_folioq *fq, unsigned int slot)
{
	if (!fq || slot >= fq->nr)
		return -EINVAL;
	fq->folios[slot] = 0;
	return 0;
}

/**
 * lk_folioq_capacity - the bytes from a queue position to the end of the queue
 * @fq: the segment
 * @slot: the slot in it
 * @offset: the offset in that slot's folio
 *
 * Bytes from (fq, slot, offset) to the end of the last slot ever filled in the
 * queue (model only: bounds count and reexpand).  Slots are counted at their
 * folio size, cleared ones included, as the kernel's advance counts them.
 *
 * Return: that number of bytes.
 */
size_t lk_folioq_capacity(const struct lk_folioq *fq, unsigned int slot, size_t offset)
{
	size_t total = 0, filled = 0;

	if (slot >= LK_FOLIOQ_NR_SLOTS) {
		fq = fq->next;
		slot = 0;
	}
	for (; fq; fq = fq->next, slot = 0) {
		for (; slot < LK_FOLIOQ_NR_SLOTS; slot++) {
			total += slot_size(fq, slot);
			if (slot < fq->nr)
				filled = total;
		}
	}
	return filled > offset ? filled - offset : 0;
}

/**
 * lk_iter_folioq - the current queue segment of a FOLIOQ iterator
 * @i: the iterator
 *
 * The current segment of a FOLIOQ iterator (NULL for the other types).
 *
 * Return: the segment, or NULL for the other types.
 */
const struct lk_folioq *lk_iter_folioq(const struct lk_iov_iter *i)
{
	return lk_iter_kind(i) == LK_ITER_FOLIOQ ? i->folioq : NULL;
}

/**
 * lk_iter_folio_queue - build an ITER_FOLIOQ iterator, as iov_iter_folio_queue()
 * @i: the iterator to set up
 * @direction: LK_ITER_DEST (a read fills it) or LK_ITER_SOURCE (a write drains it)
 * @fq: the queue segment to start in
 * @first_slot: the slot to start in
 * @offset: the offset in that slot's folio
 * @count: bytes the iterator covers
 *
 * iov_iter_folio_queue(): count bytes from offset in the folio of first_slot
 * of segment fq.  The kernel BUG()s on a bad direction and trusts the rest;
 * the model refuses (-EINVAL) a slot above LK_FOLIOQ_NR_SLOTS, an offset at or
 * past the end of a filled slot's folio (or any offset in a slot that holds
 * none), and (-ERANGE) a count past the end of the queue.
 *
 * Return: 0, or -EINVAL or -ERANGE as described above.
 */
int lk_iter_folio_queue(struct lk_iov_iter *i, int direction, const struct lk_folioq *fq,
			unsigned int first_slot, unsigned int offset, size_t count)
{
	if (!lk_iter_dir_ok(direction) || !fq || first_slot > LK_FOLIOQ_NR_SLOTS)
		return -EINVAL;
	if (first_slot < fq->nr ? offset >= slot_size(fq, first_slot) : offset != 0)
		return -EINVAL;
	if (count > lk_folioq_capacity(fq, first_slot, offset))
		return -ERANGE;
	lk_iter_start(i, direction, LK_ITER_FOLIOQ, count, 0);
	i->folioq = fq;
	i->folioq_slot = first_slot; /* shares nr_segs' storage, as in the kernel */
	i->iov_offset = offset;
	i->seg_first = fq;
	i->first_slot = (uint8_t)first_slot;
	return 0;
}

/* iov_iter_folioq_advance() */
void lk_folioq_advance(struct lk_iov_iter *i, size_t size)
{
	const struct lk_folioq *fq = i->folioq;
	unsigned int slot = i->folioq_slot;
	unsigned long visited = 0;

	if (!i->count)
		return;
	if (slot >= LK_FOLIOQ_NR_SLOTS) {
		if (!fq->next)
			return; /* count > 0 here implies a next segment */
		fq = fq->next;
		slot = 0;
	}
	i->count -= size;
	i->folioq_done += size;
	size += i->iov_offset; /* from the start of the current folio */
	do {
		size_t fsize = slot_size(fq, slot);

		visited++;
		if (size < fsize)
			break;
		size -= fsize;
		slot++;
		if (slot >= LK_FOLIOQ_NR_SLOTS) {
			if (!fq->next)
				break; /* the end of the queue */
			fq = fq->next;
			slot = 0;
		}
	} while (size);
	i->iov_offset = size;
	i->folioq_slot = slot;
	i->folioq = fq;
	i->visited = visited;
}

/*
 * iov_iter_revert() for FOLIOQ (unroll in 1..MAX_RW_COUNT): within the folio,
 * or back folio by folio, landing in the folio that holds the new position.
 * -ERANGE, with nothing changed, for a revert past the iterator's first byte.
 */
int lk_folioq_revert(struct lk_iov_iter *i, size_t unroll)
{
	const struct lk_folioq *fq = i->folioq;
	unsigned int slot = i->folioq_slot;
	unsigned long back = 0;
	size_t left, fsize;

	if (unroll > i->folioq_done)
		return -ERANGE;
	if (unroll <= i->iov_offset) {
		i->iov_offset -= unroll;
	} else {
		left = unroll - i->iov_offset;
		for (;;) {
			if (slot == 0) {
				if (!fq->prev)
					return -ERANGE; /* cannot happen within folioq_done */
				fq = fq->prev;
				slot = LK_FOLIOQ_NR_SLOTS;
			}
			slot--;
			back++;
			fsize = slot_size(fq, slot);
			if (left <= fsize)
				break;
			left -= fsize;
		}
		i->iov_offset = fsize - left;
		i->folioq_slot = slot;
		i->folioq = fq;
	}
	i->count += unroll;
	i->folioq_done -= unroll;
	i->visited = back;
	return 0;
}

/*
 * iterate_folioq(): a page at a time (the kernel maps one page at a time),
 * folio after folio; stops at a slot without a folio.
 */
size_t lk_folioq_iterate(struct lk_iov_iter *i, size_t len, void *priv, lk_step_f step)
{
	const struct lk_folioq *fq = i->folioq;
	unsigned int slot = i->folioq_slot;
	size_t progress = 0, skip = i->iov_offset;

	if (slot == LK_FOLIOQ_NR_SLOTS) {
		if (!fq->next)
			return 0; /* the queue has not been extended: nothing to walk */
		fq = fq->next;
		slot = 0;
	}
	do {
		uintptr_t folio;
		size_t fsize, remain = 0;

		if (slot >= LK_FOLIOQ_NR_SLOTS)
			break; /* the end of the queue */
		folio = fq->folios[slot];
		if (!folio)
			break;
		fsize = slot_size(fq, slot);
		if (skip < fsize) {
			size_t part = lk_min(len, LK_PAGE_SIZE - skip % LK_PAGE_SIZE);
			size_t consumed;

			remain = step((void *)(folio + skip), progress, part, priv);
			consumed = part - remain;
			len -= consumed;
			progress += consumed;
			skip += consumed;
		}
		if (skip >= fsize) {
			skip = 0;
			slot++;
			if (slot == LK_FOLIOQ_NR_SLOTS && fq->next) {
				fq = fq->next;
				slot = 0;
			}
		}
		if (remain)
			break;
	} while (len);

	i->folioq_slot = slot;
	i->folioq = fq;
	i->iov_offset = skip;
	i->count -= progress;
	i->folioq_done += progress;
	return progress;
}

/* The segment and slot the walks start from: past a segment's last slot is the next's first. */
static bool current_slot(const struct lk_iov_iter *i, const struct lk_folioq **fq,
			 unsigned int *slot)
{
	*fq = i->folioq;
	*slot = i->folioq_slot;
	if (*slot >= LK_FOLIOQ_NR_SLOTS) {
		if (!(*fq)->next)
			return false;
		*fq = (*fq)->next;
		*slot = 0;
	}
	return true;
}

/* The rest of the current folio; -ENODATA past the end or at a cleared slot. */
int lk_folioq_current(const struct lk_iov_iter *i, uintptr_t *addr, size_t *len)
{
	const struct lk_folioq *fq;
	unsigned int slot;

	if (!current_slot(i, &fq, &slot) || !fq->folios[slot])
		return -ENODATA;
	*addr = fq->folios[slot] + i->iov_offset;
	*len = lk_min(i->count, slot_size(fq, slot) - i->iov_offset);
	return 0;
}

/*
 * iov_iter_single_seg_count() for FOLIOQ: the kernel's answer is the whole
 * size of the current folio (not what is left of it), limited to count.  Past
 * a segment's last slot the kernel reads one byte beyond its orders[] array;
 * the model uses the folio the walks would go on with.
 */
size_t lk_folioq_single_seg_count(const struct lk_iov_iter *i)
{
	const struct lk_folioq *fq;
	unsigned int slot;

	if (!i->count)
		return 0;
	if (!current_slot(i, &fq, &slot))
		return i->count;
	return lk_min(slot_size(fq, slot), i->count);
}

/* Slots from the first one to the current one (model only). */
unsigned long lk_folioq_seg_index(const struct lk_iov_iter *i)
{
	const struct lk_folioq *fq = i->seg_first;
	unsigned long n = 0;
	unsigned int slot = i->first_slot;

	while (fq && fq != i->folioq) {
		n += LK_FOLIOQ_NR_SLOTS - slot;
		fq = fq->next;
		slot = 0;
	}
	return n + i->folioq_slot - slot;
}

/*
 * iov_iter_extract_folioq_pages(): a page at a time from the current folio
 * on; maxsize is already clamped to count and MAX_RW_COUNT by the caller.
 * The walk stops after the last piece it lists, without moving on from a
 * finished folio.  At a cleared slot the kernel would list a page of a NULL
 * folio; the model stops before it.
 */
ssize_t lk_folioq_extract(struct lk_iov_iter *i, uintptr_t *pages, size_t maxsize,
			  unsigned int maxpages, size_t *offset0, unsigned int *nr_pages)
{
	const struct lk_folioq *fq = i->folioq;
	unsigned int slot = i->folioq_slot, nr = 0;
	size_t extracted = 0, offset;

	*nr_pages = 0;
	if (slot >= LK_FOLIOQ_NR_SLOTS) {
		if (!fq->next)
			return 0;
		fq = fq->next;
		slot = 0;
		if (i->iov_offset != 0)
			return -EIO; /* the kernel WARNs */
	}
	offset = i->iov_offset & ~LK_PAGE_MASK;
	*offset0 = offset;
	maxpages = lk_want_pages(maxsize, offset, maxpages);
	if (!maxpages)
		return -ENOMEM;
	for (;;) {
		uintptr_t folio = fq->folios[slot];
		size_t off = i->iov_offset, fsize = slot_size(fq, slot);
		size_t part = LK_PAGE_SIZE - off % LK_PAGE_SIZE;

		if (off < fsize) {
			if (!folio)
				break;
			part = lk_min(part, lk_min(maxsize - extracted, fsize - off));
			i->count -= part;
			i->iov_offset += part;
			extracted += part;
			pages[nr++] = folio + off / LK_PAGE_SIZE * LK_PAGE_SIZE;
		}
		if (nr >= maxpages || extracted >= maxsize)
			break;
		if (i->iov_offset >= fsize) {
			i->iov_offset = 0;
			slot++;
			if (slot == LK_FOLIOQ_NR_SLOTS) {
				if (!fq->next)
					break; /* the end of the queue */
				fq = fq->next;
				slot = 0;
			}
		}
	}
	i->folioq = fq;
	i->folioq_slot = slot;
	i->folioq_done += extracted;
	*nr_pages = nr;
	return (ssize_t)extracted;
}
