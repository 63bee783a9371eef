/* framecols: a callchain frame's columns as mt-symbolize writes them, made
 * once per address and kept: "frame=0xIP NAME+0xOFF (DSO)" as perf script
 * prints a frame (or "[unknown] (DSO)"), with inlines on one more frame for
 * each function inlined there, outermost first, "0xIP NAME (inlined)
 * (DSO)" as perf names them, and with lines the address's
 * "frame_src=FILE:LINE" after the innermost. A sampled stream repeats a
 * few thousand addresses millions of times: each is looked up (DWARF
 * scopes and lines are the slow part) once. Memory: a fixed table of
 * entries, each holding its own texts. */
#ifndef MT_FRAMECOLS_H
#define MT_FRAMECOLS_H

#include <stdbool.h>
#include <stdint.h>

#include "names/symbolize.h"
#include "stream/events.h"

struct mt_framecols;

/* Over sym (which must outlive it); inlines and lines as sym was set. */
struct mt_framecols *mt_framecols_new(struct mt_sym *sym, bool inlines, bool lines);
void mt_framecols_free(struct mt_framecols *c);
/* A new event's frames are coming: what mt_framecols_get gave for the
 * last one may go. */
void mt_framecols_next_event(struct mt_framecols *c);
/* The columns of the frame at ip in process pid; caller: a caller's frame
 * (its return address: its line is the call's, ip - 1). *n of them, valid
 * until mt_framecols_next_event (every frame of one event at once, two
 * of them in one slot of the table too); NULL: out of memory. */
const struct mt_kv *mt_framecols_get(struct mt_framecols *c, uint32_t pid, uint64_t ip, bool caller, unsigned *n);
/* Mappings changed: what was kept may name other things. */
void mt_framecols_forget(struct mt_framecols *c);

#endif
