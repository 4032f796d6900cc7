/* kmech.h: how a kernel function can be probed here: fentry/fexit (BTF, ftrace) or
 * kprobe/kretprobe (kallsyms), chosen per function at run time, and the message when neither. */
#ifndef DC_KMECH_H
#define DC_KMECH_H

#include <stddef.h>

#include "kbtf.h" /* dc_vmlinux_btf, which these rest on */

enum dc_kmech {
	DC_KMECH_NONE = 0, /* the function cannot be probed here */
	DC_KMECH_FENTRY,   /* fentry + fexit: cheapest; needs BTF of the function (5.5+) */
	DC_KMECH_KPROBE,   /* kprobe + kretprobe: needs the symbol in /proc/kallsyms */
};

/* The mechanism for one function: fentry when the kernel allows fentry (fentry_ok) and
 * its BTF has the function (in_btf), else kprobe when kprobes work and kallsyms has the
 * symbol (an inlined or static-and-gone function has neither), else DC_KMECH_NONE. */
enum dc_kmech dc_kmech_choose(int fentry_ok, int kprobe_ok, int in_btf, int in_kallsyms);

/* "fentry" / "kprobe" / "none". */
const char *dc_kmech_name(enum dc_kmech m);

/* 1 when /sys/kernel/btf/vmlinux has a FUNC named `name` (libbpf btf__find_by_name_kind,
 * on dc_vmlinux_btf), 0 when not or when BTF cannot be read. */
int dc_kfunc_in_btf(const char *name);

/* 1 when /proc/kallsyms lists a text symbol `name` (an out-of-line function: kprobes can
 * attach), 0 otherwise. Reads the file on each call. */
int dc_kfunc_in_kallsyms(const char *name);

/* The one-line error for a layer that needs fentry or kprobes on a kernel that has
 * neither: names the layer's file, each mechanism's reason (from datacrumbs features),
 * and what to use instead. Written into buf. */
void dc_kmech_unavailable(const char *layer_path, const char *fentry_why,
			  const char *kprobe_why, char *buf, size_t len);

#endif
