/* prog_mpi_ignore.c: MPI-IO writes whose status is MPI_STATUS_IGNORE, for
 * tests/test_fidelity.py. Each of n ranks writes, to the file argv[1], 4096 bytes at
 * rank * 4096 (MPI_File_write_at) and 1024 doubles at n * 4096 + rank * 8192
 * (MPI_File_write_at_all): the file is n * 12288 bytes. Prints "prog_mpi_ignore: N ranks"
 * on rank 0; exits 1 with the failing call's name on an error. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static int need(int err, const char *what)
{
	if (err != MPI_SUCCESS) {
		fprintf(stderr, "prog_mpi_ignore: %s failed (%d)\n", what, err);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	return err;
}

int main(int argc, char **argv)
{
	static char bytes[4096];
	static double doubles[1024];
	int rank, n;
	MPI_File fh;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	if (argc != 2) {
		fprintf(stderr, "usage: prog_mpi_ignore FILE\n");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	memset(bytes, 'b', sizeof(bytes));
	need(MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_WRONLY,
			   MPI_INFO_NULL, &fh), "MPI_File_open");
	need(MPI_File_write_at(fh, (MPI_Offset)rank * 4096, bytes, 4096, MPI_BYTE,
			       MPI_STATUS_IGNORE), "MPI_File_write_at");
	need(MPI_File_write_at_all(fh, (MPI_Offset)n * 4096 + (MPI_Offset)rank * 8192, doubles,
				   1024, MPI_DOUBLE, MPI_STATUS_IGNORE), "MPI_File_write_at_all");
	need(MPI_File_close(&fh), "MPI_File_close");
	if (rank == 0)
		printf("prog_mpi_ignore: %d ranks\n", n);
	MPI_Finalize();
	return 0;
}
