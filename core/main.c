/* main.c: the datacrumbs command: parse the command line, run the session, exit with
 * its status. Everything else lives in the modules of core/. */
#include "cli.h"
#include "session.h"

int main(int argc, char **argv)
{
	struct dc_opts o;
	int r = dc_cli_parse(argc, argv, &o);
	if (r == 0)
		r = dc_session_run(&o, argc, argv);
	else if (r == 1)
		r = 0;
	dc_cli_free(&o);
	return r;
}
