/*
 * read_variants.c - the read variant table and its segment layouts (see read_variants.h).
 */
#include "read_variants.h"

#include <errno.h>

static const struct lk_read_variant lk_rv_table[LK_RV_COUNT] = {
#define LK_RV_ROW(ID, name, label, call, ring, layout, rwf)                                        \
	{ LK_RV_##ID, name, label, call, ring, layout, rwf },
	LK_READ_VARIANTS(LK_RV_ROW)
#undef LK_RV_ROW
};

/**
 * lk_read_variant - one row of the read-variant table
 * @id: a variant id (LK_RV_*)
 *
 * Return: the row, or NULL when there is no such variant.
 */
const struct lk_read_variant *lk_read_variant(int id)
{
	if (id < 0 || id >= LK_RV_COUNT)
		return NULL;
	return &lk_rv_table[id];
}

/**
 * lk_rv_segments - the segments a read of a variant passes
 * @id: a variant id (LK_RV_*)
 * @len: bytes of the read
 * @seg: receives up to LK_RV_MAX_SEGS segments
 *
 * Return: their number, or -EINVAL as described above.
 */
int lk_rv_segments(int id, size_t len, struct lk_rv_seg seg[LK_RV_MAX_SEGS])
{
	const struct lk_read_variant *v = lk_read_variant(id);

	if (v == NULL)
		return -EINVAL;
	seg[0].off = 0;
	seg[0].len = len;
	switch (v->layout) {
	case LK_IOV_BUF:
	case LK_IOV_ONE:
		return 1;
	case LK_IOV_EMPTY:
		seg[1].off = len;
		seg[1].len = 0;
		return 2;
	case LK_IOV_EMPTY2:
		seg[1].off = len;
		seg[1].len = 0;
		seg[2].off = len;
		seg[2].len = 0;
		return 3;
	case LK_IOV_SPLIT:
		if (len < 2)
			return -EINVAL;
		seg[0].len = len / 2;
		seg[1].off = len / 2;
		seg[1].len = len - len / 2;
		return 2;
	}
	return -EINVAL;
}
