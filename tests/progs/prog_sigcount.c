/* prog_sigcount.c: counts the SIGINTs it receives. Prints "ready", waits for the first
 * SIGINT, prints "got N", then reads one line of stdin and prints "final N": a Ctrl-C
 * typed once must arrive once (not also forwarded by the tracer). */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t n;

static void on_int(int sig)
{
	(void)sig;
	n++;
}

int main(void)
{
	struct sigaction sa;
	char line[64];
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_int;
	sigaction(SIGINT, &sa, NULL);
	printf("ready\n");
	fflush(stdout);
	while (n == 0)
		pause();
	printf("got %d\n", (int)n);
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	printf("final %d\n", (int)n);
	fflush(stdout);
	return 0;
}
