/* main.c: the datacrumbs command: parse the command line, run the session (or the
 * features checks, list, check, status, recover), exit with its status. The rest lives in core/. */
#include <string.h>

#include "check.h"
#include "cli.h"
#include "dc_features.h"
#include "list.h"
#include "pytools.h"
#include "recover.h"
#include "status.h"
#include "session.h"
#include "step.h"

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "status"))
		return dc_status_main(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "features"))
		return dc_features_main(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "list"))
		return dc_list_main(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "check"))
		return dc_check_main(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "recover"))
		return dc_recover_main(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "step"))
		return dc_step_main(argc - 1, argv + 1);
	if (argc >= 2 && dc_pytool_is(argv[1]))
		return dc_pytool_main(argc - 1, argv + 1);
	struct dc_opts o;
	int r = dc_cli_parse(argc, argv, &o);
	if (r == 0)
		r = dc_session_run(&o);
	else if (r == 1)
		r = 0;
	dc_cli_free(&o);
	return r;
}
