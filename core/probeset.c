/* probeset.c: a script's probe requests turned into the probe table of a BPF object
 * (run's and site mode's root side share it: core/session.c, core/step.c). */
#include "probeset.h"

#include <stdio.h>
#include <stdlib.h>

#include "dc_features.h"
#include "kmech.h"
#include "resolve.h"

#define TOO_MANY "too many probes (65536 functions at most): ask for fewer with " \
	"dc.probe{ functions = ... }"

/* Adds the probes of request r on a kernel-function layer (`mechanism: kernel`, e.g. VFS):
 * each function by fentry/fexit where this kernel allows fentry and has the function's
 * BTF, else by kprobe/kretprobe where kprobes work and kallsyms has it (dc_kmech_choose);
 * functions neither can reach (inlined, missing) get a warning. When the kernel allows
 * neither mechanism, the run fails here, before the command starts. Returns the number of
 * probes, or -1 with err. */
static int add_kfunc_probes(struct dc_bpf *b, const struct dc_probe_req *r, char *err,
			    size_t errlen)
{
	const struct dc_layer *l = r->layer;
	struct dc_features f;
	dc_features_check(&f); /* tries fentry and kprobes for real */
	int fe = f.r[DC_FEAT_FENTRY].ok == DC_FEAT_YES, kp = f.r[DC_FEAT_KPROBE].ok == DC_FEAT_YES;
	if (fe && kp && getenv("DATACRUMBS_NO_FENTRY")) { /* tests: the kprobe path too */
		fe = 0;
		fprintf(stderr, "datacrumbs: note: DATACRUMBS_NO_FENTRY is set: layer %s uses "
			"kprobes\n", l->name);
	}
	if (!fe && !kp) {
		dc_kmech_unavailable(l->path, f.r[DC_FEAT_FENTRY].reason, f.r[DC_FEAT_KPROBE].reason,
				     err, errlen);
		return -1;
	}
	int total = 0, n = r->funcs ? r->nfuncs : l->nfuncs;
	for (int k = 0; k < n; k++) {
		const struct dc_func *fn = r->funcs ? dc_layer_func(l, r->funcs[k]) : &l->funcs[k];
		int idx = dc_bpf_kfunc(fn->name);
		enum dc_kmech m = idx < 0 ? DC_KMECH_NONE
			: dc_kmech_choose(fe, kp, dc_kfunc_in_btf(fn->name),
					  dc_kfunc_in_kallsyms(fn->name));
		if (m == DC_KMECH_NONE) {
			fprintf(stderr, "datacrumbs: warning: %s (%s:%d) %s: not traced\n", fn->name,
				l->path, fn->line, idx < 0 ? "has no program in bpf/vfs.bpf.c"
				: "is inlined or missing on this kernel (not in its BTF or kallsyms)");
			continue;
		}
		if (dc_bpf_add_probe(b, l, fn, m == DC_KMECH_FENTRY ? "[fentry]" : "[kprobe]",
				     idx, 0) < 0) {
			snprintf(err, errlen, TOO_MANY);
			return -1;
		}
		total++;
	}
	return total;
}

struct add_ctx {
	struct dc_bpf *b;
	int visible;
};

/* dc_resolve_fn: adds one resolved function to the probe table. */
static int add_resolved(const struct dc_resolved *p, void *arg)
{
	struct add_ctx *c = arg;
	if (dc_bpf_add_probe(c->b, p->layer, p->func, p->where, p->offset, p->hidden) < 0)
		return 1;
	c->visible += !p->hidden;
	return 0;
}

int dc_probeset_add(struct dc_bpf *b, const struct dc_probe_req *reqs, int nreq,
		    const char *binary, char *const *args, int pid, int *bad_binary,
		    unsigned char *missing, char *err, size_t errlen)
{
	int total = 0;
	struct dc_sysset claimed;
	dc_resolve_claimed(reqs, nreq, &claimed);
	*bad_binary = 0;
	for (int i = 0; i < nreq; i++) {
		const struct dc_probe_req *r = &reqs[i];
		if (r->layer->mechanism == DC_MECH_KERNEL) {
			int n = add_kfunc_probes(b, r, err, errlen);
			if (n < 0)
				return -1;
			total += n;
			continue;
		}
		struct add_ctx ctx = { b, 0 };
		int miss = 0;
		int e = dc_resolve_req(r, &claimed, binary, args, pid, add_resolved, &ctx,
				       bad_binary, missing ? &miss : NULL, err, errlen);
		if (missing)
			missing[i] = (unsigned char)miss;
		if (e) {
			if (e > 0)
				snprintf(err, errlen, TOO_MANY);
			return -1;
		}
		total += ctx.visible;
	}
	return total;
}
