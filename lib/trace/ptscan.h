/* ptscan: how far mt's packet reader reads a trace itself. From a PSB the
 * scan walks the packets as the reader will, checking each is one it
 * reads as libipt does (in its place: PSB+ contents, what a FUP or
 * MODE.Exec binds to, timing packets the clock can read); it stops at the
 * first that is not, and libipt's query decoder reads on from a PSB
 * before it. It notes every PSB it meets (packet boundaries, where a
 * sync may go) and the damaged Event Trace and TRIG packets that libipt
 * 2.0.5 cannot be handed. */
#ifndef MT_PTSCAN_H
#define MT_PTSCAN_H

#include <stdbool.h>
#include <stdint.h>

#include "trace/ptquery.h"

/* Walks the packets from the PSB at p; returns the PSB from which libipt
 * must read (the one before the first packet mt does not read; for a
 * timed decode, the last whose PSB+ starts with a TSC, which sets libipt's
 * time as reading on would; with CYC, the first, as libipt's calibration
 * carries on over PSBs), or the one whose PSB+ the trace ends in, or
 * q->end when mt reads them all. Notes every PSB on the way (q->psbs) and
 * the damaged packets (q->bad), going on at the next PSB after each. */
const uint8_t *mt_ptq_scan(struct mt_ptq *q, const uint8_t *p);
/* Whether the scan met a PSB at p: a pattern found by searching may also
 * begin inside a packet's payload, where mt's reader would misread. */
bool mt_ptq_scanned_psb(const struct mt_ptq *q, const uint8_t *p);
/* The first damaged packet the scan noted at or after p (*err: what
 * reading it gives), NULL when none. */
const uint8_t *mt_ptq_next_bad(const struct mt_ptq *q, const uint8_t *p, int *err);

#endif
