/* ptnote: the PT notes the packet reader reports (PTWRITE, MWAIT, PWRE,
 * PWRX, EXSTOP, VMCS; Event Trace's CFE with its EVDs; TRIG) as the note
 * events of mt's stream: the kind, the IP it is bound to, and its columns,
 * named and written as libipt's ptxed writes them. */
#ifndef MT_PTNOTE_H
#define MT_PTNOTE_H

#include <intel-pt.h>
#include <stdbool.h>
#include <stdint.h>

#include "stream/events.h"

#define MT_PTNOTE_MAX_COLS 4 /* a CFE: type, vector, VMXQ, VMXR */

/* kv's values point into v: used where it was filled, not copied */
struct mt_ptnote {
	enum mt_event_kind kind;
	uint64_t ip;               /* 0: not known */
	char v[MT_PTNOTE_MAX_COLS][24];
	struct mt_kv kv[MT_PTNOTE_MAX_COLS];
	unsigned n;
};

/* Fills *n from ev and returns true where ev is a note mt reports: the
 * power notes (MWAIT, PWRE, PWRX, EXSTOP) only when power is asked for, a
 * VMCS only where it changes (not a PSB+'s restatement), a CFE of a type
 * libipt knows. */
bool mt_ptnote_of(const struct pt_event *ev, bool power, struct mt_ptnote *n);

#endif
