/* check.c: `datacrumbs check SCRIPT`: loads and runs a script in its Lua state and resolves
 * every probe it asks for as a run would, without BPF, attaching or root; prints a summary. */
#include "check.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "attach.h"
#include "elfsym.h"
#include "kmech.h"
#include "lua_api.h"
#include "resolve.h"
#include "util.h"
#include "retsite.h"

static const char check_help[] =
"usage: datacrumbs check SCRIPT [SCRIPT-ARGS] [-- CMD [ARGS...]]\n"
"\n"
"Loads SCRIPT as 'datacrumbs run' would (found the same way, with the same arguments),\n"
"then resolves every probe it asks for without attaching anything: for uprobe layers the\n"
"library CMD loads (the one /bin/sh loads when no CMD is given) and each function's file\n"
"offset; for syscall layers the syscall numbers; for tracepoint and kernel layers the\n"
"names. Warns as a run does about what would not be traced, then prints a summary:\n"
"  io_posix.lua: 78 functions in 2 layers: POSIX (syscalls: 56, libc.so.6: 4), AIO ... OK\n"
"Needs no root and starts no command.\n"
"\n"
"options (before SCRIPT):\n"
"  -h, --help   this text\n"
"  --unsafe     let the script start programs and load native code, as run --unsafe\n"
"\n"
"exit status: 0 when the script is valid; 125 on an error (a syntax or run-time error\n"
"of the script or a bad probe description, said with file:line); 2 on a usage error.\n";

#define EXIT_FAIL 125

/* One resolved probe: (where, offset) as dc_bpf_add_probe dedups them. */
struct cprobe {
	char where[PATH_MAX];   /* library path, or "[syscall]", "[tracepoint]", "[kernel]" */
	uint64_t offset;
	const char *cat;        /* the layer's name */
	int visible;
	const char *name;       /* the function (uprobe layers) */
	struct dc_retplan plan; /* how its returns are seen (core/retsite.c), uprobe layers */
};

struct check {
	struct cprobe *v;
	int n, cap;
	struct dc_index ix;     /* (where, offset) -> v[] */
};

struct place_key {
	const char *where;
	uint64_t offset;
};

static uint64_t place_hash(const char *where, uint64_t off)
{
	return dc_hash_bytes(dc_hash_bytes(14695981039346656037ULL, where, strlen(where)), &off,
			     sizeof(off));
}

static int place_match(size_t idx, const void *key, void *arg)
{
	const struct place_key *k = key;
	const struct check *c = arg;
	return c->v[idx].offset == k->offset && !strcmp(c->v[idx].where, k->where);
}

static int add(struct check *c, const char *cat, const char *where, uint64_t off, int hidden)
{
	struct place_key k = { where, off };
	uint64_t h = place_hash(where, off);
	long i = dc_index_find(&c->ix, h, place_match, &k, c);
	if (i >= 0) {
		c->v[i].visible |= !hidden;
		return 0;
	}
	if (dc_index_add(&c->ix, h, c->n))
		return -1;
	if (c->n == c->cap) {
		int cap = c->cap ? 2 * c->cap : 128;
		struct cprobe *v = realloc(c->v, cap * sizeof(*v));
		if (!v)
			return -1;
		c->v = v;
		c->cap = cap;
	}
	struct cprobe *p = &c->v[c->n++];
	memset(p, 0, sizeof(*p));
	snprintf(p->where, sizeof(p->where), "%s", where);
	p->offset = off;
	p->cat = cat;
	p->visible = !hidden;
	return 0;
}

/* A kernel-function layer: a program in bpf/vfs.bpf.c and the function in this kernel's
 * BTF or kallsyms (whether fentry or kprobes are allowed is decided by a run). */
static int check_kfuncs(struct check *c, const struct dc_probe_req *r)
{
	const struct dc_layer *l = r->layer;
	int n = r->funcs ? r->nfuncs : l->nfuncs;
	for (int k = 0; k < n; k++) {
		const struct dc_func *fn = r->funcs ? dc_layer_func(l, r->funcs[k]) : &l->funcs[k];
		int idx = dc_bpf_kfunc(fn->name);
		if (idx < 0 || !(dc_kfunc_in_btf(fn->name) || dc_kfunc_in_kallsyms(fn->name))) {
			fprintf(stderr, "datacrumbs: warning: %s (%s:%d) %s: not traced\n", fn->name,
				l->path, fn->line, idx < 0 ? "has no program in bpf/vfs.bpf.c"
				: "is inlined or missing on this kernel (not in its BTF or kallsyms)");
			continue;
		}
		if (add(c, l->name, "[kernel]", idx, 0))
			return -1;
	}
	return 0;
}

/* dc_resolve_fn: counts one resolved function, and plans its returns as a run would. */
static int add_resolved(const struct dc_resolved *p, void *arg)
{
	struct check *c = arg;
	int n = c->n;
	if (add(c, p->layer->name, p->where, p->offset, p->hidden))
		return 1;
	if (c->n > n && p->layer->mechanism == DC_MECH_UPROBE) {
		const struct dc_func *f = p->func;
		c->v[n].name = f->name;
		dc_retsite_plan(p->where, f->symbol[0] ? f->symbol : f->name, p->offset,
				f->returns, f->noret, p->layer->custom, &c->v[n].plan);
	}
	return 0;
}

/* One line per visible function whose returns are not the kernel's hijacked return
 * address: seen at its return instructions, or entry-only, and why (core/retsite.c). */
static void returns_lines(const struct check *c)
{
	for (int i = 0; i < c->n; i++) {
		const struct cprobe *p = &c->v[i];
		if (!p->visible || !p->name || p->plan.mode == DC_RETURNS_HIJACK ||
		    p->plan.mode == DC_RETURNS_AUTO)
			continue;
		const char *f = strrchr(p->where, '/');
		if (p->plan.mode == DC_RETURNS_INSN)
			printf("  %s (%s): returns seen at its %u return instruction%s (%s)\n",
			       p->name, f ? f + 1 : p->where, p->plan.nsites,
			       p->plan.nsites == 1 ? "" : "s", p->plan.why);
		else
			printf("  %s (%s): entry-only (%s)\n", p->name, f ? f + 1 : p->where,
			       p->plan.why);
	}
}

/* What the summary calls a probe's place: a library's file name, or the mechanism. */
static const char *place(const char *where)
{
	if (!strcmp(where, "[syscall]"))
		return "syscalls";
	if (!strcmp(where, "[tracepoint]"))
		return "tracepoints";
	if (!strcmp(where, "[kernel]"))
		return "kernel functions";
	const char *s = strrchr(where, '/');
	return s ? s + 1 : where;
}

/* "N functions in M layers: CAT (place: n, ...), ..." of the visible probes: M the layers
 * listed (a layer with none visible, such as one the script asked for only for its fd
 * table, is neither listed nor counted). */
static void summary(const struct check *c, const char *script)
{
	int total = 0, nlayers = 0;
	for (int i = 0; i < c->n; i++) {
		if (!c->v[i].visible)
			continue;
		total++;
		int seen = 0;
		for (int j = 0; j < i && !seen; j++)
			seen = c->v[j].visible && !strcmp(c->v[j].cat, c->v[i].cat);
		nlayers += !seen;
	}
	printf("%s: %d function%s in %d layer%s:", script, total, total == 1 ? "" : "s",
	       nlayers, nlayers == 1 ? "" : "s");
	int ncats = 0;
	for (int i = 0; i < c->n; i++) {
		if (!c->v[i].visible)
			continue;
		int seen = 0;
		for (int j = 0; j < i && !seen; j++)
			seen = c->v[j].visible && !strcmp(c->v[j].cat, c->v[i].cat);
		if (seen)
			continue;
		printf("%s %s (", ncats++ ? "," : "", c->v[i].cat);
		int nplaces = 0;
		for (int j = i; j < c->n; j++) {
			if (!c->v[j].visible || strcmp(c->v[j].cat, c->v[i].cat))
				continue;
			const char *p = place(c->v[j].where);
			int pseen = 0;
			for (int k = i; k < j && !pseen; k++)
				pseen = c->v[k].visible && !strcmp(c->v[k].cat, c->v[i].cat) &&
					!strcmp(place(c->v[k].where), p);
			if (pseen)
				continue;
			int n = 0;
			for (int k = j; k < c->n; k++)
				n += c->v[k].visible && !strcmp(c->v[k].cat, c->v[i].cat) &&
				     !strcmp(place(c->v[k].where), p);
			printf("%s%s: %d", nplaces++ ? ", " : "", p, n);
		}
		printf(")");
	}
	printf(" ... OK\n");
}

static void close_handle(uv_handle_t *h, void *arg)
{
	(void)arg;
	if (!uv_is_closing(h))
		uv_close(h, NULL);
}

/* The arguments of `datacrumbs check`: [--unsafe] SCRIPT [ARGS] [-- CMD [ARGS]]. Sets
 * *script, *cmd (NULL: none), the script's arguments in sargs (argc + 1 slots, NULL-ended:
 * calloc'd by the caller) and *unsafe. Returns -1 when the check is to run, else the exit
 * code: 0 after --help, 2 after a usage error said on stderr. */
static int check_args(int argc, char **argv, const char **script, char ***cmd, char **sargs,
		      int *unsafe)
{
	int nsargs = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--")) {
			if (i + 1 >= argc) {
				fprintf(stderr, "datacrumbs: no command after -- (see 'datacrumbs "
					"check --help')\n");
				return 2;
			}
			*cmd = &argv[i + 1];
			break;
		}
		if (!*script && (!strcmp(a, "-h") || !strcmp(a, "--help"))) {
			fputs(check_help, stdout);
			return 0;
		}
		if (!*script && !strcmp(a, "--unsafe")) {
			*unsafe = 1;
			continue;
		}
		if (!*script) {
			if (!a[0] || a[0] == '-') {
				fprintf(stderr, "datacrumbs: %s '%s' (see 'datacrumbs check --help')\n",
					a[0] ? "unknown option" : "an empty SCRIPT name", a);
				return 2;
			}
			*script = a;
		} else {
			sargs[nsargs++] = argv[i];
		}
	}
	if (!*script) {
		fprintf(stderr, "datacrumbs: no SCRIPT given (e.g. io_posix.lua; see "
			"'datacrumbs check --help')\n");
		return 2;
	}
	return -1;
}

/* Resolves each request of the script that ran in s as `run` would (against CMD's
 * libraries, else /bin/sh's; kernel functions against this kernel) and prints the summary.
 * Returns 0, or -1 with err. */
static int check_requests(struct check *c, struct dc_script *s, const char *script,
			  char **cmd, char *err, size_t errlen)
{
	char binary[PATH_MAX];
	int nreq;
	if (cmd) {
		if (dc_elf_which(cmd[0], binary, sizeof(binary), err, errlen))
			return -1;
	} else {
		snprintf(binary, sizeof(binary), "/bin/sh");
	}
	const struct dc_probe_req *reqs = dc_script_reqs(s, &nreq);
	if (nreq == 0) {
		snprintf(err, errlen, "%s asks for no probes (call datacrumbs.probe in it)",
			 script);
		return -1;
	}
	int waiting = 0;
	struct dc_sysset claimed;
	dc_resolve_claimed(reqs, nreq, &claimed);
	for (int i = 0; i < nreq; i++) {
		const struct dc_probe_req *r = &reqs[i];
		int e, bad, missing; /* a library loaded at run time: said so by the note */
		err[0] = 0;
		if (r->layer->mechanism == DC_MECH_KERNEL)
			e = check_kfuncs(c, r);
		else
			e = dc_resolve_req(r, &claimed, binary, cmd ? cmd + 1 : NULL, 0, add_resolved, c,
					   &bad, &missing, err, errlen);
		if (e) {
			if (!err[0])
				snprintf(err, errlen, "out of memory");
			return -1;
		}
		waiting += r->layer->mechanism != DC_MECH_KERNEL && missing;
	}
	int visible = 0;
	for (int i = 0; i < c->n; i++)
		visible += c->v[i].visible;
	if (!visible && !waiting) { /* a library loaded at run time is attached then */
		snprintf(err, errlen, "%s: no probe could be attached (see the warnings "
			 "above)%s", script, cmd ? "" : "; the libraries are those of the command: "
			 "give it, as in check SCRIPT -- mpirun -np 2 ./app");
		return -1;
	}
	const char *base = strrchr(script, '/');
	summary(c, base ? base + 1 : script);
	returns_lines(c);
	return 0;
}

int dc_check_main(int argc, char **argv)
{
	const char *script = NULL;
	char **cmd = NULL;
	char **sargs = calloc(argc + 1, sizeof(char *));
	int unsafe = 0;
	if (!sargs)
		return EXIT_FAIL;
	int r = check_args(argc, argv, &script, &cmd, sargs, &unsafe);
	if (r >= 0) {
		free(sargs);
		return r;
	}

	int rc = EXIT_FAIL;
	char err[PATH_MAX + 1024], path[PATH_MAX];
	struct check c = { 0 };
	uv_loop_t loop;
	if (uv_loop_init(&loop)) {
		fprintf(stderr, "datacrumbs: cannot create the event loop\n");
		free(sargs);
		return EXIT_FAIL;
	}
	struct dc_run_info info = { .output = ".", .mode = NULL, .cmd = cmd,
				    .script_args = sargs, .unsafe = unsafe };
	struct dc_script *s = dc_script_new(&loop, &info);
	if (!s) {
		snprintf(err, sizeof(err), "cannot create the Lua state: out of memory");
		goto out;
	}
	if (dc_script_find(script, path, sizeof(path), err, sizeof(err)))
		goto out;
	int ran = dc_script_run(s, path, err, sizeof(err));
	if (ran == 1) {
		/* dc.done: the script ends the run itself before probing (its --help), as
		 * `run` does with the script's status; nothing is asked for, nothing to check */
		const char *b = strrchr(script, '/');
		printf("%s: the script ends the run early (dc.done(%d)): no probes to check\n",
		       b ? b + 1 : script, dc_script_done(s));
		rc = 0;
		goto out;
	}
	if (ran)
		goto out;
	if (check_requests(&c, s, script, cmd, err, sizeof(err)))
		goto out;
	rc = 0;
out:
	if (rc)
		fprintf(stderr, "datacrumbs: %s\n", err);
	uv_walk(&loop, close_handle, NULL);
	uv_run(&loop, UV_RUN_DEFAULT);
	dc_script_free(s);
	uv_loop_close(&loop);
	free(c.v);
	dc_index_free(&c.ix);
	free(sargs);
	return rc;
}
