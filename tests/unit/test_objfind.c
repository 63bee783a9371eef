/* Unit tests of object lookup (objects/objfind.c), TAP output. Oracle:
 * perf's layout and order (tools/perf/util/build-id.c, symbol.c): the
 * build-id cache's DIR/.build-id/xx/rest/elf first (the exact file), then
 * --symfs + the path (and nothing outside the symfs when one is given),
 * then the path itself; separate debug info at
 * /usr/lib/debug/.build-id/xx/rest.debug, and .gnu_debuglink's name beside
 * the file, in its .debug/ and under /usr/lib/debug + its directory. */
#define _GNU_SOURCE
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "objects/objfind.h"

#include "tap.h"

static char root[256];

static void touch(const char *rel)
{
	char p[1024], d[1100];
	snprintf(p, sizeof p, "%s/%s", root, rel);
	snprintf(d, sizeof d, "mkdir -p \"$(dirname '%s')\"", p);
	if (system(d))
		abort();
	FILE *f = fopen(p, "w");
	if (!f)
		abort();
	fclose(f);
}

static void test_find(void)
{
	const uint8_t bid[20] = {0xab, 0xcd, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
				 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12};
	char cache[300], symfs[300], out[1024], want[1024];
	snprintf(cache, sizeof cache, "%s/cache", root);
	snprintf(symfs, sizeof symfs, "%s/symfs", root);
	touch("cache/.build-id/ab/cd0102030405060708090a0b0c0d0e0f101112/elf");
	touch("symfs/usr/bin/app");
	touch("usr/bin/app");
	snprintf(want, sizeof want, "%s/.build-id/ab/cd0102030405060708090a0b0c0d0e0f101112/elf", cache);
	ok(!mt_obj_find("/usr/bin/app", bid, 20, symfs, cache, out, sizeof out) && !strcmp(out, want),
	   "the build-id cache's file comes first, before --symfs");
	snprintf(want, sizeof want, "%s//usr/bin/app", symfs);
	ok(!mt_obj_find("/usr/bin/app", NULL, 0, symfs, cache, out, sizeof out) && !strcmp(out, want),
	   "without a build-id: symfs + the path");
	char host[1024];
	snprintf(host, sizeof host, "%s/usr/bin/app", root);
	ok(mt_obj_find(host, NULL, 0, symfs, cache, out, sizeof out) != 0,
	   "with a symfs, a file outside it is never taken (the host's)");
	ok(!mt_obj_find(host, NULL, 0, NULL, cache, out, sizeof out) && !strcmp(out, host),
	   "without a symfs: the path itself");
	snprintf(want, sizeof want, "%s/cache/.build-id/ab/cd0102030405060708090a0b0c0d0e0f101112", root);
	if (mkdir(want, 0755) && access(want, F_OK))
		abort();
	char dirpath[1100];
	snprintf(dirpath, sizeof dirpath, "%s/usr/bin", root);
	ok(mt_obj_find(dirpath, NULL, 0, NULL, cache, out, sizeof out) != 0, "a directory is not an object");
	/* the vDSO in perf's cache */
	touch("cache/[vdso]/abcd/vdso");
	snprintf(want, sizeof want, "%s/[vdso]/abcd/vdso", cache);
	ok(mt_obj_vdso_cached(cache, "abcd", out, sizeof out) && !strcmp(out, want) &&
	   !mt_obj_vdso_cached(cache, "ef01", out, sizeof out) && !mt_obj_vdso_cached(cache, "", out, sizeof out),
	   "the vDSO by build-id in the cache ([vdso]/ID/vdso), none without one");
}

/* An ELF file with a build-id note and a .gnu_debuglink, made by the
 * toolchain itself (cc, objcopy). */
static void test_debug_candidates(void)
{
	char cmd[8192], path[1024];
	snprintf(path, sizeof path, "%s/bin/prog", root);
	snprintf(cmd, sizeof cmd,
		 "mkdir -p %s/bin && echo 'int main(void){return 0;}' > %s/p.c && "
		 "cc -Wl,--build-id=0x0123456789abcdef0123456789abcdef01234567 -o %s %s/p.c && "
		 "objcopy --only-keep-debug %s %s/prog.debug && objcopy --add-gnu-debuglink=%s/prog.debug %s",
		 root, root, path, root, path, root, root, path);
	if (system(cmd)) {
		ok(0, "separate debug info candidates (cc and objcopy failed)");
		return;
	}
	elf_version(EV_CURRENT);
	FILE *f = fopen(path, "r");
	Elf *elf = f ? elf_begin(fileno(f), ELF_C_READ, NULL) : NULL;
	char cand[MT_OBJ_DEBUG_CANDIDATES][MT_OBJ_PATH_MAX];
	int n = elf ? mt_obj_debug_candidates(elf, path, "/opt/app/bin/prog", "/sym", cand) : 0;
	char w0[1200], w1[1200], w2[1200];
	snprintf(w0, sizeof w0, "%s/bin/prog.debug", root);
	snprintf(w1, sizeof w1, "%s/bin/.debug/prog.debug", root);
	snprintf(w2, sizeof w2, "/sym/usr/lib/debug/opt/app/bin/prog.debug");
	ok(n == 4 && !strcmp(cand[0], "/sym/usr/lib/debug/.build-id/01/23456789abcdef0123456789abcdef01234567.debug") &&
	   !strcmp(cand[1], w0) && !strcmp(cand[2], w1) && !strcmp(cand[3], w2),
	   "separate debug info: by build-id under the symfs, then the debuglink beside, in .debug/, under /usr/lib/debug");
	if (elf)
		elf_end(elf);
	if (f)
		fclose(f);
}

int main(void)
{
	snprintf(root, sizeof root, "/tmp/mt-test-objfind.XXXXXX");
	if (!mkdtemp(root))
		return 1;
	test_find();
	test_debug_candidates();
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
	if (system(cmd))
		return 1;
	return tap_done();
}
