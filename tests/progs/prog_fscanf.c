/* prog_fscanf.c: fscanf(3) over a file, for tests/test_fidelity.py: writes FILE (argv[1])
 * as the numbers 0 to 9999, one a line (fprintf: 48,890 bytes), then reads them back with
 * fscanf "%d" until it fails (10,001 calls). Exits 0 when the sum is 49,995,000. */
#include <stdio.h>

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	FILE *f = fopen(argv[1], "w");
	if (!f)
		return 1;
	for (int i = 0; i < 10000; i++)
		fprintf(f, "%d\n", i);
	if (fclose(f) || !(f = fopen(argv[1], "r")))
		return 1;
	long sum = 0;
	int v;
	while (fscanf(f, "%d", &v) == 1)
		sum += v;
	fclose(f);
	return sum == 49995000L ? 0 : 1;
}
