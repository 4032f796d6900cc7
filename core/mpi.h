/* mpi.h: what the MPI libraries' binary interface lets the tracer read without calling
 * MPI: which MPI a library is, datatype sizes, the bytes an MPI_Status reports, ranks. */
#ifndef DC_MPI_H
#define DC_MPI_H

#include <stdint.h>

enum dc_mpi_flavor {
	DC_MPI_NONE = 0,  /* not an MPI library, or one we cannot read */
	DC_MPI_OPENMPI,   /* Open MPI (libmpi.so.40): handles are pointers to structs */
	DC_MPI_MPICH,     /* MPICH and its ABI family (libmpich.so.12): datatypes are ints */
};

/* How to read MPI values in the BPF programs of one library. */
struct dc_mpi_abi {
	enum dc_mpi_flavor flavor;
	int status_off;   /* byte offset of the bytes-moved count in MPI_Status */
	int dtype_off;    /* Open MPI: offset of the size in a datatype struct, -1 unknown */
};

/* Tells which MPI `library` (a file path) is, by the symbols it exports (Open MPI's
 * ompi_mpi_byte, MPICH's MPIR_Err_create_code), and for Open MPI checks in the file's
 * initialised data that the predefined datatypes hold their sizes at the expected offset
 * (MPI_BYTE 1, MPI_INT 4, MPI_DOUBLE 8), since that struct is not a public interface.
 * Results are cached per path. Returns the flavor (DC_MPI_NONE when it is neither). */
enum dc_mpi_flavor dc_mpi_abi(const char *library, struct dc_mpi_abi *out);

/* The size in bytes of a datatype as it arrives in a record: for Open MPI the BPF program
 * has already replaced the pointer with the size it read (0: unreadable); for MPICH the
 * value is the handle, whose size a builtin type carries in bits 8..15 (mpi.h:
 * MPI_DOUBLE = 0x4c00080b). Returns the size, or -1 when it cannot be known (derived
 * MPICH types). */
int64_t dc_mpi_type_size(enum dc_mpi_flavor f, uint64_t value);

/* The bytes an MPI_Status says the call moved, from the 8 bytes BPF read at the flavor's
 * status_off: Open MPI's size_t _ucount; MPICH's int count_lo and int
 * count_hi_and_cancelled (high bits above the cancelled bit). Public mpi.h layouts. */
int64_t dc_mpi_status_bytes(enum dc_mpi_flavor f, uint64_t raw);

/* The MPI rank of process pid from its environment (/proc/PID/environ), as the
 * launchers set it: OMPI_COMM_WORLD_RANK (Open MPI), PMIX_RANK, PMI_RANK (MPICH's
 * Hydra), SLURM_PROCID (srun). Returns the rank, or -1 when none is set or readable. */
int dc_mpi_env_rank(int pid);

#endif
