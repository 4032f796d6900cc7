/* corebtf.h: a small target BTF for libbpf's CO-RE relocations of one object: the kernel's
 * types that the object names, with what they hold, instead of all ~127,000 of them. */
#ifndef DC_COREBTF_H
#define DC_COREBTF_H

#include <stddef.h>

struct btf;
struct bpf_object;

/* A memfd (close-on-exec) to hand libbpf as the object's btf_custom_path before the
 * object is opened (bpf_object_open_opts: libbpf 1.1 reads that file only when it loads,
 * bpf_object__relocate_core), its path ("/proc/self/fd/N") written into path[pathlen].
 * Returns the fd, or -1 with errno (then open the object without the option). */
int dc_corebtf_open(char *path, size_t pathlen);

/* The small target for local (an object's own BTF) in *out (the caller btf__free()s it):
 * every kernel type (kern: dc_vmlinux_btf) that is a struct, union, enum, typedef or
 * forward declaration named as one of local's (by its essential name: without a
 * "___flavor" suffix, libbpf's rule), and every type those hold, through members, arrays,
 * typedefs, qualifiers and function prototypes; a pointer keeps its target when that is
 * in the set, else becomes `void *` (a field relocation only asks that both sides be
 * pointers: libbpf relo_core.c bpf_core_fields_are_compat). Field offsets, sizes,
 * existence and enum values so relocate as against the kernel's whole BTF; type ids do
 * not (they are this BTF's), so an object that relocates one (bpf_core_type_id_kernel)
 * must not use it, and libbpf does not search module BTFs when given one: for objects
 * whose types are all vmlinux's. Returns 0, or -1 with errno (ENOMEM; EPROTO: a held
 * type was not copied, a bug). */
int dc_corebtf_build(const struct btf *local, const struct btf *kern, struct btf **out);

/* Fills memfd fd, before obj is loaded, with dc_corebtf_build's target for obj's own BTF,
 * which libbpf's CO-RE candidate searches then walk instead of the kernel's. Returns 0,
 * or -1 with errno; on failure fd holds the whole kernel BTF instead (slower, the same
 * relocations), or nothing when even that could not be written (the load then fails). */
int dc_corebtf_fill(int fd, const struct bpf_object *obj, const struct btf *kern);

#endif
