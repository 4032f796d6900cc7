/* probes.h: probe descriptions (probes/<layer>.yaml, read with libyaml): which functions a
 * layer has, the library they live in, what each argument is and what a call does to fds. */
#ifndef DC_PROBES_H
#define DC_PROBES_H

#include <stddef.h>

#include "datacrumbs.h"

#define DC_PROBE_ARGS DC_MAX_ARGS /* a description's args: the registers BPF keeps */

/* What an argument is; decides how it is recorded and named in the trace. */
enum dc_arg_kind {
	DC_ARG_NONE = 0, /* not recorded ("_" in the description) */
	DC_ARG_INT,      /* C int (32 bits, the register's upper half ignored), signed */
	DC_ARG_UINT,     /* C unsigned int (32 bits): flags */
	DC_ARG_FD,       /* file descriptor (C int) under its name; the first one gives fhash */
	DC_ARG_DIRFD,    /* dirfd of *at() calls: relative paths resolve against it */
	DC_ARG_PATH,     /* const char * path: resolved to an absolute path, gives fhash; a
			    second one (rename's newpath) gives path2 (fhash2), resolved
			    against the second `dirfd` when there are two */
	DC_ARG_IOV,      /* const struct iovec *: `count` becomes the sum of iov_len */
	DC_ARG_IOVCNT,   /* number of iovec entries */
	DC_ARG_DIR,      /* DIR * stream: gives fhash from the opendir that returned it */
	DC_ARG_LONG,     /* 64-bit signed: size_t, ssize_t, off_t (count, offset, size) */
	DC_ARG_MODE,     /* mode_t of open(2): recorded only when the call's flags have
			    O_CREAT or O_TMPFILE (else the register holds garbage), or when
			    the function has no flags argument (creat, mkdir) */
	DC_ARG_INO,      /* an inode number: with a `dev` arg, gives fhash from the opens seen */
	DC_ARG_DEV,      /* a device number (st_dev encoding) */
	DC_ARG_FILE,     /* FILE * (glibc): its fd is read at entry (struct _IO_FILE._fileno)
			    and recorded as `fd`; that fd's path gives fhash */
	DC_ARG_STR,      /* a short string (fopen's mode): its first 7 bytes, as a string */
	DC_ARG_SIZE,     /* size_t element size (fread): with an `nmemb` arg, count = size*nmemb */
	DC_ARG_NMEMB,    /* size_t number of elements (fread, fwrite) */
	DC_ARG_HANDLE,   /* an opaque handle by value (MPI_File): fhash from the handle's open */
	DC_ARG_HANDLE_IN,  /* a pointer to a handle, read at entry (MPI_File_close's MPI_File *) */
	DC_ARG_HANDLE_OUT, /* a pointer the call stores a new handle through (MPI_File_open) */
	DC_ARG_LONG_OUT, /* a pointer the call stores a 64-bit integer through (MPI_File_get_size) */
	DC_ARG_ELEMS,    /* an MPI element count: with a `datatype` arg, count = bytes */
	DC_ARG_DATATYPE, /* an MPI_Datatype: its size in bytes, where it can be known (core/mpi.h) */
	DC_ARG_STATUS,   /* an MPI_Status *: the bytes it reports moved, read at return */
	DC_ARG_TARGET,   /* a symlink's content (symlink(2)'s target): a second string read
			    at return, resolved against the directory of the call's `path`
			    (the link); gives path2 (fhash2) */
	DC_ARG_TEXT,     /* a NUL-terminated string the call writes (fputs' s): count is its
			    length, read in BPF at entry (up to DC_PATH_MAX - 1 bytes) */
	DC_ARG_LINE,     /* the same for a string written with a newline after it (puts(3)):
			    count is its length + 1 */
	DC_ARG_ADDR,     /* an address in a mapping (msync's addr): not written; the file an
			    mmap mapped there gives fhash */
	DC_ARG_NKINDS
};

/* What the return value is (x86-64 SysV: rax; a C int leaves the upper half undefined). */
enum dc_ret_kind {
	DC_RET_INT = 0,  /* C int: -1 on error (open, close, fsync) */
	DC_RET_LONG,     /* ssize_t / off_t: read, write, lseek */
	DC_RET_POINTER,  /* a pointer: mmap, opendir (MAP_FAILED / NULL on error) */
	DC_RET_ERRCODE,  /* C int, 0 on success, an error code otherwise (MPI_SUCCESS is 0) */
	DC_RET_VOID,     /* nothing (rewind): no ret is written */
};
#define DC_RET_NAMES "int, long, pointer, errcode or void" /* for messages */

/* The kind a description's `ret:` (or dc.uprobe's ret) names: "int", "long", "pointer",
 * "errcode", "void". Returns the enum dc_ret_kind, or -1 for any other text. */
int dc_ret_kind_of(const char *name);

/* What a successful call does to the per-process fd table (applied on return). */
enum dc_effect {
	DC_FX_NONE = 0,
	DC_FX_OPEN,     /* ret is a new fd for the path argument */
	DC_FX_CLOSE,    /* the fd argument is closed */
	DC_FX_DUP,      /* ret is a copy of the fd argument */
	DC_FX_DUP2,     /* the second fd argument becomes a copy of the first */
	DC_FX_FCNTL,    /* fcntl: F_DUPFD / F_DUPFD_CLOEXEC make ret a copy of the fd */
	DC_FX_CHDIR,    /* the process's cwd becomes the path argument */
	DC_FX_FCHDIR,   /* the process's cwd becomes the fd argument's path */
	DC_FX_OPENDIR,  /* ret is a DIR * for the path argument */
	DC_FX_FDOPENDIR,/* ret is a DIR * for the fd argument */
	DC_FX_CLOSEDIR, /* the DIR * argument is closed */
	DC_FX_FOPEN,    /* ret is a FILE * for the path argument (or, freopen without a path,
			   for the stream's old file): the fd inside it now names the path */
	DC_FX_FCLOSE,   /* the FILE * argument's fd is closed */
	DC_FX_HOPEN,    /* the handle stored through the `handle_out` arg names the path arg */
	DC_FX_HCLOSE,   /* the `handle_in` argument's handle is closed */
	DC_FX_RANK,     /* MPI_Init: the process is an MPI rank (process_name "Rank N") */
	DC_FX_MMAP,     /* ret (an address) maps the fd argument's file over `size` bytes */
	DC_FX_MUNMAP,   /* [the addr argument, + `size`) is unmapped */
	DC_FX_RENAME,   /* the first path argument's file is now named by the second */
	DC_FX_UNLINK,   /* the path argument's name is gone */
};

struct dc_arg {
	char name[32];          /* the C parameter name written as the args key */
	enum dc_arg_kind kind;
};

#define DC_FUNC_SYSCALLS 3 /* system calls a function may name in `syscall:` */

struct dc_func {
	const char *name;       /* the function as the user knows it: the event's name; a
				   malloc'd copy each layer's funcs own (dc_layer_free), any
				   length (a mangled C++ name of hundreds of bytes) */
	char symbol[64];        /* the symbol to attach to when it differs (`symbol:`), or "" */
	char syscall[DC_FUNC_SYSCALLS][32]; /* `syscall:` the system calls (sys_<name>,
				   asm/unistd_64.h) the function's calls are, one call for one:
				   the first is the one it wraps under its own name (same
				   arguments, same order), the others what the C library makes
				   for it instead (glibc's open makes openat); [0][0] == 0: none
				   does (readdir's buffered entries, fopen) */
	int nsyscalls;
	struct dc_arg args[DC_PROBE_ARGS];
	int nargs;
	enum dc_effect effect;
	enum dc_ret_kind ret_kind; /* `ret:` int (default), long or pointer */
	int line;               /* line in the description file, for messages */
	int noret;              /* 1: entry-only probe, its return is not safe to probe
				   (core/resolve.c dc_noret_name; bpf/datacrumbs.h bit 30) */
	int returns;            /* `returns:` how its return is seen, enum dc_returns
				   (core/retsite.h): 0 auto, chosen per function */
	int stream;             /* `stream:` 1 + the fd of the standard stream the call works
				   on without a FILE * argument (printf: stdout, 2), 0: none */
};

/* How a layer's functions are probed (`mechanism:`). */
enum dc_mechanism {
	DC_MECH_UPROBE = 0, /* uprobe + uretprobe on a library's functions (default) */
	DC_MECH_SYSCALL,    /* the raw syscall tracepoints; function names are sys_<name> */
	DC_MECH_TRACEPOINT, /* built-in tracepoint programs (bpf/kernel.bpf.c), by name */
	DC_MECH_KERNEL,     /* kernel functions (bpf/vfs.bpf.c): fentry or kprobe, per function */
};

struct dc_layer {
	char path[512];         /* the description file it came from */
	char name[32];          /* the layer as written into `cat`: POSIX, STDIO, ... */
	char library[64];       /* soname prefix of the library (uprobe layers), "libc.so" */
	enum dc_mechanism mechanism;
	char hint[256];         /* said when none of the functions is found (`hint:`), or "" */
	/* A layer a script made with dc.uprobe: `library` is "CMD", a path or a soname prefix,
	 * the functions are those of its file matching `globs`, each like `tmpl`. */
	int custom;
	char **globs;
	int nglobs;
	struct dc_func tmpl;
	struct dc_func *gtmpl;  /* per glob (args given per entry of `functions`), NULL: every
				   match is like tmpl */
	struct dc_func *funcs;
	int nfuncs;
};

/* Parses a probe description file. Returns NULL with a one-line error in err naming the
 * file and line ("probes/posix.yaml:12: unknown field 'argz'"). Format: docs/probes.md. */
struct dc_layer *dc_layer_load(const char *path, char *err, size_t errlen);

/* Parses one argument description, "KIND NAME" (or "_" alone), as in a probe description's
 * args list (docs/probes.md). Returns 0, or -1 with a one-line reason in err. */
int dc_arg_parse(const char *text, struct dc_arg *a, char *err, size_t errlen);

/* The kind's name as a description writes it ("fd", "path", "_"), for dc_arg_parse;
 * "?" for a value out of range. */
const char *dc_arg_kind_name(enum dc_arg_kind kind);

/* A new, empty layer of the kind dc.uprobe makes (`custom`: functions from `globs`, each
 * like `tmpl`): cat `name` (1-31 bytes), `library` "CMD", a path or a soname prefix, ret
 * long, returns auto; `where` ("script.lua:12: ") is its path in messages. NULL when out of
 * memory or a name does not fit (err says which). */
struct dc_layer *dc_layer_custom_new(const char *name, const char *library, const char *where,
				     char *err, size_t errlen);

/* Finds a function of the layer by name, NULL when absent. */
const struct dc_func *dc_layer_func(const struct dc_layer *l, const char *name);

/* The function of layer l whose events system call `sys` (sys_<name>) is written as: the
 * first in the file whose `syscall:` list starts with it (the call it wraps under its
 * own name: sys_newfstatat is fstatat, not stat), else the first that names it at all;
 * NULL when none does. */
const struct dc_func *dc_layer_syscall_namer(const struct dc_layer *l, const char *sys);

void dc_layer_free(struct dc_layer *l);

#endif
