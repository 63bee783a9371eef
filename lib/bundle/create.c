/* create: writing a bundle: the perf.data, every object its trace maps
 * (by build-id where perf's cache has it), their debug files, perf maps,
 * kcore, and a manifest. */
#define _GNU_SOURCE
#include "bundle/bundle.h"
#include "bundle/archive_lib.h"
#include "base/infile.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "objects/elfsyms.h"
#include "base/outfile.h"
#include "trace/perfdata.h"
#include "base/strtab.h"
#include "objects/jitdump.h"
#include "names/symbolize.h"
#include "base/version.h"
#include "bundle/entryname.h"
#include "bundle/internal.h"
#include "bundle/nameset.h"

/* ---- writing ---- */

struct object {
	char *path;                 /* as the trace maps it */
	uint8_t bid[20];
	unsigned bidsz;
	char *src;                  /* the file to archive, or NULL: missing */
	char *name;                 /* its name in the archive */
	char *debug_src, *debug_name;
};

struct plan {
	struct object *objs;
	size_t nobjs, capobjs;
	uint32_t *pids;
	size_t npids, cappids;
	bool kernel, vdso_mapped;
	uint8_t vdso_bid[20];
	unsigned vdso_bidsz;
};

static int plan_add_pid(struct plan *p, uint32_t pid)
{
	for (size_t i = p->npids; i-- > 0;)
		if (p->pids[i] == pid)
			return 0;
	if (!mt_grow((void **)&p->pids, &p->cappids, p->npids + 1, sizeof *p->pids))
		return MT_ENOMEM;
	p->pids[p->npids++] = pid;
	return 0;
}

static int plan_add_object(struct plan *p, const char *path, const uint8_t *bid, unsigned bidsz)
{
	for (size_t i = 0; i < p->nobjs; i++) {
		struct object *o = &p->objs[i];
		if (strcmp(o->path, path))
			continue;
		if (!bidsz || !o->bidsz || (o->bidsz == bidsz && !memcmp(o->bid, bid, bidsz))) {
			if (!o->bidsz && bidsz) {
				memcpy(o->bid, bid, bidsz);
				o->bidsz = bidsz;
			}
			return 0;
		}
	}
	if (!mt_grow((void **)&p->objs, &p->capobjs, p->nobjs + 1, sizeof *p->objs))
		return MT_ENOMEM;
	struct object *o = &p->objs[p->nobjs];
	memset(o, 0, sizeof *o);
	if (!(o->path = strdup(path)))
		return MT_ENOMEM;
	memcpy(o->bid, bid, bidsz);
	o->bidsz = bidsz;
	p->nobjs++;
	return 0;
}

static void plan_free(struct plan *p)
{
	for (size_t i = 0; i < p->nobjs; i++) {
		free(p->objs[i].path);
		free(p->objs[i].src);
		free(p->objs[i].name);
		free(p->objs[i].debug_src);
		free(p->objs[i].debug_name);
	}
	free(p->objs);
	free(p->pids);
}

/* Code lives in files: not anonymous memory, a memfd or a JIT's pages. */
static bool is_object_path(const char *path)
{
	return path[0] == '/' && strncmp(path, "/memfd:", 7) && strncmp(path, "/dev/zero", 9) &&
	       strncmp(path, "/SYSV", 5) && strncmp(path, "//anon", 6) && !strstr(path, " (deleted)");
}

/* Every object the trace maps with code, with its build-id where known. */
static int plan_from_trace(struct mt_perfdata *pd, struct plan *p, struct mt_err *err)
{
	struct mt_perf_record r;
	int rc;
	while ((rc = mt_perfdata_next(pd, &r, err)) > 0) {
		if (r.type == MT_REC_COMM && r.body_size >= 8 && plan_add_pid(p, mt_rd32(r.body)))
			return mt_err_set(err, MT_ENOMEM, "out of memory");
		struct mt_perf_mmap m;
		if (!mt_perf_parse_mmap(&r, &m) || !m.exec)
			continue;
		if (m.pid == (uint32_t)-1)
			continue; /* the kernel's: kallsyms and kcore cover it */
		if (!strcmp(m.path, "[vdso]")) {
			p->vdso_mapped = true;
			if (m.bidsz && !p->vdso_bidsz) {
				memcpy(p->vdso_bid, m.bid, m.bidsz);
				p->vdso_bidsz = m.bidsz;
			}
			continue;
		}
		if (plan_add_pid(p, m.pid) ||
		    (is_object_path(m.path) && plan_add_object(p, m.path, m.bid, m.bidsz)))
			return mt_err_set(err, MT_ENOMEM, "out of memory");
	}
	if (rc < 0)
		return rc;
	/* the header's build-id table names the rest (and the vDSO's) */
	for (size_t i = 0; i < pd->nbuildids; i++) {
		const struct mt_perf_buildid *b = &pd->buildids[i];
		if (!strcmp(b->path, "[vdso]") && !p->vdso_bidsz) {
			memcpy(p->vdso_bid, b->id, b->id_size);
			p->vdso_bidsz = b->id_size;
		}
		for (size_t k = 0; k < p->nobjs; k++)
			if (!p->objs[k].bidsz && !strcmp(p->objs[k].path, b->path)) {
				memcpy(p->objs[k].bid, b->id, b->id_size);
				p->objs[k].bidsz = b->id_size;
			}
	}
	for (size_t i = 0; i < pd->nattrs; i++)
		if (!(pd->attrs[i].flags & MT_ATTR_EXCLUDE_KERNEL))
			p->kernel = true;
	return 0;
}

/* The file with this build-id: at its path, in perf's build-id cache, or
 * in the perf archive given; without a build-id, whatever is at its path. */
static char *find_source(const struct mt_bundle_create_opts *o, const char *archive_dir, struct object *obj)
{
	/* a JIT's jitdump (jit-PID.dump, perf's format): taken as it is, for
	 * mt-symbolize to name the JIT's code from */
	if (mt_jitdump_named(obj->path)) {
		FILE *f = fopen(obj->path, "rb");
		uint32_t magic = 0;
		bool dump = f && fread(&magic, 4, 1, f) == 1 && magic == 0x4A695444u;
		if (f)
			fclose(f);
		if (dump)
			return strdup(obj->path);
	}
	uint8_t have[20];
	int n = mt_elf_file_build_id(obj->path, have);
	char id[41], path[4200];
	mt_hex(obj->bid, obj->bidsz, id);
	if (n >= 0 && (!obj->bidsz || ((unsigned)n == obj->bidsz && !memcmp(have, obj->bid, (size_t)n)))) {
		if (!obj->bidsz && n > 0) {
			memcpy(obj->bid, have, (size_t)n);
			obj->bidsz = (unsigned)n;
		}
		return strdup(obj->path);
	}
	const char *home = getenv("HOME");
	const char *caches[2] = {archive_dir, NULL};
	char home_debug[4096];
	if (home) {
		snprintf(home_debug, sizeof home_debug, "%s/.debug", home);
		caches[1] = home_debug;
	}
	for (int i = 0; obj->bidsz && i < 2; i++) {
		if (!caches[i])
			continue;
		snprintf(path, sizeof path, "%s/.build-id/%.2s/%s/elf", caches[i], id, id + 2);
		if (!access(path, R_OK))
			return strdup(path);
	}
	if (n >= 0) {
		char now[41];
		mt_hex(have, (unsigned)n, now);
		mt_say(o->warn, o->warn_ctx, "warning: %s: build-id %s, but the trace ran build-id %s and no build-id cache holds it: "
		      "left out", obj->path, n ? now : "none", id);
	} else {
		mt_say(o->warn, o->warn_ctx, "warning: %s%s%s: not found on this host%s: left out", obj->path, obj->bidsz ? " (build-id " : "",
		      obj->bidsz ? id : "", obj->bidsz ? ")" : "");
	}
	return NULL;
}

/* Names in the archive: root/PATH, unless an object with another build-id
 * took that path; then perf's build-id cache layout. */
static int name_objects(struct plan *p)
{
	for (size_t i = 0; i < p->nobjs; i++) {
		struct object *o = &p->objs[i];
		if (!o->src)
			continue;
		bool taken = false;
		for (size_t k = 0; k < i && !taken; k++)
			taken = p->objs[k].name && !strcmp(p->objs[k].path, o->path);
		char name[4200], id[41];
		mt_hex(o->bid, o->bidsz, id);
		if (taken && o->bidsz)
			snprintf(name, sizeof name, ".debug/.build-id/%.2s/%s/elf", id, id + 2);
		else if (taken)
			continue; /* the same path, no build-id to tell them apart */
		else
			snprintf(name, sizeof name, "root%s", o->path);
		if (!(o->name = strdup(name)))
			return MT_ENOMEM;
		/* separate debug info, as symbolize looks for it under a symfs */
		if (o->bidsz) {
			char dbg[256];
			snprintf(dbg, sizeof dbg, "/usr/lib/debug/.build-id/%.2s/%s.debug", id, id + 2);
			if (!access(dbg, R_OK)) {
				snprintf(name, sizeof name, "root%s", dbg);
				o->debug_src = strdup(dbg);
				o->debug_name = strdup(name);
			}
		}
	}
	return 0;
}

struct writer {
	struct archive *a;
	const char *out;
	uint64_t bytes;
	time_t now;
	struct nameset names;
};

static int write_header(struct writer *w, const char *name, uint64_t size, mode_t perm, struct mt_err *err)
{
	bool dup;
	mt_nameset_slot(&w->names, name, &dup);
	if (dup)
		return 0; /* already in (two objects sharing a debug file) */
	if (mt_nameset_add(&w->names, name, NAME_FILE))
		return mt_err_set(err, MT_ENOMEM, "out of memory");
	struct archive_entry *e = archive_entry_new();
	if (!e)
		return mt_err_set(err, MT_ENOMEM, "out of memory");
	archive_entry_set_pathname(e, name);
	archive_entry_set_size(e, (la_int64_t)size);
	archive_entry_set_filetype(e, AE_IFREG);
	archive_entry_set_perm(e, perm);
	archive_entry_set_mtime(e, w->now, 0);
	int r = archive_write_header(w->a, e);
	archive_entry_free(e);
	if (r != ARCHIVE_OK)
		return mt_err_set(err, MT_EIO, "%s: %s: %s", w->out, name, archive_error_string(w->a));
	w->bytes += size;
	return 1;
}

static int write_mem(struct writer *w, const char *name, const void *data, size_t len, struct mt_err *err)
{
	int r = write_header(w, name, len, 0644, err);
	if (r <= 0)
		return r;
	for (size_t done = 0; done < len;) {
		size_t chunk = len - done > (1u << 20) ? 1u << 20 : len - done;
		la_ssize_t n = archive_write_data(w->a, (const char *)data + done, chunk);
		if (n <= 0)
			return mt_err_set(err, MT_EIO, "%s: %s: %s", w->out, name, archive_error_string(w->a));
		done += (size_t)n;
	}
	return 0;
}

static int write_file(struct writer *w, const char *name, const char *src, struct mt_err *err)
{
	int fd = mt_infile_open(src, 0, err);
	struct stat st;
	if (fd < 0)
		return err->code;
	if (fstat(fd, &st)) {
		close(fd);
		return mt_err_set(err, MT_EIO, "%s: %s", src, strerror(errno));
	}
	int r = write_header(w, name, (uint64_t)st.st_size, (st.st_mode & 0111) ? 0755 : 0644, err);
	static char buf[1 << 16];
	uint64_t left = (uint64_t)st.st_size;
	while (r > 0 && left) {
		ssize_t n = read(fd, buf, left < sizeof buf ? left : sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			r = mt_err_set(err, MT_EIO, "%s: %s", src, n ? strerror(errno) : "changed while archived");
			break;
		}
		if (archive_write_data(w->a, buf, (size_t)n) != n)
			r = mt_err_set(err, MT_EIO, "%s: %s: %s", w->out, name, archive_error_string(w->a));
		left -= (uint64_t)n;
	}
	close(fd);
	return r < 0 ? r : 0;
}

/* The cpu line of the manifest: /proc/cpuinfo's model name and numbers. */
static void cpu_description(char *out, size_t n)
{
	FILE *f = fopen("/proc/cpuinfo", "re");
	char line[512], model[256] = "unknown", fam[32] = "?", mod[32] = "?", step[32] = "?";
	while (f && fgets(line, sizeof line, f) && strcmp(line, "\n")) {
		char *colon = strchr(line, ':');
		if (!colon)
			continue;
		char *v = colon + 1 + (colon[1] == ' ');
		v[strcspn(v, "\n")] = '\0';
		if (!strncmp(line, "model name", 10))
			snprintf(model, sizeof model, "%s", v);
		else if (!strncmp(line, "cpu family", 10))
			snprintf(fam, sizeof fam, "%s", v);
		else if (!strncmp(line, "model\t", 6))
			snprintf(mod, sizeof mod, "%s", v);
		else if (!strncmp(line, "stepping", 8))
			snprintf(step, sizeof step, "%s", v);
	}
	if (f)
		fclose(f);
	snprintf(out, n, "%s (family %s model %s stepping %s)", model, fam, mod, step);
}

/* Keeps a value on one manifest line. */
static void one_line(char *s)
{
	for (; *s; s++)
		if (*s == '\n' || *s == '\r')
			*s = ' ';
}

static int build_manifest(const struct mt_bundle_create_opts *o, const struct mt_perfdata *pd, const struct plan *p,
			  const struct mt_bundle_stats *st,
			  const char *vdso_name, const char *kallsyms_name, bool kcore, char **out, size_t *len)
{
	FILE *m = open_memstream(out, len);
	if (!m)
		return MT_ENOMEM;
	struct utsname u;
	uname(&u);
	char cpu[400], when[64], cmd[8192];
	cpu_description(cpu, sizeof cpu);
	time_t now = time(NULL);
	strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
	fprintf(m, "mt-bundle-format=%d\n", MT_BUNDLE_FORMAT);
	/* the recording host as perf.data's header tells it, else this one */
	bool here = !pd->hostname || !strcmp(pd->hostname, u.nodename);
	char kernel[300];
	snprintf(kernel, sizeof kernel, "%s %s %s", u.sysname, u.release, u.machine);
	if (pd->osrelease)
		snprintf(kernel, sizeof kernel, "Linux %s %s", pd->osrelease, pd->arch ? pd->arch : "");
	if (pd->cpudesc)
		snprintf(cpu, sizeof cpu, "%s", pd->cpudesc);
	fprintf(m, "mt-version=%s\ncreated=%s\nhost=%s\nkernel=%s\ncpu=%s\nbundled-on=%s\n", MT_VERSION, when,
		pd->hostname ? pd->hostname : u.nodename, kernel, cpu, u.nodename);
	if (o->command) {
		snprintf(cmd, sizeof cmd, "%s", o->command);
		one_line(cmd);
		fprintf(m, "command=%s\n", cmd);
	}
	fprintf(m, "perf-data=perf.data\n");
	for (size_t i = 0; i < o->nhits; i++)
		fprintf(m, "trigger-hit=%" PRIu64 " %" PRIu32 " %" PRIu32 " 0x%" PRIx64 "\n", o->hits[i].time, o->hits[i].pid,
			o->hits[i].tid, o->hits[i].ip);
	if (kcore)
		fprintf(m, "kcore=kcore_dir\n");
	if (kallsyms_name)
		fprintf(m, "kallsyms=%s\n", kallsyms_name);
	if (vdso_name)
		fprintf(m, "vdso=%s\n", vdso_name);
	for (size_t i = 0; i < p->nobjs; i++) {
		char id[41];
		mt_hex(p->objs[i].bid, p->objs[i].bidsz, id);
		fprintf(m, "object=%s\t%s\t%s\n", p->objs[i].path, id[0] ? id : "-",
			p->objs[i].name ? p->objs[i].name : "(missing)");
	}
	fprintf(m, "objects=%zu\nmissing=%zu\n", st->objects, st->missing);
	/* capabilities only where they describe the recording host */
	for (size_t i = 0; here && o->caps && i < o->caps->n; i++) {
		char val[sizeof o->caps->val[0]];
		snprintf(val, sizeof val, "%s", o->caps->val[i]);
		one_line(val);
		fprintf(m, "caps.%s=%s\n", o->caps->key[i], val);
	}
	return fclose(m) ? MT_ENOMEM : 0;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n >= k && !strcmp(s + n - k, suffix);
}

enum mt_bundle_compression mt_bundle_compression_of(const char *name)
{
	return ends_with(name, ".tar.gz") || ends_with(name, ".tgz") ? MT_BUNDLE_GZIP
	       : ends_with(name, ".tar") ? MT_BUNDLE_NONE : MT_BUNDLE_ZSTD;
}

int mt_bundle_create(const struct mt_bundle_create_opts *o, struct mt_bundle_stats *st, struct mt_err *err)
{
	memset(st, 0, sizeof *st);
	char data_path[4200], kcore_dir[4200] = "";
	struct stat sb;
	if (strcmp(o->perf_data, "-") && !stat(o->perf_data, &sb) && S_ISDIR(sb.st_mode)) {
		snprintf(data_path, sizeof data_path, "%s/data", o->perf_data);
		snprintf(kcore_dir, sizeof kcore_dir, "%s/kcore_dir", o->perf_data);
		if (!mt_bundle_is_type(kcore_dir, S_IFDIR))
			kcore_dir[0] = '\0';
		/* a kcore_dir without its kcore as a regular file: refused, not a
		 * bundle whose manifest claims one */
		char kcore[4300];
		snprintf(kcore, sizeof kcore, "%s/kcore", kcore_dir);
		int fd = kcore_dir[0] ? mt_infile_open(kcore, MT_INFILE_NOFOLLOW, err) : -1;
		if (kcore_dir[0] && fd < 0)
			return err->code;
		if (fd >= 0)
			close(fd);
	} else {
		snprintf(data_path, sizeof data_path, "%s", o->perf_data);
	}
	struct mt_perfdata pd;
	if (mt_perfdata_open(&pd, data_path, err))
		return err->code;
	struct plan p = {0};
	struct mt_bundle archive_in = {0};
	struct outfile_state { struct mt_outfile f; bool open; } of = {0};
	struct writer w = {.out = o->output, .now = time(NULL)};
	char *manifest = NULL;
	size_t manifest_len = 0;
	int rc = plan_from_trace(&pd, &p, err);
	if (rc < 0 && pd.truncated) {
		mt_say(o->warn, o->warn_ctx, "warning: %s: %s (archived as it is)", data_path, err->msg);
		mt_err_clear(err);
		rc = 0;
	}
	if (!rc && o->perf_archive) {
		int fd;
		if (!mt_bundle_open_input(o->perf_archive, &fd, err))
			rc = mt_bundle_open_fd(&archive_in, fd, o->perf_archive, NULL, 0, err);
		else
			rc = err->code;
		if (!rc && !archive_in.perf_archive)
			rc = mt_err_set(err, MT_EUSAGE, "%s: an mt bundle, not a perf archive", o->perf_archive);
	}
	for (size_t i = 0; !rc && i < p.nobjs; i++) {
		p.objs[i].src = find_source(o, archive_in.perf_archive ? archive_in.buildid_dir : NULL, &p.objs[i]);
		if (p.objs[i].src)
			st->objects++;
		else
			st->missing++;
	}
	if (!rc && name_objects(&p))
		rc = mt_err_set(err, MT_ENOMEM, "out of memory");

	/* the vDSO: perf's cache, the perf archive, else this kernel's own
	 * when the build-ids agree (or the trace has none and this kernel ran it) */
	char vdso_src[4400] = "", vdso_name[4400] = "", id[41];
	const void *own = NULL;
	size_t own_len = 0;
	if (!rc && p.vdso_mapped) {
		mt_hex(p.vdso_bid, p.vdso_bidsz, id);
		const char *home = getenv("HOME");
		if (p.vdso_bidsz && archive_in.perf_archive)
			snprintf(vdso_src, sizeof vdso_src, "%s/[vdso]/%s/vdso", archive_in.buildid_dir, id);
		if (p.vdso_bidsz && home && access(vdso_src, R_OK))
			snprintf(vdso_src, sizeof vdso_src, "%s/.debug/[vdso]/%s/vdso", home, id);
		if (access(vdso_src, R_OK)) {
			vdso_src[0] = '\0';
			own_len = mt_own_vdso(&own);
			uint8_t have[20];
			int n = mt_elf_mem_build_id(own, own_len, have);
			if (n > 0 && (!p.vdso_bidsz || ((unsigned)n == p.vdso_bidsz && !memcmp(have, p.vdso_bid, (size_t)n)))) {
				mt_hex(have, (unsigned)n, id);
			} else {
				own_len = 0;
				mt_say(o->warn, o->warn_ctx, "warning: [vdso] (build-id %s): not in perf's build-id cache and not this kernel's: "
				      "left out", p.vdso_bidsz ? id : "unknown");
			}
		}
		if (vdso_src[0] || own_len) {
			snprintf(vdso_name, sizeof vdso_name, ".debug/[vdso]/%s/vdso", id);
			st->vdso = true;
		}
	}

	char kallsyms_src[4200] = "";
	if (!rc && o->kallsyms && *o->kallsyms)
		snprintf(kallsyms_src, sizeof kallsyms_src, "%s", o->kallsyms);
	else if (!rc && !o->kallsyms && p.kernel && mt_kallsyms_usable("/proc/kallsyms"))
		snprintf(kallsyms_src, sizeof kallsyms_src, "/proc/kallsyms");
	st->kallsyms = kallsyms_src[0];
	st->kcore = kcore_dir[0];

	/* JIT maps of the trace's processes */
	const char *pmdir = o->perf_map_dir ? o->perf_map_dir : "/tmp";
	for (size_t i = 0; !rc && i < p.npids; i++) {
		char pm[4200];
		snprintf(pm, sizeof pm, "%s/perf-%" PRIu32 ".map", pmdir, p.pids[i]);
		if (mt_bundle_is_type(pm, S_IFREG))
			st->perf_maps++;
	}
	for (size_t i = 0; i < p.nobjs; i++)
		st->debug_files += p.objs[i].debug_name != NULL;

	if (!rc && build_manifest(o, &pd, &p, st, vdso_name[0] ? vdso_name : NULL, kallsyms_src[0] ? "kallsyms" : NULL,
				  kcore_dir[0], &manifest, &manifest_len))
		rc = mt_err_set(err, MT_ENOMEM, "out of memory");
	if (!rc && mt_outfile_open(&of.f, o->output, err))
		rc = err->code;
	of.open = !rc;
	if (!rc && mt_archive_load(err))
		rc = err->code;
	if (!rc && !(w.a = archive_write_new()))
		rc = mt_err_set(err, MT_ENOMEM, "out of memory");
	if (!rc) {
		archive_write_set_format_pax_restricted(w.a);
		/* no zero padding after a compressed stream: zstd(1) rejects it */
		if (o->compression != MT_BUNDLE_NONE)
			archive_write_set_bytes_in_last_block(w.a, 1);
		int r = o->compression == MT_BUNDLE_ZSTD ? archive_write_add_filter_zstd(w.a)
			: o->compression == MT_BUNDLE_GZIP ? archive_write_add_filter_gzip(w.a)
							   : archive_write_add_filter_none(w.a);
		if (r != ARCHIVE_OK || archive_write_open_FILE(w.a, of.f.f) != ARCHIVE_OK)
			rc = mt_err_set(err, MT_EIO, "%s: %s", o->output, archive_error_string(w.a));
	}
	if (!rc)
		rc = write_mem(&w, "manifest", manifest, manifest_len, err);
	if (!rc)
		rc = write_mem(&w, "perf.data", pd.base, pd.len, err);
	if (!rc && kcore_dir[0]) {
		static const char *const parts[] = {"kcore", "kallsyms", "modules"};
		for (size_t i = 0; !rc && i < 3; i++) {
			char src[4300], name[64];
			snprintf(src, sizeof src, "%s/%s", kcore_dir, parts[i]);
			snprintf(name, sizeof name, "kcore_dir/%s", parts[i]);
			/* kallsyms and modules where perf wrote them; present, they
			 * must be regular files too */
			struct stat ps;
			if (!lstat(src, &ps))
				rc = write_file(&w, name, src, err);
		}
	}
	for (size_t i = 0; !rc && i < p.nobjs; i++) {
		if (p.objs[i].name)
			rc = write_file(&w, p.objs[i].name, p.objs[i].src, err);
		if (!rc && p.objs[i].debug_name)
			rc = write_file(&w, p.objs[i].debug_name, p.objs[i].debug_src, err);
	}
	if (!rc && vdso_name[0])
		rc = vdso_src[0] ? write_file(&w, vdso_name, vdso_src, err) : write_mem(&w, vdso_name, own, own_len, err);
	if (!rc && kallsyms_src[0]) {
		/* /proc files report size 0: read it whole first */
		char *text = NULL;
		size_t len = 0;
		FILE *in = fopen(kallsyms_src, "re");
		FILE *m = in ? open_memstream(&text, &len) : NULL;
		char buf[1 << 16];
		size_t n;
		while (m && (n = fread(buf, 1, sizeof buf, in)) > 0)
			fwrite(buf, 1, n, m);
		if (!in || !m || ferror(in) || fclose(m))
			rc = mt_err_set(err, MT_EIO, "%s: cannot read", kallsyms_src);
		else
			rc = write_mem(&w, "kallsyms", text, len, err);
		if (in)
			fclose(in);
		free(text);
	}
	for (size_t i = 0; !rc && i < p.npids; i++) {
		char pm[4200], name[64];
		snprintf(pm, sizeof pm, "%s/perf-%" PRIu32 ".map", pmdir, p.pids[i]);
		snprintf(name, sizeof name, "perf-maps/perf-%" PRIu32 ".map", p.pids[i]);
		if (mt_bundle_is_type(pm, S_IFREG))
			rc = write_file(&w, name, pm, err);
	}
	if (w.a) {
		if (archive_write_close(w.a) != ARCHIVE_OK && !rc)
			rc = mt_err_set(err, MT_EIO, "%s: %s", o->output, archive_error_string(w.a));
		archive_write_free(w.a);
	}
	if (of.open) {
		if (rc)
			mt_outfile_abort(&of.f);
		else if (mt_outfile_commit(&of.f, err))
			rc = err->code;
		else if (of.f.replaced)
			mt_say(o->warn, o->warn_ctx, "replaced %s", o->output);
	}
	st->bytes_in = w.bytes;
	mt_nameset_free(&w.names);
	free(manifest);
	if (archive_in.dir[0])
		mt_bundle_close(&archive_in);
	plan_free(&p);
	mt_perfdata_close(&pd);
	return rc;
}
