/* rebuild: the stream through the call stacks into a writer (rebuild.h). */
#define _GNU_SOURCE
#include "timeline/rebuild.h"

#include <stdio.h>
#include <string.h>

#include "timeline/callstack.h"
#include "timeline/ocamleh.h"

struct ctx {
	const char *prog;
};

static void warn(void *vctx, const char *msg)
{
	const struct ctx *c = vctx;
	fprintf(stderr, "%s: %s\n", c->prog, msg);
}

/* From an mmap metadata line: the object's OCaml trap notes, if any. */
static void add_ocaml_traps(const char *prog, struct mt_cs *cs, struct mt_ocaml_traps *traps, const char *meta)
{
	struct mt_mmap_meta mm;
	if (!mt_events_parse_mmap(meta, &mm) || mm.path[0] != '/')
		return;
	struct mt_err err = {0};
	int n = mt_ocaml_traps_add_elf(traps, mm.path, mm.start, mm.pgoff, &err);
	if (n < 0)
		fprintf(stderr, "%s: warning: %s; OCaml exceptions there are followed by heuristics\n", prog, err.msg);
	if (n > 0) {
		mt_ocaml_traps_sort(traps);
		mt_cs_set_ocaml_traps(cs, traps->v, traps->n);
	}
}

int mt_rebuild(struct mt_events_reader *r, struct mt_pftrace *pf, const struct mt_rebuild_opts *opts,
	       struct mt_rebuild_result *res)
{
	memset(res, 0, sizeof *res);
	struct mt_err *err = &res->read_err;
	struct ctx wctx = {opts->prog};
	struct mt_cs_sink sink;
	mt_pftrace_sink(pf, &sink);
	struct mt_cs_opts co = {.annotate_inferred = opts->annotate_inferred, .warn = warn, .warn_ctx = &wctx,
				.starts_when_known = !opts->arrival_order, .counts = mt_pftrace_wants_counts(pf),
				.ptwrite_counter = opts->ptwrite_counter,
				.magic_trace_samples = opts->magic_trace_samples};
	struct mt_cs *cs = mt_cs_new(&sink, &co);
	if (!cs) {
		res->read_rc = mt_err_set(err, MT_ENOMEM, "out of memory");
		res->write_rc = mt_pftrace_finish(pf, &res->st, &res->write_err);
		return res->read_rc;
	}
	if (opts->filter_start)
		mt_cs_set_filter(cs, opts->filter_start, opts->filter_stop);
	int rc;
	struct mt_event ev;
	const char *meta;
	bool seen_time = false;
	uint64_t insn_clock = 0;
	struct mt_ocaml_traps traps = {0};
	while ((rc = mt_events_read(r, &ev, &meta, err)) > 0) {
		if (rc == MT_EVENTS_META) {
			mt_pftrace_meta(pf, meta);
			if (!strncmp(meta, "fact\tlost\t", 10))
				snprintf(res->lost, sizeof res->lost, "%s", meta + 10);
			if (r->upstream_error && !strncmp(meta, "error", 5))
				mt_pftrace_note_damage(pf, r->upstream_msg);
			if (opts->ocaml_notes)
				add_ocaml_traps(opts->prog, cs, &traps, meta);
			continue;
		}
		res->events++;
		if (ev.has_time) {
			if (!res->time_events++ || ev.time < res->first_time)
				res->first_time = ev.time;
			if (ev.time > res->last_time)
				res->last_time = ev.time;
		}
		seen_time |= ev.has_time;
		if (!seen_time) {
			insn_clock += ev.insn;
			ev.time = insn_clock;
			ev.has_time = true;
		}
		if (mt_cs_event(cs, &ev, err)) {
			rc = err->code;
			break;
		}
	}
	if (rc < 0) {
		res->read_rc = rc;
		mt_pftrace_note_damage(pf, err->msg);
	}
	mt_cs_finish(cs);
	mt_cs_late_counts(cs, &res->late, &res->late_max_ns);
	if (mt_cs_stack_event(cs))
		snprintf(res->stack_event, sizeof res->stack_event, "%s", mt_cs_stack_event(cs));
	if (opts->filter_start)
		mt_cs_filter_counts(cs, &res->filter_starts, &res->filter_regions);
	res->write_rc = mt_pftrace_finish(pf, &res->st, &res->write_err);
	mt_cs_free(cs);
	mt_ocaml_traps_free(&traps);
	return res->read_rc ? res->read_rc : res->write_rc;
}
