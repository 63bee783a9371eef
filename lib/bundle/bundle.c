/* bundle: see bundle.h. Recognizing a bundle and an extracted one
 * (checked, its manifest read, removed at exit); extract.c reads archives,
 * create.c writes them. */
#define _GNU_SOURCE
#include "bundle/bundle.h"
#include "bundle/archive_lib.h"
#include "base/infile.h"
#include "base/onsignal.h"

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
#include "bundle/internal.h"

/* bundles to remove at exit (mt_bundle_close_at_exit) */
static struct mt_bundle *open_bundles[4];


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

static int remove_below(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag;
	if (ftw->level > 0)
		remove(path);
	return 0;
}

void mt_bundle_empty_tree(const char *dir)
{
	if (dir && *dir)
		nftw(dir, remove_below, 16, FTW_DEPTH | FTW_PHYS);
}

void mt_bundle_remove_tree(const char *dir)
{
	if (dir && *dir)
		nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}


/* ---- an extracted bundle ---- */

/* p is of that type itself (a link to one is not) */
bool mt_bundle_is_type(const char *p, mode_t type)
{
	struct stat st;
	return !lstat(p, &st) && (st.st_mode & S_IFMT) == type;
}


static char *read_small_file(const char *path, size_t max)
{
	struct mt_err err = {0};
	FILE *f = mt_infile_fopen(path, 0, &err);
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

static int check_bundle(struct mt_bundle *b, const char *name, bool objects_only, struct mt_err *err)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/manifest", b->dir);
	if (!mt_bundle_is_type(path, S_IFREG)) {
		snprintf(path, sizeof path, "%s/.build-id", b->dir);
		if (!mt_bundle_is_type(path, S_IFDIR))
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
	if (objects_only) /* not extracted */
		b->perf_data[0] = '\0';
	else if (!mt_bundle_is_type(b->perf_data, S_IFREG))
		return mt_err_set(err, MT_EFORMAT, "%s: no perf.data in the bundle", name);
	snprintf(b->root, sizeof b->root, "%s/root", b->dir);
	if (mkdir(b->root, 0755) && errno != EEXIST)
		return mt_err_set(err, MT_EIO, "%s: %s", b->root, strerror(errno));
	snprintf(b->buildid_dir, sizeof b->buildid_dir, "%s/.debug", b->dir);
	snprintf(path, sizeof path, "%s/kcore_dir", b->dir);
	if (mt_bundle_is_type(path, S_IFDIR))
		snprintf(b->kcore_dir, sizeof b->kcore_dir, "%s", path);
	snprintf(path, sizeof path, "%s/kallsyms", b->dir);
	if (mt_bundle_is_type(path, S_IFREG))
		snprintf(b->kallsyms, sizeof b->kallsyms, "%s", path);
	snprintf(b->perf_maps, sizeof b->perf_maps, "%s/perf-maps", b->dir);
	return 0;
}

static void track(struct mt_bundle *b);
static void untrack(struct mt_bundle *b);

static int open_fd(struct mt_bundle *b, int fd, const char *name, const void *prefix, size_t prefix_len,
		   bool objects_only, struct mt_err *err)
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
		/* from here a signal removes it: ^C in the middle of a large
		 * perf.data's extraction leaves nothing */
		track(b);
		rc = mt_bundle_walk(fd, name, prefix, prefix_len, b->dir, NULL, NULL, NULL, objects_only, err);
	}
	if (fd > 0)
		close(fd);
	if (!rc)
		rc = check_bundle(b, name, objects_only, err);
	if (rc)
		mt_bundle_close(b);
	return rc;
}

int mt_bundle_open_fd(struct mt_bundle *b, int fd, const char *name, const void *prefix, size_t prefix_len,
		      struct mt_err *err)
{
	return open_fd(b, fd, name, prefix, prefix_len, false, err);
}

int mt_bundle_open(struct mt_bundle *b, const char *path, struct mt_err *err)
{
	int fd;
	memset(b, 0, sizeof *b);
	if (mt_bundle_open_input(path, &fd, err))
		return err->code;
	return mt_bundle_open_fd(b, fd, strcmp(path, "-") ? path : "standard input", NULL, 0, err);
}

int mt_bundle_open_objects(struct mt_bundle *b, int fd, const char *path, struct mt_err *err)
{
	memset(b, 0, sizeof *b);
	if (fd < 0 && mt_bundle_open_input(path, &fd, err))
		return err->code;
	return open_fd(b, fd, strcmp(path, "-") ? path : "standard input", NULL, 0, true, err);
}

void mt_bundle_close(struct mt_bundle *b)
{
	untrack(b);
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

/* on a signal: the extracted copy must not outlive the process (nftw is
 * not async-signal-safe, but the process is ending) */
static void remove_on_signal(void *ctx)
{
	(void)ctx;
	for (size_t i = 0; i < 4; i++)
		if (open_bundles[i])
			mt_bundle_remove_tree(open_bundles[i]->dir);
}

/* Every open bundle's directory is removed by a signal that ends the
 * process, from the moment it is made. */
static void track(struct mt_bundle *b)
{
	static bool registered;
	if (!registered) {
		registered = true;
		mt_onsignal_add(remove_on_signal, NULL);
	}
	for (size_t i = 0; i < 4; i++)
		if (!open_bundles[i]) {
			open_bundles[i] = b;
			return;
		}
}

static void untrack(struct mt_bundle *b)
{
	for (size_t i = 0; i < 4; i++)
		if (open_bundles[i] == b)
			open_bundles[i] = NULL;
}

void mt_bundle_close_at_exit(struct mt_bundle *b)
{
	static bool registered;
	if (!registered) {
		registered = true;
		atexit(close_all);
	}
	(void)b; /* tracked since it was opened */
}

