// SPDX-License-Identifier: MIT
/*
 * labkit's xstate probe: the host's XSAVE area, and what a short write of it does.
 *
 * Traces a stopped child and, through glibc's ptrace() (so an LD_PRELOADed
 * xstate shim sees the calls, as in linux.uml):
 *   1. reads the child's whole XSAVE area (PTRACE_GETREGSET, NT_X86_XSTATE,
 *      into a generous buffer): its length is the host's area size;
 *   2. writes back only its first SHORT bytes (argv[1]), with a marker in
 *      XMM0 (bytes 160-175 of the legacy area): what user-mode-linux 6.1 does
 *      on a host whose area is larger than UML's;
 *   3. reads the whole area again: is the marker there, and is every byte
 *      from SHORT on what it was before?
 *
 * Output (parsed by labkit.kernelsrc.boot):
 *   XSTATE size <bytes>
 *   XSTATE set <short> <return value> <errno (0 if none)>
 *   XSTATE kept <1 if the marker is set and the rest unchanged, else 0>
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef NT_X86_XSTATE
#define NT_X86_XSTATE 0x202
#endif
#define CAP (1 << 16)
#define XMM0 160

static long get(pid_t pid, void *buf, size_t *len)
{
	struct iovec iov = { buf, CAP };
	long r = ptrace(PTRACE_GETREGSET, pid, (void *)NT_X86_XSTATE, &iov);

	*len = iov.iov_len;
	return r;
}

int main(int argc, char **argv)
{
	size_t shortlen = argc > 1 ? strtoul(argv[1], NULL, 0) : 512;
	unsigned char *before = calloc(1, CAP), *write = calloc(1, CAP), *after = calloc(1, CAP);
	size_t size = 0, size2 = 0;
	int status, err = 0;
	long r;
	pid_t pid;

	if (!before || !write || !after || shortlen < XMM0 + 16 || shortlen > CAP)
		return 2;
	pid = fork();
	if (pid == 0) {
		ptrace(PTRACE_TRACEME, 0, NULL, NULL);
		raise(SIGSTOP);
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFSTOPPED(status)) {
		printf("XSTATE error trace %d\n", errno);
		return 1;
	}
	if (get(pid, before, &size) != 0) {
		printf("XSTATE error getregset %d\n", errno);
		kill(pid, SIGKILL);
		return 1;
	}
	printf("XSTATE size %zu\n", size);

	memcpy(write, before, size);
	memset(write + XMM0, 0x5a, 16);
	struct iovec iov = { write, shortlen };
	errno = 0;
	r = ptrace(PTRACE_SETREGSET, pid, (void *)NT_X86_XSTATE, &iov);
	err = r < 0 ? errno : 0;
	printf("XSTATE set %zu %ld %d\n", shortlen, r, err);

	int kept = 0;
	if (r == 0 && get(pid, after, &size2) == 0 && size2 == size) {
		unsigned char marker[16];

		memset(marker, 0x5a, sizeof(marker));
		kept = memcmp(after + XMM0, marker, 16) == 0 &&
		       (shortlen >= size ||
			memcmp(after + shortlen, before + shortlen, size - shortlen) == 0);
	}
	printf("XSTATE kept %d\n", kept);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return 0;
}
