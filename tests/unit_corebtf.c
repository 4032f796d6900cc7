/* unit_corebtf.c: the small CO-RE target (core/corebtf.h) made from this machine's kernel
 * BTF for a hand-made local BTF: what it copies, how, and what it leaves out. */
#include "corebtf.h"

#include <string.h>
#include <unistd.h>
#include <bpf/btf.h>

#include "kbtf.h"
#include "unit.h"

/* The one type of kind in b named name, or NULL (also when there are two). */
static const struct btf_type *only(const struct btf *b, const char *name, int kind, int *id)
{
	const struct btf_type *found = NULL;
	int n = 0;
	for (__u32 i = 1; i < btf__type_cnt(b); i++) {
		const struct btf_type *t = btf__type_by_id(b, i);
		if (btf_kind(t) == kind && !strcmp(btf__name_by_offset(b, t->name_off), name)) {
			found = t;
			*id = i;
			n++;
		}
	}
	return n == 1 ? found : NULL;
}

/* The kind of type id after typedefs and qualifiers. */
static int base_kind(const struct btf *b, __u32 id)
{
	const struct btf_type *t = btf__type_by_id(b, id);
	while (t && (btf_is_typedef(t) || btf_is_mod(t)))
		t = btf__type_by_id(b, t->type);
	return t ? btf_kind(t) : -1;
}

int main(void)
{
	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		printf("unit_corebtf: SKIP: no /sys/kernel/btf/vmlinux (a kernel without BTF)\n");
		return 0;
	}
	const struct btf *kern = dc_vmlinux_btf();
	CHECK(kern != NULL, "the kernel's BTF parses");
	if (!kern)
		return UNIT_DONE("unit_corebtf");

	/* a local BTF as clang writes one for a CO-RE program: a flavored task_struct with
	 * one field, an enum, a type the kernel does not have */
	struct btf *local = btf__new_empty();
	int l_int = btf__add_int(local, "int", 4, BTF_INT_SIGNED);
	btf__add_struct(local, "task_struct___dc", 4);
	btf__add_field(local, "pid", l_int, 0, 0);
	btf__add_enum(local, "pid_type", 4);
	btf__add_enum_value(local, "PIDTYPE_PID", 0);
	btf__add_struct(local, "dc_not_in_any_kernel", 4);
	btf__add_field(local, "x", l_int, 0, 0);

	struct btf *small = NULL;
	CHECK(!dc_corebtf_build(local, kern, &small) && small, "built");
	if (!small)
		return UNIT_DONE("unit_corebtf");

	int kid = 0, sid = 0;
	const struct btf_type *kt = only(kern, "task_struct", BTF_KIND_STRUCT, &kid);
	const struct btf_type *st = only(small, "task_struct", BTF_KIND_STRUCT, &sid);
	CHECK(kt && st, "one struct task_struct in each (flavor ___dc stripped)");
	if (kt && st) {
		CHECK(st->size == kt->size && btf_vlen(st) == btf_vlen(kt),
		      "task_struct: size %u and %u members, the kernel's %u and %u", st->size,
		      btf_vlen(st), kt->size, btf_vlen(kt));
		const struct btf_member *km = btf_members(kt), *sm = btf_members(st);
		int same = 1, ptrs = 0, nested = 0;
		for (int i = 0; i < btf_vlen(kt) && same; i++) {
			same = km[i].offset == sm[i].offset &&
			       !strcmp(btf__name_by_offset(kern, km[i].name_off),
				       btf__name_by_offset(small, sm[i].name_off)) &&
			       base_kind(kern, km[i].type) == base_kind(small, sm[i].type);
			int k = base_kind(kern, km[i].type);
			ptrs += k == BTF_KIND_PTR;
			if (same && (k == BTF_KIND_STRUCT || k == BTF_KIND_UNION)) {
				/* an embedded struct or union: copied whole, same size */
				__s64 ks = btf__resolve_size(kern, km[i].type);
				__s64 ss = btf__resolve_size(small, sm[i].type);
				same = ks == ss;
				nested++;
			}
		}
		CHECK(same, "task_struct: every member's name, bit offset and kind as the "
		      "kernel's, embedded ones the same size");
		CHECK(ptrs > 0 && nested > 0, "task_struct has pointer (%d) and embedded (%d) "
		      "members", ptrs, nested);
	}
	int eid = 0;
	const struct btf_type *ke = only(kern, "pid_type", BTF_KIND_ENUM, &eid);
	const struct btf_type *se = only(small, "pid_type", BTF_KIND_ENUM, &eid);
	CHECK(ke && se && btf_vlen(se) == btf_vlen(ke), "enum pid_type with all its values");
	CHECK(!only(small, "dc_not_in_any_kernel", BTF_KIND_STRUCT, &eid),
	      "a type the kernel lacks is not made up");
	/* pointers to types not copied point at void: the closure stops there */
	int file_id = 0;
	CHECK(!only(small, "file", BTF_KIND_STRUCT, &file_id),
	      "struct file (only behind pointers of task_struct) is not copied");
	CHECK(btf__type_cnt(small) < btf__type_cnt(kern) / 10,
	      "%u of the kernel's %u types", btf__type_cnt(small), btf__type_cnt(kern));
	/* flavors: "a___b" is a; "__a" and "a__b" are names of their own */
	struct btf *l2 = btf__new_empty();
	btf__add_struct(l2, "__wait_queue_head", 0); /* no such kernel type */
	btf__add_struct(l2, "wait_queue_head___x", 0);
	struct btf *s2 = NULL;
	CHECK(!dc_corebtf_build(l2, kern, &s2) && s2 &&
	      only(s2, "wait_queue_head", BTF_KIND_STRUCT, &eid) &&
	      !only(s2, "__wait_queue_head", BTF_KIND_STRUCT, &eid),
	      "wait_queue_head___x names wait_queue_head");
	btf__free(s2);
	btf__free(l2);
	btf__free(small);
	btf__free(local);
	dc_vmlinux_btf_release();
	return UNIT_DONE("unit_corebtf");
}
