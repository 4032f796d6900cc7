/* prog_msync.c: msync(2) of a file's mapping, for tests/test_fidelity.py. Creates FILE
 * (argv[1]) of 8192 bytes, maps it shared, closes the fd, fills the pages, msyncs the
 * whole mapping and then its second page, unmaps the first page, msyncs the second again
 * and unmaps it. Exits 0, or 1 when a call fails. */
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 2)
		return 1;
	int fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || ftruncate(fd, 8192))
		return 1;
	char *p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED || close(fd))
		return 1;
	memset(p, 'm', 8192);
	if (msync(p, 8192, MS_SYNC) || msync(p + 4096, 4096, MS_SYNC) || munmap(p, 4096) ||
	    msync(p + 4096, 4096, MS_SYNC) || munmap(p + 4096, 4096))
		return 1;
	return 0;
}
