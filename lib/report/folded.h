/* folded: collapsed stacks ("root;caller;callee WEIGHT" a line, as
 * flamegraph.pl, inferno and speedscope read them) from the calls a
 * report counted (report.h's next): each call's self time in ns, or self
 * instructions or cycles, at its stack; or each stack sample, one at its
 * stack. Each stack starts with its thread's name (perf script's comm, as
 * stackcollapse-perf begins), a ';' in a name becomes ':'. As Perfetto
 * keeps 500 frames, a stack deeper than MT_FOLDED_MAX_DEPTH weighs as
 * that stack and "[deeper frames]". Lines are written at the end, one per
 * distinct stack, frames in name order (depth first); memory grows with
 * the distinct stacks, and a call costs the same at any depth. */
#ifndef MT_FOLDED_H
#define MT_FOLDED_H

#include <stdint.h>
#include <stdio.h>

#include "report/report.h"

#define MT_FOLDED_MAX_DEPTH MT_PFTRACE_MAX_DEPTH

enum mt_folded_weight { MT_WEIGHT_TIME, MT_WEIGHT_SAMPLES, MT_WEIGHT_INSTRUCTIONS, MT_WEIGHT_CYCLES, MT_WEIGHT_COUNT };

/* Parses time, samples, instructions or cycles; -1 otherwise. */
int mt_folded_weight_parse(const char *s);

struct mt_folded;
/* Every weight is kept, so that the choice can wait for the end. */
struct mt_folded *mt_folded_new(void);
void mt_folded_sink(struct mt_folded *f, struct mt_report_next *sink);
/* samples when there were stack samples, else time. */
enum mt_folded_weight mt_folded_default_weight(const struct mt_folded *f);
/* Writes the stacks with a weight above 0; returns the weights' sum
 * (the total the graph shows), UINT64_MAX when out of memory happened. */
uint64_t mt_folded_write(struct mt_folded *f, FILE *out, enum mt_folded_weight weight);
void mt_folded_free(struct mt_folded *f);

#endif
