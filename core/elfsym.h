/* elfsym.h: ELF symbol resolution with libelf: which shared libraries a binary loads and
 * where a function lives in a file (the file offset a uprobe attaches at). */
#ifndef DC_ELFSYM_H
#define DC_ELFSYM_H

#include <stddef.h>
#include <stdint.h>

/* Finds the file of the shared library whose soname starts with `prefix` (e.g. "libc.so")
 * that `binary` loads, searching as the dynamic loader does (ld.so(8)): DT_NEEDED entries
 * breadth-first over the binary and its libraries, each looked up in DT_RPATH (when no
 * DT_RUNPATH), LD_LIBRARY_PATH, DT_RUNPATH, /etc/ld.so.conf(.d) dirs, then the default
 * dirs; $ORIGIN is expanded. A `#!` script resolves through its interpreter.
 * `binary` may be a bare command name, looked up in PATH like execvp(3).
 * Returns 0 with the library's real path in out; 1 when the binary does not load such a
 * library (static binary); -1 on error, with a one-line reason in err. */
int dc_elf_find_library(const char *binary, const char *prefix, char *out, size_t outlen,
			char *err, size_t errlen);

struct Elf; /* libelf's */

/* The separate debug file of ELF e found by its GNU build-id note (NT_GNU_BUILD_ID), as
 * gdb and perf find it: /usr/lib/debug/.build-id/ab/cdef....debug (Debian's -dbg and
 * -dbgsym packages). Returns 0 with its path in out when it is readable, else -1. */
int dc_elf_debug_file(struct Elf *e, char *out, size_t len);

/* Resolves `binary` as execvp(3) would (PATH search when it has no '/') to an absolute
 * path. Returns 0, or -1 with err ("CMD: not found" / "not executable"). */
int dc_elf_which(const char *binary, char *out, size_t outlen, char *err, size_t errlen);

/* A set of symbols from one ELF file: .dynsym, and .symtab when present, else the .symtab
 * of its separate debug file found by build-id (/usr/lib/debug/.build-id/xx/yyyy.debug). */
struct dc_elf_syms;

/* Loads the function symbols of `path`. Returns NULL with err on failure. The table is
 * read-only and may be shared: the last few files' tables are kept, by the opened file's
 * identity (fstat(2)), and handed to the next caller that opens the same file (any
 * thread); each caller closes its own with dc_elf_syms_close. */
struct dc_elf_syms *dc_elf_syms_open(const char *path, char *err, size_t errlen);

/* Looks up a defined function symbol by exact name (the default version, `name@@VER`,
 * wins over hidden ones). Returns the file offset to attach a uprobe at (st_value
 * mapped through the PT_LOAD segment that holds it), or 0 when the symbol is not there. */
uint64_t dc_elf_sym_offset(const struct dc_elf_syms *s, const char *name);

/* Is the definition dc_elf_sym_offset picks for name a local symbol (STB_LOCAL, in a
 * .symtab or a separate debug file: an internal label of the library, e.g. glibc's
 * __GI_ aliases and its assembly routines' inner entry points, which may be reached by a
 * jump with no return address on the stack; ELF gABI, "Symbol Binding")? Returns 1 if
 * so, 0 if it is global or weak, or absent. */
int dc_elf_sym_local(const struct dc_elf_syms *s, const char *name);

/* Calls fn(name, offset, arg) for each defined function whose name matches the fnmatch(3)
 * glob; stops when fn returns non-zero. Returns the number of calls made. */
int dc_elf_sym_glob(const struct dc_elf_syms *s, const char *glob,
		    int (*fn)(const char *name, uint64_t offset, void *arg), void *arg);

/* Gives back a table dc_elf_syms_open returned (NULL: nothing); freed with its last holder. */
void dc_elf_syms_close(struct dc_elf_syms *s);

/* The st_value (a virtual address relative to the load base, for a shared object) of the
 * defined .dynsym symbol `name` of `path`, of any type (a function or an object such as
 * ld.so's _r_debug). Returns 0 with *value, or -1 when the file or symbol is missing. */
int dc_elf_dynsym_value(const char *path, const char *name, uint64_t *value);

#endif
