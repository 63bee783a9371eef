/* bundle: see bundle.h. */
#define _GNU_SOURCE
#include "bundle/bundle.h"

#include <archive.h>
#include <archive_entry.h>
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

/* Limits on what an archive may make us write (override: the environment). */
#define DEFAULT_MAX_BYTES (64ull << 30)
#define DEFAULT_MAX_ENTRIES 1000000ull
#define MAX_NAME 4000

/* bundles to remove at exit (mt_bundle_close_at_exit) */
static struct mt_bundle *open_bundles[4];

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

bool mt_bundle_sniff(const void *head, size_t n)
{
	const uint8_t *h = head;
	static const uint8_t zstd[] = {0x28, 0xb5, 0x2f, 0xfd}, gz[] = {0x1f, 0x8b},
			     xz[] = {0xfd, '7', 'z', 'X', 'Z', 0};
	return (n >= 4 && !memcmp(h, zstd, 4)) || (n >= 2 && !memcmp(h, gz, 2)) ||
	       (n >= 3 && !memcmp(h, "BZh", 3)) || (n >= 6 && !memcmp(h, xz, 6)) ||
	       (n >= 262 && !memcmp(h + 257, "ustar", 5));
}

bool mt_bundle_is_archive_file(const char *path)
{
	struct stat st;
	uint8_t head[512];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = fstat(fd, &st) || !S_ISREG(st.st_mode) ? -1 : pread(fd, head, sizeof head, 0);
	close(fd);
	return n > 0 && mt_bundle_sniff(head, (size_t)n);
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	remove(path);
	return 0;
}

void mt_bundle_remove_tree(const char *dir)
{
	if (dir && *dir)
		nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
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

/* Names already seen: an open-addressing set of strings, with what each is. */
enum name_kind { NAME_DIR, NAME_FILE, NAME_LINK };
struct nameset {
	char **v;
	uint8_t *kind;             /* enum name_kind of each */
	size_t cap, n;
};

/* Finds name: its slot index, and *found. */
static size_t nameset_slot(const struct nameset *ns, const char *name, bool *found)
{
	*found = false;
	if (!ns->cap)
		return 0;
	size_t i = mt_hash_str(name) & (ns->cap - 1);
	while (ns->v[i] && strcmp(ns->v[i], name))
		i = (i + 1) & (ns->cap - 1);
	*found = ns->v[i] != NULL;
	return i;
}

static int nameset_add(struct nameset *ns, const char *name, enum name_kind kind)
{
	if (2 * (ns->n + 1) > ns->cap) {
		struct nameset bigger = {.cap = ns->cap ? ns->cap * 2 : 256};
		bigger.v = calloc(bigger.cap, sizeof *bigger.v);
		bigger.kind = calloc(bigger.cap, 1);
		if (!bigger.v || !bigger.kind) {
			free(bigger.v);
			free(bigger.kind);
			return MT_ENOMEM;
		}
		for (size_t i = 0; i < ns->cap; i++)
			if (ns->v[i]) {
				bool f;
				size_t k = nameset_slot(&bigger, ns->v[i], &f);
				bigger.v[k] = ns->v[i];
				bigger.kind[k] = ns->kind[i];
			}
		bigger.n = ns->n;
		free(ns->v);
		free(ns->kind);
		*ns = bigger;
	}
	bool found;
	size_t i = nameset_slot(ns, name, &found);
	if (!(ns->v[i] = strdup(name)))
		return MT_ENOMEM;
	ns->kind[i] = (uint8_t)kind;
	ns->n++;
	return 0;
}

static void nameset_free(struct nameset *ns)
{
	for (size_t i = 0; i < ns->cap; i++)
		free(ns->v[i]);
	free(ns->v);
	free(ns->kind);
}

/* Normalizes an entry name: leading "./" and empty or "." components go;
 * an absolute name or a ".." component is refused. 1 = use, 0 = skip (the
 * archive's own "."), or a negative code with the reason in why. */
static int normalize_name(const char *raw, char *out, size_t n, const char **why)
{
	if (!raw || !*raw) {
		*why = "an empty name";
		return MT_EFORMAT;
	}
	if (raw[0] == '/') {
		*why = "an absolute name";
		return MT_EFORMAT;
	}
	size_t o = 0;
	for (const char *p = raw; *p;) {
		const char *e = strchr(p, '/');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		if (len == 2 && p[0] == '.' && p[1] == '.') {
			*why = "a '..' component";
			return MT_EFORMAT;
		}
		if (len && !(len == 1 && p[0] == '.')) {
			if (o + len + 2 > n || o + len + 1 > MAX_NAME) {
				*why = "a name too long";
				return MT_EFORMAT;
			}
			if (o)
				out[o++] = '/';
			memcpy(out + o, p, len);
			o += len;
		}
		p += len + (e ? 1 : 0);
	}
	out[o] = '\0';
	return o ? 1 : 0;
}

/* A symbolic link is kept when, read from the link's own directory, it
 * stays inside: relative, any ".." only at its start and no more of them
 * than the link is deep. (Every directory on an entry's path is a real one
 * -- extraction never goes through a link -- so this holds on disk too.) */
static bool link_target_inside(const char *name, const char *target)
{
	if (!*target || target[0] == '/')
		return false;
	size_t depth = 0;
	for (const char *p = name; *p; p++)
		depth += *p == '/';
	bool leading = true;
	size_t ups = 0;
	for (const char *p = target; *p;) {
		const char *e = strchr(p, '/');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		bool up = len == 2 && p[0] == '.' && p[1] == '.';
		if (up && !leading)
			return false;
		if (up)
			ups++;
		else if (len && !(len == 1 && p[0] == '.'))
			leading = false;
		p += len + (e ? 1 : 0);
	}
	return ups <= depth;
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

static int walk_entry(struct archive *a, struct archive_entry *ent, struct walk *w, struct mt_err *err)
{
	char name[MAX_NAME + 8];
	const char *why = NULL;
	const char *raw = archive_entry_pathname(ent);
	int r = normalize_name(raw, name, sizeof name, &why);
	if (r < 0)
		return entry_fail(w, err, r, raw ? raw : "", why, NULL);
	if (r == 0)
		return 0; /* "." itself */
	if (++w->entries > w->max_entries)
		return mt_err_set(err, MT_EFORMAT, "%s: more than %" PRIu64 " entries (MT_BUNDLE_MAX_ENTRIES)",
				  w->aname, w->max_entries);
	bool dup;
	nameset_slot(&w->names, name, &dup);
	if (dup)
		return entry_fail(w, err, MT_EFORMAT, name, "a duplicate name", NULL);
	/* never through a link: no directory on the way may be one */
	for (char *slash = strchr(name, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		bool found;
		size_t k = nameset_slot(&w->names, name, &found);
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
		if (normalize_name(hardlink, target, sizeof target, &why) == 1)
			slot = nameset_slot(&w->names, target, &found);
		if (!found || w->names.kind[slot] != NAME_FILE)
			return entry_fail(w, err, MT_EFORMAT, name, "a hard link to outside the archive's files",
					  hardlink);
		is_file = true;
	} else if (type == AE_IFLNK) {
		const char *t = archive_entry_symlink(ent);
		if (!t || !link_target_inside(name, t))
			return entry_fail(w, err, MT_EFORMAT, name, "a symbolic link leading outside", t ? t : "");
	} else if (type == AE_IFREG) {
		is_file = true;
	} else if (type != AE_IFDIR) {
		return entry_fail(w, err, MT_EFORMAT, name, "not a file, directory or link", NULL);
	}

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
		if (w->rootfd >= 0 && size > w->free_bytes - (w->total < w->free_bytes ? w->total : w->free_bytes)) {
			snprintf(detail, sizeof detail, "%" PRIu64 " bytes, more than the %" PRIu64 " free",
				 size, w->free_bytes > w->total ? w->free_bytes - w->total : 0);
			return entry_fail(w, err, MT_EFORMAT, name, "a declared size too large", detail);
		}
		w->total += size;
	}
	if (nameset_add(&w->names, name, is_file ? NAME_FILE : type == AE_IFLNK && !hardlink ? NAME_LINK : NAME_DIR))
		return mt_err_set(err, MT_ENOMEM, "%s: out of memory", w->aname);

	if (w->list) {
		const char *kind = hardlink ? "hardlink" : type == AE_IFLNK ? "symlink"
						: type == AE_IFDIR ? "dir" : "file";
		fprintf(w->list, "%s\t%" PRIu64 "\t%s", kind, size, name);
		if (hardlink || type == AE_IFLNK)
			fprintf(w->list, " -> %s", hardlink ? target : archive_entry_symlink(ent));
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
	if (w->rootfd < 0)
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
static int walk_archive(int fd, const char *aname, const void *prefix, size_t prefix_len, const char *dir,
			FILE *list, const char *want, char **wanted, struct mt_err *err)
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
	struct walk w = {.aname = aname, .rootfd = -1, .list = list, .want = want,
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
	struct archive *a = archive_read_new();
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
	nameset_free(&w.names);
	if (wanted && !rc)
		*wanted = w.wanted;
	else
		free(w.wanted);
	free(src->prefix);
	free(src);
	return rc;
}

static int open_input(const char *path, int *fd, struct mt_err *err)
{
	*fd = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC) : 0;
	if (*fd < 0)
		return mt_err_set(err, MT_EIO, "%s: %s", path, strerror(errno));
	return 0;
}

int mt_bundle_extract(const char *path, const char *dir, struct mt_err *err)
{
	int fd;
	if (open_input(path, &fd, err))
		return err->code;
	int rc = walk_archive(fd, strcmp(path, "-") ? path : "<stdin>", NULL, 0, dir, NULL, NULL, NULL, err);
	if (fd > 0)
		close(fd);
	return rc;
}

int mt_bundle_list(const char *path, FILE *out, struct mt_err *err)
{
	int fd;
	if (open_input(path, &fd, err))
		return err->code;
	int rc = walk_archive(fd, strcmp(path, "-") ? path : "<stdin>", NULL, 0, NULL, out, NULL, NULL, err);
	if (fd > 0)
		close(fd);
	return rc;
}

int mt_bundle_read_manifest(const char *path, char **text, struct mt_err *err)
{
	int fd;
	*text = NULL;
	if (open_input(path, &fd, err))
		return err->code;
	const char *name = strcmp(path, "-") ? path : "<stdin>";
	int rc = walk_archive(fd, name, NULL, 0, NULL, NULL, "manifest", text, err);
	if (fd > 0)
		close(fd);
	if (!rc && !*text)
		rc = mt_err_set(err, MT_EFORMAT, "%s: no manifest: not an mt bundle", name);
	return rc;
}

/* ---- an extracted bundle ---- */

/* p is of that type itself (a link to one is not) */
static bool is_type(const char *p, mode_t type)
{
	struct stat st;
	return !lstat(p, &st) && (st.st_mode & S_IFMT) == type;
}


static char *read_small_file(const char *path, size_t max)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return NULL;
	char *buf = malloc(max + 1);
	size_t n = buf ? fread(buf, 1, max, f) : 0;
	fclose(f);
	if (buf)
		buf[n] = '\0';
	return buf;
}

bool mt_bundle_manifest_get(const struct mt_bundle *b, const char *key, char *out, size_t n)
{
	size_t klen = strlen(key);
	for (const char *p = b->manifest; p && *p;) {
		const char *eol = strchr(p, '\n');
		size_t len = eol ? (size_t)(eol - p) : strlen(p);
		if (len > klen && !strncmp(p, key, klen) && p[klen] == '=') {
			snprintf(out, n, "%.*s", (int)(len - klen - 1), p + klen + 1);
			return true;
		}
		p += len + (eol ? 1 : 0);
	}
	return false;
}

static int check_bundle(struct mt_bundle *b, const char *name, struct mt_err *err)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/manifest", b->dir);
	if (!is_type(path, S_IFREG)) {
		snprintf(path, sizeof path, "%s/.build-id", b->dir);
		if (!is_type(path, S_IFDIR))
			return mt_err_set(err, MT_EFORMAT,
					  "%s: neither an mt bundle (no manifest) nor a perf archive (no .build-id/)", name);
		/* perf archive: entries relative to ~/.debug; an empty symfs
		 * keeps lookups off this host */
		b->perf_archive = true;
		snprintf(b->buildid_dir, sizeof b->buildid_dir, "%s", b->dir);
		snprintf(b->root, sizeof b->root, "%s/.mt-empty-root", b->dir);
		if (mkdir(b->root, 0755) && errno != EEXIST)
			return mt_err_set(err, MT_EIO, "%s: %s", b->root, strerror(errno));
		return 0;
	}
	if (!(b->manifest = read_small_file(path, 1 << 20)))
		return mt_err_set(err, MT_EIO, "%s: cannot read its manifest", name);
	const char *key = "mt-bundle-format=";
	if (strncmp(b->manifest, key, strlen(key)))
		return mt_err_set(err, MT_EFORMAT, "%s: manifest does not start with '%s'", name, key);
	char *end;
	long v = strtol(b->manifest + strlen(key), &end, 10);
	if (end == b->manifest + strlen(key) || (*end != '\n' && *end))
		return mt_err_set(err, MT_EFORMAT, "%s: manifest: bad format version", name);
	if (v != MT_BUNDLE_FORMAT)
		return mt_err_set(err, MT_EUNSUP, "%s: bundle format version %ld; this mt reads version %d", name, v,
				  MT_BUNDLE_FORMAT);
	snprintf(b->perf_data, sizeof b->perf_data, "%s/perf.data", b->dir);
	if (!is_type(b->perf_data, S_IFREG))
		return mt_err_set(err, MT_EFORMAT, "%s: no perf.data in the bundle", name);
	snprintf(b->root, sizeof b->root, "%s/root", b->dir);
	if (mkdir(b->root, 0755) && errno != EEXIST)
		return mt_err_set(err, MT_EIO, "%s: %s", b->root, strerror(errno));
	snprintf(b->buildid_dir, sizeof b->buildid_dir, "%s/.debug", b->dir);
	snprintf(path, sizeof path, "%s/kcore_dir", b->dir);
	if (is_type(path, S_IFDIR))
		snprintf(b->kcore_dir, sizeof b->kcore_dir, "%s", path);
	snprintf(path, sizeof path, "%s/kallsyms", b->dir);
	if (is_type(path, S_IFREG))
		snprintf(b->kallsyms, sizeof b->kallsyms, "%s", path);
	snprintf(b->perf_maps, sizeof b->perf_maps, "%s/perf-maps", b->dir);
	return 0;
}

int mt_bundle_open_fd(struct mt_bundle *b, int fd, const char *name, const void *prefix, size_t prefix_len,
		      struct mt_err *err)
{
	memset(b, 0, sizeof *b);
	const char *tmp = getenv("TMPDIR");
	snprintf(b->dir, sizeof b->dir, "%s/mt-bundle.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	int rc = 0;
	if (!mkdtemp(b->dir)) {
		rc = mt_err_set(err, MT_EIO, "%s: cannot make a directory to extract into: %s", b->dir,
				strerror(errno));
		b->dir[0] = '\0';
	} else {
		rc = walk_archive(fd, name, prefix, prefix_len, b->dir, NULL, NULL, NULL, err);
	}
	if (fd > 0)
		close(fd);
	if (!rc)
		rc = check_bundle(b, name, err);
	if (rc)
		mt_bundle_close(b);
	return rc;
}

int mt_bundle_open(struct mt_bundle *b, const char *path, struct mt_err *err)
{
	int fd;
	memset(b, 0, sizeof *b);
	if (open_input(path, &fd, err))
		return err->code;
	return mt_bundle_open_fd(b, fd, strcmp(path, "-") ? path : "<stdin>", NULL, 0, err);
}

void mt_bundle_close(struct mt_bundle *b)
{
	for (size_t i = 0; i < 4; i++)
		if (open_bundles[i] == b)
			open_bundles[i] = NULL;
	mt_bundle_remove_tree(b->dir);
	free(b->manifest);
	memset(b, 0, sizeof *b);
}

static void close_all(void)
{
	for (size_t i = 0; i < 4; i++)
		if (open_bundles[i]) {
			mt_bundle_close(open_bundles[i]);
			open_bundles[i] = NULL;
		}
}

static void close_on_signal(int sig)
{
	/* not async-signal-safe, but the process is ending; what matters is
	 * that the extracted copy does not outlive it */
	for (size_t i = 0; i < 4; i++)
		if (open_bundles[i])
			mt_bundle_remove_tree(open_bundles[i]->dir);
	signal(sig, SIG_DFL);
	raise(sig);
}

void mt_bundle_close_at_exit(struct mt_bundle *b)
{
	static bool registered;
	if (!registered) {
		registered = true;
		atexit(close_all);
		static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};
		for (size_t i = 0; i < 4; i++) {
			struct sigaction sa = {.sa_handler = close_on_signal};
			struct sigaction old;
			if (!sigaction(sigs[i], NULL, &old) && old.sa_handler == SIG_DFL)
				sigaction(sigs[i], &sa, NULL);
		}
	}
	for (size_t i = 0; i < 4; i++)
		if (!open_bundles[i]) {
			open_bundles[i] = b;
			return;
		}
}

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
	nameset_slot(&w->names, name, &dup);
	if (dup)
		return 0; /* already in (two objects sharing a debug file) */
	if (nameset_add(&w->names, name, NAME_FILE))
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
	int fd = open(src, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return mt_err_set(err, MT_EIO, "%s: %s", src, fd < 0 ? strerror(e) : "not a regular file");
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
		if (!is_type(kcore_dir, S_IFDIR))
			kcore_dir[0] = '\0';
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
		if (!open_input(o->perf_archive, &fd, err))
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
		if (is_type(pm, S_IFREG))
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
			if (is_type(src, S_IFREG))
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
		if (is_type(pm, S_IFREG))
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
	}
	st->bytes_in = w.bytes;
	nameset_free(&w.names);
	free(manifest);
	if (archive_in.dir[0])
		mt_bundle_close(&archive_in);
	plan_free(&p);
	mt_perfdata_close(&pd);
	return rc;
}
