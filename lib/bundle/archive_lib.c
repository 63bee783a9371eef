/* archive_lib: libarchive through dlopen (see archive_lib.h). The library
 * stays loaded once opened. */
#define _GNU_SOURCE
#define MT_ARCHIVE_LIB_SELF
#include "bundle/archive_lib.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

struct mt_archive_lib mt_archive_lib;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static char load_failure[400]; /* empty: loaded */

static void load(void)
{
	void *h = dlopen(MT_ARCHIVE_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *why = dlerror();
		snprintf(load_failure, sizeof load_failure, "%s", why ? why : MT_ARCHIVE_SONAME);
		return;
	}
	/* ISO C has no cast between object and function pointers: the
	 * pointer's bytes are copied */
#define MT_ARCHIVE_SYM(f)                                                                            \
	if (!load_failure[0]) {                                                                      \
		void *p = dlsym(h, #f);                                                              \
		if (p)                                                                               \
			memcpy(&mt_archive_lib.f, &p, sizeof p);                                     \
		else                                                                                 \
			snprintf(load_failure, sizeof load_failure, "%s has no %s", MT_ARCHIVE_SONAME, #f); \
	}
	MT_ARCHIVE_FUNCS(MT_ARCHIVE_SYM)
#undef MT_ARCHIVE_SYM
}

int mt_archive_load(struct mt_err *err)
{
	pthread_once(&load_once, load);
	if (load_failure[0])
		return mt_err_set(err, MT_EUNSUP, "cannot load libarchive (bundles): %s", load_failure);
	return 0;
}
