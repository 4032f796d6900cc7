/* mpi.c: reads what Open MPI and MPICH expose in their binaries and public headers: the
 * library's flavor, datatype sizes, MPI_Status byte counts, and ranks from the environment. */
#define _GNU_SOURCE
#include "mpi.h"
#include "pinfile.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define OMPI_DTYPE_SIZE_OFF 24 /* opal_datatype_t: super (16), flags, id, bdt_used, size */
#define OMPI_STATUS_UCOUNT 16  /* mpi.h: MPI_SOURCE, MPI_TAG, MPI_ERROR, _cancelled, _ucount */
#define MPICH_STATUS_COUNT 0   /* mpi.h: count_lo, count_hi_and_cancelled, MPI_SOURCE, ... */

struct cached {
	char *path;
	struct dc_mpi_abi abi;
};
static struct cached *cache;
static int ncache;

/* Reads 8 bytes of the initialised data at virtual address v of the open ELF file.
 * Returns 0, or -1 when no section with file contents holds it. */
static int read_data(Elf *e, int fd, uint64_t v, uint64_t *out)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	while ((scn = elf_nextscn(e, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS)
			continue;
		if (v >= sh.sh_addr && v + 8 <= sh.sh_addr + sh.sh_size)
			return pread(fd, out, 8, sh.sh_offset + (v - sh.sh_addr)) == 8 ? 0 : -1;
	}
	return -1;
}

/* Looks at the .dynsym of path: the flavor, and for Open MPI whether the predefined
 * datatypes' sizes sit at OMPI_DTYPE_SIZE_OFF. */
static void inspect(const char *path, struct dc_mpi_abi *abi)
{
	static const struct { const char *sym; uint64_t size; } types[] = {
		{ "ompi_mpi_byte", 1 }, { "ompi_mpi_int", 4 }, { "ompi_mpi_double", 8 },
	};
	abi->flavor = DC_MPI_NONE;
	abi->status_off = 0;
	abi->dtype_off = -1;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return;
	char pinned[64];
	const char *pp = dc_pin(path, pinned, sizeof(pinned)); /* site mode: the pinned file */
	int fd = pp ? open(pp, O_RDONLY | O_CLOEXEC) : -1;
	if (fd < 0)
		return;
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	int ok_types = 0, mpich = 0, ompi = 0;
	while (e && (scn = elf_nextscn(e, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		size_t n = sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
		for (size_t i = 0; d && i < n; i++) {
			GElf_Sym s;
			if (!gelf_getsym(d, i, &s) || s.st_shndx == SHN_UNDEF)
				continue;
			const char *name = elf_strptr(e, sh.sh_link, s.st_name);
			if (!name)
				continue;
			if (!strcmp(name, "MPIR_Err_create_code"))
				mpich = 1;
			for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
				uint64_t v;
				if (strcmp(name, types[t].sym))
					continue;
				ompi = 1;
				if (!read_data(e, fd, s.st_value + OMPI_DTYPE_SIZE_OFF, &v) &&
				    v == types[t].size)
					ok_types++;
			}
		}
	}
	if (ompi) {
		abi->flavor = DC_MPI_OPENMPI;
		abi->status_off = OMPI_STATUS_UCOUNT;
		if (ok_types == 3)
			abi->dtype_off = OMPI_DTYPE_SIZE_OFF;
	} else if (mpich) {
		abi->flavor = DC_MPI_MPICH;
		abi->status_off = MPICH_STATUS_COUNT;
	}
	if (e)
		elf_end(e);
	close(fd);
}

enum dc_mpi_flavor dc_mpi_abi(const char *library, struct dc_mpi_abi *out)
{
	for (int i = 0; i < ncache; i++)
		if (!strcmp(cache[i].path, library)) {
			*out = cache[i].abi;
			return out->flavor;
		}
	inspect(library, out);
	struct cached *c = realloc(cache, (ncache + 1) * sizeof(*c));
	if (c) {
		cache = c;
		cache[ncache].path = strdup(library);
		cache[ncache].abi = *out;
		if (cache[ncache].path)
			ncache++;
	}
	return out->flavor;
}

int64_t dc_mpi_type_size(enum dc_mpi_flavor f, uint64_t value)
{
	if (f == DC_MPI_OPENMPI)
		return value > 0 && value < (1ULL << 40) ? (int64_t)value : -1;
	if (f == DC_MPI_MPICH) {
		uint32_t h = (uint32_t)value;
		/* HANDLE_KIND (bits 30..31) 1 is a builtin; MPI_DATATYPE_NULL is 0x0c000000 */
		if ((h >> 30) == 1 && ((h >> 8) & 0xff))
			return (h >> 8) & 0xff;
	}
	return -1;
}

int64_t dc_mpi_status_bytes(enum dc_mpi_flavor f, uint64_t raw)
{
	if (f == DC_MPI_OPENMPI)
		return (int64_t)raw;
	if (f == DC_MPI_MPICH) {
		uint32_t lo = (uint32_t)raw, hi = (uint32_t)(raw >> 32);
		return (int64_t)((uint64_t)lo | ((uint64_t)(hi >> 1) << 32));
	}
	return -1;
}

int dc_mpi_env_rank(int pid)
{
	static const char *const vars[] = { "OMPI_COMM_WORLD_RANK=", "PMIX_RANK=", "PMI_RANK=",
					     "SLURM_PROCID=", NULL };
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/environ", pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	char *line = NULL;
	size_t cap = 0;
	int found[4] = { -1, -1, -1, -1 };
	while (getdelim(&line, &cap, 0, f) > 0) {
		for (int i = 0; vars[i]; i++) {
			size_t n = strlen(vars[i]);
			char *end;
			if (strncmp(line, vars[i], n))
				continue;
			long v = strtol(line + n, &end, 10);
			if (end != line + n && *end == 0 && v >= 0 && v < (1L << 30))
				found[i] = (int)v;
		}
	}
	free(line);
	fclose(f);
	for (int i = 0; i < 4; i++) /* in the order of `vars`: the MPI's own first */
		if (found[i] >= 0)
			return found[i];
	return -1;
}
