/* unit_retsite.c: core/retsite.c on tests/progs/retsite_fixture.c's functions of known
 * bytes: the mode chosen, the return sites found (exact file offsets), the reasons. */
#include "elfsym.h"
#include "retsite.h"

#include <stdio.h>
#include <string.h>

#include "unit.h"

static struct dc_elf_syms *syms;
static const char *fixture;

static uint64_t off(const char *name)
{
	uint64_t o = dc_elf_sym_offset(syms, name);
	CHECK(o != 0, "%s: no symbol %s", fixture, name);
	return o;
}

/* Plans name with `asked`; checks the mode, the sites (offsets from base's symbol) and
 * the reason's start. */
static void want(const char *name, int asked, int mode, const char *why, int nsites,
		 const char *base, const int *at)
{
	struct dc_retplan p;
	int r = dc_retsite_plan(fixture, name, off(name), asked, 0, 1, &p);
	CHECK(r == 0 && p.mode == mode, "%s: mode %s, want %s (%s)", name,
	      dc_returns_name(p.mode), dc_returns_name(mode), p.why);
	CHECK(!strncmp(p.why, why, strlen(why)), "%s: why '%s', want '%s...'", name, p.why, why);
	CHECK((int)p.nsites == nsites, "%s: %u sites, want %d", name, p.nsites, nsites);
	for (int i = 0; i < nsites && i < (int)p.nsites; i++) {
		uint64_t w = off(i && base ? base : name) + at[i];
		CHECK(p.sites[i] == w, "%s: site %d at 0x%llx, want 0x%llx", name, i,
		      (unsigned long long)p.sites[i], (unsigned long long)w);
	}
	CHECK(p.entry == off(name) && !p.go, "%s: entry at the symbol, not Go", name);
}

int main(int argc, char **argv)
{
	char err[256];
	if (argc != 2) {
		fprintf(stderr, "usage: unit_retsite FIXTURE\n");
		return 2;
	}
	fixture = argv[1];
	syms = dc_elf_syms_open(fixture, err, sizeof(err));
	CHECK(syms != NULL, "%s", err);
	if (!syms)
		return UNIT_DONE("unit_retsite");
	static const int one[] = { 2 }, two[] = { 9, 12 }, cold[] = { 4, 2 };
	want("rs_one", DC_RETURNS_AUTO, DC_RETURNS_HIJACK, "C", 0, NULL, NULL);
	want("rs_one", DC_RETURNS_INSN, DC_RETURNS_INSN, "asked", 1, NULL, one);
	want("_Z5rs_cxxv", DC_RETURNS_AUTO, DC_RETURNS_INSN, "C++", 1, NULL, one);
	want("rs_two", DC_RETURNS_INSN, DC_RETURNS_INSN, "asked", 2, NULL, two);
	want("rs_cold", DC_RETURNS_INSN, DC_RETURNS_INSN, "asked", 2, "rs_cold.cold", cold);
	want("rs_ret_first", DC_RETURNS_INSN, DC_RETURNS_NONE, "returns at its first "
	     "instruction", 0, NULL, NULL);
	want("rs_indirect", DC_RETURNS_INSN, DC_RETURNS_NONE, "an indirect jump at "
	     "rs_indirect+0x2 (a tail call or a jump table)", 0, NULL, NULL);
	/* a tail call: the callee's `ret` returns for rs_tail too, a site shared with the
	 * callee's other callers */
	struct dc_retplan t;
	CHECK(dc_retsite_plan(fixture, "rs_tail", off("rs_tail"), DC_RETURNS_INSN, 0, 1, &t) == 0 &&
	      t.mode == DC_RETURNS_INSN && t.nsites == 1 &&
	      t.sites[0] == ((off("rs_one") + 2) | DC_RETSITE_SHARED),
	      "rs_tail: %s, %u sites, the first 0x%llx, want rs_one's ret, shared (%s)",
	      dc_returns_name(t.mode), t.nsites, (unsigned long long)t.sites[0], t.why);
	want("rs_tail_indirect", DC_RETURNS_INSN, DC_RETURNS_NONE, "an indirect jump at "
	     "rs_indirect+0x2 (a tail call or a jump table)", 0, NULL, NULL);
	/* without session uprobes, auto never hijacks a C function's return: it is seen at
	 * the return instructions (core/retsite.h dc_retsite_allow_hijack) */
	dc_retsite_allow_hijack(0);
	want("rs_one", DC_RETURNS_AUTO, DC_RETURNS_INSN, "C, no session uprobes", 1, NULL, one);
	want("rs_tail_indirect", DC_RETURNS_AUTO, DC_RETURNS_NONE, "an indirect jump", 0, NULL,
	     NULL);
	want("rs_one", DC_RETURNS_HIJACK, DC_RETURNS_HIJACK, "asked", 0, NULL, NULL);
	dc_retsite_allow_hijack(1);
	want("rs_noret", DC_RETURNS_INSN, DC_RETURNS_NONE, "no return instruction", 0, NULL,
	     NULL);
	/* never a uprobe on a byte that is not a reached instruction's first: it would
	 * change the code or data of every process mapping the file */
	want("rs_hidden", DC_RETURNS_INSN, DC_RETURNS_NONE, "a jump into the middle of an "
	     "instruction at rs_hidden+0x0", 0, NULL, NULL);
	static const int table[] = { 11 };
	want("rs_table", DC_RETURNS_INSN, DC_RETURNS_INSN, "asked", 1, NULL, table);
	want("rs_far", DC_RETURNS_INSN, DC_RETURNS_NONE, "a far return or jump at rs_far+0x1",
	     0, NULL, NULL);
	static const int farcall[] = { 2 }, loop[] = { 4 };
	want("rs_farcall", DC_RETURNS_INSN, DC_RETURNS_INSN, "asked", 1, NULL, farcall);
	want("rs_loop", DC_RETURNS_INSN, DC_RETURNS_INSN, "asked", 1, NULL, loop);
	want("rs_one", DC_RETURNS_NONE, DC_RETURNS_NONE, "asked", 0, NULL, NULL);
	want("rs_one", DC_RETURNS_HIJACK, DC_RETURNS_HIJACK, "asked", 0, NULL, NULL);
	/* the entry-only list wins under auto; names and parsing */
	struct dc_retplan p;
	dc_retsite_plan(fixture, "rs_one", off("rs_one"), DC_RETURNS_AUTO, 1, 1, &p);
	CHECK(p.mode == DC_RETURNS_NONE, "noret under auto: %s", dc_returns_name(p.mode));
	CHECK(dc_returns_parse("instructions") == DC_RETURNS_INSN &&
	      dc_returns_parse("hijack") == DC_RETURNS_HIJACK &&
	      dc_returns_parse("none") == DC_RETURNS_NONE &&
	      dc_returns_parse("auto") == DC_RETURNS_AUTO && dc_returns_parse("ret") == -1,
	      "dc_returns_parse");
	CHECK(dc_retsite_plan("/no/such/file", "f", 0x1000, DC_RETURNS_AUTO, 0, 1, &p) == -1 &&
	      p.mode == DC_RETURNS_HIJACK, "unreadable file under auto: hijack, -1");
	dc_elf_syms_close(syms);
	return UNIT_DONE("unit_retsite");
}
