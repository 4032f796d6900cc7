/* prog_ranks.c: one SLURM task's known I/O, for the SLURM test (tests/test_slurm.py).
 *   prog_ranks DIR [TAG] [hold]   task r (r = SLURM_PROCID) opens DIR/TAG<r>.dat (TAG
 *                      default "rank"), writes r+1 blocks of 65536 bytes with write(2), one
 *                      call per block, and closes it; prints "TAG r HOST PID JOBID" on stdout.
 *                      With hold: then prints "held TAG r" and reads stdin until EOF (the
 *                      test ends it, or scancel does). Exits 0 when every call succeeded. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BLOCK 65536

int main(int argc, char **argv)
{
	static char block[BLOCK];
	char p[4096], host[256] = "?";
	const char *tag = argc > 2 ? argv[2] : "rank";
	const char *r = getenv("SLURM_PROCID");

	if (argc < 2 || !r)
		return 2;
	int rank = atoi(r);
	snprintf(p, sizeof(p), "%s/%s%d.dat", argv[1], tag, rank);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return 1;
	memset(block, 'a' + rank % 26, sizeof(block));
	for (int i = 0; i <= rank; i++)
		if (write(fd, block, BLOCK) != BLOCK)
			return 1;
	if (close(fd))
		return 1;
	gethostname(host, sizeof(host) - 1);
	printf("%s %d %s %d %s\n", tag, rank, host, (int)getpid(), getenv("SLURM_JOB_ID") ? getenv("SLURM_JOB_ID") : "?");
	if (argc > 3 && strcmp(argv[3], "hold") == 0) {
		printf("held %s %d\n", tag, rank);
		fflush(stdout);
		char c;
		while (read(0, &c, 1) > 0)
			;
	}
	return 0;
}
