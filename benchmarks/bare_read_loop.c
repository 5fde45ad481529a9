/*
 * bare_read_loop.c - labkit's live read loops as a bare single-threaded C program.
 *
 * The yardstick of benchmarks/live_vs_bare_c.py: the published read-zero
 * figures (R2) came from a small single-threaded C program, so labkit's live
 * loop, measured in its worker, must cost the same per call as this.  It does
 * what labkit's C loops do (labkit/csrc/live/live_sys.c, live_uring.c), written
 * again from scratch: the same calls, the buffer page-aligned, the iovec array
 * built once outside the timed loop, every return value checked, and the same
 * clock read once before and once after each batch.
 *
 *   bare_read_loop MODE CPU CLOCK ITERS REPEATS WARMUP
 *   bare_read_loop serve MODE CPU CLOCK
 *
 *   MODE    sys:   read(4 KiB), readv(1 x 4 KiB), readv(4 KiB + empty) of /dev/zero
 *           uring: io_uring READ of 4 KiB from /dev/zero at queue depth 1: one
 *                  io_uring_enter submits and waits (IORING_ENTER_EXT_ARG with a
 *                  timeout, as labkit's bounded wait), then the completion is reaped
 *   CPU     the CPU to pin to (before anything is measured)
 *   CLOCK   wall (CLOCK_MONOTONIC_RAW) or cpu (CLOCK_THREAD_CPUTIME_ID)
 *   ITERS   calls per batch
 *   REPEATS rounds kept, WARMUP rounds thrown away; each round runs every
 *           variant once, the order rotated every round (A B C, B C A, ...)
 *
 * Output, one line per kept batch: "<variant> <repeat> <ns per call>", then
 * "threads <entries in /proc/self/task>".  Exit status 1 with a message on any
 * failed or short call.
 *
 * "serve" runs batches on request, so that a driver can interleave them with
 * other processes batch by batch: it prints "ready <threads>", then reads lines
 * "<variant> <iters>" on stdin and answers each with "<ns per call>" after
 * running that batch; "threads" is answered with the task count; end of input
 * ends it.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define LEN 4096

static clockid_t clock_id = CLOCK_MONOTONIC_RAW;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(clock_id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void die(const char *what, long ret)
{
	fprintf(stderr, "bare_read_loop: %s: %ld (%s)\n", what, ret,
		ret < 0 ? strerror((int)-ret) : "short transfer");
	exit(1);
}

/* ---- system calls ------------------------------------------------------------- */

enum { V_READ, V_READV1, V_READV_EMPTY, V_URING_READ };
static const char *const names[] = { "read", "readv1", "readv_empty", "read" };

static double time_sys(int variant, int fd, char *buf, uint64_t iters)
{
	struct iovec iov[2] = { { buf, LEN }, { buf + LEN, 0 } };
	uint64_t t0, t1, k;
	ssize_t r;

	t0 = now_ns();
	for (k = 0; k < iters; k++) {
		if (variant == V_READ)
			r = read(fd, buf, LEN);
		else
			r = readv(fd, iov, variant == V_READV1 ? 1 : 2);
		if (r != LEN)
			die(names[variant], r < 0 ? -errno : r);
	}
	t1 = now_ns();
	return (double)(t1 - t0) / (double)iters;
}

/* ---- io_uring, raw system calls ------------------------------------------------ */

struct ring {
	int fd;
	unsigned *sq_tail, *sq_mask, *sq_array;
	unsigned *cq_head, *cq_tail, *cq_mask;
	struct io_uring_sqe *sqes;
	struct io_uring_cqe *cqes;
};

static void ring_setup(struct ring *r, unsigned entries)
{
	struct io_uring_params p;
	size_t sq_len, cq_len;
	char *sq, *cq;

	memset(&p, 0, sizeof(p));
	r->fd = (int)syscall(__NR_io_uring_setup, entries, &p);
	if (r->fd < 0)
		die("io_uring_setup", -errno);
	if (!(p.features & IORING_FEAT_EXT_ARG))
		die("io_uring without IORING_FEAT_EXT_ARG", -ENOSYS);
	sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned);
	cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	if (p.features & IORING_FEAT_SINGLE_MMAP && cq_len > sq_len)
		sq_len = cq_len;
	sq = mmap(NULL, sq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd,
		  IORING_OFF_SQ_RING);
	if (sq == MAP_FAILED)
		die("mmap sq ring", -errno);
	cq = sq;
	if (!(p.features & IORING_FEAT_SINGLE_MMAP)) {
		cq = mmap(NULL, cq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd,
			  IORING_OFF_CQ_RING);
		if (cq == MAP_FAILED)
			die("mmap cq ring", -errno);
	}
	r->sqes = mmap(NULL, p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_SQES);
	if (r->sqes == MAP_FAILED)
		die("mmap sqes", -errno);
	r->sq_tail = (unsigned *)(sq + p.sq_off.tail);
	r->sq_mask = (unsigned *)(sq + p.sq_off.ring_mask);
	r->sq_array = (unsigned *)(sq + p.sq_off.array);
	r->cq_head = (unsigned *)(cq + p.cq_off.head);
	r->cq_tail = (unsigned *)(cq + p.cq_off.tail);
	r->cq_mask = (unsigned *)(cq + p.cq_off.ring_mask);
	r->cqes = (struct io_uring_cqe *)(cq + p.cq_off.cqes);
}

static double time_uring_read(struct ring *r, int fd, char *buf, uint64_t iters)
{
	struct __kernel_timespec ts = { .tv_sec = 10, .tv_nsec = 0 };
	struct io_uring_getevents_arg arg = { .ts = (uint64_t)(uintptr_t)&ts };
	uint64_t t0, t1, k;

	t0 = now_ns();
	for (k = 0; k < iters; k++) {
		unsigned tail = *r->sq_tail, idx = tail & *r->sq_mask, head;
		struct io_uring_sqe *sqe = &r->sqes[idx];
		struct io_uring_cqe *cqe;
		long ret;

		memset(sqe, 0, sizeof(*sqe));
		sqe->opcode = IORING_OP_READ;
		sqe->fd = fd;
		sqe->addr = (uint64_t)(uintptr_t)buf;
		sqe->len = LEN;
		sqe->off = 0;
		sqe->user_data = k;
		r->sq_array[idx] = idx;
		__atomic_store_n(r->sq_tail, tail + 1, __ATOMIC_RELEASE);
		ret = syscall(__NR_io_uring_enter, r->fd, 1, 1,
			      IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG, &arg, sizeof(arg));
		if (ret != 1)
			die("io_uring_enter", ret < 0 ? -errno : -EIO);
		head = *r->cq_head;
		if (head == __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE))
			die("io_uring: no completion after the wait", -ETIME);
		cqe = &r->cqes[head & *r->cq_mask];
		if (cqe->res != LEN)
			die("io_uring READ", cqe->res);
		__atomic_store_n(r->cq_head, head + 1, __ATOMIC_RELEASE);
	}
	t1 = now_ns();
	return (double)(t1 - t0) / (double)iters;
}

/* ---- main ------------------------------------------------------------------------ */

static int task_count(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

static int variant_id(const char *name, int uring)
{
	if (uring)
		return strcmp(name, "read") == 0 ? V_URING_READ : -1;
	if (strcmp(name, "read") == 0)
		return V_READ;
	if (strcmp(name, "readv1") == 0)
		return V_READV1;
	if (strcmp(name, "readv_empty") == 0)
		return V_READV_EMPTY;
	return -1;
}

static int serve(int uring, int fd, char *buf, struct ring *ring)
{
	char line[128], name[32];
	unsigned long long iters;

	printf("ready %d\n", task_count());
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		int v;

		if (strncmp(line, "threads", 7) == 0) {
			printf("%d\n", task_count());
		} else if (sscanf(line, "%31s %llu", name, &iters) == 2 && iters > 0 &&
			   (v = variant_id(name, uring)) >= 0) {
			printf("%.3f\n", v == V_URING_READ ? time_uring_read(ring, fd, buf, iters)
						    : time_sys(v, fd, buf, iters));
		} else {
			fprintf(stderr, "bare_read_loop: bad request %s", line);
			return 2;
		}
		fflush(stdout);
	}
	return 0;
}

int main(int argc, char **argv)
{
	int variants[3], nv, uring, fd, cpu, round, i;
	long repeats, warmup;
	uint64_t iters;
	struct ring ring = { .fd = -1 };
	cpu_set_t set;
	char *buf;

	int serving = argc == 5 && strcmp(argv[1], "serve") == 0;

	if (serving) {
		argv++;
	} else if (argc != 7) {
		fprintf(stderr,
			"usage: %s sys|uring CPU wall|cpu ITERS REPEATS WARMUP\n"
			"       %s serve sys|uring CPU wall|cpu\n",
			argv[0], argv[0]);
		return 2;
	}
	uring = strcmp(argv[1], "uring") == 0;
	cpu = atoi(argv[2]);
	clock_id = strcmp(argv[3], "cpu") == 0 ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC_RAW;
	iters = serving ? 1 : strtoull(argv[4], NULL, 10);
	repeats = serving ? 1 : atol(argv[5]);
	warmup = serving ? 0 : atol(argv[6]);
	if (iters == 0 || repeats < 1 || warmup < 0) {
		fprintf(stderr, "bare_read_loop: ITERS and REPEATS must be >= 1, WARMUP >= 0\n");
		return 2;
	}
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		die("sched_setaffinity", -errno);
	fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		die("open /dev/zero", -errno);
	buf = mmap(NULL, 2 * LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		die("mmap buffer", -errno);
	memset(buf, 1, 2 * LEN);
	if (uring) {
		ring_setup(&ring, 8);
		variants[0] = V_URING_READ;
		nv = 1;
	} else {
		variants[0] = V_READ;
		variants[1] = V_READV1;
		variants[2] = V_READV_EMPTY;
		nv = 3;
	}
	if (serving)
		return serve(uring, fd, buf, &ring);
	for (round = 0; round < warmup + repeats; round++) {
		int kept = round >= warmup, r = round - (int)warmup;

		for (i = 0; i < nv; i++) {
			int v = variants[(i + (kept ? r : 0)) % nv];
			double ns = v == V_URING_READ ? time_uring_read(&ring, fd, buf, iters)
						  : time_sys(v, fd, buf, iters);
			if (kept)
				printf("%s %d %.3f\n", names[v], r, ns);
		}
	}
	printf("threads %d\n", task_count());
	return 0;
}
