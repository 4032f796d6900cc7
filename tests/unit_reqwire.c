/* unit_reqwire.c: core/reqwire.c: the requests a declare run sends root, as bytes: a
 * round trip keeps every field; every cut and every changed byte of them is refused or
 * read as some other valid request, never read past, never crashes. */
#include <stdlib.h>
#include <string.h>

#include "probes.h"
#include "reqwire.h"
#include "unit.h"

static const char *posix_yaml;

/* dc_layer_allow_fn: only the source tree's posix.yaml. */
static int allow(const char *path, void *arg, char *real, size_t reallen, char *err,
		 size_t errlen)
{
	(void)arg;
	if (strcmp(path, posix_yaml)) {
		snprintf(err, errlen, "not allowed: %s", path);
		return -1;
	}
	snprintf(real, reallen, "%s", path);
	return 0;
}

int main(int argc, char **argv)
{
	char err[4096];
	posix_yaml = argc > 1 ? argv[1] : "probes/posix.yaml";
	struct dc_layer *posix = dc_layer_load(posix_yaml, err, sizeof(err));
	CHECK(posix != NULL, "posix.yaml loads: %s", err);
	if (!posix)
		return UNIT_DONE("unit_reqwire");
	/* dc.probe { layer = "posix", functions = { "write", "pread" }, mechanism = "uprobe" },
	 * dc.probe "posix", and dc.uprobe { file = "libx.so", functions = { "a*", "b" },
	 * args = { "fd fd", "long count" }, ret = "int", returns = "none", layer = "X" } */
	char *funcs[] = { strdup("write"), strdup("pread"), NULL };
	struct dc_layer *up = dc_layer_custom_new("X", "libx.so", "s.lua:3: ", err, sizeof(err));
	CHECK(up != NULL, "custom layer: %s", err);
	up->tmpl.ret_kind = DC_RET_INT;
	up->tmpl.returns = 3;
	dc_arg_parse("fd fd", &up->tmpl.args[0], err, sizeof(err));
	dc_arg_parse("long count", &up->tmpl.args[1], err, sizeof(err));
	up->tmpl.nargs = 2;
	char **globs = calloc(2, sizeof(char *));
	globs[0] = strdup("a*");
	globs[1] = strdup("b");
	up->globs = globs;
	up->nglobs = 2;
	struct dc_probe_req reqs[3] = {
		{ .layer = posix, .funcs = funcs, .nfuncs = 2, .uprobe = 1, .where = "s.lua:1: " },
		{ .layer = posix, .where = "s.lua:2: " },
		{ .layer = up, .where = "s.lua:3: dc.uprobe" },
	};
	struct dc_wire w = { 0 };
	CHECK(dc_reqwire_encode(&w, "/usr/bin/dd", 2, 250000000, reqs, 3) == 0, "encode");

	struct dc_wire_reqs r;
	int e = dc_reqwire_decode(w.data, w.len, allow, NULL, 1, &r, err, sizeof(err));
	CHECK(e == 0, "decode: %s", err);
	if (e == 0) {
		CHECK(!strcmp(r.exe, "/usr/bin/dd") && r.mode == 2 && r.interval_ns == 250000000,
		      "exe %s mode %d interval %llu", r.exe, r.mode,
		      (unsigned long long)r.interval_ns);
		CHECK(r.nreqs == 3, "3 requests, got %d", r.nreqs);
		CHECK(r.reqs[0].uprobe == 1 && r.reqs[0].nfuncs == 2 &&
		      !strcmp(r.reqs[0].funcs[1], "pread") && !strcmp(r.reqs[0].where, "s.lua:1: "),
		      "request 1 kept");
		CHECK(r.reqs[1].funcs == NULL && r.reqs[1].uprobe == 0, "request 2: every function");
		const struct dc_layer *l = r.reqs[2].layer;
		CHECK(l->custom && !strcmp(l->name, "X") && !strcmp(l->library, "libx.so") &&
		      l->tmpl.ret_kind == DC_RET_INT && l->tmpl.returns == 3 && l->tmpl.nargs == 2 &&
		      l->tmpl.args[0].kind == DC_ARG_FD && !strcmp(l->tmpl.args[1].name, "count") &&
		      l->tmpl.args[1].kind == DC_ARG_LONG && l->nglobs == 2 &&
		      !strcmp(l->globs[0], "a*") && !strcmp(l->path, "s.lua:3: dc.uprobe"),
		      "dc.uprobe kept: %s %s %s", l->name, l->library, l->path);
		dc_wire_reqs_free(&r);
	}
	/* uprobes refused by the site: the script's line named */
	e = dc_reqwire_decode(w.data, w.len, allow, NULL, 0, &r, err, sizeof(err));
	CHECK(e == -1 && strstr(err, "s.lua:3: dc.uprobe: refused"), "uprobes refused: %s", err);
	/* every cut: refused (a record cut), or fewer requests, never more */
	int cuts_refused = 0;
	for (size_t n = 0; n < w.len; n++) {
		char *b = malloc(n + 1);
		memcpy(b, w.data, n);
		if (dc_reqwire_decode(b, n, allow, NULL, 1, &r, err, sizeof(err)) == 0) {
			CHECK(r.nreqs < 3, "a cut at %zu gave %d requests", n, r.nreqs);
			dc_wire_reqs_free(&r);
		} else {
			cuts_refused++;
		}
		free(b);
	}
	CHECK(cuts_refused > 0, "cuts refused: %d of %zu", cuts_refused, w.len);
	/* every byte changed to each of a few values: no crash, no read past (ASan/valgrind
	 * see that), a result or an error */
	const char vals[] = { 0, '1', '-', 'U', 'P', '9' };
	for (size_t n = 0; n < w.len; n++)
		for (size_t v = 0; v < sizeof(vals); v++) {
			char *b = malloc(w.len);
			memcpy(b, w.data, w.len);
			b[n] = vals[v];
			if (dc_reqwire_decode(b, w.len, allow, NULL, 1, &r, err, sizeof(err)) == 0)
				dc_wire_reqs_free(&r);
			free(b);
		}
	/* an unknown description path is refused with the line that named it */
	free(w.data);
	w = (struct dc_wire){ 0 };
	struct dc_layer other = *posix;
	snprintf(other.path, sizeof(other.path), "/home/u/my.yaml");
	struct dc_probe_req q = { .layer = &other, .where = "u.lua:7: " };
	dc_reqwire_encode(&w, "/bin/true", 0, 0, &q, 1);
	e = dc_reqwire_decode(w.data, w.len, allow, NULL, 1, &r, err, sizeof(err));
	CHECK(e == -1 && !strcmp(err, "u.lua:7: probe: not allowed: /home/u/my.yaml"),
	      "foreign description: %s", err);
	free(w.data);
	free(funcs[0]);
	free(funcs[1]);
	dc_layer_free(up);
	dc_layer_free(posix);
	return UNIT_DONE("unit_reqwire");
}
