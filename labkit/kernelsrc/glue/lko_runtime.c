// SPDX-License-Identifier: MIT
/*
 * What lib/iov_iter.o needs from the rest of a kernel, as user-space C
 * (labkit's own code).  The kernel object is built for ARCH=um, whose
 * uaccess layer calls raw_copy_{to,from}_user() and __clear_user() out of
 * line: here they copy as x86-64's copy_to_user() does (byte-exact up to the
 * first byte that faults, returning the bytes not copied), and where they may
 * touch is decided by labkit's own memory table (lkr_set_access: the same
 * lk_mm_accessible() a labkit.UserMemory answers with), so the real code
 * faults exactly where the model does.  With no table set (the callgrind
 * driver) every address is accessible.
 *
 * UML's access_ok() is __addr_range_nowrap && (addr < task_size &&
 * addr + size < task_size || the vsyscall page, which is [0, 0) on x86-64).
 * With task_size = x86-64's TASK_SIZE_MAX + 1 that is exactly x86-64's check
 * (addr + size <= TASK_SIZE_MAX = 0x7ffffffff000, without wrapping) in 6.1
 * (asm-generic/access_ok.h) and in 6.12 (valid_user_address() of the sum, with
 * USER_PTR_MAX = TASK_SIZE_MAX when LAM is off), so no kernel header is edited.
 *
 * uml_physmem = 0 and mem_map = NULL make page_address(page) the host address
 * (page - mem_map) * PAGE_SIZE: a bio_vec's page is virt_to_page() of a real
 * host page, and kmap_local_page() of it is that page.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lko.h"

unsigned long task_size = 0x7ffffffff000UL + 1;
unsigned long uml_physmem;
void *mem_map;

static lkr_access_fn access_fn;
static const void *access_ctx;
static unsigned int need_rd, need_wr;
static uintptr_t allow_start, allow_end;
static int64_t warnings, user_accesses;

void lkr_set_access(lkr_access_fn fn, const void *ctx, unsigned int need_read,
		    unsigned int need_write)
{
	access_fn = fn;
	access_ctx = ctx;
	need_rd = need_read;
	need_wr = need_write;
}

void lkr_allow(const void *addr, uint64_t len)
{
	allow_start = (uintptr_t)addr;
	allow_end = (uintptr_t)addr + len;
}

int64_t lkr_warnings(void)
{
	return warnings;
}

int64_t lkr_user_accesses(void)
{
	return user_accesses;
}

/* How many bytes from addr on may be touched (the accessible prefix of [addr, addr + n)). */
static uint64_t user_ok(uintptr_t addr, uint64_t n, int write)
{
	user_accesses++;
	if (!write && addr >= allow_start && addr + n <= allow_end && addr + n >= addr)
		return n;	/* the iovec array the shim handed to import_iovec */
	if (!access_fn)
		return n;
	return access_fn(access_ctx, addr, n, write ? need_wr : need_rd, NULL);
}

unsigned long raw_copy_to_user(void *to, const void *from, unsigned long n)
{
	uint64_t k = user_ok((uintptr_t)to, n, 1);

	memcpy(to, from, k);
	return n - k;
}

unsigned long raw_copy_from_user(void *to, const void *from, unsigned long n)
{
	uint64_t k = user_ok((uintptr_t)from, n, 0);

	memcpy(to, from, k);
	return n - k;
}

unsigned long __clear_user(void *mem, unsigned long len)
{
	uint64_t k = user_ok((uintptr_t)mem, len, 1);

	memset(mem, 0, k);
	return len - k;
}

long copy_to_user_nofault(void *dst, const void *src, size_t size)
{
	return raw_copy_to_user(dst, src, size) ? -14 : 0;
}

void *lkr_alloc(uint64_t size)
{
	return calloc(1, size ? size : 1);
}

void lkr_free(const void *p)
{
	free((void *)p);
}

/* the kmalloc family: NUMA nodes do not matter here; memory is always zeroed (kzalloc) */
void *__kmalloc(size_t size, unsigned int flags)
{
	(void)flags;
	return calloc(1, size ? size : 1);
}

void *kmalloc_large(size_t size, unsigned int flags)
{
	return __kmalloc(size, flags);
}

void *__kmalloc_large_noprof(size_t size, unsigned int flags)
{
	return __kmalloc(size, flags);
}

void *__kmalloc_noprof(size_t size, unsigned int flags)
{
	return __kmalloc(size, flags);
}

void *kvmalloc_node(size_t size, unsigned int flags, int node)
{
	(void)node;
	return __kmalloc(size, flags);
}

void *__kvmalloc_node_noprof(size_t size, unsigned int flags, int node)
{
	return kvmalloc_node(size, flags, node);
}

void *kmemdup(const void *src, size_t len, unsigned int flags)
{
	void *p = __kmalloc(len, flags);

	if (p)
		memcpy(p, src, len);
	return p;
}

void *kmemdup_noprof(const void *src, size_t len, unsigned int flags)
{
	return kmemdup(src, len, flags);
}

void kfree(const void *p)
{
	free((void *)p);
}

void kvfree(const void *p)
{
	free((void *)p);
}

/* printk and WARN: the format is printed as it stands (no %p extensions here) */
static void say(const char *what, const char *fmt)
{
	if (fmt && fmt[0] == '\001' && fmt[1])
		fmt += 2;	/* KERN_<level> */
	if (getenv("LABKIT_KERNEL_VERBOSE"))
		fprintf(stderr, "labkit kernel oracle: %s: %s\n", what, fmt ? fmt : "");
}

int _printk(const char *fmt, ...)
{
	say("printk", fmt);
	return 0;
}

void warn_slowpath_fmt(const char *file, int line, unsigned int taint, const char *fmt, ...)
{
	(void)taint;
	warnings++;
	if (getenv("LABKIT_KERNEL_VERBOSE"))
		fprintf(stderr, "labkit kernel oracle: WARNING at %s:%d\n", file, line);
	say("warn", fmt);
}

void panic(const char *fmt, ...)
{
	fprintf(stderr, "labkit kernel oracle: kernel panic (BUG) in lib/iov_iter.c: %s\n",
		fmt ? fmt : "");
	abort();
}

/* Paths the oracle never takes (pipes, xarrays, pinning pages, checksums). */
#define LKR_UNSUPPORTED(name)                                                              \
	void name(void);                                                                   \
	void name(void)                                                                    \
	{                                                                                  \
		fprintf(stderr, "labkit kernel oracle: %s is not provided\n", #name);      \
		abort();                                                                   \
	}
LKR_UNSUPPORTED(__alloc_pages)
LKR_UNSUPPORTED(__xas_next)
LKR_UNSUPPORTED(xas_find)
LKR_UNSUPPORTED(xas_load)
LKR_UNSUPPORTED(csum_partial)
LKR_UNSUPPORTED(fault_in_readable)
LKR_UNSUPPORTED(fault_in_safe_writeable)
LKR_UNSUPPORTED(get_user_pages_fast)
LKR_UNSUPPORTED(pin_user_pages_fast)
LKR_UNSUPPORTED(sg_init_one)
LKR_UNSUPPORTED(is_vmalloc_or_module_addr)
LKR_UNSUPPORTED(vmalloc_to_page)

/* pipe buffer operation tables (6.1's ITER_PIPE): never used */
char default_pipe_buf_ops[64];
char page_cache_pipe_buf_ops[64];
