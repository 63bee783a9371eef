/* runfile: a recorded run saved and read back (see runfile.h). */
#define _GNU_SOURCE
#include "synth/runfile.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define MAGIC "MTSYNRUN"
#define TRAILER "END."

struct writer {
	FILE *f;
	bool failed;
};

static void put(struct writer *w, const void *p, size_t n)
{
	if (n && !w->failed && fwrite(p, 1, n, w->f) != n)
		w->failed = true;
}

static void put_u64(struct writer *w, uint64_t v) { put(w, &v, sizeof v); }
static void put_u32(struct writer *w, uint32_t v) { put(w, &v, sizeof v); }
static void put_u8(struct writer *w, uint8_t v) { put(w, &v, sizeof v); }

int mt_synth_run_save(const struct mt_synth_run *run, FILE *f, struct mt_err *err)
{
	struct writer w = {.f = f};
	put(&w, MAGIC, 8);
	put_u32(&w, MT_SYNTH_RUNFILE_VERSION);
	put_u32(&w, run->pid);
	put(&w, run->comm, sizeof run->comm);
	put_u32(&w, (uint32_t)run->nthreads);
	for (size_t i = 0; i < run->nthreads; i++)
		put_u32(&w, run->threads[i]);
	put_u64(&w, run->nmaps);
	for (size_t i = 0; i < run->nmaps; i++) {
		const struct mt_synth_map *m = &run->maps[i];
		put_u64(&w, m->start);
		put_u64(&w, m->len);
		put_u64(&w, m->pgoff);
		put_u64(&w, m->ino);
		put_u32(&w, m->maj);
		put_u32(&w, m->min);
		put_u32(&w, m->prot);
		size_t plen = strnlen(m->path, sizeof m->path - 1);
		put_u32(&w, (uint32_t)plen);
		put(&w, m->path, plen);
		put_u8(&w, m->build_id_size);
		put(&w, m->build_id, sizeof m->build_id);
		put(&w, m->bytes, m->len);
	}
	put_u64(&w, run->nips);
	put(&w, run->ips, run->nips * sizeof *run->ips);
	put(&w, run->tids, run->nips * sizeof *run->tids);
	put_u64(&w, run->tabn);
	for (size_t i = 0; i < run->tabcap; i++) {
		const struct mt_synth_insn *s = &run->tab[i];
		if (!s->ip)
			continue;
		put_u64(&w, s->ip);
		put_u64(&w, s->target);
		put_u8(&w, s->len);
		put_u8(&w, s->cls);
		put_u8(&w, s->rep);
	}
	put_u64(&w, run->end_next);
	put_u64(&w, run->nptw);
	for (size_t i = 0; i < run->nptw; i++) {
		put_u64(&w, run->ptw[i].step);
		put_u64(&w, run->ptw[i].payload);
		put_u8(&w, run->ptw[i].bytes);
	}
	put_u64(&w, run->ptw_base);
	put_u64(&w, run->repaired);
	put_u64(&w, run->collapsed);
	put_u32(&w, (uint32_t)run->exit_status);
	put(&w, TRAILER, 4);
	if (w.failed)
		return mt_err_set(err, MT_EIO, "writing the run: %s", strerror(errno));
	return 0;
}

struct reader {
	FILE *f;
	uint64_t left; /* bytes of the file not read yet */
	int rc;
	struct mt_err *err;
};

/* n bytes into p; a short file is MT_ETRUNC, said once. */
static bool get(struct reader *r, void *p, uint64_t n, const char *what)
{
	if (r->rc)
		return false;
	if (n > r->left) {
		r->rc = mt_err_set(r->err, MT_ETRUNC, "cut short in %s (%" PRIu64 " bytes needed, %" PRIu64 " left)",
				   what, n, r->left);
		return false;
	}
	if (n && fread(p, 1, n, r->f) != n) {
		r->rc = mt_err_set(r->err, MT_EIO, "reading %s: %s", what,
				   ferror(r->f) ? strerror(errno) : "the file ended early");
		return false;
	}
	r->left -= n;
	return true;
}

static uint64_t get_u64(struct reader *r, const char *what)
{
	uint64_t v = 0;
	get(r, &v, sizeof v, what);
	return v;
}

static uint32_t get_u32(struct reader *r, const char *what)
{
	uint32_t v = 0;
	get(r, &v, sizeof v, what);
	return v;
}

static uint8_t get_u8(struct reader *r, const char *what)
{
	uint8_t v = 0;
	get(r, &v, sizeof v, what);
	return v;
}

/* A count of items of at least `each` bytes, held against what is left
 * (a count that lies cannot make the reader allocate past the file). */
static uint64_t get_count(struct reader *r, uint64_t each, const char *what)
{
	uint64_t n = get_u64(r, what);
	if (!r->rc && n > r->left / each)
		r->rc = mt_err_set(r->err, MT_EFORMAT, "%s: %" PRIu64 " is more than the file holds", what, n);
	return r->rc ? 0 : n;
}

static int bad(struct reader *r, const char *fmt, uint64_t a, uint64_t b)
{
	return r->rc = mt_err_set(r->err, MT_EFORMAT, fmt, a, b);
}

/* What recording guarantees, held for a run read back: the writer relies
 * on it. */
static int check_run(struct reader *r, const struct mt_synth_run *run)
{
	for (size_t i = 0; i < run->tabcap; i++) {
		const struct mt_synth_insn *s = &run->tab[i];
		if (!s->ip)
			continue;
		const struct mt_synth_map *m = mt_synth_map_of(run, s->ip);
		if (!m || s->len == 0 || s->len > 15 || s->ip - m->start + s->len > m->len)
			return bad(r, "instruction at 0x%" PRIx64 " (length %" PRIu64 ") outside the executable mappings",
				   s->ip, s->len);
		if (s->cls > MT_IC_PTWRITE || s->cls == MT_IC_UNSUPPORTED)
			return bad(r, "instruction at 0x%" PRIx64 ": class %" PRIu64 " cannot be synthesized", s->ip,
				   s->cls);
	}
	size_t prev_of[MT_SYNTH_MAX_THREADS];
	bool has_prev[MT_SYNTH_MAX_THREADS] = {0};
	for (size_t i = 0; i < run->nips; i++) {
		size_t th = 0;
		while (th < run->nthreads && run->threads[th] != run->tids[i])
			th++;
		if (th == run->nthreads)
			return bad(r, "step %" PRIu64 ": thread %" PRIu64 " is not one of the run's", i, run->tids[i]);
		if (!mt_synth_insn_at(run, run->ips[i]))
			return bad(r, "step %" PRIu64 ": no instruction at 0x%" PRIx64, i, run->ips[i]);
		if (has_prev[th] && !mt_synth_follows(mt_synth_insn_at(run, run->ips[prev_of[th]]), run->ips[i]))
			return bad(r, "step %" PRIu64 ": 0x%" PRIx64 " cannot follow its thread's step before", i,
				   run->ips[i]);
		prev_of[th] = i;
		has_prev[th] = true;
	}
	for (size_t i = 0; i < run->nptw; i++) {
		const struct mt_synth_ptw *p = &run->ptw[i];
		if (p->step >= run->nips || (i && p->step <= run->ptw[i - 1].step) || (p->bytes != 4 && p->bytes != 8))
			return bad(r, "PTWRITE %" PRIu64 ": step %" PRIu64 " out of order, past the steps or of a bad size",
				   i, p->step);
		if (mt_synth_insn_at(run, run->ips[p->step])->cls != MT_IC_PTWRITE)
			return bad(r, "PTWRITE %" PRIu64 ": step %" PRIu64 " is not a PTWRITE", i, p->step);
	}
	return 0;
}

int mt_synth_run_load(FILE *f, uint64_t size, struct mt_synth_run *run, struct mt_err *err)
{
	memset(run, 0, sizeof *run);
	struct reader r = {.f = f, .left = size, .err = err};
	char magic[8];
	if (get(&r, magic, sizeof magic, "the magic") && memcmp(magic, MAGIC, sizeof magic))
		return mt_err_set(err, MT_EFORMAT, "not a run saved by mt-synth --save-run (no " MAGIC ")");
	uint32_t version = get_u32(&r, "the version");
	if (!r.rc && version != MT_SYNTH_RUNFILE_VERSION)
		return mt_err_set(err, MT_EFORMAT, "version %" PRIu32 " (this mt-synth reads %d)", version,
				  MT_SYNTH_RUNFILE_VERSION);
	run->pid = get_u32(&r, "the pid");
	get(&r, run->comm, sizeof run->comm, "the comm");
	run->comm[sizeof run->comm - 1] = '\0';
	uint32_t nthreads = get_u32(&r, "the thread count");
	if (!r.rc && (nthreads == 0 || nthreads > MT_SYNTH_MAX_THREADS))
		bad(&r, "%" PRIu64 " threads (1 to %" PRIu64 ")", nthreads, MT_SYNTH_MAX_THREADS);
	for (uint32_t i = 0; i < nthreads && !r.rc; i++)
		run->threads[i] = get_u32(&r, "the threads");
	if (!r.rc)
		run->nthreads = nthreads;
	if (!r.rc && run->threads[0] != run->pid)
		bad(&r, "the first thread %" PRIu64 " is not the pid %" PRIu64, run->threads[0], run->pid);
	/* a mapping: 69 bytes, then its path and memory */
	uint64_t nmaps = get_count(&r, 69, "the mapping count");
	if (nmaps && !(run->maps = calloc(nmaps, sizeof *run->maps)))
		r.rc = mt_err_set(err, MT_ENOMEM, "out of memory");
	for (uint64_t i = 0; i < nmaps && !r.rc; i++) {
		struct mt_synth_map *m = &run->maps[i];
		m->start = get_u64(&r, "a mapping");
		m->len = get_u64(&r, "a mapping");
		m->pgoff = get_u64(&r, "a mapping");
		m->ino = get_u64(&r, "a mapping");
		m->maj = get_u32(&r, "a mapping");
		m->min = get_u32(&r, "a mapping");
		m->prot = get_u32(&r, "a mapping");
		uint32_t plen = get_u32(&r, "a mapping's path");
		if (!r.rc && plen >= sizeof m->path)
			bad(&r, "mapping %" PRIu64 ": a path of %" PRIu64 " bytes", i, plen);
		get(&r, m->path, plen, "a mapping's path");
		m->build_id_size = get_u8(&r, "a mapping's build-id");
		get(&r, m->build_id, sizeof m->build_id, "a mapping's build-id");
		if (!r.rc && m->build_id_size > sizeof m->build_id)
			bad(&r, "mapping %" PRIu64 ": a build-id of %" PRIu64 " bytes", i, m->build_id_size);
		if (!r.rc && (m->len == 0 || m->len > r.left || m->start + m->len < m->start))
			bad(&r, "mapping %" PRIu64 ": %" PRIu64 " bytes of memory, past the file or the address space", i,
			    m->len);
		if (!r.rc && !(m->bytes = malloc(m->len)))
			r.rc = mt_err_set(err, MT_ENOMEM, "out of memory");
		get(&r, m->bytes, m->len, "a mapping's memory");
		if (!r.rc)
			run->nmaps++;
	}
	uint64_t nips = get_count(&r, sizeof *run->ips + sizeof *run->tids, "the step count");
	if (nips && !r.rc &&
	    (!(run->ips = malloc(nips * sizeof *run->ips)) || !(run->tids = malloc(nips * sizeof *run->tids))))
		r.rc = mt_err_set(err, MT_ENOMEM, "out of memory");
	get(&r, run->ips, nips * sizeof *run->ips, "the steps");
	get(&r, run->tids, nips * sizeof *run->tids, "the steps' threads");
	if (!r.rc)
		run->nips = nips;
	uint64_t ninsns = get_count(&r, 19, "the instruction count");
	for (uint64_t i = 0; i < ninsns && !r.rc; i++) {
		struct mt_synth_insn s = {0};
		s.ip = get_u64(&r, "an instruction");
		s.target = get_u64(&r, "an instruction");
		s.len = get_u8(&r, "an instruction");
		s.cls = get_u8(&r, "an instruction");
		s.rep = get_u8(&r, "an instruction") != 0;
		int rc = r.rc ? 0 : mt_synth_insn_add(run, &s);
		if (rc == MT_ENOMEM)
			r.rc = mt_err_set(err, MT_ENOMEM, "out of memory");
		else if (rc)
			bad(&r, "instruction %" PRIu64 ": 0x%" PRIx64 " is 0 or given twice", i, s.ip);
	}
	run->end_next = get_u64(&r, "the end");
	uint64_t nptw = get_count(&r, 17, "the PTWRITE count");
	if (nptw && !r.rc && !(run->ptw = calloc(nptw, sizeof *run->ptw)))
		r.rc = mt_err_set(err, MT_ENOMEM, "out of memory");
	for (uint64_t i = 0; i < nptw && !r.rc; i++) {
		run->ptw[i].step = get_u64(&r, "a PTWRITE");
		run->ptw[i].payload = get_u64(&r, "a PTWRITE");
		run->ptw[i].bytes = get_u8(&r, "a PTWRITE");
		if (!r.rc)
			run->nptw++;
	}
	run->ptw_base = get_u64(&r, "the counts");
	run->repaired = get_u64(&r, "the counts");
	run->collapsed = get_u64(&r, "the counts");
	run->exit_status = (int)get_u32(&r, "the exit status");
	char trailer[4];
	if (get(&r, trailer, sizeof trailer, "the end mark") && memcmp(trailer, TRAILER, sizeof trailer))
		r.rc = mt_err_set(err, MT_EFORMAT, "no end mark where the run ends");
	if (!r.rc && r.left)
		r.rc = mt_err_set(err, MT_EFORMAT, "%" PRIu64 " bytes after the end mark", r.left);
	if (!r.rc && !run->nips)
		r.rc = mt_err_set(err, MT_EFORMAT, "no steps");
	if (!r.rc)
		check_run(&r, run);
	if (r.rc)
		mt_synth_run_free(run);
	return r.rc;
}
