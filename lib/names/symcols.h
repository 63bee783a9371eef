/* symcols: the columns mt-symbolize adds to one side of an event (from_* or
 * to_*: sym, off, dso, and with lines and inlines file, line, inline), made
 * once per address and kept, so that a stream's millions of events cost a
 * lookup in a small table each; the writer encodes each group once too
 * (mt_events_write_cols, by the group's id). */
#ifndef MT_SYMCOLS_H
#define MT_SYMCOLS_H

#include <stdbool.h>
#include <stdint.h>

#include "names/symbolize.h"
#include "stream/events.h"

enum mt_symcols_side { MT_SYMCOLS_FROM, MT_SYMCOLS_TO };

struct mt_symcols;

/* Over sym, which must outlive it (the groups point at its names). text:
 * each group kept with its text form (mt_events_cols.text), for a text
 * writer; a binary one has no use for it. */
struct mt_symcols *mt_symcols_new(struct mt_sym *sym, bool text);
void mt_symcols_free(struct mt_symcols *c);
/* The columns for addr in process pid on that side (n 0: nothing known).
 * The group stays valid until the next call for that side; its id names its columns as
 * long as no mapping changes (mt_symcols_forget). */
const struct mt_events_cols *mt_symcols_get(struct mt_symcols *c, uint32_t pid, uint64_t addr,
					    enum mt_symcols_side side);
/* Mappings changed (an mmap line): what was kept may name other things. */
void mt_symcols_forget(struct mt_symcols *c);
/* Nonzero, and new at each mt_symcols_forget: while it stays, an address
 * gets the same columns (what a filter derived from them holds). */
uint64_t mt_symcols_generation(const struct mt_symcols *c);

#endif
