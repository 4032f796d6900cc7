/* unit_kmech.c: the fentry/kprobe choice for kernel-function layers over every case, its
 * error message, and the BTF / kallsyms facts of this machine's kernel. */
#include "kmech.h"

#include <string.h>
#include <unistd.h>

#include "unit.h"

int main(void)
{
	/* fentry_ok, kprobe_ok, in_btf, in_kallsyms -> mechanism */
	static const struct { int fe, kp, btf, ks; enum dc_kmech want; } cases[] = {
		{ 1, 1, 1, 1, DC_KMECH_FENTRY },  /* both work: fentry, the cheaper */
		{ 1, 0, 1, 1, DC_KMECH_FENTRY },
		{ 1, 1, 0, 1, DC_KMECH_KPROBE },  /* no BTF for it: kprobe */
		{ 0, 1, 1, 1, DC_KMECH_KPROBE },  /* fentry refused (this VM's lockdown) */
		{ 0, 1, 1, 0, DC_KMECH_NONE },    /* inlined: in neither place */
		{ 1, 1, 0, 0, DC_KMECH_NONE },
		{ 0, 0, 1, 1, DC_KMECH_NONE },    /* this VM: neither mechanism */
		{ 1, 0, 0, 1, DC_KMECH_NONE },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum dc_kmech m = dc_kmech_choose(cases[i].fe, cases[i].kp, cases[i].btf,
						  cases[i].ks);
		CHECK(m == cases[i].want, "case %zu: got %s, want %s", i, dc_kmech_name(m),
		      dc_kmech_name(cases[i].want));
	}
	CHECK(!strcmp(dc_kmech_name(DC_KMECH_FENTRY), "fentry") &&
	      !strcmp(dc_kmech_name(DC_KMECH_KPROBE), "kprobe") &&
	      !strcmp(dc_kmech_name(DC_KMECH_NONE), "none"), "names");

	char buf[1024];
	dc_kmech_unavailable("probes/vfs.yaml", "load refused: EPERM", "no kprobe PMU", buf,
			     sizeof(buf));
	CHECK(!strcmp(buf, "probes/vfs.yaml: this layer probes kernel functions with "
		      "fentry/fexit or kprobes, and this kernel allows neither (fentry: load "
		      "refused: EPERM; kprobe: no kprobe PMU): io_syscalls.lua traces the same "
		      "I/O at the system calls (datacrumbs features shows what this kernel "
		      "allows)"), "message: %s", buf);

	/* this kernel: BTF has vfs_read; nothing has a made-up name */
	CHECK(dc_kfunc_in_btf("vfs_read") == 1, "vfs_read in BTF");
	CHECK(dc_kfunc_in_btf("dc_no_such_kernel_function") == 0, "made-up name not in BTF");
	if (access("/proc/kallsyms", R_OK) == 0 && getuid() == 0) {
		/* as root kallsyms shows the symbols (kptr_restrict hides addresses only) */
		CHECK(dc_kfunc_in_kallsyms("vfs_read") == 1, "vfs_read in kallsyms");
		CHECK(dc_kfunc_in_kallsyms("dc_no_such_kernel_function") == 0,
		      "made-up name not in kallsyms");
	}
	return UNIT_DONE("unit_kmech");
}
