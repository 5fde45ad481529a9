// SPDX-License-Identifier: MIT
/*
 * labkit's xstate shim for user-mode-linux (LD_PRELOAD into linux.uml).
 *
 * UML saves and restores a guest process's FPU state with
 * ptrace(PTRACE_GETREGSET / PTRACE_SETREGSET, pid, NT_X86_XSTATE, iov), with
 * iov_len the size of the XSAVE area UML was built for.  The host kernel's
 * SETREGSET accepts only a whole XSAVE area of the host's own size: on a CPU
 * whose area is larger (AMX: 11,008 bytes) every restore fails with EFAULT
 * and UML cannot run its first process.
 *
 * This shim forwards every ptrace() call unchanged, except a SETREGSET of
 * NT_X86_XSTATE shorter than the host's area (a longer one the host clamps
 * to its own size itself, and accepts): it reads the whole current
 * area (GETREGSET into a buffer of the host's size), lays UML's shorter
 * area over its start, and writes the whole area back.  The components UML
 * does not know (AMX tiles) keep the values the host holds for the process.
 *
 * XSTATE_SHIM_LOG=1 prints one line per rewritten call to stderr;
 * XSTATE_SHIM_FORCE=1 rewrites every such call, whatever its length
 * (to exercise the rewrite on a host that does not need it).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/uio.h>

#ifndef NT_X86_XSTATE
#define NT_X86_XSTATE 0x202
#endif

typedef long (*ptrace_fn)(int, pid_t, void *, void *);

static ptrace_fn real_ptrace;
static size_t host_size; /* the host's whole XSAVE area, 0 until known */

static ptrace_fn real(void)
{
	if (!real_ptrace)
		real_ptrace = (ptrace_fn)dlsym(RTLD_NEXT, "ptrace");
	return real_ptrace;
}

/* An environment flag: set to "1". */
static int flag(const char *name)
{
	const char *v = getenv(name);

	return v && strcmp(v, "1") == 0;
}

/* The host's area size: what a GETREGSET into a generous buffer fills (0: unknown). */
static size_t probe_size(pid_t pid)
{
	const size_t cap = 1 << 16;
	void *big = malloc(cap);
	struct iovec iov = { big, cap };
	size_t size = 0;
	int e = errno;

	if (big && real()(PTRACE_GETREGSET, pid, (void *)NT_X86_XSTATE, &iov) == 0)
		size = iov.iov_len;
	free(big);
	errno = e;
	return size;
}

/* Write UML's area over the start of the process's whole current area. */
static long set_whole(pid_t pid, const struct iovec *uml)
{
	char *whole = calloc(1, host_size);
	struct iovec iov = { whole, host_size };
	long ret;

	if (!whole) {
		errno = ENOMEM;
		return -1;
	}
	ret = real()(PTRACE_GETREGSET, pid, (void *)NT_X86_XSTATE, &iov);
	if (ret == 0) {
		memcpy(whole, uml->iov_base, uml->iov_len < host_size ? uml->iov_len : host_size);
		iov.iov_len = host_size;
		ret = real()(PTRACE_SETREGSET, pid, (void *)NT_X86_XSTATE, &iov);
	}
	if (flag("XSTATE_SHIM_LOG"))
		fprintf(stderr, "labkit-xstate-shim: SETREGSET %zu -> %zu bytes: %ld\n",
			uml->iov_len, host_size, ret);
	free(whole);
	return ret;
}

long ptrace(enum __ptrace_request request, ...)
{
	va_list ap;
	pid_t pid;
	void *addr, *data;

	va_start(ap, request);
	pid = va_arg(ap, pid_t);
	addr = va_arg(ap, void *);
	data = va_arg(ap, void *);
	va_end(ap);

	if (request == PTRACE_SETREGSET && (unsigned long)addr == NT_X86_XSTATE && data) {
		const struct iovec *iov = data;

		if (host_size == 0)
			host_size = probe_size(pid);
		if (host_size && (iov->iov_len < host_size || flag("XSTATE_SHIM_FORCE")))
			return set_whole(pid, iov);
	}
	return real()(request, pid, addr, data);
}
