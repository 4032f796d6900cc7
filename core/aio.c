/* aio.c: the AIO layer's function table: each name of probes/aio.yaml and the io_uring
 * opcode (IORING_OP_*, include/uapi/linux/io_uring.h, Linux 6.18) or Linux AIO command
 * (IOCB_CMD_*, include/uapi/linux/aio_abi.h) it stands for. bpf/aio.bpf.c reads each
 * operation's fields by its opcode; the loader puts each asked function's attach cookie
 * in the BPF object's table at its opcode. */
#include "aio.h"

#include <string.h>

static const struct dc_aio_fn fns[] = {
	{ "io_uring_read",            DC_AIO_URING, 22, 0 },  /* IORING_OP_READ */
	{ "io_uring_write",           DC_AIO_URING, 23, 0 },  /* IORING_OP_WRITE */
	{ "io_uring_readv",           DC_AIO_URING, 1, 0 },   /* IORING_OP_READV */
	{ "io_uring_writev",          DC_AIO_URING, 2, 0 },   /* IORING_OP_WRITEV */
	{ "io_uring_read_fixed",      DC_AIO_URING, 4, 0 },   /* IORING_OP_READ_FIXED */
	{ "io_uring_write_fixed",     DC_AIO_URING, 5, 0 },   /* IORING_OP_WRITE_FIXED */
	{ "io_uring_readv_fixed",     DC_AIO_URING, 60, 0 },  /* IORING_OP_READV_FIXED (6.15) */
	{ "io_uring_writev_fixed",    DC_AIO_URING, 61, 0 },  /* IORING_OP_WRITEV_FIXED (6.15) */
	{ "io_uring_fsync",           DC_AIO_URING, 3, 0 },   /* IORING_OP_FSYNC */
	{ "io_uring_fdatasync",       DC_AIO_URING, 3, 1 },   /* ... with IORING_FSYNC_DATASYNC */
	{ "io_uring_sync_file_range", DC_AIO_URING, 8, 0 },   /* IORING_OP_SYNC_FILE_RANGE */
	{ "io_uring_fallocate",       DC_AIO_URING, 17, 0 },  /* IORING_OP_FALLOCATE */
	{ "aio_pread",                DC_AIO_NATIVE, 0, 0 },  /* IOCB_CMD_PREAD */
	{ "aio_pwrite",               DC_AIO_NATIVE, 1, 0 },  /* IOCB_CMD_PWRITE */
	{ "aio_fsync",                DC_AIO_NATIVE, 2, 0 },  /* IOCB_CMD_FSYNC */
	{ "aio_fdsync",               DC_AIO_NATIVE, 3, 0 },  /* IOCB_CMD_FDSYNC */
	{ "aio_preadv",               DC_AIO_NATIVE, 7, 0 },  /* IOCB_CMD_PREADV */
	{ "aio_pwritev",              DC_AIO_NATIVE, 8, 0 },  /* IOCB_CMD_PWRITEV */
};
#define NFNS ((int)(sizeof(fns) / sizeof(fns[0])))

int dc_aio_index(const char *name)
{
	for (int i = 0; i < NFNS; i++)
		if (!strcmp(fns[i].name, name))
			return i;
	return -1;
}

const struct dc_aio_fn *dc_aio_fn_at(int idx)
{
	return idx >= 0 && idx < NFNS ? &fns[idx] : NULL;
}
