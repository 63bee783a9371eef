/* write_perfetto: the timeline as a Perfetto protobuf trace
 * (proto/perfetto_trace.proto, perfetto-output.md section 3): track
 * descriptors for every process and thread on sequence 1, then one
 * sequence per thread with interned names and an incremental clock, the
 * CPU frequency as a counter track, event samples on tracks of their own. */
#define _GNU_SOURCE
#include "timeline/writer.h"

#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "perfetto_trace.pb-c.h"
#include "stream/pbwire.h"

static void put_packet(struct mt_pftrace *pf, const Perfetto__Protos__TracePacket *p)
{
	size_t n = perfetto__protos__trace_packet__get_packed_size(p);
	if (!mt_grow((void **)&pf->buf, &pf->bufcap, n + 11, 1)) {
		pf->oom = true;
		return;
	}
	uint8_t *b = pf->buf;
	size_t h = (size_t)(mt_pb_varint(mt_pb_tag(b, 1, MT_PB_LEN), n) - b); /* Trace.packet */
	perfetto__protos__trace_packet__pack(p, b + h);
	mt_tl_out(pf, b, h + n);
	pf->st.packets++;
}

/* The clock of every time written: the recording's (perf record -k) where
 * Perfetto has an id for it, so the timeline lines up with other traces
 * of that clock; else BOOTTIME, as magic-trace labels perf's own. */
static uint32_t trace_clock(const struct mt_pftrace *pf)
{
	return pf->clock_id ? pf->clock_id : CLOCK_BOOTTIME;
}

/* The first packet, where the recording has its own clock (perf record -k):
 * that clock as the trace's time. Perfetto takes it only before any time
 * has been converted, so it comes before every timestamp. (Its importer
 * then logs clock_sync_unrelatable_clock_domains once: a proto file's own
 * clock, BOOTTIME, is not related to this one; nothing is dropped.) */
static void proto_head(struct mt_pftrace *pf)
{
	if (trace_clock(pf) == CLOCK_BOOTTIME)
		return;
	Perfetto__Protos__TracePacket p = PERFETTO__PROTOS__TRACE_PACKET__INIT;
	Perfetto__Protos__ClockSnapshot cs = PERFETTO__PROTOS__CLOCK_SNAPSHOT__INIT;
	p.has_trusted_packet_sequence_id = true;
	p.trusted_packet_sequence_id = SEQ_DESCRIPTORS;
	p.clock_snapshot = &cs;
	cs.has_primary_trace_clock = true;
	cs.primary_trace_clock = trace_clock(pf);
	put_packet(pf, &p);
}

static void track_packet(struct mt_pftrace *pf, uint64_t time, Perfetto__Protos__TrackDescriptor *td)
{
	Perfetto__Protos__TracePacket p = PERFETTO__PROTOS__TRACE_PACKET__INIT;
	p.has_timestamp = true;
	p.timestamp = time;
	p.has_timestamp_clock_id = trace_clock(pf) != CLOCK_BOOTTIME; /* (BOOTTIME: the default) */
	p.timestamp_clock_id = trace_clock(pf);
	p.has_trusted_packet_sequence_id = true;
	p.trusted_packet_sequence_id = SEQ_DESCRIPTORS;
	p.track_descriptor = td;
	put_packet(pf, &p);
}

/* A thread's descriptors (its process's too, the first time) at time t0
 * (the trace's base: no event is earlier), then the first packet of its
 * sequence: cleared state, defaults, the incremental clock. */
static void proto_thread(struct mt_pftrace *pf, struct pthread *t, bool first)
{
	uint64_t t0 = t->w.base;
	const char *pname = mt_tl_comm(pf, t->pid, t->pid), *tname = mt_tl_comm(pf, t->pid, t->tid);
	char *pfixed = NULL, *tfixed = NULL; /* names as UTF-8 (pb_iid_name) */
	size_t pcap = 0, tcap = 0;
	pname = pname ? mt_utf8_fixed(pname, &pfixed, &pcap) : NULL;
	tname = tname ? mt_utf8_fixed(tname, &tfixed, &tcap) : NULL;
	if (first) {
		Perfetto__Protos__TrackDescriptor td = PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;
		Perfetto__Protos__ProcessDescriptor pd = PERFETTO__PROTOS__PROCESS_DESCRIPTOR__INIT;
		td.has_uuid = true;
		td.uuid = UUID_PROCESS(t->pid);
		td.process = &pd;
		pd.has_pid = true;
		pd.pid = (int32_t)t->pid;
		pd.process_name = (char *)(pname ? pname : "");
		track_packet(pf, t0, &td);
	}
	Perfetto__Protos__ThreadDescriptor thd = PERFETTO__PROTOS__THREAD_DESCRIPTOR__INIT;
	Perfetto__Protos__TrackDescriptor td = PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;
	td.has_uuid = true;
	td.uuid = t->w.track;
	td.thread = &thd;
	thd.has_pid = thd.has_tid = true;
	thd.pid = (int32_t)t->pid;
	thd.tid = t->tid;
	thd.thread_name = (char *)(tname ? tname : "");
	track_packet(pf, t0, &td);
	free(pfixed);
	free(tfixed);

	Perfetto__Protos__TracePacket p = PERFETTO__PROTOS__TRACE_PACKET__INIT;
	Perfetto__Protos__TracePacketDefaults d = PERFETTO__PROTOS__TRACE_PACKET_DEFAULTS__INIT;
	Perfetto__Protos__TrackEventDefaults ted = PERFETTO__PROTOS__TRACK_EVENT_DEFAULTS__INIT;
	Perfetto__Protos__ClockSnapshot cs = PERFETTO__PROTOS__CLOCK_SNAPSHOT__INIT;
	Perfetto__Protos__ClockSnapshot__Clock c0 = PERFETTO__PROTOS__CLOCK_SNAPSHOT__CLOCK__INIT;
	Perfetto__Protos__ClockSnapshot__Clock c1 = PERFETTO__PROTOS__CLOCK_SNAPSHOT__CLOCK__INIT;
	Perfetto__Protos__ClockSnapshot__Clock *clocks[2] = {&c0, &c1};
	p.has_timestamp = true;
	p.timestamp = t0;
	p.has_timestamp_clock_id = true;
	p.timestamp_clock_id = trace_clock(pf);
	p.has_trusted_packet_sequence_id = true;
	p.trusted_packet_sequence_id = t->w.seq;
	p.has_sequence_flags = true;
	p.sequence_flags = 1; /* SEQ_INCREMENTAL_STATE_CLEARED */
	p.has_first_packet_on_sequence = true;
	p.first_packet_on_sequence = true;
	p.trace_packet_defaults = &d;
	d.has_timestamp_clock_id = true;
	d.timestamp_clock_id = CLOCK_INCREMENTAL;
	d.track_event_defaults = &ted;
	ted.has_track_uuid = true;
	ted.track_uuid = t->w.track;
	p.clock_snapshot = &cs;
	cs.n_clocks = 2;
	cs.clocks = clocks;
	c0.has_clock_id = c0.has_timestamp = true;
	c0.clock_id = trace_clock(pf);
	c0.timestamp = t0;
	c1.has_clock_id = c1.has_timestamp = c1.has_is_incremental = true;
	c1.clock_id = CLOCK_INCREMENTAL;
	c1.timestamp = t0;
	c1.is_incremental = true;
	put_packet(pf, &p);
}


/* A sample track of the thread, described before its first event. */
static uint64_t sample_track(struct mt_pftrace *pf, struct pthread *t, uint32_t k)
{
	uint64_t uuid = UUID_EXTRA(t->pid, t->tid, k);
	if (t->xdesc[k / 8] & (1u << (k % 8)))
		return uuid;
	t->xdesc[k / 8] |= (uint8_t)(1u << (k % 8));
	Perfetto__Protos__TrackDescriptor xd = PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;
	xd.has_uuid = true;
	xd.uuid = uuid;
	xd.has_parent_uuid = true;
	xd.parent_uuid = UUID_PROCESS(t->pid);
	xd.name = (char *)pf->extra_names[k];
	track_packet(pf, t->w.base, &xd);
	return uuid;
}

/* The slot of name in m (cap > 0): its own, or the empty one it would take. */
static size_t iid_slot(const struct iids *m, const char *name)
{
	size_t j = ((uintptr_t)name >> 4) & (m->cap - 1);
	while (m->k[j] && m->k[j] != name)
		j = (j + 1) & (m->cap - 1);
	return j;
}

static uint64_t iid_of(struct mt_pftrace *pf, struct iids *m, const char *name, bool *is_new)
{
	if ((m->n + 1) * 2 > m->cap) {
		size_t nc = m->cap ? 2 * m->cap : 16; /* per thread: 100,000 threads */
		const char **nk = calloc(nc, sizeof *nk);
		uint64_t *nv = calloc(nc, sizeof *nv);
		if (!nk || !nv) {
			free(nk);
			free(nv);
			pf->oom = true;
			return 0;
		}
		for (size_t i = 0; i < m->cap; i++)
			if (m->k[i]) {
				size_t j = ((uintptr_t)m->k[i] >> 4) & (nc - 1);
				while (nk[j])
					j = (j + 1) & (nc - 1);
				nk[j] = m->k[i];
				nv[j] = m->v[i];
			}
		free(m->k);
		free(m->v);
		m->k = nk;
		m->v = nv;
		m->cap = nc;
	}
	size_t j = iid_slot(m, name);
	*is_new = !m->k[j];
	if (*is_new) {
		m->k[j] = name;
		m->v[j] = ++m->n;
	}
	return m->v[j];
}

/* An interned name: { iid = 1, name = 2 } */
static uint8_t *pb_iid_name(uint8_t *p, unsigned field, uint64_t iid, const char *name)
{
	/* a string field is UTF-8 (trace_processor refuses others): a bad
	 * byte becomes U+FFFD, at most 3 bytes for 1 (callers' bounds allow
	 * 4), once per name */
	char *fixed = NULL;
	size_t cap = 0;
	name = mt_utf8_fixed(name, &fixed, &cap);
	if (!name)
		name = "";
	size_t n = strlen(name);
	uint8_t head[32], *h = mt_pb_uint(head, 1, iid);
	h = mt_pb_varint(mt_pb_tag(h, 2, MT_PB_LEN), n);
	p = mt_pb_varint(mt_pb_tag(p, field, MT_PB_LEN), (size_t)(h - head) + n);
	memcpy(p, head, (size_t)(h - head));
	p += h - head;
	memcpy(p, name, n);
	free(fixed);
	return p + n;
}

/* The TrackEvent packets are most of the file: they are encoded here by
 * hand (the wire format of proto/perfetto_trace.proto, fields in number
 * order as protobuf-c writes them) instead of through protobuf-c's
 * reflective packer, which took a third of the time. Descriptors and the
 * first packet of each sequence still go through protobuf-c. */
static void emit_proto(struct seqw *w, uint64_t time, Perfetto__Protos__TrackEvent__Type type, const char *name,
		       uint64_t track, uint64_t ip, bool counter, double value)
{
	struct mt_pftrace *pf = w->pf;
	size_t nlen = name ? strlen(name) : 0, flen = w->file ? strlen(w->file) : 0;
	size_t bound = 4 * nlen + 2 * flen + 256;
	if (!mt_grow((void **)&pf->buf, &pf->bufcap, 3 * bound, 1)) {
		pf->oom = true;
		return;
	}
	uint8_t *te = pf->buf, *id = pf->buf + bound, *pk = pf->buf + 2 * bound;
	uint8_t *t = te, *d = id;
	uint64_t name_iid = 0;
	if (name) {
		bool is_new = false;
		name_iid = iid_of(pf, &w->names, name, &is_new);
		if (is_new)
			d = pb_iid_name(d, 2, name_iid, name); /* InternedData.event_names */
	}
	if (type == PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN && (ip || w->file)) {
		if (!w->addr_iid) {
			/* argument names: 1 address, 2 file, 3 line */
			w->addr_iid = 1;
			d = pb_iid_name(d, 3, 1, "address");
			d = pb_iid_name(d, 3, 2, "file");
			d = pb_iid_name(d, 3, 3, "line");
		}
		/* at most 13 bytes; sized past 32 so that gcc's bounds check
		 * (-Wstringop-overread, which cannot see e - a) finds no copy
		 * in mt_pb_copy that could read beyond it */
		uint8_t a[48], *e;
		if (ip) { /* TrackEvent.debug_annotations { name_iid 1, pointer_value 7 } */
			e = mt_pb_uint(mt_pb_uint(a, 1, 1), 7, ip);
			t = mt_pb_bytes(t, 4, a, (size_t)(e - a));
		}
		if (w->file) { /* { name_iid, string_value 6 } and { name_iid, int_value 4 } */
			t = mt_pb_varint(mt_pb_tag(t, 4, MT_PB_LEN), 2 + 1 + (size_t)(mt_pb_varint(a, flen) - a) + flen);
			t = mt_pb_bytes(mt_pb_uint(t, 1, 2), 6, w->file, flen);
			e = mt_pb_uint(mt_pb_uint(a, 1, 3), 4, (uint64_t)(int64_t)w->line);
			t = mt_pb_bytes(t, 4, a, (size_t)(e - a));
		}
	}
	t = mt_pb_uint(t, 9, (uint64_t)type);
	if (name)
		t = mt_pb_uint(t, 10, name_iid);
	if (track != w->track)
		t = mt_pb_uint(t, 11, track);
	if (counter) {
		t = mt_pb_tag(t, 44, MT_PB_I64);
		memcpy(t, &value, 8); /* little-endian hosts only, as x86-64 */
		t += 8;
	}
	/* The packet is sized first and encoded straight into the output
	 * buffer (the staging copy cost a tenth of the time). */
	size_t tlen = (size_t)(t - te), dlen = (size_t)(d - id);
	uint64_t dt = time - w->last;
	w->last = time;
	size_t plen = 1 + mt_pb_varint_len(dt) + 1 + mt_pb_varint_len(w->seq) + 1 + mt_pb_varint_len(tlen) + tlen +
		      (dlen ? 1 + mt_pb_varint_len(dlen) + dlen : 0) + 2;
	size_t total = 1 + mt_pb_varint_len(plen) + plen;
	if (total > sizeof pf->obuf - pf->nobuf)
		mt_tl_flush(pf);
	bool direct = total <= sizeof pf->obuf;
	uint8_t *p = direct ? pf->obuf + pf->nobuf : pk; /* pk has room: total < bound */
	uint8_t *start = p;
	p = mt_pb_varint(mt_pb_tag(p, 1, MT_PB_LEN), plen); /* Trace.packet */
	p = mt_pb_uint(p, 8, dt); /* timestamp, incremental */
	p = mt_pb_uint(p, 10, w->seq);
	p = mt_pb_bytes(p, 11, te, tlen);
	if (dlen)
		p = mt_pb_bytes(p, 12, id, dlen);
	p = mt_pb_uint(p, 13, 2); /* SEQ_NEEDS_INCREMENTAL_STATE */
	if (direct) {
		pf->nobuf += total;
		pf->st.bytes += total;
	} else {
		mt_tl_out(pf, start, total);
	}
	(void)p;
	pf->st.packets++;
}

/* The interned name's iid, or 0 when it has none yet (nothing added). */
static uint64_t iid_known(const struct iids *m, const char *name)
{
	if (!m->cap)
		return 0;
	size_t j = iid_slot(m, name);
	return m->k[j] ? m->v[j] : 0;
}

/* A slice's packet written straight into the output buffer: its head
 * (Trace.packet's tag and length, the incremental timestamp, the sequence,
 * track_event's tag and its length tlen < 0x80), returning where the
 * TrackEvent's fields go ... (inline: one packet an event) */
static inline __attribute__((always_inline)) uint8_t *slice_packet_head(struct seqw *w, uint64_t time, size_t tlen,
									 uint8_t **start)
{
	struct mt_pftrace *pf = w->pf;
	uint64_t dt = time - w->last;
	size_t plen = 1 + mt_pb_varint_len(dt) + 1 + mt_pb_varint_len(w->seq) + 2 + tlen + 2;
	size_t total = 1 + mt_pb_varint_len(plen) + plen;
	if (total + 16 > sizeof pf->obuf - pf->nobuf) /* 16: room for a whole-array copy */
		mt_tl_flush(pf);
	uint8_t *p = *start = pf->obuf + pf->nobuf;
	p = mt_pb_varint(mt_pb_tag(p, 1, MT_PB_LEN), plen);
	p = mt_pb_uint(p, 8, dt);
	p = mt_pb_uint(p, 10, w->seq);
	p = mt_pb_tag(p, 11, MT_PB_LEN);
	*p++ = (uint8_t)tlen;
	w->last = time;
	return p;
}

/* ... and its tail after them (sequence_flags), the packet counted. */
static inline __attribute__((always_inline)) void slice_packet_tail(struct mt_pftrace *pf, uint8_t *p,
								     const uint8_t *start)
{
	p = mt_pb_uint(p, 13, 2);
	size_t total = (size_t)(p - start);
	pf->nobuf += total;
	pf->st.bytes += total;
	pf->st.packets++;
}

/* Most packets are slices' begins and ends on their own thread's track
 * with names already interned and no source line: written here directly,
 * the same bytes emit_proto writes for them (fields in number order),
 * without its staging, sizing passes and generality; anything else goes
 * through emit_proto. A packet: Trace.packet { timestamp 8 (incremental),
 * trusted_packet_sequence_id 10, track_event 11 { [debug_annotations 4
 * { name_iid 1: 1 (address), pointer_value 7 }], type 9, [name_iid 10] },
 * sequence_flags 13: SEQ_NEEDS_INCREMENTAL_STATE }. */
static void proto_slice_begin(struct seqw *w, uint64_t time, const char *name, uint64_t ip)
{
	uint64_t iid = w->file || (ip && !w->addr_iid) ? 0 : iid_known(&w->names, name);
	if (!iid) {
		emit_proto(w, time, PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN, name, w->track, ip, false,
			   0);
		return;
	}
	/* the address annotation: debug_annotations 4 { name_iid 1: 1,
	 * pointer_value 7 }, at most 2 + 13 bytes, the same bytes for an address
	 * each time (encoded once: a 6-byte varint's loop each slice) */
	struct mt_pftrace *pf = w->pf;
	size_t alen = 0;
	const uint8_t *abytes = NULL;
	if (ip) {
		struct addr_bytes *a = &pf->addr_bytes[ip * 0x9e3779b97f4a7c15ULL >> 56];
		if (a->ip != ip) {
			uint8_t *q = mt_pb_uint(mt_pb_uint(a->b + 2, 1, 1), 7, ip);
			a->b[0] = 4 << 3 | MT_PB_LEN;
			a->b[1] = (uint8_t)(q - a->b - 2);
			a->len = (uint8_t)(q - a->b);
			a->ip = ip;
		}
		alen = a->len;
		abytes = a->b;
	}
	/* at most 2 + 13 + 2 + 11 bytes */
	size_t tlen = alen + 2 + 1 + mt_pb_varint_len(iid);
	uint8_t *start, *p = slice_packet_head(w, time, tlen, &start);
	if (ip) {
		memcpy(p, abytes, sizeof pf->addr_bytes[0].b); /* whole: fixed size */
		p += alen;
	}
	p = mt_pb_uint(p, 9, PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN);
	p = mt_pb_uint(p, 10, iid);
	slice_packet_tail(w->pf, p, start);
}

static void proto_slice_end(struct seqw *w, uint64_t time, const char *name)
{
	(void)name;
	uint8_t *start, *p = slice_packet_head(w, time, 2, &start);
	p = mt_pb_uint(p, 9, PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_END);
	slice_packet_tail(w->pf, p, start);
}

static void proto_instant(struct seqw *w, uint64_t time, const char *name)
{
	emit_proto(w, time, PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_INSTANT, name, w->track, 0, false, 0);
}

static void proto_sample(struct seqw *w, uint64_t time, const char *name, uint32_t k, uint64_t ip)
{
	uint64_t track = sample_track(w->pf, w->pf->threads[w->k], k);
	emit_proto(w, time, PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_INSTANT, name, track, ip, false, 0);
}

/* A counter track's uuid: the CPU frequency's as it always was, the others
 * beside it. */
static uint64_t counter_uuid(uint32_t pid, unsigned k)
{
	return UUID_COUNTER(pid) | ((uint64_t)k << 32);
}

/* Counter track k of the thread's process, described at its first value
 * (a process without values has no empty track). */
static void counter_track(struct mt_pftrace *pf, struct pthread *t, unsigned k)
{
	static const char *const units[MT_TL_COUNTERS] = {"MHz", NULL, NULL};
	t->counter_tracks |= (uint8_t)(1u << k);
	int r = mt_tl_pidset_add(&pf->counter_pids[k], t->pid);
	if (r < 0)
		pf->oom = true;
	if (r <= 0)
		return;
	Perfetto__Protos__TrackDescriptor cd = PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;
	Perfetto__Protos__CounterDescriptor cnt = PERFETTO__PROTOS__COUNTER_DESCRIPTOR__INIT;
	cd.has_uuid = true;
	cd.uuid = counter_uuid(t->pid, k);
	cd.has_parent_uuid = true;
	cd.parent_uuid = UUID_PROCESS(t->pid);
	cd.name = (char *)mt_tl_counter_names[k];
	cnt.unit_name = (char *)units[k];
	cd.counter = &cnt;
	track_packet(pf, t->w.base, &cd);
}

static void proto_counter(struct seqw *w, uint64_t time, unsigned k, double value)
{
	struct pthread *t = w->pf->threads[w->k];
	if (!(t->counter_tracks & (1u << k)))
		counter_track(w->pf, t, k);
	emit_proto(w, time, PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_COUNTER, NULL, counter_uuid(w->pid, k), 0, true,
		   value);
}

/* A frame's interned data on first use on the sequence: its function name
 * (InternedData.function_names 5), its object as a mapping (mapping_paths
 * 17, mappings 19: one a DSO, the frame's address not kept) and the frame
 * (frames 6). Returns the frame's iid; d advances past what it wrote. */
static uint64_t stack_frame(struct seqw *w, const char *seg, size_t n, uint8_t **d)
{
	struct mt_pftrace *pf = w->pf;
	char *s = strndup(seg, n);
	if (!s) {
		pf->oom = true;
		return 0;
	}
	bool is_new;
	uint64_t fid = iid_of(pf, &w->frames, mt_tl_intern(pf, s), &is_new);
	if (is_new) {
		char *sep = strchr(s, MT_TL_DSO_SEP);
		const char *dso = sep ? sep + 1 : "[unknown]";
		if (sep)
			*sep = '\0';
		const char *name = mt_tl_intern(pf, s), *obj = mt_tl_intern(pf, dso);
		uint64_t nid = iid_of(pf, &w->fnames, name, &is_new);
		if (is_new)
			*d = pb_iid_name(*d, 5, nid, name);
		uint64_t mid = iid_of(pf, &w->mappings, obj, &is_new);
		uint8_t m[64], *e;
		if (is_new) {
			*d = pb_iid_name(*d, 17, mid, obj);
			e = mt_pb_uint(mt_pb_uint(mt_pb_uint(mt_pb_uint(m, 1, mid), 4, 0), 5, UINT64_MAX), 7, mid);
			*d = mt_pb_bytes(*d, 19, m, (size_t)(e - m));
		}
		e = mt_pb_uint(mt_pb_uint(mt_pb_uint(mt_pb_uint(m, 1, fid), 2, nid), 3, mid), 4, 0);
		*d = mt_pb_bytes(*d, 6, m, (size_t)(e - m));
	}
	free(s);
	return fid;
}

/* A stack sample as Perfetto's own (profile_packet.proto PerfSample,
 * TracePacket 66) on the thread's sequence, its callstack interned there
 * on first use (profile_common.proto: frames outermost first), so the UI's
 * sample views and flame graph work on a sampling trace. */
static void proto_stack_sample(struct seqw *w, uint64_t time, const char *key, uint64_t period)
{
	(void)period;
	struct mt_pftrace *pf = w->pf;
	size_t klen = strlen(key), nframes = 1;
	for (const char *q = key; *q; q++)
		nframes += *q == MT_TL_FRAME_SEP;
	/* a frame's entries take at most 116 bytes beside its name and object,
	 * its callstack entry 11: room for all of it, the callstack's scratch
	 * copy, then the packet */
	size_t bound = 4 * klen + 140 * nframes + 256;
	uint64_t *fids = malloc(nframes * sizeof *fids);
	if (!fids || !mt_grow((void **)&pf->buf, &pf->bufcap, 2 * bound, 1)) {
		free(fids);
		pf->oom = true;
		return;
	}
	uint8_t *id = pf->buf, *d = id;
	bool is_new;
	uint64_t cs_iid = iid_of(pf, &w->stacks, key, &is_new);
	if (is_new) {
		size_t n = 0;
		for (const char *s = key;; s++) {
			const char *e = strchr(s, MT_TL_FRAME_SEP);
			size_t len = e ? (size_t)(e - s) : strlen(s);
			fids[n++] = stack_frame(w, s, len, &d);
			if (!e)
				break;
			s = e;
		}
		/* Callstack { iid 1, frame_ids 2 (each its own field, unpacked) } */
		uint8_t *cs = d + bound / 2, *c = mt_pb_uint(cs, 1, cs_iid); /* d's room is ample */
		for (size_t i = 0; i < n; i++)
			c = mt_pb_uint(c, 2, fids[i]);
		size_t clen = (size_t)(c - cs);
		memmove(d + 1 + mt_pb_varint_len(clen), cs, clen);
		d = mt_pb_varint(mt_pb_tag(d, 7, MT_PB_LEN), clen) + clen;
	}
	free(fids);
	uint8_t ps[64], *e = mt_pb_uint(mt_pb_uint(mt_pb_uint(ps, 2, w->pid), 3, w->tid), 4, cs_iid);
	size_t plen = (size_t)(e - ps), dlen = (size_t)(d - id);
	uint64_t dt = time - w->last;
	w->last = time;
	uint8_t *pk = pf->buf + bound, *p = pk;
	size_t body = 1 + mt_pb_varint_len(dt) + 1 + mt_pb_varint_len(w->seq) +
		      (dlen ? 1 + mt_pb_varint_len(dlen) + dlen : 0) + 2 + 2 + mt_pb_varint_len(plen) + plen;
	p = mt_pb_varint(mt_pb_tag(p, 1, MT_PB_LEN), body); /* Trace.packet */
	p = mt_pb_uint(p, 8, dt);  /* timestamp, on the sequence's incremental clock */
	p = mt_pb_uint(p, 10, w->seq);
	if (dlen)
		p = mt_pb_bytes(p, 12, id, dlen);
	p = mt_pb_uint(p, 13, 2); /* SEQ_NEEDS_INCREMENTAL_STATE */
	p = mt_pb_bytes(p, 66, ps, plen);
	mt_tl_out(pf, pk, (size_t)(p - pk));
	pf->st.packets++;
}

const struct mt_tl_ops mt_tl_perfetto = {
	.name = "perfetto", .head = proto_head, .thread = proto_thread, .slice_begin = proto_slice_begin, .slice_end = proto_slice_end,
	.instant = proto_instant, .sample = proto_sample, .stack_sample = proto_stack_sample, .counter = proto_counter,
};
