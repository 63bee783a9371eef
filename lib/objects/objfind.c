#define _GNU_SOURCE
#include "objects/objfind.h"
#include "objects/elfnotes.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/mt_err.h"
#include "base/strtab.h"

static bool is_file(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

bool mt_obj_under(const char *root, const char *p)
{
	char r[PATH_MAX], f[PATH_MAX];
	if (!realpath(root, r) || !realpath(p, f))
		return false;
	size_t n = strlen(r);
	if (n == 1) /* root "/": everything is under it */
		return true;
	return !strncmp(f, r, n) && f[n] == '/';
}

int mt_obj_find(const char *path, const uint8_t *build_id, unsigned build_id_size, const char *symfs,
		const char *buildid_dir, char *out, size_t outsz)
{
	char home_debug[4096];
	if (!buildid_dir) {
		const char *home = getenv("HOME");
		snprintf(home_debug, sizeof home_debug, "%s/.debug", home ? home : "");
		buildid_dir = home ? home_debug : NULL;
	}
	if (build_id && build_id_size && buildid_dir) {
		char hex[41];
		mt_hex(build_id, build_id_size < 20 ? build_id_size : 20, hex);
		/* perf's cache: .build-id/xx/rest/elf (the exact file, so first) */
		snprintf(out, outsz, "%s/.build-id/%.2s/%s/elf", buildid_dir, hex, hex + 2);
		if (is_file(out))
			return 0;
	}
	if (symfs && *symfs) {
		/* normalized, then checked: a trace's "../../etc/x" or a link in
		 * the root that leads out is not found */
		snprintf(out, outsz, "%s/%s", symfs, path);
		if (is_file(out) && mt_obj_under(symfs, out))
			return 0;
		return MT_EIO;
	}
	snprintf(out, outsz, "%s", path);
	return is_file(out) ? 0 : MT_EIO;
}

bool mt_obj_vdso_cached(const char *buildid_dir, const char *bid, char *out, size_t outsz)
{
	const char *home = getenv("HOME");
	if (!bid[0] || (!home && !buildid_dir) || strspn(bid, "0123456789abcdef") != strlen(bid))
		return false; /* a build-id is hex: no "/.." from a trace */
	if (buildid_dir)
		snprintf(out, outsz, "%s/[vdso]/%s/vdso", buildid_dir, bid);
	else
		snprintf(out, outsz, "%s/.debug/[vdso]/%s/vdso", home, bid);
	return access(out, R_OK) == 0;
}

int mt_obj_debug_candidates(Elf *elf, const char *path, const char *orig_path, const char *symfs,
			    char cand[MT_OBJ_DEBUG_CANDIDATES][MT_OBJ_PATH_MAX])
{
	int ncand = 0;
	const char *root = symfs ? symfs : "";
	const void *idp;
	ssize_t idlen = mt_elf_gnu_build_id(elf, &idp);
	if (idlen > 1) {
		char hex[41];
		mt_hex(idp, idlen < 20 ? (size_t)idlen : 20, hex);
		snprintf(cand[ncand++], MT_OBJ_PATH_MAX, "%s/usr/lib/debug/.build-id/%.2s/%s.debug", root, hex, hex + 2);
	}
	uint32_t crc;
	const char *link = mt_elf_gnu_debuglink(elf, &crc);
	if (link && !strchr(link, '/')) {
		char dir[4096];
		snprintf(dir, sizeof dir, "%s", path);
		char *slash = strrchr(dir, '/');
		if (slash)
			*slash = '\0';
		/* dir is already under --symfs; the /usr/lib/debug form is not */
		size_t odl = strrchr(orig_path, '/') ? (size_t)(strrchr(orig_path, '/') - orig_path) : 0;
		snprintf(cand[ncand++], MT_OBJ_PATH_MAX, "%s/%s", dir, link);
		snprintf(cand[ncand++], MT_OBJ_PATH_MAX, "%s/.debug/%s", dir, link);
		snprintf(cand[ncand++], MT_OBJ_PATH_MAX, "%s/usr/lib/debug%.*s/%s", root, (int)odl, orig_path, link);
	}
	/* under a --symfs root, each must lie inside it once normalized (the
	 * trace's own path and debuglink name are in them) */
	if (symfs && *symfs) {
		int kept = 0;
		for (int i = 0; i < ncand; i++)
			if (access(cand[i], F_OK) || mt_obj_under(symfs, cand[i]))
				memmove(cand[kept++], cand[i], MT_OBJ_PATH_MAX);
		ncand = kept;
	}
	return ncand;
}
