// SPDX-License-Identifier: MIT
/*
 * labkit's SSIZE_MAX fingerprint: how a kernel imports the iovecs of readv().
 *
 * Maps two read-write pages followed by a PROT_NONE guard page, opens
 * /dev/zero and calls readv() (and read()) with a few lengths around the
 * 6.4 change that imports a single iovec as ITER_UBUF.  On a kernel before
 * 6.4, readv(fd, {buf, SSIZE_MAX}, 1) fails with EFAULT (every segment goes
 * through access_ok() at its full length); from 6.4 on, the single segment
 * is clamped to MAX_RW_COUNT first, and the read stops at the guard page
 * after 8192 bytes.
 *
 * Output, one record per line, parsed by labkit.kernelsrc.boot:
 *   LABKIT-FP begin
 *   LABKIT-FP uname <release> <machine>
 *   LABKIT-FP case <name> <return value> <errno (0 if none)>
 *   LABKIT-FP end
 * Run as init (pid 1, inside user-mode-linux) it powers the machine off.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <unistd.h>

static long page;

static void report(const char *name, ssize_t ret, int err)
{
	printf("LABKIT-FP case %s %zd %d\n", name, ret, ret < 0 ? err : 0);
	fflush(stdout);
}

static void one(int fd, const char *name, struct iovec *iov, int n)
{
	errno = 0;
	ssize_t r = readv(fd, iov, n);
	report(name, r, errno);
}

/* /dev/zero: the root's own node, else a node made in a fresh tmpfs. */
static int open_zero(void)
{
	int fd = open("/dev/zero", O_RDONLY);
	if (fd >= 0)
		return fd;
	if (mount("none", "/tmp", "tmpfs", 0, "size=64k") == 0 &&
	    mknod("/tmp/zero", S_IFCHR | 0444, makedev(1, 5)) == 0)
		fd = open("/tmp/zero", O_RDONLY);
	return fd;
}

static void finish(int code)
{
	printf("LABKIT-FP end\n");
	fflush(stdout);
	if (getpid() == 1) {
		sync();
		reboot(RB_POWER_OFF);
	}
	_exit(code);
}

int main(void)
{
	struct utsname u;
	char *buf;
	int fd;

	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("LABKIT-FP begin\n");
	page = sysconf(_SC_PAGESIZE);
	if (uname(&u) == 0)
		printf("LABKIT-FP uname %s %s\n", u.release, u.machine);
	else
		printf("LABKIT-FP uname ? ?\n");
	printf("LABKIT-FP page %ld\n", page);

	buf = mmap(NULL, 3 * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED || mprotect(buf, 2 * page, PROT_READ | PROT_WRITE) != 0) {
		printf("LABKIT-FP error mmap %d\n", errno);
		finish(1);
	}
	fd = open_zero();
	if (fd < 0) {
		printf("LABKIT-FP error open-dev-zero %d\n", errno);
		finish(1);
	}

	/* MAX_RW_COUNT is INT_MAX & PAGE_MASK. */
	size_t max_rw = (size_t)INT_MAX & ~((size_t)page - 1);
	struct iovec v[2];

	v[0] = (struct iovec){ buf, SSIZE_MAX };
	one(fd, "readv1_ssize_max", v, 1);
	v[0] = (struct iovec){ buf, max_rw };
	one(fd, "readv1_max_rw_count", v, 1);
	v[0] = (struct iovec){ buf, 2 * page };
	one(fd, "readv1_two_pages", v, 1);
	v[0] = (struct iovec){ buf, 2 * page + 1 };
	one(fd, "readv1_two_pages_plus_1", v, 1);
	v[0] = (struct iovec){ buf, (size_t)-1 };
	one(fd, "readv1_negative", v, 1);
	v[0] = (struct iovec){ buf, 0 };
	one(fd, "readv1_zero_length", v, 1);
	v[0] = (struct iovec){ buf, page };
	v[1] = (struct iovec){ buf + page, 0 };
	one(fd, "readv2_4k_empty", v, 2);
	v[0] = (struct iovec){ buf, page };
	v[1] = (struct iovec){ buf + page, SSIZE_MAX };
	one(fd, "readv2_4k_ssize_max", v, 2);

	errno = 0;
	ssize_t r = read(fd, buf, SSIZE_MAX);
	report("read_ssize_max", r, errno);

	close(fd);
	finish(0);
	return 0;
}
