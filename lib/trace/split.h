/* split: one long segment cut at PSBs into pieces decoded at once and
 * stitched back together (stitch.c); the output is the sequential decode's.
 *
 * A PSB starts the packet stream anew (no IP compression, an empty RET
 * compression stack, the full time in its TSC), so a decoder can start at
 * any. A long segment is cut at PSBs into pieces decoded at once, each
 * going on a little past the next cut (OVERLAP). Stitching: the decoder
 * reports each PSB's status at the instruction it was made at, so the
 * piece before knows how many instructions it decoded before the next
 * piece's start. Instruction counts then pair the two pieces' events
 * exactly (PT offsets cannot: how far the decoder has read ahead differs).
 * Past the next piece's first events both decoders are in the same state:
 * the cut goes at the first event where every event both decoded is the
 * same (STITCH_MIN at least), and the piece before keeps its events before
 * it. Where that never holds (a decode error at the cut, cycle-accurate
 * timing still calibrating), the piece before is decoded again through the
 * next one's range instead: the output is always the sequential decode's.
 *
 * Pieces are in flight at once: decoded by the workers in order, each
 * from its own copy of its bytes (the caller may move or drop the
 * segment's data meanwhile), stitched by the main thread as soon as a piece
 * and the next are decoded, and written in order while later ones decode.
 * A piece's text is formatted as it decodes; only the events stitching
 * compares are held as events: those of its head (the first HEAD_BYTES of
 * PT, where the piece before overlaps it) and those after its mark (where
 * it overlaps the next). Binary output holds them all (the main thread
 * writes them). */
#ifndef MT_SPLIT_H
#define MT_SPLIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trace/evlog.h"
#include "trace/pool.h"

#define OVERLAP ((size_t)16 << 10)
/* A piece's head: longer than the piece before reads past its cut (the
 * overlap, and at most 256 blocks before it checks where it is). */
#define HEAD_BYTES (2 * OVERLAP)
/* Memory a piece keeps for its events and text between uses: a piece of
 * split_bytes of PT needs about 16 times as much. */
#define PIECE_KEEP ((size_t)64 << 20)
#define STITCH_MIN 32
#define STITCH_TRIES 8

/* A held event's place among all its piece decoded. */
struct logpos {
	uint64_t idx;               /* the piece's event number */
	uint64_t before;            /* instructions the piece decoded before it */
	size_t text;                /* where its text starts in the piece's */
};

struct piece {
	struct mt_workq_task task;  /* first: the task is the piece */
	struct splitter *sp;
	/* positions in the segment: the PSB it starts at (0: the first PSB),
	 * the next piece's PSB and where to stop decoding (0: to the end) */
	uint64_t start, next, stop;
	uint8_t *buf;               /* the segment's bytes from start on */
	size_t blen, bcap;
	uint64_t mark;              /* instructions decoded before next (UINT64_MAX: not reached) */
	bool head_passed;           /* the decode has read HEAD_BYTES */
	struct evlog log;           /* the events held (see above) */
	struct logpos *pos;         /* and where each lies (pcap >= log.cap) */
	size_t pcap;
	size_t tail;                /* the first held after the mark (SIZE_MAX: none yet) */
	/* every event decoded: how many, their instructions (by kind: st) */
	uint64_t nev, ev_insns;
	size_t keep_from, keep_to;  /* after stitching: the held events the output starts and ends at */
	bool stitched;              /* keep_to is known */
	struct mt_ptdec_stats st;
	int rc;
	struct mt_err err;
	struct mt_events_writer text; /* text output, formatted as it decodes */
};

/* A segment decoded in pieces, fed as it arrives. */
struct splitter {
	struct pool *p;
	int32_t cpu;
	struct who_ctx wc;
	uint64_t base;              /* the position of split_feed's data[0] */
	uint64_t pos;               /* where the next new piece starts */
	bool cut_end;               /* the last piece (to the end) is made */
	struct piece *v;            /* `ring` pieces: */
	struct piece **order;       /* those in flight, oldest first (n) */
	struct piece **spare;       /* and the others (nspare) */
	size_t ring, n, nspare;
};

int mt_split_begin(struct splitter *sp, struct pool *p, const struct who_ctx *wc, int32_t cpu, struct mt_err *err);
/* Waits for the pieces in flight (after an error) and frees them. */
void mt_split_end(struct splitter *sp);

/* Decodes the pieces data[0..len) holds and writes their events in order;
 * final: data ends the segment, so everything. Pieces not yet written stay
 * in flight for the next call. *keep: the bytes from which on the next
 * call needs the data again (before them it may be dropped, see
 * mt_split_drop). */
int mt_split_feed(struct splitter *sp, const uint8_t *data, size_t len, bool final, struct mt_events_writer *w,
		  struct mt_ptdec_stats *stats, size_t *keep, struct mt_err *err);
/* The caller dropped the first n bytes of the data (n <= split_feed's
 * *keep): the data's base moves forward. */
void mt_split_drop(struct splitter *sp, size_t n);

/* Cuts between a and b, the piece after it: sets a->keep_to and
 * b->keep_from, or returns false when they do not agree, saying why in
 * why[WHY_LEN] (the furthest any candidate got). */
#define WHY_LEN sizeof(((struct mt_ptdec_stats *)0)->redo_why)
bool mt_stitch(struct piece *a, struct piece *b, char *why);

#endif
