#define _POSIX_C_SOURCE 200809L
/* pfcheck: a streaming validator for the Perfetto files mt-toperfetto writes
 * (shared/docs/perfetto-output.md 6.2). Reads packet by packet and checks:
 * top-level framing; a sequence id on every TrackEvent; NEEDS_INCREMENTAL_STATE
 * never before CLEARED on a sequence; every name_iid defined earlier on its
 * sequence; timestamps never decreasing per sequence (incremental clock
 * resolved); every track used has a descriptor, with pid (and tid); BEGIN/END
 * balance and depth < 512 per track; stack samples (PerfSample): their
 * callstack, its frames, their function names and mappings interned on the
 * sequence before use, iids dense from 1.
 *
 * Usage: pfcheck FILE [--slices|--samples]  (--slices prints "tid depth
 * name" per BEGIN, for tests that check nesting; --samples "tid
 * name;name;..." per stack sample, outermost first). Exit 0 valid, 1 invalid (first problem on
 * stderr), 2 usage. Prints a summary line on success. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perfetto_trace.pb-c.h"

#define MAX_SEQ 4096
#define MAX_TRACKS 65536
#define MAX_IIDS (1 << 20)

struct seq {
	uint32_t id;
	bool cleared;
	uint64_t clock64, last_ts;
	bool have_clock64;
	uint64_t default_track;
	uint32_t default_clock;
	char **names; /* iid -> name */
	size_t nnames;
	/* stack samples' interning: function names, mapping paths and mappings
	 * by iid, frames (-> function name iid), callstacks (-> frame iids) */
	char **fnames;
	size_t nfnames, npaths, nmappings;
	uint64_t *frame_fn;
	size_t nframes;
	struct { uint64_t *f; size_t n; } *stacks;
	size_t nstacks;
};

static void clear_samples(struct seq *s)
{
	for (size_t i = 0; i < s->nfnames; i++)
		free(s->fnames[i]);
	for (size_t i = 0; i < s->nstacks; i++)
		free(s->stacks[i].f);
	s->nfnames = s->npaths = s->nmappings = s->nframes = s->nstacks = 0;
}

/* The stack-sample entries of an InternedData, checked and kept; NULL or
 * what is wrong. */
static const char *intern_samples(struct seq *s, const Perfetto__Protos__InternedData *d)
{
	for (size_t i = 0; i < d->n_function_names; i++) {
		if (d->function_names[i]->iid != s->nfnames + 1 || s->nfnames == MAX_IIDS)
			return "function name iids not dense from 1";
		s->fnames = realloc(s->fnames, (s->nfnames + 1) * sizeof *s->fnames);
		const ProtobufCBinaryData *b = &d->function_names[i]->str;
		s->fnames[s->nfnames++] = strndup((const char *)b->data, b->len);
	}
	for (size_t i = 0; i < d->n_mapping_paths; i++)
		if (d->mapping_paths[i]->iid != ++s->npaths)
			return "mapping path iids not dense from 1";
	for (size_t i = 0; i < d->n_mappings; i++) {
		const Perfetto__Protos__Mapping *m = d->mappings[i];
		if (m->iid != ++s->nmappings)
			return "mapping iids not dense from 1";
		for (size_t k = 0; k < m->n_path_string_ids; k++)
			if (!m->path_string_ids[k] || m->path_string_ids[k] > s->npaths)
				return "a mapping's path not defined on this sequence";
	}
	for (size_t i = 0; i < d->n_frames; i++) {
		const Perfetto__Protos__Frame *f = d->frames[i];
		if (f->iid != s->nframes + 1 || s->nframes == MAX_IIDS)
			return "frame iids not dense from 1";
		if (!f->function_name_id || f->function_name_id > s->nfnames)
			return "a frame's function name not defined on this sequence";
		if (f->mapping_id > s->nmappings)
			return "a frame's mapping not defined on this sequence";
		s->frame_fn = realloc(s->frame_fn, (s->nframes + 1) * sizeof *s->frame_fn);
		s->frame_fn[s->nframes++] = f->function_name_id;
	}
	for (size_t i = 0; i < d->n_callstacks; i++) {
		const Perfetto__Protos__Callstack *c = d->callstacks[i];
		if (c->iid != s->nstacks + 1 || s->nstacks == MAX_IIDS)
			return "callstack iids not dense from 1";
		if (!c->n_frame_ids)
			return "a callstack without frames";
		for (size_t k = 0; k < c->n_frame_ids; k++)
			if (!c->frame_ids[k] || c->frame_ids[k] > s->nframes)
				return "a callstack's frame not defined on this sequence";
		s->stacks = realloc(s->stacks, (s->nstacks + 1) * sizeof *s->stacks);
		s->stacks[s->nstacks].f = malloc(c->n_frame_ids * sizeof *c->frame_ids);
		memcpy(s->stacks[s->nstacks].f, c->frame_ids, c->n_frame_ids * sizeof *c->frame_ids);
		s->stacks[s->nstacks++].n = c->n_frame_ids;
	}
	return NULL;
}

struct track {
	uint64_t uuid;
	int64_t tid;
	int depth, max_depth;
	bool thread;
	bool counter;    /* a counter track */
	uint64_t events; /* track events on it */
};

static struct seq seqs[MAX_SEQ];
static size_t nseqs;
static struct track tracks[MAX_TRACKS];
static size_t ntracks;

static int fail(uint64_t pkt, const char *what)
{
	fflush(stdout);
	fprintf(stderr, "pfcheck: packet %" PRIu64 ": %s\n", pkt, what);
	return 1;
}

static struct seq *seq_of(uint32_t id)
{
	for (size_t i = 0; i < nseqs; i++)
		if (seqs[i].id == id)
			return &seqs[i];
	if (nseqs == MAX_SEQ)
		return NULL;
	seqs[nseqs].id = id;
	return &seqs[nseqs++];
}

static struct track *track_of(uint64_t uuid)
{
	for (size_t i = 0; i < ntracks; i++)
		if (tracks[i].uuid == uuid)
			return &tracks[i];
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: pfcheck FILE [--slices]\n");
		return 2;
	}
	bool print_slices = argc > 2 && !strcmp(argv[2], "--slices");
	bool print_samples = argc > 2 && !strcmp(argv[2], "--samples");
	uint64_t perf_samples = 0;
	FILE *f = fopen(argv[1], "rb");
	if (!f) {
		perror(argv[1]);
		return 2;
	}
	uint8_t *buf = NULL;
	size_t cap = 0;
	uint64_t pkt = 0, begins = 0, ends = 0, instants = 0, counters = 0;
	int c;
	while ((c = fgetc(f)) != EOF) {
		pkt++;
		if (c != 0x0a)
			return fail(pkt, "top-level tag is not Trace.packet (0x0a)");
		uint64_t len = 0;
		int shift = 0, b;
		do {
			b = fgetc(f);
			if (b == EOF)
				return fail(pkt, "truncated length");
			len |= (uint64_t)(b & 0x7f) << shift;
			shift += 7;
		} while ((b & 0x80) && shift < 64);
		if (len > (64u << 20))
			return fail(pkt, "packet longer than 64 MiB");
		if (len > cap) {
			cap = len;
			buf = realloc(buf, cap);
		}
		if (fread(buf, 1, len, f) != len)
			return fail(pkt, "truncated packet");
		Perfetto__Protos__TracePacket *p = perfetto__protos__trace_packet__unpack(NULL, len, buf);
		if (!p)
			return fail(pkt, "not a TracePacket");
		if (p->track_descriptor) {
			const Perfetto__Protos__TrackDescriptor *td = p->track_descriptor;
			if (!td->has_uuid)
				return fail(pkt, "track descriptor without uuid");
			if (td->process && !td->process->has_pid)
				return fail(pkt, "process descriptor without pid");
			if (td->thread && (!td->thread->has_pid || !td->thread->has_tid))
				return fail(pkt, "thread descriptor without pid or tid");
			if (track_of(td->uuid))
				return fail(pkt, "two descriptors for one uuid");
			if (ntracks == MAX_TRACKS)
				return fail(pkt, "too many tracks");
			tracks[ntracks++] = (struct track){.uuid = td->uuid, .thread = td->thread != NULL,
							   .tid = td->thread ? td->thread->tid : -1,
							   .counter = td->counter != NULL};
		}
		if (p->track_event || p->perf_sample || p->sequence_flags || p->trace_packet_defaults) {
			if (!p->has_trusted_packet_sequence_id || !p->trusted_packet_sequence_id)
				return fail(pkt, "no trusted_packet_sequence_id");
			struct seq *s = seq_of(p->trusted_packet_sequence_id);
			if (!s)
				return fail(pkt, "too many sequences");
			if (p->sequence_flags & 1) {
				s->cleared = true;
				for (size_t i = 0; i < s->nnames; i++)
					free(s->names[i]);
				s->nnames = 0;
				clear_samples(s);
				s->have_clock64 = false;
				s->default_track = 0;
				s->default_clock = 0;
			}
			if ((p->sequence_flags & 2) && !s->cleared)
				return fail(pkt, "NEEDS_INCREMENTAL_STATE before CLEARED on the sequence");
			if (p->trace_packet_defaults && p->trace_packet_defaults->track_event_defaults)
				s->default_track = p->trace_packet_defaults->track_event_defaults->track_uuid;
			if (p->trace_packet_defaults && p->trace_packet_defaults->has_timestamp_clock_id)
				s->default_clock = p->trace_packet_defaults->timestamp_clock_id;
			const char *bad = p->interned_data ? intern_samples(s, p->interned_data) : NULL;
			if (bad)
				return fail(pkt, bad);
			if (p->interned_data)
				for (size_t i = 0; i < p->interned_data->n_event_names; i++) {
					const Perfetto__Protos__EventName *en = p->interned_data->event_names[i];
					if (en->iid != s->nnames + 1)
						return fail(pkt, "event name iids not dense from 1");
					if (s->nnames == MAX_IIDS)
						return fail(pkt, "too many names");
					s->names = realloc(s->names, (s->nnames + 1) * sizeof *s->names);
					s->names[s->nnames++] = strdup(en->name ? en->name : "");
				}
			uint64_t ts = 0;
			if (p->clock_snapshot) {
				for (size_t i = 0; i < p->clock_snapshot->n_clocks; i++)
					if (p->clock_snapshot->clocks[i]->clock_id == 64) {
						s->clock64 = p->clock_snapshot->clocks[i]->timestamp;
						s->have_clock64 = true;
					}
			}
			uint32_t clock = p->has_timestamp_clock_id ? p->timestamp_clock_id
					 : s->default_clock ? s->default_clock : 6;
			bool on64 = clock == 64;
			if (p->track_event || p->perf_sample) {
				if (!p->has_timestamp)
					return fail(pkt, "track event without timestamp");
				if (on64) {
					if (!s->have_clock64)
						return fail(pkt, "incremental clock 64 used without a snapshot");
					s->clock64 += p->timestamp;
					ts = s->clock64;
				} else {
					ts = p->timestamp;
				}
				if (ts < s->last_ts)
					return fail(pkt, "timestamp goes backwards on the sequence");
				s->last_ts = ts;
			}
			if (p->perf_sample) {
				const Perfetto__Protos__PerfSample *ps = p->perf_sample;
				if (!(p->sequence_flags & 2))
					return fail(pkt, "a stack sample without NEEDS_INCREMENTAL_STATE");
				if (!ps->has_pid || !ps->has_tid)
					return fail(pkt, "a stack sample without pid or tid");
				if (!ps->callstack_iid || ps->callstack_iid > s->nstacks)
					return fail(pkt, "a stack sample's callstack not defined on this sequence");
				perf_samples++;
				if (print_samples) {
					printf("%" PRIu32 "\t", ps->tid);
					const __typeof__(s->stacks[0]) *cs = &s->stacks[ps->callstack_iid - 1];
					for (size_t k = 0; k < cs->n; k++)
						printf("%s%s", k ? ";" : "", s->fnames[s->frame_fn[cs->f[k] - 1] - 1]);
					printf("\n");
				}
			}
			if (p->track_event) {
				const Perfetto__Protos__TrackEvent *te = p->track_event;
				uint64_t uuid = te->has_track_uuid ? te->track_uuid : s->default_track;
				struct track *t = track_of(uuid);
				if (t)
					t->events++;
				if (!t)
					return fail(pkt, "event on a track without a descriptor");
				if (te->has_name_iid && (te->name_iid == 0 || te->name_iid > s->nnames))
					return fail(pkt, "name_iid not defined on this sequence");
				switch (te->type) {
				case PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN:
					if (++t->depth >= 512)
						return fail(pkt, "slice depth reaches 512");
					if (t->depth > t->max_depth)
						t->max_depth = t->depth;
					if (print_slices)
						printf("%" PRId64 "\t%d\t%s\n", t->tid, t->depth,
						       te->has_name_iid ? s->names[te->name_iid - 1] : te->name ? te->name : "");
					begins++;
					break;
				case PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_END:
					if (t->depth-- <= 0)
						return fail(pkt, "END without an open slice");
					ends++;
					break;
				case PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_INSTANT:
					instants++;
					break;
				case PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_COUNTER:
					counters++;
					break;
				default:
					return fail(pkt, "track event without a type");
				}
			}
		}
		perfetto__protos__trace_packet__free_unpacked(p, NULL);
	}
	for (size_t i = 0; i < ntracks; i++)
		if (tracks[i].depth)
			return fail(pkt, "slices left open at the end of the trace");
	int maxd = 0;
	size_t ncounter = 0, nempty = 0;
	for (size_t i = 0; i < ntracks; i++) {
		if (tracks[i].max_depth > maxd)
			maxd = tracks[i].max_depth;
		ncounter += tracks[i].counter;
		nempty += tracks[i].counter && !tracks[i].events;
	}
	fflush(stdout); /* the slice list first: the summary never lands inside it */
	fprintf(stderr, "pfcheck: ok packets=%" PRIu64 " begins=%" PRIu64 " ends=%" PRIu64 " instants=%" PRIu64
		" counters=%" PRIu64 " tracks=%zu sequences=%zu max_depth=%d counter_tracks=%zu empty_counter_tracks=%zu"
		" perf_samples=%" PRIu64 "\n",
		pkt, begins, ends, instants, counters, ntracks, nseqs, maxd, ncounter, nempty, perf_samples);
	free(buf);
	fclose(f);
	return 0;
}
