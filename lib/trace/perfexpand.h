/* perfexpand: a perf.data that perf record -z wrote (its records in zstd
 * batches: PERF_RECORD_COMPRESSED, COMPRESSED2), or perf record --threads
 * (a directory: the header file `data`, and a file of records per thread,
 * data.N), rewritten as the one plain perf.data perf would have written
 * without them, into an unlinked file in TMPDIR, so every walk over it
 * sees ordinary records at stable offsets.
 *
 * As perf reads them: one zstd stream per file across all its batches, a
 * record may continue from one batch into the next, and the records of a
 * batch come where the batch was (AUXTRACE buffers are never compressed).
 * A damaged batch ends the stream: what it and later batches held is lost,
 * and said; everything else is kept. */
#ifndef MT_PERFEXPAND_H
#define MT_PERFEXPAND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/mt_err.h"

struct mt_perfexpand_stats {
	uint64_t batches;       /* compressed records met */
	uint64_t batches_lost;  /* of them, not read: the stream was damaged */
	uint64_t bytes_in;      /* compressed bytes read */
	uint64_t bytes_out;     /* record bytes they held */
	uint64_t records_cut;   /* bytes of a record left incomplete where the stream broke or ended */
	uint64_t input_bytes;   /* the whole input's size, before */
	char damage[512];       /* the first thing that went wrong in a stream, "" when nothing */
	/* perf record --threads: the data.N files read after the data section */
	unsigned parts;
	uint64_t parts_bytes;
	uint64_t parts_cut;     /* bytes at a data.N's end that were no whole record */
	char part_damage[512];  /* the first file that was cut, missing or unread */
};

/* A data.N file of a perf.data directory, mapped. */
struct mt_perfexpand_part {
	const uint8_t *base;
	size_t len;
	const char *name;
};

/* Whether [data_off, data_end) of the input holds compressed records: a
 * walk over the record headers only (AUXTRACE payloads skipped). */
bool mt_perfexpand_needed(const uint8_t *base, uint64_t data_off, uint64_t data_end);

/* Writes the expanded copy of the input (len bytes at base, file mode or
 * pipe mode) to a new unlinked file in TMPDIR; *fd and *out_len are that
 * file's. The records of parts (perf record --threads' data.N, each its
 * own zstd stream) follow the data section's, as one data section. File
 * mode: the header's data size and the offsets after the data section
 * (features, event types, attr ids) moved by what the data grew. A walk
 * stopped by a broken record keeps the rest as it was (the parts then are
 * not added); a part's cut end is left out and counted. mmap_len: the
 * file's HEADER_COMPRESSED says how much one batch may give (0: not said;
 * a pipe says it in a record). */
int mt_perfexpand(const uint8_t *base, size_t len, bool pipe_mode, uint64_t data_off, uint64_t data_end,
		  const struct mt_perfexpand_part *parts, size_t nparts, uint64_t mmap_len, int *fd, size_t *out_len,
		  struct mt_perfexpand_stats *st, const char *name, struct mt_err *err);

#endif
