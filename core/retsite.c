/* retsite.c: chooses per function how its return is observed, and finds the return
 * instructions of a function in an ELF file by decoding its bytes with Zydis. */
#include "retsite.h"
#include "elfsym.h"
#include "pinfile.h"
#include "plancache.h"

#include <fcntl.h>
#include <pthread.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <Zydis/Zydis.h>
#include <elfutils/libdw.h>

static const char *const names[] = { "auto", "hijack", "instructions", "none" };

const char *dc_returns_name(int mode)
{
	return mode >= 0 && mode < 4 ? names[mode] : "?";
}

int dc_returns_parse(const char *name)
{
	for (int i = 0; i < 4; i++)
		if (name && !strcmp(name, names[i]))
			return i;
	return -1;
}

/* What AUTO is asked as where the kernel cannot confine a return hijack to the traced
 * processes (dc_retsite_allow_hijack(0)): its own value, so that its plans are told apart
 * from AUTO's in the prefetch and in the plan cache. */
#define ASK_AUTO_NO_HIJACK 4

static int hijack_ok = 1;

void dc_retsite_allow_hijack(int ok)
{
	hijack_ok = ok;
}

/* The mode a plan is made and looked up by, for what the caller asked. */
static int ask_of(int asked)
{
	return asked == DC_RETURNS_AUTO && !hijack_ok ? ASK_AUTO_NO_HIJACK : asked;
}

/* A function symbol: [value, value + size) in the file's address space. */
struct fsym {
	uint64_t value, size;
	char *name;
};

/* A PT_LOAD segment, to map addresses to file offsets and back. */
struct seg {
	uint64_t vaddr, off, filesz;
};

/* A GOT slot a relocation fills with a function's address (R_X86_64_JUMP_SLOT of a PLT
 * stub, R_X86_64_GLOB_DAT of a .plt.got one): the function's name, in the ELF's data. */
struct slot {
	uint64_t got;
	const char *name;
};

/* What is known of one file; the last file asked about is kept (the loader asks about
 * one library's functions in a row). */
static struct {
	char path[4096];
	dev_t dev;
	ino_t ino;
	struct timespec mtime;
	struct dc_plankey key; /* the version of the file open as fd (fstat, build-id) */
	int ok;             /* the file was read */
	int cxx, go;
	struct fsym *syms;  /* sorted by value */
	size_t nsyms;
	struct seg segs[16];
	int nsegs;
	int fd;             /* the file, open while it is the cached one (-1 or 0: none) */
	Elf *elf;           /* fd's ELF, kept for cfi */
	Dwarf_CFI *cfi;     /* its .eh_frame (libdw), NULL when it has none */
	struct slot *slots; /* its GOT slots that name a function (plt_target), by address */
	size_t nslots;
} cache;

/* libdw caches the FDEs it has read inside cfi: the planning threads take turns */
static pthread_mutex_t cfi_lock = PTHREAD_MUTEX_INITIALIZER;

static void cache_clear(void)
{
	for (size_t i = 0; i < cache.nsyms; i++)
		free(cache.syms[i].name);
	free(cache.syms);
	free(cache.slots);
	if (cache.cfi)
		dwarf_cfi_end(cache.cfi);
	if (cache.elf)
		elf_end(cache.elf);
	if (cache.fd > 0)
		close(cache.fd);
	memset(&cache, 0, sizeof(cache));
}

/* The code part that starts at address a and no symbol names, by the call frame
 * information (.eh_frame, every part of every function GCC emits has its FDE): a
 * stripped library's NAME.cold part, or a local function it tail-calls. Fills *part
 * ([a, end), named "an unnamed part") and returns 1; 0 when no FDE starts at a. */
static int cfi_part(uint64_t a, struct fsym *part)
{
	Dwarf_Frame *fr = NULL;
	Dwarf_Addr start = 0, end = 0;
	pthread_mutex_lock(&cfi_lock);
	if (cache.cfi && dwarf_cfi_addrframe(cache.cfi, a, &fr) == 0 && fr)
		dwarf_frame_info(fr, &start, &end, NULL);
	pthread_mutex_unlock(&cfi_lock);
	free(fr);
	if (start != a || end <= a)
		return 0;
	*part = (struct fsym){ a, end - a, "an unnamed part" };
	return 1;
}

static int sym_by_value(const void *a, const void *b)
{
	const struct fsym *x = a, *y = b;
	return x->value < y->value ? -1 : x->value > y->value;
}

/* Adds the sized function symbols of symbol table section scn. Returns 0, -1 on OOM. */
static int read_syms(Elf *e, Elf_Scn *scn, const GElf_Shdr *sh, size_t *cap)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	if (!d || !sh->sh_entsize)
		return 0;
	size_t n = sh->sh_size / sh->sh_entsize;
	for (size_t i = 1; i < n; i++) {
		GElf_Sym s;
		if (!gelf_getsym(d, (int)i, &s) || GELF_ST_TYPE(s.st_info) != STT_FUNC ||
		    s.st_shndx == SHN_UNDEF || !s.st_value)
			continue;
		const char *nm = elf_strptr(e, sh->sh_link, s.st_name);
		if (!nm || !*nm)
			continue;
		if (!strcmp(nm, "runtime.main"))
			cache.go = 1;
		if (cache.nsyms == *cap) {
			size_t nc = *cap ? *cap * 2 : 1024;
			struct fsym *ns = realloc(cache.syms, nc * sizeof(*ns));
			if (!ns)
				return -1;
			cache.syms = ns;
			*cap = nc;
		}
		struct fsym *f = &cache.syms[cache.nsyms];
		if (!(f->name = strdup(nm)))
			return -1;
		f->value = s.st_value;
		f->size = s.st_size;
		cache.nsyms++;
	}
	return 0;
}

static int slot_by_got(const void *a, const void *b)
{
	const struct slot *x = a, *y = b;
	return x->got < y->got ? -1 : x->got > y->got;
}

/* Adds the GOT slots of relocation section scn that hold a named symbol's address
 * (elf(5), the x86-64 psABI's R_X86_64_JUMP_SLOT 7 and R_X86_64_GLOB_DAT 6). Returns 0,
 * -1 out of memory. */
static int read_slots(Elf *e, Elf_Scn *scn, const GElf_Shdr *sh)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	Elf_Scn *symscn = elf_getscn(e, sh->sh_link);
	GElf_Shdr ssh;
	Elf_Data *sd = symscn ? elf_getdata(symscn, NULL) : NULL;
	if (!d || !sd || !sh->sh_entsize || !gelf_getshdr(symscn, &ssh))
		return 0;
	size_t n = sh->sh_size / sh->sh_entsize;
	struct slot *v = realloc(cache.slots, (cache.nslots + n) * sizeof(*v));
	if (!v)
		return -1;
	cache.slots = v;
	for (size_t i = 0; i < n; i++) {
		GElf_Rela r;
		GElf_Sym sym;
		int type = gelf_getrela(d, (int)i, &r) ? (int)GELF_R_TYPE(r.r_info) : -1;
		if ((type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) ||
		    !gelf_getsym(sd, (int)GELF_R_SYM(r.r_info), &sym))
			continue;
		const char *nm = elf_strptr(e, ssh.sh_link, sym.st_name);
		if (nm && *nm)
			cache.slots[cache.nslots++] = (struct slot){ r.r_offset, nm };
	}
	return 0;
}

/* The .symtab of the separate debug file of stripped file e (core/elfsym.h
 * dc_elf_debug_file), added to the cache's symbols: a stripped library's local functions
 * (GCC's NAME.cold parts, the internal functions its exported ones tail-call) are named
 * only there. Returns 0 (also when there is none), -1 out of memory. */
static int debug_syms(Elf *e, size_t *cap)
{
	char path[4096];
	if (dc_elf_debug_file(e, path, sizeof(path)))
		return 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	Elf *d = elf_begin(fd, ELF_C_READ, NULL);
	Elf_Scn *scn = NULL;
	int r = 0;
	while (d && !r && (scn = elf_nextscn(d, scn))) {
		GElf_Shdr sh;
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB)
			r = read_syms(d, scn, &sh, cap);
	}
	if (d)
		elf_end(d);
	close(fd);
	return r;
}

/* The GNU build-id note of section scn (elf(5): namesz, descsz, type, "GNU\0", the id)
 * into cache.key. */
static void build_id(Elf_Scn *scn)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	const unsigned char *p = d ? d->d_buf : NULL;
	uint32_t nh[3];
	if (!p || d->d_size < 16)
		return;
	memcpy(nh, p, sizeof(nh));
	if (nh[0] == 4 && nh[2] == NT_GNU_BUILD_ID && !memcmp(p + 12, "GNU", 4) &&
	    nh[1] > 0 && nh[1] <= sizeof(cache.key.build_id) && 16 + nh[1] <= d->d_size) {
		cache.key.build_id_len = nh[1];
		memcpy(cache.key.build_id, p + 16, nh[1]);
	}
}

/* Reads what the plan needs of file path into the cache (once per file version).
 * Returns 0, -1 when it cannot be read. */
static int cache_load(const char *path)
{
	struct stat st;
	char pinned[64];
	const char *pp = dc_pin(path, pinned, sizeof(pinned)); /* site mode: the pinned file */
	if (!pp || stat(pp, &st))
		return -1;
	if (cache.path[0] && !strcmp(cache.path, path) && cache.dev == st.st_dev &&
	    cache.ino == st.st_ino && cache.mtime.tv_sec == st.st_mtim.tv_sec &&
	    cache.mtime.tv_nsec == st.st_mtim.tv_nsec)
		return cache.ok ? 0 : -1;
	cache_clear();
	snprintf(cache.path, sizeof(cache.path), "%s", path);
	cache.dev = st.st_dev;
	cache.ino = st.st_ino;
	cache.mtime = st.st_mtim;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -1;
	int fd = open(pp, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	struct stat fst; /* the key: the file opened, whatever the path names now */
	if (!fstat(fd, &fst))
		cache.key = (struct dc_plankey){ fst.st_dev, fst.st_ino, (uint64_t)fst.st_size,
			(uint64_t)fst.st_mtim.tv_sec * 1000000000ULL + (uint64_t)fst.st_mtim.tv_nsec,
			(uint64_t)fst.st_ctim.tv_sec * 1000000000ULL + (uint64_t)fst.st_ctim.tv_nsec,
			0, { 0 } };
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	cache.elf = e;
	size_t shstrndx, nph, cap = 0;
	int r = -1, has_symtab = 0;
	if (!e || elf_kind(e) != ELF_K_ELF || elf_getshdrstrndx(e, &shstrndx) ||
	    elf_getphdrnum(e, &nph))
		goto out;
	for (size_t i = 0; i < nph && cache.nsegs < 16; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD)
			cache.segs[cache.nsegs++] = (struct seg){ ph.p_vaddr, ph.p_offset,
								  ph.p_filesz };
	}
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh))
			continue;
		const char *sn = elf_strptr(e, shstrndx, sh.sh_name);
		if (sn && (!strcmp(sn, ".go.buildinfo") || !strcmp(sn, ".gopclntab")))
			cache.go = 1;
		if ((sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM) &&
		    read_syms(e, scn, &sh, &cap))
			goto out;
		has_symtab |= sh.sh_type == SHT_SYMTAB;
		/* DT_NEEDED libstdc++ (or libstdc++ itself): C++. Not .gcc_except_table:
		 * glibc has one (its cancellation cleanups), and C has tail calls */
		if (sh.sh_type == SHT_NOTE && sn && !strcmp(sn, ".note.gnu.build-id"))
			build_id(scn);
		if (sh.sh_type == SHT_RELA && read_slots(e, scn, &sh))
			goto out;
		if (sh.sh_type == SHT_DYNAMIC) {
			Elf_Data *d = elf_getdata(scn, NULL);
			for (size_t k = 0; d && sh.sh_entsize && k < sh.sh_size / sh.sh_entsize; k++) {
				GElf_Dyn dy;
				if (!gelf_getdyn(d, (int)k, &dy) ||
				    (dy.d_tag != DT_NEEDED && dy.d_tag != DT_SONAME))
					continue;
				const char *nm = elf_strptr(e, sh.sh_link, dy.d_un.d_val);
				if (nm && !strncmp(nm, "libstdc++.so", 12))
					cache.cxx = 1;
			}
		}
	}
	if (!has_symtab && debug_syms(e, &cap))
		goto out;
	if (cache.nsyms)
		qsort(cache.syms, cache.nsyms, sizeof(*cache.syms), sym_by_value);
	if (cache.nslots)
		qsort(cache.slots, cache.nslots, sizeof(*cache.slots), slot_by_got);
	cache.ok = 1;
	r = 0;
out:
	if (r == 0) {
		cache.fd = fd; /* kept for scan(): one open per file, not one per function */
		/* the call frame information, for the parts no symbol names (cfi_part) */
		cache.cfi = e ? dwarf_getcfi_elf(e) : NULL;
	} else {
		if (e)
			elf_end(e);
		cache.elf = NULL;
		close(fd);
	}
	return r;
}

/* File offset of address a (in a PT_LOAD segment's file part), or -1. */
static int64_t addr_off(uint64_t a)
{
	for (int i = 0; i < cache.nsegs; i++)
		if (a >= cache.segs[i].vaddr && a < cache.segs[i].vaddr + cache.segs[i].filesz)
			return (int64_t)(a - cache.segs[i].vaddr + cache.segs[i].off);
	return -1;
}

/* Address of file offset o, or 0. */
static uint64_t off_addr(uint64_t o)
{
	for (int i = 0; i < cache.nsegs; i++)
		if (o >= cache.segs[i].off && o < cache.segs[i].off + cache.segs[i].filesz)
			return o - cache.segs[i].off + cache.segs[i].vaddr;
	return 0;
}

/* The sized function symbol containing address a (exact start when exact), or NULL. */
static const struct fsym *sym_at(uint64_t a, int exact)
{
	const struct fsym *best = NULL;
	size_t lo = 0, hi = cache.nsyms;
	while (lo < hi) { /* first symbol with value > a */
		size_t mid = (lo + hi) / 2;
		if (cache.syms[mid].value <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo, seen = 0; i-- > 0 && seen < 64; seen++) {
		const struct fsym *s = &cache.syms[i];
		if (exact && s->value != a)
			break;
		if (!s->size || a >= s->value + s->size)
			continue;
		if (!best || s->size > best->size)
			best = s;
		if (!exact)
			break;
	}
	return best;
}

/* Is s the GCC-split cold part of function `name` ("name.cold", "name.cold.N")? */
static int is_cold_of(const struct fsym *s, const char *name)
{
	size_t n = strlen(name);
	return !strncmp(s->name, name, n) && !strncmp(s->name + n, ".cold", 5) &&
	       (s->name[n + 5] == 0 || s->name[n + 5] == '.');
}

/* Is s the cold part of function fn, under any of fn's names (glibc's fwrite is also
 * _IO_fwrite, and its cold part __GI__IO_fwrite.cold)? */
static int is_cold_part(const struct fsym *s, const struct fsym *fn)
{
	size_t lo = 0, hi = cache.nsyms;
	while (lo < hi) { /* the first symbol at fn's address */
		size_t mid = (lo + hi) / 2;
		if (cache.syms[mid].value < fn->value)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i < cache.nsyms && cache.syms[i].value == fn->value; i++) {
		const char *nm = cache.syms[i].name;
		if (is_cold_of(s, nm) || (!strncmp(nm, "__GI_", 5) && is_cold_of(s, nm + 5)))
			return 1;
		char gi[256]; /* glibc's internal alias of an exported name */
		if (snprintf(gi, sizeof(gi), "__GI_%s", nm) < (int)sizeof(gi) && is_cold_of(s, gi))
			return 1;
	}
	return 0;
}

/* A function's parts: itself, its cold parts, and the functions it tail-calls (their
 * `ret`s return for it too) */
#define MAX_PARTS 8

/* One decoded instruction of the linear sweep: where it is, and how control leaves it. */
struct dinsn {
	uint64_t addr;
	uint8_t len;
	uint8_t part;       /* index in parts[] */
	uint8_t term;       /* control never falls through: ret, jmp, ud2, hlt, int3 */
	uint8_t ret;        /* a near ret */
	uint8_t reach;      /* reached from the entry (set by reachable()) */
	uint64_t target;    /* a direct jump's target inside the function, 0: none */
};

static int dinsn_at(const struct dinsn *v, size_t n, uint64_t a)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (v[mid].addr < a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && v[lo].addr == a ? (int)lo : -1;
}

/* Marks the instructions control can reach from the entry (v[0]): by falling through and
 * by the direct jumps of reached instructions. A reached jump whose target is not where
 * the sweep found an instruction means the sweep decoded the bytes out of step (an
 * instruction hidden inside another, data in the text): returns -1 with *bad the jump.
 * Only reached `ret`s may be probed: a uprobe is an int3 written into the file's page
 * that every process mapping it executes, so one on a byte that is not an instruction's
 * first (a `0xc3` inside an immediate, a table after the code) would change the code or
 * data of every process, traced or not. v is sorted by address; entry: the index of the
 * function's first instruction. */
static int reachable(struct dinsn *v, size_t n, size_t entry, uint64_t *bad)
{
	size_t *work = malloc(n * sizeof(*work)), top = 0;
	if (!work)
		return -1;
	work[top++] = entry;
	v[entry].reach = 1;
	while (top) {
		size_t i = work[--top];
		for (;;) {
			if (v[i].target) {
				int t = dinsn_at(v, n, v[i].target);
				if (t < 0) {
					*bad = v[i].addr;
					free(work);
					return -1;
				}
				if (!v[t].reach) {
					v[t].reach = 1;
					work[top++] = (size_t)t;
				}
			}
			if (v[i].term || i + 1 >= n || v[i + 1].part != v[i].part ||
			    v[i + 1].addr != v[i].addr + v[i].len || v[i + 1].reach)
				break;
			v[++i].reach = 1;
		}
	}
	free(work);
	return 0;
}

/* The process's decoder: Zydis (Debian libzydis-dev), decoding only what the sweep
 * reads (length, mnemonic, branch type, a relative target), no operand or text: Capstone
 * formatted every instruction's text, 3-4 times the decoding here (bench/HISTORY.md). */
static const ZydisDecoder *decoder(void)
{
	static ZydisDecoder d;
	static int state; /* 0: not tried, 1: ready, -1: failed */
	if (!state)
		state = ZYAN_SUCCESS(ZydisDecoderInit(&d, ZYDIS_MACHINE_MODE_LONG_64,
						      ZYDIS_STACK_WIDTH_64)) ? 1 : -1;
	return state > 0 ? &d : NULL;
}

/* Is the instruction at code (decoded as in) Go's stack-growth check, `cmp rsp|r12,
 * [r14+16]` (g.stackguard0 at 16(r14), the register ABI's g)? Its operands are decoded
 * for this only (the first instructions of a Go function). */
static int go_guard(const ZydisDecoder *d, const uint8_t *code, size_t left,
		    const ZydisDecodedInstruction *in)
{
	ZydisDecoderContext ctx;
	ZydisDecodedInstruction again;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	if (in->mnemonic != ZYDIS_MNEMONIC_CMP ||
	    !ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(d, &ctx, code, left, &again)) ||
	    !ZYAN_SUCCESS(ZydisDecoderDecodeOperands(d, &ctx, &again, ops,
						     again.operand_count_visible)))
		return 0;
	return again.operand_count_visible == 2 && ops[1].type == ZYDIS_OPERAND_TYPE_MEMORY &&
	       ops[1].mem.base == ZYDIS_REGISTER_R14 && ops[1].mem.disp.value == 16;
}

/* The function of this file that a PLT stub at address a jumps to (`endbr64`, then `jmp
 * [rip+disp]` through a GOT slot a relocation names): a tail call through the PLT to
 * one of the file's own exported functions. NULL for any other stub or bytes. */
static const struct fsym *plt_target(const ZydisDecoder *dec, uint64_t a)
{
	uint8_t code[32];
	int64_t o = addr_off(a);
	if (o < 0 || pread(cache.fd, code, sizeof(code), o) != (ssize_t)sizeof(code))
		return NULL;
	ZydisDecoderContext ctx;
	ZydisDecodedInstruction in;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	size_t at = 0;
	for (int k = 0; k < 2; k++) {
		if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(dec, &ctx, code + at,
								sizeof(code) - at, &in)))
			return NULL;
		if (in.mnemonic != ZYDIS_MNEMONIC_ENDBR64)
			break;
		at += in.length;
	}
	ZyanU64 got;
	if (in.mnemonic != ZYDIS_MNEMONIC_JMP ||
	    !ZYAN_SUCCESS(ZydisDecoderDecodeOperands(dec, &ctx, &in, ops, 1)) ||
	    ops[0].type != ZYDIS_OPERAND_TYPE_MEMORY || ops[0].mem.base != ZYDIS_REGISTER_RIP ||
	    !ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(&in, &ops[0], a + at, &got)))
		return NULL;
	size_t lo = 0, hi = cache.nslots;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (cache.slots[mid].got < got)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == cache.nslots || cache.slots[lo].got != got)
		return NULL;
	for (size_t i = 0; i < cache.nsyms; i++)
		if (cache.syms[i].size && !strcmp(cache.syms[i].name, cache.slots[lo].name))
			return &cache.syms[i];
	return NULL;
}

/* Decodes the parts of function fn and lists its returns in p. Returns 0, or -1 with
 * p->why. Long on purpose: one linear sweep over each part, one case per way control
 * leaves an instruction (each with its reason for the user), then the walk from the
 * entry (reachable) that decides which rets may be probed: one read, top to bottom. */
static int scan(const struct fsym *fn, struct dc_retplan *p)
{
	const struct fsym *parts[MAX_PARTS] = { fn };
	uint8_t is_cold[MAX_PARTS] = { 0 }, shared[MAX_PARTS] = { 0 };
	struct fsym anon[MAX_PARTS]; /* parts no symbol names (cfi_part) */
	int nparts = 1, r = -1;
	const ZydisDecoder *dec = decoder();
	if (!dec) {
		snprintf(p->why, sizeof(p->why), "Zydis cannot open an x86-64 decoder");
		return -1;
	}
	int fd = cache.fd > 0 ? cache.fd : -1;
	uint8_t *buf = NULL;
	struct dinsn *v = NULL;
	size_t nv = 0, capv = 0;
	if (fd < 0) {
		snprintf(p->why, sizeof(p->why), "cannot read %.150s", cache.path);
		goto out;
	}
	p->nsites = 0;
	for (int k = 0; k < nparts; k++) {
		const struct fsym *s = parts[k];
		int64_t o = addr_off(s->value);
		if (o < 0 || s->size > (16 << 20) || !(buf = realloc(buf, s->size)) ||
		    pread(fd, buf, s->size, o) != (ssize_t)s->size) {
			snprintf(p->why, sizeof(p->why), "the bytes of %s are not in the file",
				 s->name);
			goto out;
		}
		const uint8_t *code = buf;
		size_t left = s->size;
		uint64_t a = s->value;
		/* Go: the entry probe goes after the stack-growth check (cmp rsp or r12 with
		 * g.stackguard0 at 16(r14), then jbe/jb to the morestack call that re-enters
		 * the function at its start), so that a stack copy does not enter twice */
		int go_check = k == 0 && p->go, ninsn = 0, saw_guard = 0;
		while (left) {
			ZydisDecodedInstruction in;
			if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(dec, NULL, code, left, &in))) {
				snprintf(p->why, sizeof(p->why), "undecodable bytes at %s+0x%llx",
					 s->name, (unsigned long long)(a - s->value));
				goto out;
			}
			uint64_t at = a;
			const uint8_t *here = code;
			code += in.length;
			left -= in.length;
			a += in.length;
			ZydisMnemonic m = in.mnemonic;
			/* a far ret or jmp (lret, ljmp); a far call returns like any call */
			int far = in.meta.branch_type == ZYDIS_BRANCH_TYPE_FAR &&
				  (m == ZYDIS_MNEMONIC_RET || m == ZYDIS_MNEMONIC_JMP);
			int ret = m == ZYDIS_MNEMONIC_RET && !far;
			ninsn++;
			if (nv == capv) {
				size_t c = capv ? 2 * capv : 256;
				struct dinsn *nvp = realloc(v, c * sizeof(*v));
				if (!nvp) {
					snprintf(p->why, sizeof(p->why), "out of memory");
					goto out;
				}
				v = nvp;
				capv = c;
			}
			struct dinsn *di = &v[nv++];
			*di = (struct dinsn){ at, in.length, (uint8_t)k,
					      ret || (m == ZYDIS_MNEMONIC_JMP && !far) ||
					      m == ZYDIS_MNEMONIC_UD2 || m == ZYDIS_MNEMONIC_HLT ||
					      m == ZYDIS_MNEMONIC_INT3,
					      (uint8_t)ret, 0, 0 };
			if (go_check && ninsn <= 3) {
				if (go_guard(dec, here, left + in.length, &in))
					saw_guard = 1;
				else if (saw_guard && (m == ZYDIS_MNEMONIC_JBE || m == ZYDIS_MNEMONIC_JB)) {
					p->entry = (uint64_t)addr_off(a);
					go_check = 0;
				}
			}
			if (ret) {
				if (k == 0 && at == fn->value) {
					snprintf(p->why, sizeof(p->why), "returns at its first "
						 "instruction");
					goto out;
				}
				continue; /* a site if control reaches it (below) */
			}
			if (far || m == ZYDIS_MNEMONIC_IRET || m == ZYDIS_MNEMONIC_IRETD ||
			    m == ZYDIS_MNEMONIC_IRETQ) {
				snprintf(p->why, sizeof(p->why), "a far return or jump at %s+0x%llx",
					 s->name, (unsigned long long)(at - s->value));
				goto out;
			}
			/* jumps: jmp, jcc, jrcxz, loop, xbegin (its abort path) */
			if (in.meta.category != ZYDIS_CATEGORY_UNCOND_BR &&
			    in.meta.category != ZYDIS_CATEGORY_COND_BR)
				continue;
			if (!(in.attributes & ZYDIS_ATTRIB_IS_RELATIVE)) {
				snprintf(p->why, sizeof(p->why), "an indirect jump at %s+0x%llx (a "
					 "tail call or a jump table)", s->name,
					 (unsigned long long)(at - s->value));
				goto out;
			}
			uint64_t t = a + (uint64_t)in.raw.imm[0].value.s;
			int inside = 0;
			for (int j = 0; j < nparts; j++)
				inside |= t >= parts[j]->value && t < parts[j]->value + parts[j]->size;
			if (inside) {
				di->target = t;
				continue;
			}
			const struct fsym *ts = sym_at(t, 0);
			int cold = -1; /* the part ts is a cold part of */
			for (int j = 0; ts && j < nparts && cold < 0; j++)
				if (!is_cold[j] && is_cold_part(ts, parts[j]))
					cold = j;
			/* a jump to another function's first instruction: a tail call, whose
			 * `ret`s return for this function too (sites shared with its other
			 * callers: core/retsite.h DC_RETSITE_SHARED) */
			int tail = ts && cold < 0 && ts->value == t;
			/* no symbol: a part the call frame information bounds, cold part or
			 * local function (shared: which one is not known); or a PLT stub of
			 * one of this file's own functions */
			if (!ts && nparts < MAX_PARTS && cfi_part(t, &anon[nparts])) {
				ts = &anon[nparts];
				tail = 1;
			} else if (!ts && (ts = plt_target(dec, t))) {
				t = ts->value;
				tail = 1;
				int in = 0;
				for (int j = 0; j < nparts; j++)
					in |= parts[j] == ts;
				if (in) { /* tail-called twice */
					di->target = t;
					continue;
				}
			}
			if ((cold >= 0 || tail) && nparts < MAX_PARTS) {
				is_cold[nparts] = cold >= 0;
				shared[nparts] = tail || shared[cold];
				parts[nparts++] = ts; /* decoded in its turn */
				di->target = t;
				continue;
			}
			snprintf(p->why, sizeof(p->why), "a jump out of the function at %s+0x%llx "
				 "(a tail call to %s)", s->name,
				 (unsigned long long)(at - s->value),
				 ts ? ts->name : "an unnamed address");
			goto out;
		}
	}
	/* parts are decoded in the order found, each in address order: sort the whole */
	for (size_t i = 1; i < nv; i++)
		for (size_t j = i; j > 0 && v[j - 1].addr > v[j].addr; j--) {
			struct dinsn t = v[j];
			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	uint64_t bad = 0;
	int entry = dinsn_at(v, nv, fn->value);
	if (entry < 0 || reachable(v, nv, (size_t)entry, &bad)) {
		snprintf(p->why, sizeof(p->why), "a jump into the middle of an instruction at "
			 "%s+0x%llx (bytes the decoder cannot follow: data or overlapping "
			 "code)", fn->name, (unsigned long long)(bad - fn->value));
		goto out;
	}
	for (size_t i = 0; i < nv; i++) {
		if (!v[i].ret || !v[i].reach)
			continue;
		int64_t so = addr_off(v[i].addr);
		if (so < 0)
			continue;
		if (p->nsites == DC_RETSITE_MAX) {
			snprintf(p->why, sizeof(p->why), "more than %d return instructions",
				 DC_RETSITE_MAX);
			goto out;
		}
		p->sites[p->nsites++] = (uint64_t)so | (shared[v[i].part] ? DC_RETSITE_SHARED : 0);
	}
	if (!p->nsites) {
		snprintf(p->why, sizeof(p->why), "no return instruction");
		goto out;
	}
	r = 0;
out:
	free(v);
	free(buf);
	return r;
}

/* The plan of one function of the cached file (readable: cache_load succeeded); reads the
 * cache only, so the threads of dc_retsite_prefetch may run it side by side. */
static void plan_loaded(int readable, const char *name, uint64_t offset, int asked,
			int noret, int by_file, struct dc_retplan *out)
{
	memset(out, 0, sizeof(*out));
	out->entry = offset;
	out->go = readable && cache.go;
	int mode = asked;
	if (mode == DC_RETURNS_AUTO || mode == ASK_AUTO_NO_HIJACK) {
		if (noret) {
			mode = DC_RETURNS_NONE;
			snprintf(out->why, sizeof(out->why), "setjmp/longjmp, noreturn or start-up "
				 "code");
		} else if (out->go) {
			/* entry-only: goroutines share threads (a call's entry and its return
			 * may be apart by other goroutines' calls on the thread, or on two
			 * threads), so returns cannot be paired per thread; scanned all the
			 * same, for the entry past the stack-growth check (below) */
			mode = DC_RETURNS_INSN;
			snprintf(out->why, sizeof(out->why), "Go binary");
		} else if (!strncmp(name, "_Z", 2) || (by_file && readable && cache.cxx)) {
			mode = DC_RETURNS_INSN;
			snprintf(out->why, sizeof(out->why), "C++");
		} else if (asked == ASK_AUTO_NO_HIJACK) {
			mode = DC_RETURNS_INSN;
			snprintf(out->why, sizeof(out->why), "C, no session uprobes");
		} else {
			mode = DC_RETURNS_HIJACK;
			snprintf(out->why, sizeof(out->why), "C");
		}
	} else {
		snprintf(out->why, sizeof(out->why), "asked");
	}
	out->mode = mode;
	if (mode != DC_RETURNS_INSN)
		return;
	const struct fsym *fn = readable ? sym_at(off_addr(offset), 1) : NULL;
	if (!fn) {
		snprintf(out->why, sizeof(out->why), readable ? "no sized symbol at its address"
			 : "its file cannot be read");
		out->mode = DC_RETURNS_NONE;
		return;
	}
	if (scan(fn, out)) {
		out->mode = DC_RETURNS_NONE;
		out->nsites = 0;
		out->entry = offset;
	} else if (asked != DC_RETURNS_INSN && out->go) {
		out->mode = DC_RETURNS_NONE; /* the entry stays past the stack check */
		out->nsites = 0;
		snprintf(out->why, sizeof(out->why), "Go: goroutines share threads, returns "
			 "cannot be paired; returns = \"instructions\" to try");
	}
}

/* A plan made ahead by dc_retsite_prefetch, kept small: most have a site or two. */
struct pre {
	struct dc_retsite_req q;
	int mode, go;
	uint64_t entry;
	unsigned nsites;
	uint64_t *sites;    /* malloc'd, NULL when none */
	char *why;          /* malloc'd */
	int done;           /* found in the plan cache (core/plancache.h): not planned; its
			       sites and why are the cache's (pf.cached), not its own */
};

/* The plans of the last dc_retsite_prefetch, sorted by offset, for the file `path` as
 * cache_load read it (the prefetch loads the cache; a plan asked of another file, or
 * after dc_retsite_prefetch_drop, is made as before). */
static struct {
	char path[4096];
	struct pre *v;
	size_t n;
	size_t next;        /* work handed out to the threads */
	pthread_mutex_t lock;
	int readable;
	struct dc_planrec *cached; /* the plan cache's records the plans point into */
	size_t ncached;
} pf = { .lock = PTHREAD_MUTEX_INITIALIZER };

static int pre_by_offset(const void *a, const void *b)
{
	const struct pre *x = a, *y = b;
	return x->q.offset < y->q.offset ? -1 : x->q.offset > y->q.offset;
}

/* Plans pf.v[] in chunks taken under pf.lock until none is left. */
static void *prefetch_main(void *arg)
{
	(void)arg;
	struct dc_retplan p;
	for (;;) {
		pthread_mutex_lock(&pf.lock);
		size_t from = pf.next, to = from + 64 < pf.n ? from + 64 : pf.n;
		pf.next = to;
		pthread_mutex_unlock(&pf.lock);
		if (from >= to)
			return NULL;
		for (size_t i = from; i < to; i++) {
			struct pre *e = &pf.v[i];
			if (e->done)
				continue;
			plan_loaded(pf.readable, e->q.name, e->q.offset, e->q.asked, e->q.noret,
				    e->q.by_file, &p);
			e->mode = p.mode;
			e->go = p.go;
			e->entry = p.entry;
			e->nsites = p.nsites;
			e->sites = p.nsites ? malloc(p.nsites * sizeof(*e->sites)) : NULL;
			if (e->sites)
				memcpy(e->sites, p.sites, p.nsites * sizeof(*e->sites));
			else
				e->nsites = 0;
			e->why = strdup(p.why);
			if (p.nsites && !e->sites)
				e->mode = -1; /* out of memory: planned again when asked */
		}
	}
}

void dc_retsite_prefetch_drop(void)
{
	for (size_t i = 0; i < pf.n; i++) {
		if (pf.v[i].done)
			continue;
		free(pf.v[i].sites);
		free(pf.v[i].why);
	}
	free(pf.v);
	dc_plancache_free(pf.cached, pf.ncached);
	pf.cached = NULL;
	pf.ncached = 0;
	pf.v = NULL;
	pf.n = pf.next = 0;
	pf.path[0] = 0;
}

/* Files of fewer functions than this are planned every time: not worth a cache file. */
#define DC_PLANCACHE_MIN 1024

/* The plans of pf.v (sorted by offset) that the plan cache has for the cached file's
 * version: copied in and marked done. Returns how many. */
static size_t from_cache(void)
{
	size_t nr, hits = 0, j = 0;
	struct dc_planrec *r = dc_plancache_read(&cache.key, &nr);
	for (size_t i = 0; r && i < pf.n; i++) {
		struct pre *e = &pf.v[i];
		int cxx = !strncmp(e->q.name, "_Z", 2);
		while (j < nr && r[j].offset < e->q.offset)
			j++;
		for (size_t k = j; k < nr && r[k].offset == e->q.offset; k++) {
			const struct dc_planrec *c = &r[k];
			if (c->asked != e->q.asked || c->noret != e->q.noret ||
			    c->by_file != e->q.by_file || c->cxx != cxx)
				continue;
			e->sites = (uint64_t *)c->sites; /* kept until dc_retsite_prefetch_drop */
			e->why = (char *)c->why;
			e->mode = c->mode;
			e->go = c->go;
			e->entry = c->entry;
			e->nsites = c->nsites;
			e->done = 1;
			hits++;
			break;
		}
	}
	pf.cached = r;
	pf.ncached = nr;
	return hits;
}

/* Writes the plans of pf.v as the cached file's cache file (core/plancache.h). */
static void to_cache(void)
{
	struct dc_planrec *r = calloc(pf.n + 1, sizeof(*r));
	size_t k = 0;
	for (size_t i = 0; r && i < pf.n; i++) {
		const struct pre *e = &pf.v[i];
		if (e->mode < 0 || !e->why)
			continue;
		r[k++] = (struct dc_planrec){ e->q.offset, e->entry, e->q.asked, e->q.noret,
					      e->q.by_file, !strncmp(e->q.name, "_Z", 2),
					      e->mode, e->go, e->nsites, e->sites, e->why };
	}
	if (r)
		dc_plancache_write(&cache.key, r, k);
	free(r);
}

void dc_retsite_prefetch(const char *file, const struct dc_retsite_req *reqs, size_t n)
{
	dc_retsite_prefetch_drop();
	if (!n || !(pf.v = calloc(n, sizeof(*pf.v))))
		return;
	pf.readable = cache_load(file) == 0;
	decoder(); /* made here, once, not by the threads at the same time */
	for (size_t i = 0; i < n; i++)
		pf.v[i].q = reqs[i];
	pf.n = n;
	for (size_t i = 0; i < n; i++)
		pf.v[i].q.asked = ask_of(pf.v[i].q.asked);
	qsort(pf.v, pf.n, sizeof(*pf.v), pre_by_offset);
	size_t hits = pf.readable ? from_cache() : 0;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned nt = cpus > 1 ? (unsigned)(cpus < 8 ? cpus : 8) : 1;
	if (n < 512)
		nt = 1; /* a thread costs more than a few hundred small plans */
	pthread_t t[8];
	unsigned started = 0;
	for (unsigned k = 1; k < nt; k++)
		if (!pthread_create(&t[started], NULL, prefetch_main, NULL))
			started++;
	prefetch_main(NULL);
	for (unsigned k = 0; k < started; k++)
		pthread_join(t[k], NULL);
	if (pf.readable && hits < n && n >= DC_PLANCACHE_MIN)
		to_cache();
	snprintf(pf.path, sizeof(pf.path), "%s", file);
}

/* src into dst (size bytes, size > 0), cut to fit and NUL-terminated: snprintf's "%s"
 * without its format parsing, which was a tenth of a warm 35,000-function start. */
static void copy_str(char *dst, size_t size, const char *src)
{
	size_t n = strnlen(src, size - 1);
	memcpy(dst, src, n);
	dst[n] = 0;
}

/* The prefetched plan asked for exactly so (file, name, offset, asked, noret, by_file),
 * or NULL. */
static const struct pre *prefetched(const char *file, const char *name, uint64_t offset,
				    int asked, int noret, int by_file)
{
	if (!pf.n || strcmp(pf.path, file))
		return NULL;
	size_t lo = 0, hi = pf.n;
	while (lo < hi) { /* the first with that offset */
		size_t mid = (lo + hi) / 2;
		if (pf.v[mid].q.offset < offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i < pf.n && pf.v[i].q.offset == offset; i++) {
		const struct pre *e = &pf.v[i];
		if (e->mode >= 0 && e->why && e->q.asked == asked && e->q.noret == noret &&
		    e->q.by_file == by_file && !strcmp(e->q.name, name))
			return e;
	}
	return NULL;
}

int dc_retsite_plan(const char *file, const char *name, uint64_t offset, int asked, int noret,
		    int by_file, struct dc_retplan *out)
{
	asked = ask_of(asked);
	const struct pre *e = prefetched(file, name, offset, asked, noret, by_file);
	if (e) {
		memset(out, 0, sizeof(*out));
		out->mode = e->mode;
		out->go = e->go;
		out->entry = e->entry;
		out->nsites = e->nsites;
		if (e->nsites)
			memcpy(out->sites, e->sites, e->nsites * sizeof(*e->sites));
		copy_str(out->why, sizeof(out->why), e->why);
		return pf.readable ? 0 : -1;
	}
	int readable = cache_load(file) == 0;
	plan_loaded(readable, name, offset, asked, noret, by_file, out);
	return readable ? 0 : -1;
}
