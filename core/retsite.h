/* retsite.h: how a probed function's return is observed (returned to by a hijacked return
 * address, seen at its return instructions, or not at all) and where its `ret`s are. */
#ifndef DC_RETSITE_H
#define DC_RETSITE_H

#include <stddef.h>
#include <stdint.h>

/* How a function's returns are seen (`returns` of dc.uprobe and of a probe description's
 * function; docs/lua-api.md, docs/probes.md). */
enum dc_returns {
	DC_RETURNS_AUTO = 0,  /* chosen per function by dc_retsite_plan */
	DC_RETURNS_HIJACK,    /* "hijack": the kernel hijacks the return address (session
				 uprobe return, or uretprobe): only for calls that always
				 return through it (plain C) */
	DC_RETURNS_INSN,      /* "instructions": plain uprobes on the function's `ret`s */
	DC_RETURNS_NONE,      /* "none": entry-only events (dur 0, no ret) */
};

/* The return sites one function may have; a function with more is probed entry-only. */
#define DC_RETSITE_MAX 64

/* Set in a return site's offset (struct dc_retplan sites[]) when the `ret` is another
 * function's, one this function tail-calls: the `ret` returns for both, and for that
 * function's other callers too, so a hit that pairs with no frame of this function is
 * not an unpaired return (bpf/datacrumbs.h "Return instructions"). */
#define DC_RETSITE_SHARED (1ULL << 63)

/* What dc_retsite_plan decided for one function. */
struct dc_retplan {
	int mode;           /* DC_RETURNS_HIJACK, _INSN or _NONE (never _AUTO) */
	int go;             /* the file is a Go binary: its stacks move (dc_pinfo.moves) */
	uint64_t entry;     /* file offset for the entry probe (a Go function's: after its
			       stack-growth check, so a stack copy does not enter twice) */
	unsigned nsites;    /* file offsets of its return instructions (mode _INSN), each
			       with DC_RETSITE_SHARED when it is a tail-called function's */
	uint64_t sites[DC_RETSITE_MAX];
	char why[200];      /* the reason for the mode: "C++", "Go binary", or why return
			       instructions could not be used (then mode is _NONE) */
};

/* The name of a mode as users write it ("auto", "hijack", "instructions", "none"). */
const char *dc_returns_name(int mode);

/* Parses a mode's name. Returns the enum dc_returns value, or -1 for an unknown name. */
int dc_returns_parse(const char *name);

/* Plans how the returns of function `name` at file offset `offset` of ELF file `file` are
 * seen. asked: the user's enum dc_returns (AUTO: choose); noret: the function is on the
 * entry-only list (core/resolve.c dc_noret_name). AUTO chooses NONE for noret functions,
 * INSN for Go binaries (section .go.buildinfo or .gopclntab, or a runtime.main symbol)
 * and for C++ (a mangled _Z name, or, with by_file, a file that needs libstdc++ or is
 * it; not a file with .gcc_except_table: glibc has one), HIJACK otherwise. by_file is
 * for functions a user picked in a file (dc.uprobe), not a probe description's C API:
 * a C library that also links libstdc++ keeps its C functions' session returns. INSN decodes the function's bytes (its symbol's st_size,
 * plus its GCC `NAME.cold` part) with Zydis and lists its `ret`s; a function it cannot
 * prove returns only through them (an indirect jump, a jump to another function: a tail
 * call, no `ret`, undecodable bytes, no symbol size, more than DC_RETSITE_MAX) becomes
 * NONE with the reason in out->why. Facts: the ELF file (libelf), its symbols and
 * sections. Returns 0; -1 when the file cannot be read (then out is HIJACK, why says so). */
int dc_retsite_plan(const char *file, const char *name, uint64_t offset, int asked, int noret,
		    int by_file, struct dc_retplan *out);

/* Whether AUTO may choose HIJACK for a C function (1, the default), or must plan it at its
 * return instructions as it does C++ (0). The loader says 0 where the kernel has no
 * session uprobes: there the hijack would be a uretprobe, which rewrites the return
 * address in every process that calls the function, traced or not (docs/features.md).
 * A function INSN cannot serve is then entry-only, never hijacked; only `returns =
 * "hijack"`, asked by name, still is. Set before the plans are made. */
void dc_retsite_allow_hijack(int ok);

/* One function dc_retsite_prefetch plans: the arguments dc_retsite_plan will be given. */
struct dc_retsite_req {
	const char *name;   /* kept by the caller until dc_retsite_prefetch_drop */
	uint64_t offset;
	int asked, noret, by_file;
};

/* Plans the functions reqs[0..n) of ELF file `file` ahead, on up to 8 threads (one per
 * online CPU, sysconf(3) _SC_NPROCESSORS_ONLN; one for fewer than 512 functions), so
 * that dc_retsite_plan, asked the same of the same file, returns the plan made here
 * instead of decoding the function then: a library's tens of thousands of C++ functions
 * decoded side by side. As root, plans of this file version found in the plan cache
 * (core/plancache.h) are taken from there, and when some were not and n >= 1024 the
 * plans made are written there for the next run. The plans stay until the next
 * prefetch or dc_retsite_prefetch_drop; one that ran out of memory is made again when
 * asked. */
void dc_retsite_prefetch(const char *file, const struct dc_retsite_req *reqs, size_t n);

/* Frees the plans of the last dc_retsite_prefetch. */
void dc_retsite_prefetch_drop(void);

#endif
