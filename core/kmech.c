/* kmech.c: the per-function choice between fentry and kprobe for kernel-function layers
 * (VFS), and the facts it rests on (BTF, kallsyms). No BPF is loaded here. */
#include "kmech.h"

#include <stdio.h>
#include <string.h>
#include <bpf/btf.h>

enum dc_kmech dc_kmech_choose(int fentry_ok, int kprobe_ok, int in_btf, int in_kallsyms)
{
	if (fentry_ok && in_btf)
		return DC_KMECH_FENTRY;
	if (kprobe_ok && in_kallsyms)
		return DC_KMECH_KPROBE;
	return DC_KMECH_NONE;
}

const char *dc_kmech_name(enum dc_kmech m)
{
	return m == DC_KMECH_FENTRY ? "fentry" : m == DC_KMECH_KPROBE ? "kprobe" : "none";
}

int dc_kfunc_in_btf(const char *name)
{
	const struct btf *btf = dc_vmlinux_btf();
	return btf && btf__find_by_name_kind(btf, name, BTF_KIND_FUNC) > 0;
}

int dc_kfunc_in_kallsyms(const char *name)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	if (!f)
		return 0;
	char line[512], sym[256], type;
	int found = 0;
	while (!found && fgets(line, sizeof(line), f)) {
		/* "ffffffff81234560 T vfs_read" (a module's symbols end in " [mod]") */
		if (sscanf(line, "%*s %c %255s", &type, sym) == 2 && (type == 'T' || type == 't'))
			found = !strcmp(sym, name);
	}
	fclose(f);
	return found;
}

void dc_kmech_unavailable(const char *layer_path, const char *fentry_why,
			  const char *kprobe_why, char *buf, size_t len)
{
	snprintf(buf, len, "%s: this layer probes kernel functions with fentry/fexit or "
		 "kprobes, and this kernel allows neither (fentry: %s; kprobe: %s): "
		 "io_syscalls.lua traces the same I/O at the system calls "
		 "(datacrumbs features shows what this kernel allows)",
		 layer_path, fentry_why, kprobe_why);
}
