/* debuginfod: the library is not there until a client is asked for, then
 * it is; a library that is missing, or is not libdebuginfod, is an error
 * that names it; a client asks no server when none is listed. Oracles: the
 * dynamic loader (dlopen's RTLD_NOLOAD), debuginfod_find_debuginfo(3)
 * (-ENOSYS without DEBUGINFOD_URLS). A real server: symbolize.bats. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "objects/debuginfod.h"
#include "tap.h"

static int loaded(void)
{
	void *h = dlopen(MT_DEBUGINFOD_SONAME, RTLD_LAZY | RTLD_NOLOAD);
	if (h)
		dlclose(h);
	return h != NULL;
}

int main(void)
{
	char cache[] = "/tmp/test_debuginfod.XXXXXX";
	if (!mkdtemp(cache))
		return 1;
	setenv("DEBUGINFOD_CACHE_PATH", cache, 1);
	unsetenv("DEBUGINFOD_URLS");

	ok(!loaded(), "not linked: libdebuginfod is not loaded before a client is asked for");

	struct mt_err err = {0};
	ok(!mt_debuginfod_begin("libmt-no-such-library.so.0", &err) && err.code == MT_EUNSUP &&
		   strstr(err.msg, "libmt-no-such-library.so.0"),
	   "a missing library: no client, an error naming it");
	mt_err_clear(&err);
	ok(!mt_debuginfod_begin("libc.so.6", &err) && err.code == MT_EUNSUP &&
		   !strcmp(err.msg, "libc.so.6 has no debuginfod_begin"),
	   "a library without debuginfod's functions: no client, an error naming the function");
	ok(!loaded(), "failed attempts load nothing of libdebuginfod");

	mt_err_clear(&err);
	struct mt_debuginfod *c = mt_debuginfod_begin(MT_DEBUGINFOD_SONAME, &err);
	ok(c && !err.code, "a client from libdebuginfod.so.1");
	ok(loaded(), "the library is loaded once a client is made");
	if (c) {
		static const unsigned char id[20] = {0x12, 0x34, 0x56, 0x78, 0x9a};
		char *path = NULL;
		int fd = mt_debuginfod_find_debuginfo(c, id, sizeof id, &path);
		ok(fd == -ENOSYS && !path, "no server listed: -ENOSYS, no path (debuginfod_find_debuginfo(3))");
		if (fd >= 0)
			close(fd);
		free(path);
	}
	mt_debuginfod_end(c);
	mt_debuginfod_end(NULL); /* as free(NULL) */

	char cmd[64];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", cache);
	if (system(cmd) != 0)
		return 1;
	return tap_done();
}
