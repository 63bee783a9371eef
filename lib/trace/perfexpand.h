/* perfexpand: a perf.data that perf record -z wrote (its records in zstd
 * batches: PERF_RECORD_COMPRESSED, COMPRESSED2) rewritten as the plain
 * perf.data perf would have written without -z, into an unlinked file in
 * TMPDIR, so every walk over it sees ordinary records at stable offsets.
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
	char damage[256];       /* the first thing that went wrong, "" when nothing */
};

/* Whether [data_off, data_end) of the input holds compressed records: a
 * walk over the record headers only (AUXTRACE payloads skipped). */
bool mt_perfexpand_needed(const uint8_t *base, uint64_t data_off, uint64_t data_end);

/* Writes the expanded copy of the input (len bytes at base, file mode or
 * pipe mode) to a new unlinked file in TMPDIR; *fd and *out_len are that
 * file's. File mode: the header's data size and the offsets after the data
 * section (features, event types, attr ids) moved by what the data grew.
 * A walk stopped by a broken record keeps the rest as it was. */
int mt_perfexpand(const uint8_t *base, size_t len, bool pipe_mode, uint64_t data_off, uint64_t data_end,
		  int *fd, size_t *out_len, struct mt_perfexpand_stats *st, const char *name, struct mt_err *err);

#endif
