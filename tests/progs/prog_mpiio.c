/* prog_mpiio.c: an MPI-IO test program doing known I/O on ONE shared file, so a
 * trace of it can be checked exactly.  Usage: mpirun -n N prog_mpiio PATH
 * (PATH should not exist yet, or be no larger than N*12288 bytes: MPI_MODE_CREATE
 * does not truncate).  With rank r of N ranks, each rank does, in this order:
 *
 *   MPI_File_open(MPI_COMM_WORLD, PATH, MPI_MODE_CREATE|MPI_MODE_RDWR)   collective
 *   MPI_File_write_at    (off r*4096,          4096 x MPI_BYTE)   =  4096 bytes
 *   MPI_File_write_at_all(off N*4096 + r*8192, 1024 x MPI_DOUBLE) =  8192 bytes
 *   MPI_File_sync
 *   MPI_File_read_at     (off r*4096,          4096 x MPI_BYTE)   =  4096 bytes
 *   MPI_File_read_at_all (off N*4096 + r*8192, 2048 x MPI_INT)    =  8192 bytes
 *   MPI_File_seek        (off r*4096, MPI_SEEK_SET)
 *   MPI_File_write       (at r*4096, 100 x MPI_CHAR)              =   100 bytes
 *   MPI_File_iwrite_at   (off r*4096,          1024 x MPI_INT)    =  4096 bytes, MPI_Wait
 *   MPI_File_iread_at    (off r*4096,          4096 x MPI_BYTE)   =  4096 bytes, MPI_Wait
 *   MPI_File_get_size    -> N*4096 + N*8192 = N*12288
 *   MPI_File_close
 *
 * Built with -DTHROUGH_PMPI, the first write goes through its PMPI_ name.
 * Per rank: 4096+8192+100 = 12388 bytes written, 4096+8192 = 12288 bytes read.
 * Rank 0 then prints "prog_mpiio: N ranks, size S" (S = N*12288). */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static char buf[8192]; /* large enough for 1024 doubles or 2048 ints */

/* On an MPI error, say which call failed and abort the whole job. */
static void check(int rc, const char *call)
{
	if (rc != MPI_SUCCESS) {
		char msg[MPI_MAX_ERROR_STRING];
		int len = 0;
		MPI_Error_string(rc, msg, &len);
		fprintf(stderr, "prog_mpiio: %s failed: %s\n", call, msg);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
}

/* Check that the status says `want` elements of `type` were transferred. */
static void check_count(MPI_Status *st, MPI_Datatype type, int want, const char *call)
{
	int n = -1;
	check(MPI_Get_count(st, type, &n), "MPI_Get_count");
	if (n != want) {
		fprintf(stderr, "prog_mpiio: %s moved %d elements, not %d\n", call, n, want);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
}

int main(int argc, char **argv)
{
	MPI_File fh;
	MPI_Status st;
	MPI_Offset sz = 0;
	int r, n;

	check(MPI_Init(&argc, &argv), "MPI_Init");
	if (argc < 2) {
		fprintf(stderr, "usage: prog_mpiio PATH\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	check(MPI_Comm_rank(MPI_COMM_WORLD, &r), "MPI_Comm_rank");
	check(MPI_Comm_size(MPI_COMM_WORLD, &n), "MPI_Comm_size");
	/* File errors default to MPI_ERRORS_RETURN, so return codes are checked. */
	check(MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR,
			    MPI_INFO_NULL, &fh), "MPI_File_open");
	memset(buf, 'a' + r % 26, sizeof(buf));

	/* Each rank's 4 KiB block at r*4096, then its 8 KiB block after all of those. */
	MPI_Offset off1 = (MPI_Offset)r * 4096;
	MPI_Offset off2 = (MPI_Offset)n * 4096 + (MPI_Offset)r * 8192;

#ifdef THROUGH_PMPI /* as HDF5 and profiling layers call it: the same call, once */
	check(PMPI_File_write_at(fh, off1, buf, 4096, MPI_BYTE, &st), "PMPI_File_write_at");
#else
	check(MPI_File_write_at(fh, off1, buf, 4096, MPI_BYTE, &st), "MPI_File_write_at");
#endif
	check_count(&st, MPI_BYTE, 4096, "MPI_File_write_at");
	check(MPI_File_write_at_all(fh, off2, buf, 1024, MPI_DOUBLE, &st),
	      "MPI_File_write_at_all");
	check_count(&st, MPI_DOUBLE, 1024, "MPI_File_write_at_all");
	check(MPI_File_sync(fh), "MPI_File_sync");

	check(MPI_File_read_at(fh, off1, buf, 4096, MPI_BYTE, &st), "MPI_File_read_at");
	check_count(&st, MPI_BYTE, 4096, "MPI_File_read_at");
	check(MPI_File_read_at_all(fh, off2, buf, 2048, MPI_INT, &st), "MPI_File_read_at_all");
	check_count(&st, MPI_INT, 2048, "MPI_File_read_at_all");

	/* Individual file pointer: seek to r*4096 and overwrite the first 100 bytes. */
	check(MPI_File_seek(fh, off1, MPI_SEEK_SET), "MPI_File_seek");
	check(MPI_File_write(fh, buf, 100, MPI_CHAR, &st), "MPI_File_write");
	check_count(&st, MPI_CHAR, 100, "MPI_File_write");

	/* Nonblocking: rewrite and read back r*4096.., each waited for. */
	MPI_Request req;
	check(MPI_File_iwrite_at(fh, off1, buf, 1024, MPI_INT, &req), "MPI_File_iwrite_at");
	check(MPI_Wait(&req, &st), "MPI_Wait");
	check_count(&st, MPI_INT, 1024, "MPI_File_iwrite_at");
	check(MPI_File_iread_at(fh, off1, buf, 4096, MPI_BYTE, &req), "MPI_File_iread_at");
	check(MPI_Wait(&req, &st), "MPI_Wait");
	check_count(&st, MPI_BYTE, 4096, "MPI_File_iread_at");

	check(MPI_File_get_size(fh, &sz), "MPI_File_get_size");
	check(MPI_File_close(&fh), "MPI_File_close");
	if (r == 0)
		printf("prog_mpiio: %d ranks, size %lld\n", n, (long long)sz);
	check(MPI_Finalize(), "MPI_Finalize");
	return sz == (MPI_Offset)n * 12288 ? 0 : 1;
}
