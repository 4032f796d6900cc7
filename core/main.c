/* main.c: the datacrumbs command: parse the command line, run the session (or the
 * features checks), exit with its status. Everything else lives in the modules of core/. */
#include <string.h>

#include "cli.h"
#include "dc_features.h"
#include "session.h"

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "features"))
		return dc_features_main(argc - 1, argv + 1);
	struct dc_opts o;
	int r = dc_cli_parse(argc, argv, &o);
	if (r == 0)
		r = dc_session_run(&o);
	else if (r == 1)
		r = 0;
	dc_cli_free(&o);
	return r;
}
