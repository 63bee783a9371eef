/* extract: reading a bundle archive safely: entries normalized and kept
 * under the directory (no absolute names, no .., no links leaving it, no
 * device nodes or set-id bits), sizes and counts bounded; listing it, and
 * reading its manifest alone. */
#define _GNU_SOURCE
#include "bundle/bundle.h"
#include "bundle/archive_lib.h"

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
#include "names/symbolize.h"
#include "base/version.h"
#include "bundle/entryname.h"
#include "bundle/internal.h"
#include "bundle/nameset.h"

/* Limits on what an archive may make us write (override: the environment). */
#define DEFAULT_MAX_BYTES (64ull << 30)
#define DEFAULT_MAX_ENTRIES 1000000ull

static uint64_t env_limit(const char *name, uint64_t def)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return def;
	char *end;
	errno = 0;
	unsigned long long n = strtoull(v, &end, 10);
	return errno || *end || v[0] == '-' ? def : (uint64_t)n;
}


/* ---- reading: an fd, after bytes already peeked from it ---- */

struct source {
	int fd;
	uint8_t *prefix;
	size_t prefix_len;
	bool prefix_done;
	uint8_t buf[1 << 16];
};

static la_ssize_t source_read(struct archive *a, void *cd, const void **out)
{
	struct source *s = cd;
	if (!s->prefix_done) {
		s->prefix_done = true;
		if (s->prefix_len) {
			*out = s->prefix;
			return (la_ssize_t)s->prefix_len;
		}
	}
	for (;;) {
		ssize_t n = read(s->fd, s->buf, sizeof s->buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			archive_set_error(a, errno, "read: %s", strerror(errno));
			return -1;
		}
		*out = s->buf;
		return n;
	}
}

/* Opens (making them) the directories of name below rootfd, never through
 * a symbolic link; returns the parent's fd and points *base at the last
 * component, or -1 with errno set. */
static int open_parent(int rootfd, char *name, const char **base)
{
	int fd = dup(rootfd);
	char *p = name;
	for (char *slash; fd >= 0 && (slash = strchr(p, '/'));) {
		*slash = '\0';
		if (mkdirat(fd, p, 0755) && errno != EEXIST) {
			int e = errno;
			close(fd);
			errno = e;
			*slash = '/';
			return -1;
		}
		int next = openat(fd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		int e = errno;
		close(fd);
		errno = e;
		fd = next;
		*slash = '/';
		p = slash + 1;
	}
	*base = p;
	return fd;
}

struct walk {
	const char *aname;         /* archive name, for messages */
	int rootfd;                /* extract under it; -1 = only check (list) */
	FILE *list;
	const char *want;          /* only check: keep this entry's data */
	char *wanted;
	bool objects_only;         /* perf.data and kcore_dir/ not written */
	uint64_t max_bytes, max_entries, total, entries;
	uint64_t free_bytes;
	struct nameset names;
};

static int entry_fail(struct walk *w, struct mt_err *err, int code, const char *name, const char *why,
		      const char *detail)
{
	return mt_err_set(err, code, "%s: entry '%s': %s%s%s", w->aname, name, why, detail ? ": " : "",
			  detail ? detail : "");
}

static int copy_data(struct archive *a, int fd, struct walk *w, const char *name, uint64_t declared,
		     struct mt_err *err)
{
	const void *buf;
	size_t size;
	la_int64_t off;
	uint64_t written = 0;
	for (;;) {
		int r = archive_read_data_block(a, &buf, &size, &off);
		if (r == ARCHIVE_EOF)
			break;
		if (r < ARCHIVE_WARN)
			return entry_fail(w, err, MT_ETRUNC, name, "truncated or corrupt archive",
					  archive_error_string(a));
		if (off < 0 || (uint64_t)off + size > declared)
			return entry_fail(w, err, MT_EFORMAT, name, "more data than its declared size", NULL);
		for (size_t done = 0; fd >= 0 && done < size;) {
			ssize_t n = pwrite(fd, (const char *)buf + done, size - done, off + (off_t)done);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				return entry_fail(w, err, MT_EIO, name, "cannot write", strerror(errno));
			done += (size_t)n;
		}
		written = (uint64_t)off + size;
	}
	/* a sparse tail: the file still has its declared size */
	if (fd >= 0 && written < declared && ftruncate(fd, (off_t)declared))
		return entry_fail(w, err, MT_EIO, name, "cannot write", strerror(errno));
	return 0;
}

/* A name as list prints it: one line whatever it holds (a crafted entry
 * named "x\nfile\t9\tperf.data" printed as a line of its own):
 * backslash, tab and newline as \\, \t and \n, other control bytes \xHH. */
static void list_name(FILE *out, const char *name)
{
	for (const unsigned char *p = (const unsigned char *)(name ? name : ""); *p; p++) {
		if (*p == '\\')
			fputs("\\\\", out);
		else if (*p == '\t')
			fputs("\\t", out);
		else if (*p == '\n')
			fputs("\\n", out);
		else if (*p < 0x20 || *p == 0x7f)
			fprintf(out, "\\x%02x", *p);
		else
			fputc(*p, out);
	}
}

static int walk_entry(struct archive *a, struct archive_entry *ent, struct walk *w, struct mt_err *err)
{
	char name[MAX_NAME + 8];
	const char *why = NULL;
	const char *raw = archive_entry_pathname(ent);
	int r = mt_bundle_normalize_name(raw, name, sizeof name, &why);
	if (r < 0)
		return entry_fail(w, err, r, raw ? raw : "", why, NULL);
	if (r == 0)
		return 0; /* "." itself */
	if (++w->entries > w->max_entries)
		return mt_err_set(err, MT_EFORMAT, "%s: more than %" PRIu64 " entries (MT_BUNDLE_MAX_ENTRIES)",
				  w->aname, w->max_entries);
	bool dup;
	mt_nameset_slot(&w->names, name, &dup);
	if (dup)
		return entry_fail(w, err, MT_EFORMAT, name, "a duplicate name", NULL);
	/* never through a link: no directory on the way may be one */
	for (char *slash = strchr(name, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		bool found;
		size_t k = mt_nameset_slot(&w->names, name, &found);
		*slash = '/';
		if (found && w->names.kind[k] == NAME_LINK)
			return entry_fail(w, err, MT_EFORMAT, name, "its directory is a symbolic link", NULL);
	}

	const char *hardlink = archive_entry_hardlink(ent);
	mode_t type = archive_entry_filetype(ent);
	char target[MAX_NAME + 8];
	bool is_file = false;
	if (hardlink) {
		/* only to a file this archive already put inside */
		bool found = false;
		size_t slot = 0;
		if (mt_bundle_normalize_name(hardlink, target, sizeof target, &why) == 1)
			slot = mt_nameset_slot(&w->names, target, &found);
		if (!found || w->names.kind[slot] != NAME_FILE)
			return entry_fail(w, err, MT_EFORMAT, name, "a hard link to outside the archive's files",
					  hardlink);
		is_file = true;
	} else if (type == AE_IFLNK) {
		const char *t = archive_entry_symlink(ent);
		if (!t || !mt_bundle_link_inside(name, t))
			return entry_fail(w, err, MT_EFORMAT, name, "a symbolic link leading outside", t ? t : "");
	} else if (type == AE_IFREG) {
		is_file = true;
	} else if (type != AE_IFDIR) {
		return entry_fail(w, err, MT_EFORMAT, name, "not a file, directory or link", NULL);
	}

	/* the trace itself, not wanted: checked as any entry, never written */
	bool skipped = w->objects_only && w->rootfd >= 0 &&
		       (!strcmp(name, "perf.data") || (!strncmp(name, "kcore_dir", 9) && (!name[9] || name[9] == '/')));
	uint64_t size = 0;
	if (type == AE_IFREG && !hardlink) {
		la_int64_t s = archive_entry_size_is_set(ent) ? archive_entry_size(ent) : 0;
		size = s < 0 ? 0 : (uint64_t)s;
		char detail[128];
		if (size > w->max_bytes - w->total) {
			snprintf(detail, sizeof detail, "%" PRIu64 " bytes, over the limit of %" PRIu64
				 " in all (MT_BUNDLE_MAX_BYTES)", size, w->max_bytes);
			return entry_fail(w, err, MT_EFORMAT, name, "a declared size too large", detail);
		}
		if (w->rootfd >= 0 && !skipped && size > w->free_bytes - (w->total < w->free_bytes ? w->total : w->free_bytes)) {
			snprintf(detail, sizeof detail, "%" PRIu64 " bytes, more than the %" PRIu64 " free",
				 size, w->free_bytes > w->total ? w->free_bytes - w->total : 0);
			return entry_fail(w, err, MT_EFORMAT, name, "a declared size too large", detail);
		}
		w->total += size;
	}
	if (mt_nameset_add(&w->names, name, is_file ? NAME_FILE : type == AE_IFLNK && !hardlink ? NAME_LINK : NAME_DIR))
		return mt_err_set(err, MT_ENOMEM, "%s: out of memory", w->aname);

	if (w->list) {
		const char *kind = hardlink ? "hardlink" : type == AE_IFLNK ? "symlink"
						: type == AE_IFDIR ? "dir" : "file";
		fprintf(w->list, "%s\t%" PRIu64 "\t", kind, size);
		list_name(w->list, name);
		if (hardlink || type == AE_IFLNK) {
			fputs(" -> ", w->list);
			list_name(w->list, hardlink ? target : archive_entry_symlink(ent));
		}
		fputc('\n', w->list);
	}
	if (w->rootfd < 0 && w->want && !strcmp(name, w->want) && type == AE_IFREG && !hardlink) {
		if (size > (1u << 20))
			return entry_fail(w, err, MT_EFORMAT, name, "larger than 1 MiB", NULL);
		if (!(w->wanted = calloc(1, size + 1)))
			return mt_err_set(err, MT_ENOMEM, "out of memory");
		la_ssize_t got = archive_read_data(a, w->wanted, size);
		if (got < 0 || (uint64_t)got != size)
			return entry_fail(w, err, MT_ETRUNC, name, "truncated or corrupt archive", archive_error_string(a));
		return 0;
	}
	if (w->rootfd < 0 || skipped)
		return type == AE_IFREG && !hardlink ? copy_data(a, -1, w, name, size, err) : 0;

	const char *base;
	int dfd = open_parent(w->rootfd, name, &base);
	if (dfd < 0)
		return entry_fail(w, err, MT_EFORMAT, name, "its directory cannot be made", strerror(errno));
	int rc = 0;
	if (hardlink) {
		if (linkat(w->rootfd, target, dfd, base, 0))
			rc = entry_fail(w, err, MT_EIO, name, "cannot link", strerror(errno));
	} else if (type == AE_IFLNK) {
		if (symlinkat(archive_entry_symlink(ent), dfd, base))
			rc = entry_fail(w, err, MT_EIO, name, "cannot make the link", strerror(errno));
	} else if (type == AE_IFDIR) {
		struct stat st;
		if (mkdirat(dfd, base, 0755) &&
		    (errno != EEXIST || fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) || !S_ISDIR(st.st_mode)))
			rc = entry_fail(w, err, MT_EIO, name, "cannot make the directory", strerror(errno));
	} else {
		mode_t mode = (archive_entry_perm(ent) & 0111) ? 0755 : 0644;
		int fd = openat(dfd, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
		if (fd < 0)
			rc = entry_fail(w, err, MT_EIO, name, "cannot create", strerror(errno));
		else {
			rc = copy_data(a, fd, w, name, size, err);
			if (close(fd) && !rc)
				rc = entry_fail(w, err, MT_EIO, name, "cannot write", strerror(errno));
		}
	}
	close(dfd);
	return rc;
}

/* Reads every entry of the archive on fd: extracts under dir, or (dir
 * NULL) checks and lists them. */
int mt_bundle_walk(int fd, const char *aname, const void *prefix, size_t prefix_len, const char *dir,
			FILE *list, const char *want, char **wanted, bool objects_only, struct mt_err *err)
{
	struct source *src = calloc(1, sizeof *src);
	if (!src || (prefix_len && !(src->prefix = malloc(prefix_len)))) {
		free(src);
		return mt_err_set(err, MT_ENOMEM, "%s: out of memory", aname);
	}
	src->fd = fd;
	if (prefix_len)
		memcpy(src->prefix, prefix, prefix_len);
	src->prefix_len = prefix_len;
	struct walk w = {.aname = aname, .rootfd = -1, .list = list, .want = want, .objects_only = objects_only,
			 .max_bytes = env_limit("MT_BUNDLE_MAX_BYTES", DEFAULT_MAX_BYTES),
			 .max_entries = env_limit("MT_BUNDLE_MAX_ENTRIES", DEFAULT_MAX_ENTRIES)};
	int rc = 0;
	if (dir) {
		struct statvfs vfs;
		w.rootfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (w.rootfd < 0)
			rc = mt_err_set(err, MT_EIO, "%s: %s", dir, strerror(errno));
		else
			w.free_bytes = fstatvfs(w.rootfd, &vfs) ? UINT64_MAX : (uint64_t)vfs.f_bavail * vfs.f_frsize;
	}
	if (!rc && mt_archive_load(err))
		rc = err->code;
	struct archive *a = rc ? NULL : archive_read_new();
	if (!rc && !a)
		rc = mt_err_set(err, MT_ENOMEM, "%s: out of memory", aname);
	if (!rc) {
		archive_read_support_filter_all(a);
		archive_read_support_format_tar(a);
		if (archive_read_open(a, src, NULL, source_read, NULL) != ARCHIVE_OK) {
			const char *why = archive_error_string(a);
			bool cut = why && strstr(why, "runcated");
			rc = mt_err_set(err, cut ? MT_ETRUNC : MT_EFORMAT, "%s: %s: %s", aname,
					cut ? "truncated or corrupt archive" : "not a readable tar archive",
					why ? why : "unknown error");
		}
	}
	size_t n = 0;
	while (!rc) {
		struct archive_entry *ent;
		int r = archive_read_next_header(a, &ent);
		if (r == ARCHIVE_EOF)
			break;
		if (r < ARCHIVE_WARN) {
			const char *why = archive_error_string(a);
			bool cut = n || (why && strstr(why, "runcated"));
			rc = mt_err_set(err, cut ? MT_ETRUNC : MT_EFORMAT, "%s: %s after %zu entries: %s", aname,
					cut ? "truncated or corrupt archive" : "not a readable tar archive", n,
					why ? why : "unknown error");
			break;
		}
		rc = walk_entry(a, ent, &w, err);
		n++;
	}
	if (a)
		archive_read_free(a);
	if (w.rootfd >= 0)
		close(w.rootfd);
	mt_nameset_free(&w.names);
	if (wanted && !rc)
		*wanted = w.wanted;
	else
		free(w.wanted);
	free(src->prefix);
	free(src);
	return rc;
}

int mt_bundle_open_input(const char *path, int *fd, struct mt_err *err)
{
	*fd = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC) : 0;
	if (*fd < 0)
		return mt_err_set(err, MT_EIO, "%s: %s", path, strerror(errno));
	return 0;
}

int mt_bundle_extract(const char *path, const char *dir, struct mt_err *err)
{
	int fd;
	if (mt_bundle_open_input(path, &fd, err))
		return err->code;
	int rc = mt_bundle_walk(fd, strcmp(path, "-") ? path : "standard input", NULL, 0, dir, NULL, NULL, NULL, false,
				err);
	if (fd > 0)
		close(fd);
	return rc;
}

int mt_bundle_list(const char *path, FILE *out, struct mt_err *err)
{
	int fd;
	if (mt_bundle_open_input(path, &fd, err))
		return err->code;
	int rc = mt_bundle_walk(fd, strcmp(path, "-") ? path : "standard input", NULL, 0, NULL, out, NULL, NULL, false,
				err);
	if (fd > 0)
		close(fd);
	return rc;
}

int mt_bundle_read_manifest(const char *path, char **text, struct mt_err *err)
{
	int fd;
	*text = NULL;
	if (mt_bundle_open_input(path, &fd, err))
		return err->code;
	const char *name = strcmp(path, "-") ? path : "standard input";
	int rc = mt_bundle_walk(fd, name, NULL, 0, NULL, NULL, "manifest", text, false, err);
	if (fd > 0)
		close(fd);
	if (!rc && !*text)
		rc = mt_err_set(err, MT_EFORMAT, "%s: no manifest: not an mt bundle", name);
	return rc;
}

