#define _GNU_SOURCE
#include "trace/perfimage.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "objects/elfsyms.h"
#include "objects/jitdump.h"
#include "objects/objfind.h"

void mt_warn_once(const struct mt_ptperf_opts *o, struct warned *wd, const char *key, const char *msg)
{
	size_t before = wd->keys.n;
	if (!mt_strtab_intern(&wd->keys, key) || wd->keys.n == before)
		return;
	if (o->warn)
		o->warn(o->warn_ctx, msg);
}

void mt_warned_free(struct warned *wd)
{
	mt_strtab_free(&wd->keys);
}

/* Kernel maps (pid -1): code from --vmlinux or the kcore copy. */
static void add_kernel_map(struct mt_image *img, const struct map *m, const struct mt_ptperf_opts *o,
			   struct warned *wd)
{
	char path[4096], msg[4400];
	struct mt_err e = {0};
	if (o->kcore_dir) {
		snprintf(path, sizeof path, "%s/kcore", o->kcore_dir);
		if (mt_image_add_kernel(img, path, m->start, m->len, &e)) {
			snprintf(msg, sizeof msg, "warning: kernel code %s: %s", m->path, e.msg);
			mt_warn_once(o, wd, m->path, msg);
			return;
		}
		return;
	}
	if (!o->vmlinux) {
		snprintf(msg, sizeof msg, "warning: %s: kernel code cannot be decoded without --vmlinux or --kcore",
			 m->path);
		mt_warn_once(o, wd, "kernel", msg);
		return;
	}
	if (mt_image_add_kernel(img, o->vmlinux, m->start, m->len, &e)) {
		snprintf(msg, sizeof msg, "warning: kernel code %s: %s", m->path, e.msg);
		mt_warn_once(o, wd, m->path, msg);
	}
}

/* A JIT's code, from the jitdump it mapped: each load's bytes, where the
 * dump holds them, at its address (moves applied). A later load over the
 * same addresses hides an earlier one, for the whole trace: the image has
 * no time (a JIT that reuses memory decodes by its latest code there). */
static void add_jit_code(struct mt_image *img, const char *path, const struct map *m,
			 const struct mt_ptperf_opts *o, struct warned *wd)
{
	struct mt_jitdump jd;
	struct mt_err e = {0};
	char msg[4400];
	if (mt_jitdump_read(&jd, path, &e)) {
		snprintf(msg, sizeof msg, "warning: %s: JIT code cannot be decoded", e.msg);
		mt_warn_once(o, wd, m->path, msg);
		return;
	}
	for (size_t i = 0; i < jd.ncode; i++) {
		const struct mt_jit_code *c = &jd.code[i];
		if (c->code_offset && c->start + c->size > c->start &&
		    mt_image_add_file(img, path, c->code_offset, c->size, c->start, &e)) {
			snprintf(msg, sizeof msg, "warning: %s: JIT code cannot be decoded", e.msg);
			mt_warn_once(o, wd, m->path, msg);
			break;
		}
	}
	if (jd.damaged_at) {
		snprintf(msg, sizeof msg, "warning: %s: a record at offset %llu is cut or lies about its size: the code "
			 "loaded after it cannot be decoded", m->path, (unsigned long long)jd.damaged_at);
		mt_warn_once(o, wd, m->path, msg);
	}
	mt_jitdump_free(&jd);
}

static void build_image(struct mt_image *img, const struct mt_perfdata *pd, const struct side *s, uint32_t pid,
			const struct mt_ptperf_opts *o, struct warned *wd, bool with_kernel)
{
	bool kernel = false;
	for (size_t i = 0; i < s->maps.n; i++) {
		const struct map *m = &s->maps.v[i];
		if (m->pid == (uint32_t)-1 && (m->path[0] == '[' || o->kcore_dir)) {
			if (with_kernel) {
				add_kernel_map(img, m, o, wd);
				kernel = true;
			}
			continue;
		}
		if (m->pid != pid || m->path[0] != '/')
			continue; /* [vdso] and anon maps have no file to read here */
		const uint8_t *bid;
		unsigned bidsz;
		mt_side_buildid(pd, m, &bid, &bidsz);
		char path[4096], msg[4400];
		if (mt_obj_find(m->path, bid, bidsz, o->symfs, o->buildid_dir, path, sizeof path)) {
			snprintf(msg, sizeof msg, "warning: %s not found%s%s: code there cannot be decoded",
				 m->path, o->symfs ? " under --symfs " : "", o->symfs ? o->symfs : "");
			mt_warn_once(o, wd, m->path, msg);
			continue;
		}
		struct mt_err e = {0};
		if (mt_image_add_mapping(img, path, m->start, m->len, m->pgoff, &e)) {
			snprintf(msg, sizeof msg, "warning: %s", e.msg);
			mt_warn_once(o, wd, m->path, msg);
		}
		if (mt_jitdump_named(m->path))
			add_jit_code(img, path, m, o, wd);
	}
	if (kernel && o->kcore_dir) {
		/* function boundaries of every kernel map: one kallsyms, read once */
		char path[4096], msg[4400];
		struct mt_err e = {0};
		snprintf(path, sizeof path, "%s/kallsyms", o->kcore_dir);
		if (mt_image_add_kallsyms(img, path, &e)) {
			snprintf(msg, sizeof msg, "warning: %s: kernel jumps between functions are not told apart", e.msg);
			mt_warn_once(o, wd, path, msg);
		}
	}
}

void mt_build_image(struct mt_image *img, const struct mt_perfdata *pd, const struct side *s, uint32_t pid,
		    const struct mt_ptperf_opts *o, struct warned *wd)
{
	build_image(img, pd, s, pid, o, wd, true);
}

void mt_build_user_image(struct mt_image *img, const struct mt_perfdata *pd, const struct side *s, uint32_t pid,
			 const struct mt_ptperf_opts *o, struct warned *wd)
{
	build_image(img, pd, s, pid, o, wd, false);
}

/* The vDSO of a map: perf's cached copy, else this kernel's own (a trace
 * unwound where it was recorded) when the build-ids agree. */
static int add_vdso(struct mt_unwind *u, const struct map *m, const uint8_t *bid, unsigned bidsz,
		    const struct mt_ptperf_opts *o)
{
	char hex[41], path[4096];
	if (bidsz && bidsz <= 20) {
		mt_hex(bid, bidsz, hex);
		if (mt_obj_vdso_cached(o->buildid_dir, hex, path, sizeof path))
			return mt_unwind_add_map(u, m->pid, m->start, m->len, m->pgoff, path);
	}
	const void *base;
	size_t size = mt_own_vdso(&base);
	uint8_t own[20];
	int n = size ? mt_elf_mem_build_id(base, size, own) : -1;
	if (n < 0 || (bidsz && ((unsigned)n != bidsz || memcmp(own, bid, bidsz))))
		return 1;
	return mt_unwind_add_image(u, m->pid, m->start, m->len, base, size) ? -1 : 0;
}

struct mt_unwind *mt_build_unwind(const struct mt_perfdata *pd, const struct side *s,
				  const struct mt_ptperf_opts *o, struct warned *wd, const char **why)
{
	struct mt_unwind *u = mt_unwind_new(o->symfs, why);
	for (size_t i = 0; u && i < s->maps.n; i++) {
		const struct map *m = &s->maps.v[i];
		if (m->pid == (uint32_t)-1)
			continue; /* the kernel's frames come in the callchain */
		const uint8_t *bid;
		unsigned bidsz;
		mt_side_buildid(pd, m, &bid, &bidsz);
		char path[4096], msg[4400];
		int rc = 1;
		if (!strcmp(m->path, "[vdso]"))
			rc = add_vdso(u, m, bid, bidsz, o);
		else if (m->path[0] != '/')
			continue; /* anonymous, [stack], JIT: no CFI to read */
		else if (!mt_obj_find(m->path, bid, bidsz, o->symfs, o->buildid_dir, path, sizeof path))
			rc = mt_unwind_add_map(u, m->pid, m->start, m->len, m->pgoff, path);
		if (rc < 0) {
			mt_unwind_free(u);
			*why = "out of memory";
			return NULL;
		}
		if (rc > 0) {
			snprintf(msg, sizeof msg, "warning: %s not found%s%s: stacks through it cannot be unwound",
				 m->path, o->symfs ? " under --symfs " : "", o->symfs ? o->symfs : "");
			mt_warn_once(o, wd, m->path, msg);
		}
	}
	return u;
}
