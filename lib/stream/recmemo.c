/* recmemo: a binary stream's records, kept decoded (recmemo.h). */
#include "stream/recmemo.h"

#include <stdlib.h>
#include <string.h>

#include "base/bigmem.h"

#define SLOTS (1u << MT_RECMEMO_SLOT_BITS)

void mt_recmemo_init(struct mt_recmemo *m)
{
	memset(m, 0, sizeof *m);
}

void mt_recmemo_fini(struct mt_recmemo *m)
{
	mt_bigmem_zfree(m->slot, SLOTS * sizeof *m->slot);
	memset(m, 0, sizeof *m);
}

struct mt_recmemo_entry *mt_recmemo_make(struct mt_recmemo *m)
{
	if (!m->slot && !(m->slot = mt_bigmem_zalloc(SLOTS * sizeof *m->slot)))
		m->failed = true;
	return m->slot;
}

bool mt_recmemo_keep(struct mt_recmemo_entry *e, uint64_t hash, const uint8_t *key, size_t len,
		     const struct mt_event *ev, bool canon)
{
	if (ev->nextra > MT_RECMEMO_KV || len > MT_RECMEMO_MAX) {
		e->hash = 0;
		return false;
	}
	e->ev = *ev;
	e->ev.time = 0;
	e->ev.has_time = false;
	if (ev->nextra)
		memcpy(e->kv, ev->extra, ev->nextra * sizeof *e->kv);
	e->ev.extra = e->kv;
	/* these pointers, this entry's while it keeps them */
	e->ev.extra_id = ev->nextra ? mt_events_new_epoch() : 0;
	e->epoch = ev->strings_epoch;
	e->len = (uint32_t)len;
	e->canon = canon;
	e->stamp = mt_events_new_epoch();
	memcpy(e->key, key, len);
	e->hash = hash;
	return true;
}
