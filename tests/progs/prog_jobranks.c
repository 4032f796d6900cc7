/* prog_jobranks.c: "ranks" of a job step on one node, for tests/test_jobview.py. Linked with
 * MPICH (mpicc.mpich). `prog_jobranks DIR R:BYTES...` forks one child per argument, which
 * re-executes this program with SLURM_PROCID=R (the rank as srun sets it); the child calls
 * MPI_Init (a singleton), opens DIR/rank-R.dat, writes BYTES bytes to it in pieces of at
 * most 4096 bytes, seeks to 0, reads back its first BYTES/2 bytes (rounded down) in
 * pieces of at most 4096, closes it and calls MPI_Finalize. R "-" is a task that is no rank: no SLURM_PROCID, no
 * MPI_Init or MPI_Finalize, the same I/O on DIR/rank--.dat. The parent does no I/O in DIR,
 * waits for every child and exits 0 when each exited 0. */
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int rank_main(const char *dir, const char *rank, long bytes)
{
	char path[4096], buf[4096];
	int argc = 0;
	char **argv = NULL;
	int mpi = rank != NULL;
	if (mpi && MPI_Init(&argc, &argv) != MPI_SUCCESS)
		return 1;
	if (!rank)
		rank = "-";
	snprintf(path, sizeof(path), "%s/rank-%s.dat", dir, rank);
	memset(buf, 'r', sizeof(buf));
	int fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0600);
	if (fd < 0)
		return 1;
	for (long left = bytes; left > 0;) {
		size_t n = left < (long)sizeof(buf) ? (size_t)left : sizeof(buf);
		if (write(fd, buf, n) != (ssize_t)n)
			return 1;
		left -= n;
	}
	if (lseek(fd, 0, SEEK_SET) != 0)
		return 1;
	long got = 0, half = bytes / 2;
	while (got < half) {
		size_t n = half - got < (long)sizeof(buf) ? (size_t)(half - got) : sizeof(buf);
		if (read(fd, buf, n) != (ssize_t)n)
			return 1;
		got += n;
	}
	close(fd);
	if (mpi)
		MPI_Finalize();
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "--rank"))
		return rank_main(argv[2], getenv("SLURM_PROCID"), atol(argv[3]));
	if (argc < 3) {
		fprintf(stderr, "usage: prog_jobranks DIR R:BYTES...\n");
		return 2;
	}
	for (int i = 2; i < argc; i++) {
		char *colon = strchr(argv[i], ':');
		if (!colon)
			return 2;
		*colon = 0;
		pid_t p = fork();
		if (p == 0) {
			if (strcmp(argv[i], "-"))
				setenv("SLURM_PROCID", argv[i], 1);
			else
				unsetenv("SLURM_PROCID");
			char *args[] = { argv[0], "--rank", argv[1], colon + 1, NULL };
			execv("/proc/self/exe", args);
			_exit(127);
		}
		if (p < 0)
			return 1;
	}
	int st, bad = 0;
	while (wait(&st) > 0)
		bad |= !WIFEXITED(st) || WEXITSTATUS(st);
	return bad;
}
