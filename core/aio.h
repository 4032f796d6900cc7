/* aio.h: the AIO layer's functions (probes/aio.yaml): which io_uring opcode or Linux AIO
 * command each name stands for, for the loader of bpf/aio.bpf.c (core/attach.c). */
#ifndef DC_AIO_H
#define DC_AIO_H

/* Probe offsets of AIO functions: DC_AIO_PROBE_BASE + their index in the table of
 * core/aio.c, above the indexes of bpf/kernel.bpf.c's tracepoint probes. */
#define DC_AIO_PROBE_BASE 256

enum dc_aio_engine {
	DC_AIO_URING = 1,   /* io_uring: op is an IORING_OP_* (include/uapi/linux/io_uring.h) */
	DC_AIO_NATIVE = 2,  /* io_submit(2): op is an IOCB_CMD_* (include/uapi/linux/aio_abi.h) */
};

struct dc_aio_fn {
	const char *name;    /* the function (event) name in probes/aio.yaml */
	int engine;          /* enum dc_aio_engine */
	int op;              /* IORING_OP_* or IOCB_CMD_* number */
	int datasync;        /* 1: IORING_OP_FSYNC with IORING_FSYNC_DATASYNC (fdatasync) */
};

/* The index of AIO function `name` ("io_uring_read", "aio_pwrite", ...) in the table,
 * or -1 when it is none. */
int dc_aio_index(const char *name);

/* Entry idx of the table (idx from dc_aio_index), or NULL when out of range. */
const struct dc_aio_fn *dc_aio_fn_at(int idx);

#endif
