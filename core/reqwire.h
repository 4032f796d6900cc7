/* reqwire.h: a script's probe requests as bytes, sent by the user's declare run to site
 * mode's root side, and made into requests again there from trusted descriptions only. */
#ifndef DC_REQWIRE_H
#define DC_REQWIRE_H

#include <stddef.h>
#include <stdint.h>
#include "lua_api.h"

/* The whole of what root needs of a declare run. Records are NUL-terminated fields
 * (no field holds a NUL; every count is bounded when read):
 *   "E" EXE                      the traced executable as the user resolved it
 *   "M" MODE INTERVAL_NS         dc.mode: 0, 1 trace, 2 profile (cli.h DC_MODE_*)
 *   "P" PATH WHERE UPROBE N F*   dc.probe: a description file, its functions (N -1: all,
 *                                0: fds_only), mechanism = "uprobe" (0/1)
 *   "U" CAT FILE WHERE RET RETURNS NARGS ARG* NGLOBS GLOB*   dc.uprobe (ARG "KIND NAME")
 * A growable buffer; data NULL after an allocation failure (then len is 0). */
struct dc_wire {
	char *data;
	size_t len, cap;
	int failed;
};

/* Appends the declare run's facts to w: exe, the script's mode and interval, then each
 * of its n requests in order. Returns 0, or -1 when out of memory. */
int dc_reqwire_encode(struct dc_wire *w, const char *exe, int mode, uint64_t interval_ns,
		      const struct dc_probe_req *reqs, int n);

/* May root load probe description `path` for this user? 0 with the file to load in real
 * (reallen bytes: the resolved path that was checked, never `path` again: a symlink the
 * user owns could change meanwhile), or -1 with err. */
typedef int (*dc_layer_allow_fn)(const char *path, void *arg, char *real, size_t reallen,
				 char *err, size_t errlen);

/* What root made of a declare run's bytes. */
struct dc_wire_reqs {
	char exe[4096];
	int mode;
	uint64_t interval_ns;
	struct dc_probe_req *reqs;   /* nreqs, each layer owned by layers[] */
	int nreqs;
	struct dc_layer **layers;
	int nlayers;
};

/* Reads buf (len bytes) into *out: descriptions are loaded (dc_layer_load) only when
 * allow() accepts their path; a "U" record is refused unless uprobes != 0; functions
 * are checked against their description, arg texts with dc_arg_parse, ret and returns
 * by name. Returns 0, or -1 with one line in err (the record's WHERE first: the script's
 * file:line); *out is then freed. */
int dc_reqwire_decode(const char *buf, size_t len, dc_layer_allow_fn allow, void *arg,
		      int uprobes, struct dc_wire_reqs *out, char *err, size_t errlen);

/* Frees what dc_reqwire_decode made. */
void dc_wire_reqs_free(struct dc_wire_reqs *r);

#endif
