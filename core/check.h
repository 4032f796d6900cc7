/* check.h: `datacrumbs check SCRIPT`: runs a script and resolves the probes it asks for
 * (libraries, offsets, syscall numbers, kernel names) without attaching anything or root. */
#ifndef DC_CHECK_H
#define DC_CHECK_H

/* The `check` command; argv[0] is "check": check [-h] SCRIPT [SCRIPT-ARGS] [-- CMD ARGS].
 * Prints the warnings a run would print (a function a library does not export, ...) on
 * stderr and a summary ending in "OK" on stdout. Returns the exit status: 0 when the
 * script and its probe descriptions are valid, 125 on an error (said with file:line),
 * 2 on a usage error. */
int dc_check_main(int argc, char **argv);

#endif
