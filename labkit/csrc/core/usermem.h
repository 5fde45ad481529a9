/*
 * usermem.h - the modelled process address space.
 *
 * A table of live mappings [start, end).  Every user address the model
 * touches is checked here first: this plays the part of the kernel's
 * access_ok() plus the page-fault handling of copy_to_user/copy_from_user.
 * The model is stricter than access_ok(), which only checks that a range lies
 * below TASK_SIZE: here a range must also be mapped.
 */
#ifndef LK_USERMEM_H
#define LK_USERMEM_H

#include "lk_common.h"

struct lk_mapping {
	uintptr_t start;
	uintptr_t end;	/* exclusive */
};

struct lk_mm {
	struct lk_mapping *maps;	/* sorted by start, non-overlapping */
	size_t nr_maps;
	size_t cap;
};

struct lk_mm *lk_mm_new(void);
void lk_mm_free(struct lk_mm *mm);
int lk_mm_add(struct lk_mm *mm, uintptr_t start, size_t len);
int lk_mm_remove(struct lk_mm *mm, uintptr_t start);
bool lk_mm_access_ok(const struct lk_mm *mm, uintptr_t addr, size_t len);
size_t lk_mm_accessible(const struct lk_mm *mm, uintptr_t addr, size_t len);

#endif
