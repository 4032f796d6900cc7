/* prog_aio.c: Linux native AIO by raw system calls (no libaio), the commands fio's libaio
 * engine does not make, each submitted alone and reaped before the next (so the file's
 * contents are known): on DIR/aio.bin (created empty),
 *   aio_data 1  IOCB_CMD_PWRITEV, 3 iovecs of 1000, 2000, 3000 bytes at offset 4096: 6000
 *   aio_data 2  IOCB_CMD_FDSYNC                                                    : 0
 *   aio_data 3  IOCB_CMD_FSYNC, reaped by io_pgetevents                            : 0
 *   aio_data 4  IOCB_CMD_PREADV, 2 iovecs of 4096 at offset 4096 (to EOF)          : 6000
 *   aio_data 5  IOCB_CMD_PREAD of 100 at offset 1 MiB (past EOF)                   : 0
 *   aio_data 6  IOCB_CMD_PREAD of 100 at 0 into an unmapped buffer                 : -EFAULT
 *   aio_data 7  IOCB_CMD_PWRITE of 10 at 0, in one io_submit with aio_data 8, a write on
 *               fd -1 that the kernel refuses: io_submit returns 1, 8 is never an event
 *   aio_data 9  IOCB_CMD_PWRITE of 20 at 100, then the same iocb (one address) made
 *   aio_data 10 IOCB_CMD_PWRITE of 30 at 200 and submitted again before either is reaped
 *               (the kernel copied the first at io_submit): 20 and 30
 * Exit status 0 when every result is as above. Struct layouts and numbers:
 * include/uapi/linux/aio_abi.h, arch/x86/entry/syscalls/syscall_64.tbl. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

static aio_context_t ctx;

/* Submits the n iocbs of cbs; returns io_submit's result. */
static long submit(struct iocb **cbs, long n)
{
	return syscall(SYS_io_submit, ctx, n, cbs);
}

/* Reaps one event (io_pgetevents when pget); returns its res, or -1000 on failure. */
static long long reap(int pget, unsigned long long want_data)
{
	struct io_event ev;
	long n = pget ? syscall(SYS_io_pgetevents, ctx, 1L, 1L, &ev, NULL, NULL)
		      : syscall(SYS_io_getevents, ctx, 1L, 1L, &ev, NULL);
	if (n != 1 || ev.data != want_data) {
		fprintf(stderr, "prog_aio: reaping %llu: got %ld events\n", want_data, n);
		return -1000;
	}
	return ev.res;
}

static struct iocb cb(int fd, int cmd, unsigned long long data, void *buf, size_t n, long long off)
{
	struct iocb c;
	memset(&c, 0, sizeof(c));
	c.aio_data = data;
	c.aio_lio_opcode = cmd;
	c.aio_fildes = fd;
	c.aio_buf = (unsigned long long)(unsigned long)buf;
	c.aio_nbytes = n;
	c.aio_offset = off;
	return c;
}

static int bad;

static void expect(const char *what, long long got, long long want)
{
	if (got != want) {
		fprintf(stderr, "prog_aio: %s: got %lld, want %lld\n", what, got, want);
		bad = 1;
	}
}

int main(int argc, char **argv)
{
	static char a[1000], b[2000], c3[3000], r1[4096], r2[4096], small[100];
	if (argc < 2) {
		fprintf(stderr, "usage: prog_aio DIR\n");
		return 2;
	}
	char path[4096];
	snprintf(path, sizeof(path), "%s/aio.bin", argv[1]);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || syscall(SYS_io_setup, 8, &ctx)) {
		perror("prog_aio: open or io_setup");
		return 1;
	}
	memset(a, 'a', sizeof(a));
	memset(b, 'b', sizeof(b));
	memset(c3, 'c', sizeof(c3));
	struct iovec wv[3] = { { a, sizeof(a) }, { b, sizeof(b) }, { c3, sizeof(c3) } };
	struct iovec rv[2] = { { r1, sizeof(r1) }, { r2, sizeof(r2) } };
	struct iocb c[8], *p[2];
	c[0] = cb(fd, IOCB_CMD_PWRITEV, 1, wv, 3, 4096);
	c[1] = cb(fd, IOCB_CMD_FDSYNC, 2, NULL, 0, 0);
	c[2] = cb(fd, IOCB_CMD_FSYNC, 3, NULL, 0, 0);
	c[3] = cb(fd, IOCB_CMD_PREADV, 4, rv, 2, 4096);
	c[4] = cb(fd, IOCB_CMD_PREAD, 5, small, sizeof(small), 1 << 20);
	c[5] = cb(fd, IOCB_CMD_PREAD, 6, (void *)8, 100, 0);
	long long want[6] = { 6000, 0, 0, 6000, 0, -14 /* EFAULT */ };
	for (int i = 0; i < 6; i++) {
		p[0] = &c[i];
		expect("io_submit", submit(p, 1), 1);
		expect("result", reap(i == 2, i + 1), want[i]);
	}
	c[6] = cb(fd, IOCB_CMD_PWRITE, 7, a, 10, 0);
	c[7] = cb(-1, IOCB_CMD_PWRITE, 8, a, 10, 0);
	p[0] = &c[6];
	p[1] = &c[7];
	expect("io_submit of a good and a bad iocb", submit(p, 2), 1);
	expect("result", reap(0, 7), 10);
	c[6] = cb(fd, IOCB_CMD_PWRITE, 9, a, 20, 100);
	p[0] = &c[6];
	expect("io_submit of aio_data 9", submit(p, 1), 1);
	c[6] = cb(fd, IOCB_CMD_PWRITE, 10, a, 30, 200);
	expect("io_submit of the same iocb as aio_data 10", submit(p, 1), 1);
	expect("result", reap(0, 9), 20);
	expect("result", reap(0, 10), 30);
	syscall(SYS_io_destroy, ctx);
	close(fd);
	return bad;
}
