// SPDX-License-Identifier: MIT
/*
 * labkit's kernel bench guest: the static /init of a kernel booted under QEMU.
 *
 * Under QEMU's TCG with "-icount shift=0" the guest's time stamp counter
 * advances once per guest instruction, so rdtsc around a batch of system
 * calls counts the instructions the batch executed (user and kernel).  Each
 * case runs BATCHES batches of CALLS calls; a batch holding a timer tick or
 * another interrupt counts more, so the modal batch is the figure, and the
 * number of batches that agree with it says how clean it is.
 *
 * Each batch starts just after a timer tick: the console has sent what was
 * printed (tcdrain: the serial port's interrupts are over) and the program has
 * slept until the next tick (a 1 ns nanosleep; the kernel's tick is periodic
 * and its timers have the tick's resolution).  A tick comes every 10 M guest
 * instructions (HZ=100), so a batch shorter than that holds none; without the
 * wait, a batch of 5 M instructions (4 KiB io_uring reads) held one in about
 * half the batches, and the modal batch could be one that did.  Sleeping
 * costs no host time: QEMU's icount moves the clock to the next timer at once
 * when the guest idles (sleep=off).
 *
 * Groups of cases (named on the kernel command line after "--"):
 *   floor    getppid
 *   zero     read, readv(1), readv(4K+empty), readv(4K+empty+empty) of 64 B and
 *            4 KiB from /dev/zero
 *   uring    io_uring READV(1) and READ of 64 B and 4 KiB from /dev/zero
 *   fixed    io_uring READ_FIXED of 4 KiB at the head and at the tail of a
 *            1 GiB registered buffer, from /dev/zero
 *   nullblk  read, readv(1), io_uring READV(1), READ, READ_FIXED of 4 KiB
 *            with O_DIRECT from /dev/nullb0
 *   import   how readv(1) imports its iovec: readv(fd, {buf, SSIZE_MAX}, 1)
 *            fails with EFAULT while a single segment is an ITER_IOVEC
 *            (every segment is checked at its full length) and reads up to
 *            a guard page once it is an ITER_UBUF (clamped to MAX_RW_COUNT)
 *   attrib=CASE:BYTES:CALLS  one case, CALLS calls, between two marker
 *            instructions that labkit's QEMU plugin counts between
 *
 * Output on the console, one record per line (parsed by labkit.kernelvm.guest):
 *   LABKIT-VM begin
 *   LABKIT-VM uname <release>
 *   LABKIT-VM cpu <erms 0|1> <fsrm 0|1> <model name, spaces as _>
 *   LABKIT-VM vuln <name> <state, spaces as _>
 *   LABKIT-VM import <IOVEC|UBUF|?> <return value> <errno>
 *   LABKIT-VM row <case> <bytes> <calls> <batches> <modal total> <agree> <min> <max> <median>
 *   LABKIT-VM error <what> <errno>
 *   LABKIT-VM end
 * then powers the machine off (a reboot that QEMU's -no-reboot turns into an exit).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/io_uring.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#define BATCHES 12
#define CALLS 1000
#define FIXED_BYTES (1UL << 30)
#define MAX_BATCHES 64

static char *buf;  /* 3 pages: two read-write, one guard (PROT_NONE) */
static char *dbuf; /* O_DIRECT buffer, page aligned */
static char *fixed; /* the registered buffer: 1 GiB (group "fixed") or dbuf (nullblk) */
static size_t fixed_bytes;
static long page;
static int zero_fd = -1, nullb_fd = -1;

static inline uint64_t tsc(void)
{
	uint32_t lo, hi;
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}

/* The plugin's markers: nops with a displacement no compiler emits. */
static inline void marker_start(void)
{
	__asm__ volatile(".byte 0x0f, 0x1f, 0x80, 0x4c, 0x4b, 0x53, 0x54" ::: "memory");
}

static inline void marker_stop(void)
{
	__asm__ volatile(".byte 0x0f, 0x1f, 0x80, 0x4c, 0x4b, 0x53, 0x50" ::: "memory");
}

static void error(const char *what, int err)
{
	printf("LABKIT-VM error %s %d\n", what, err);
}

/* ---- io_uring, without liburing ---- */

struct ring {
	int fd;
	unsigned *sq_tail, *sq_mask, *sq_array, *cq_head, *cq_tail, *cq_mask;
	struct io_uring_sqe *sqes;
	struct io_uring_cqe *cqes;
};

static struct ring ring = { .fd = -1 };

static int ring_setup(void)
{
	struct io_uring_params p;
	memset(&p, 0, sizeof(p));
	int fd = (int)syscall(__NR_io_uring_setup, 8, &p);
	if (fd < 0)
		return -errno;
	size_t sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned);
	size_t cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	char *sq = mmap(NULL, sq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd,
			IORING_OFF_SQ_RING);
	char *cq = mmap(NULL, cq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd,
			IORING_OFF_CQ_RING);
	void *sqes = mmap(NULL, p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE,
			  MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_SQES);
	if (sq == MAP_FAILED || cq == MAP_FAILED || sqes == MAP_FAILED)
		return -errno;
	ring.fd = fd;
	ring.sq_tail = (unsigned *)(sq + p.sq_off.tail);
	ring.sq_mask = (unsigned *)(sq + p.sq_off.ring_mask);
	ring.sq_array = (unsigned *)(sq + p.sq_off.array);
	ring.cq_head = (unsigned *)(cq + p.cq_off.head);
	ring.cq_tail = (unsigned *)(cq + p.cq_off.tail);
	ring.cq_mask = (unsigned *)(cq + p.cq_off.ring_mask);
	ring.cqes = (struct io_uring_cqe *)(cq + p.cq_off.cqes);
	ring.sqes = sqes;
	return 0;
}

/* Submit one request and wait for its completion; its result. */
static int ring_one(int op, int fd, void *addr, unsigned len, int buf_index)
{
	unsigned tail = *ring.sq_tail, idx = tail & *ring.sq_mask;
	struct io_uring_sqe *sqe = &ring.sqes[idx];
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = (uint8_t)op;
	sqe->fd = fd;
	sqe->addr = (uint64_t)(uintptr_t)addr;
	sqe->len = len;
	sqe->off = 0;
	sqe->buf_index = (uint16_t)buf_index;
	ring.sq_array[idx] = idx;
	__atomic_store_n(ring.sq_tail, tail + 1, __ATOMIC_RELEASE);
	if (syscall(__NR_io_uring_enter, ring.fd, 1, 1, IORING_ENTER_GETEVENTS, NULL, 0) < 0)
		return -errno;
	unsigned head = *ring.cq_head;
	while (head == __atomic_load_n(ring.cq_tail, __ATOMIC_ACQUIRE))
		;
	int res = ring.cqes[head & *ring.cq_mask].res;
	__atomic_store_n(ring.cq_head, head + 1, __ATOMIC_RELEASE);
	return res;
}

/* ---- the cases ---- */

enum kind { GETPPID, READ, READV1, READV2, READV3, U_READV, U_READ, U_FIXED };

struct one_case {
	const char *name;
	enum kind kind;
	int direct; /* 1: /dev/nullb0 with O_DIRECT, else /dev/zero */
	int tail;   /* READ_FIXED at the tail of the registered buffer */
};

static const struct one_case CASES[] = {
	{ "getppid", GETPPID, 0, 0 },
	{ "read", READ, 0, 0 },
	{ "readv1", READV1, 0, 0 },
	{ "readv_4k_empty", READV2, 0, 0 },
	{ "readv_4k_empty_empty", READV3, 0, 0 },
	{ "uring_readv1", U_READV, 0, 0 },
	{ "uring_read", U_READ, 0, 0 },
	{ "uring_read_fixed_head", U_FIXED, 0, 0 },
	{ "uring_read_fixed_tail", U_FIXED, 0, 1 },
	{ "nullb_read", READ, 1, 0 },
	{ "nullb_readv1", READV1, 1, 0 },
	{ "nullb_uring_readv1", U_READV, 1, 0 },
	{ "nullb_uring_read", U_READ, 1, 0 },
	{ "nullb_uring_read_fixed_head", U_FIXED, 1, 0 },
};

static const struct one_case *find_case(const char *name)
{
	for (size_t k = 0; k < sizeof(CASES) / sizeof(CASES[0]); k++)
		if (strcmp(CASES[k].name, name) == 0)
			return &CASES[k];
	return NULL;
}

/* One call of case c reading n bytes; its result (negative errno on failure). */
static long call(const struct one_case *c, size_t n)
{
	int fd = c->direct ? nullb_fd : zero_fd;
	char *b = c->direct ? dbuf : buf;
	struct iovec v[3] = { { b, n }, { b + page, 0 }, { b + page, 0 } };
	long r;
	switch (c->kind) {
	case GETPPID:
		return getppid();
	case READ:
		r = read(fd, b, n);
		break;
	case READV1:
		r = readv(fd, v, 1);
		break;
	case READV2:
		r = readv(fd, v, 2);
		break;
	case READV3:
		r = readv(fd, v, 3);
		break;
	case U_READV:
		return ring_one(IORING_OP_READV, fd, v, 1, 0);
	case U_READ:
		return ring_one(IORING_OP_READ, fd, b, (unsigned)n, 0);
	case U_FIXED: {
		char *at = c->tail ? fixed + fixed_bytes - n : fixed;
		return ring_one(IORING_OP_READ_FIXED, fd, at, (unsigned)n, 0);
	}
	default:
		return -EINVAL;
	}
	return r < 0 ? -errno : r;
}

/* Return just after the next timer tick, with the console's output sent. */
static void after_tick(void)
{
	struct timespec ts = { 0, 1 };
	fflush(stdout);
	tcdrain(STDOUT_FILENO);
	nanosleep(&ts, NULL);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Measure case c: BATCHES batches (calls per batch: CALLS, or 1 for a call above 100,000). */
static void measure(const struct one_case *c, size_t n)
{
	long r = call(c, n);
	if (r < 0 || (c->kind != GETPPID && (size_t)r != n)) {
		printf("LABKIT-VM error %s/%zu %ld\n", c->name, n, r < 0 ? -r : 0);
		return;
	}
	uint64_t t0 = tsc();
	call(c, n);
	int calls = tsc() - t0 > 100000 ? 1 : CALLS;
	int batches = calls == 1 ? 3 * BATCHES : BATCHES;
	uint64_t tot[MAX_BATCHES];
	for (int b = 0; b < batches; b++) {
		after_tick();
		t0 = tsc();
		for (int k = 0; k < calls; k++)
			call(c, n);
		tot[b] = tsc() - t0;
	}
	qsort(tot, batches, sizeof(tot[0]), cmp_u64);
	uint64_t mode = tot[0];
	int best = 0;
	for (int b = 0; b < batches;) {
		int e = b;
		while (e < batches && tot[e] == tot[b])
			e++;
		if (e - b > best) {
			best = e - b;
			mode = tot[b];
		}
		b = e;
	}
	printf("LABKIT-VM row %s %zu %d %d %llu %d %llu %llu %llu\n", c->name, n, calls, batches,
	       (unsigned long long)mode, best, (unsigned long long)tot[0],
	       (unsigned long long)tot[batches - 1], (unsigned long long)tot[batches / 2]);
}

static void run_named(const char *name, size_t n)
{
	const struct one_case *c = find_case(name);
	if (!c) {
		error(name, EINVAL);
		return;
	}
	measure(c, n);
}

static void import_kind(void)
{
	struct iovec v = { buf, SSIZE_MAX };
	errno = 0;
	ssize_t r = readv(zero_fd, &v, 1);
	const char *kind = r < 0 && errno == EFAULT ? "IOVEC" : r > 0 ? "UBUF" : "?";
	printf("LABKIT-VM import %s %zd %d\n", kind, r, r < 0 ? errno : 0);
}

static void print_file_line(const char *path, const char *tag)
{
	FILE *f = fopen(path, "r");
	char line[512];
	if (!f)
		return;
	if (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		for (char *p = line; *p; p++)
			if (*p == ' ')
				*p = '_';
		printf("LABKIT-VM %s %s\n", tag, line);
	}
	fclose(f);
}

static void identity(void)
{
	struct utsname u;
	if (uname(&u) == 0)
		printf("LABKIT-VM uname %s\n", u.release);
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[4096], model[256] = "?";
	int erms = 0, fsrm = 0;
	while (f && fgets(line, sizeof(line), f)) {
		if (strncmp(line, "model name", 10) == 0) {
			char *p = strchr(line, ':');
			snprintf(model, sizeof(model), "%s", p ? p + 2 : "?");
			model[strcspn(model, "\n")] = 0;
			for (char *q = model; *q; q++)
				if (*q == ' ')
					*q = '_';
		}
		if (strncmp(line, "flags", 5) == 0) {
			erms = strstr(line, " erms") != NULL;
			fsrm = strstr(line, " fsrm") != NULL;
		}
	}
	if (f)
		fclose(f);
	printf("LABKIT-VM cpu %d %d %s\n", erms, fsrm, model);
	DIR *d = opendir("/sys/devices/system/cpu/vulnerabilities");
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char path[512], tag[300];
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/vulnerabilities/%s", e->d_name);
		snprintf(tag, sizeof(tag), "vuln %s", e->d_name);
		print_file_line(path, tag);
	}
	if (d)
		closedir(d);
}

/* Register one buffer of `bytes` (FIXED_BYTES: a fresh mapping; else the O_DIRECT buffer). */
static void setup_fixed(size_t bytes)
{
	if (fixed_bytes == bytes || ring.fd < 0)
		return;
	if (fixed_bytes)
		syscall(__NR_io_uring_register, ring.fd, IORING_UNREGISTER_BUFFERS, NULL, 0);
	fixed_bytes = 0;
	fixed = bytes == FIXED_BYTES ? mmap(NULL, bytes, PROT_READ | PROT_WRITE,
					   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
				     : dbuf;
	if (fixed == MAP_FAILED) {
		error("mmap-fixed", errno);
		return;
	}
	struct iovec v = { fixed, bytes };
	if (syscall(__NR_io_uring_register, ring.fd, IORING_REGISTER_BUFFERS, &v, 1) < 0) {
		error("register-buffers", errno);
		return;
	}
	fixed_bytes = bytes;
}

static void finish(void)
{
	printf("LABKIT-VM end\n");
	fflush(stdout);
	sync();
	if (getpid() == 1)
		reboot(RB_AUTOBOOT);
	_exit(0);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	mkdir("/dev", 0755);
	mkdir("/proc", 0755);
	mkdir("/sys", 0755);
	mount("devtmpfs", "/dev", "devtmpfs", 0, NULL);
	mount("proc", "/proc", "proc", 0, NULL);
	mount("sysfs", "/sys", "sysfs", 0, NULL);
	printf("LABKIT-VM begin\n");
	page = sysconf(_SC_PAGESIZE);
	identity();

	buf = mmap(NULL, 3 * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	dbuf = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED || dbuf == MAP_FAILED ||
	    mprotect(buf, 2 * page, PROT_READ | PROT_WRITE) != 0) {
		error("mmap", errno);
		finish();
	}
	memset(buf, 1, 2 * page);
	memset(dbuf, 1, 2 * page);
	zero_fd = open("/dev/zero", O_RDONLY);
	if (zero_fd < 0) {
		error("open-dev-zero", errno);
		finish();
	}
	int r = ring_setup();
	if (r < 0)
		error("io_uring_setup", -r);

	static const size_t sizes[] = { 64, 4096 };
	for (int a = 1; a < argc; a++) {
		const char *g = argv[a];
		if (strcmp(g, "import") == 0) {
			import_kind();
		} else if (strcmp(g, "floor") == 0) {
			run_named("getppid", 0);
		} else if (strcmp(g, "zero") == 0) {
			for (int s = 0; s < 2; s++) {
				run_named("read", sizes[s]);
				run_named("readv1", sizes[s]);
				run_named("readv_4k_empty", sizes[s]);
				run_named("readv_4k_empty_empty", sizes[s]);
			}
		} else if (strcmp(g, "uring") == 0) {
			for (int s = 0; s < 2; s++) {
				run_named("uring_readv1", sizes[s]);
				run_named("uring_read", sizes[s]);
			}
		} else if (strcmp(g, "fixed") == 0 || strcmp(g, "nullblk") == 0) {
			if (g[0] == 'f') {
				setup_fixed(FIXED_BYTES);
				run_named("uring_read_fixed_head", 4096);
				run_named("uring_read_fixed_tail", 4096);
				continue;
			}
			if (!fixed_bytes)
				setup_fixed(2 * (size_t)page);
			nullb_fd = open("/dev/nullb0", O_RDONLY | O_DIRECT);
			if (nullb_fd < 0) {
				error("open-dev-nullb0", errno);
				continue;
			}
			run_named("nullb_read", 4096);
			run_named("nullb_readv1", 4096);
			run_named("nullb_uring_readv1", 4096);
			run_named("nullb_uring_read", 4096);
			run_named("nullb_uring_read_fixed_head", 4096);
		} else if (strncmp(g, "attrib=", 7) == 0) {
			char name[64];
			size_t n = 0;
			int calls = 0;
			if (sscanf(g + 7, "%63[^:]:%zu:%d", name, &n, &calls) != 3) {
				error(g, EINVAL);
				continue;
			}
			const struct one_case *c = find_case(name);
			if (!c) {
				error(g, EINVAL);
				continue;
			}
			if (c->direct && nullb_fd < 0)
				nullb_fd = open("/dev/nullb0", O_RDONLY | O_DIRECT);
			if (c->kind == U_FIXED && !fixed_bytes)
				setup_fixed(c->direct ? 2 * (size_t)page : FIXED_BYTES);
			call(c, n);
			marker_start();
			for (int k = 0; k < calls; k++)
				call(c, n);
			marker_stop();
			printf("LABKIT-VM attrib %s %zu %d\n", name, n, calls);
		} else {
			error(g, EINVAL);
		}
	}
	finish();
	return 0;
}
