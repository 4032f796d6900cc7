/* kbtf.h: the kernel's BTF, parsed once per run and lent to libbpf's object loads.
 * Before: libbpf 1.1 read and parsed /sys/kernel/btf/vmlinux again for each BPF object. */
#ifndef DC_KBTF_H
#define DC_KBTF_H

struct btf;

/* The kernel's BTF (/sys/kernel/btf/vmlinux, libbpf btf__load_vmlinux_btf), parsed on the
 * first call and kept: reading and parsing its ~5.5 MB costs ~20-40 ms here, and the
 * features check, the kfunc lookups, the AIO object's prototype check and every
 * bpf_object__load of libbpf ask for it (kbtf.c says how libbpf gets this one). NULL
 * (errno set by libbpf) when it cannot be loaded; asked again on the next call then. The
 * caller does not free it: dc_vmlinux_btf_release does, once nothing needs it any more.
 * Safe from any thread; the parse is only read, by any number of threads at once. */
const struct btf *dc_vmlinux_btf(void);

/* Starts dc_vmlinux_btf's parse on a thread (core/util.h dc_thread_start), so that it runs
 * beside the script instead of on the BPF load's path; a later dc_vmlinux_btf waits for it
 * and returns the same parse. Without a thread, nothing (the first dc_vmlinux_btf parses).
 * Called once, by the thread that later calls dc_vmlinux_btf_release. */
void dc_vmlinux_btf_prefetch(void);

/* Frees what dc_vmlinux_btf kept (after the BPF objects are loaded), joining
 * dc_vmlinux_btf_prefetch's thread first; a later call of dc_vmlinux_btf parses it again,
 * and libbpf's loads parse their own again. */
void dc_vmlinux_btf_release(void);

#endif
