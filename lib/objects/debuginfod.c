/* debuginfod: libdebuginfod through dlopen (see debuginfod.h). The
 * functions' types come from elfutils' header, so a changed signature
 * fails the build, not a run. The library stays loaded once opened: its
 * curl state outlives any one client. */
#define _GNU_SOURCE
#include "objects/debuginfod.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include <elfutils/debuginfod.h>

struct mt_debuginfod {
	debuginfod_client *client;
	__typeof__(debuginfod_find_debuginfo) *find_debuginfo;
	__typeof__(debuginfod_end) *end;
};

/* A function of lib by name, as a pointer to void (ISO C has no cast
 * between function and object pointers: the bytes are copied). */
static int sym(void *lib, const char *name, void *fnp, size_t size, const char *soname, struct mt_err *err)
{
	void *p = dlsym(lib, name);
	if (!p)
		return mt_err_set(err, MT_EUNSUP, "%s has no %s", soname, name);
	memcpy(fnp, &p, size);
	return 0;
}

struct mt_debuginfod *mt_debuginfod_begin(const char *lib, struct mt_err *err)
{
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *why = dlerror();
		mt_err_set(err, MT_EUNSUP, "%s", why ? why : lib);
		return NULL;
	}
	__typeof__(debuginfod_begin) *begin = NULL;
	struct mt_debuginfod c;
	if (sym(h, "debuginfod_begin", &begin, sizeof begin, lib, err) ||
	    sym(h, "debuginfod_find_debuginfo", &c.find_debuginfo, sizeof c.find_debuginfo, lib, err) ||
	    sym(h, "debuginfod_end", &c.end, sizeof c.end, lib, err)) {
		dlclose(h);
		return NULL;
	}
	if (!(c.client = begin())) {
		mt_err_set(err, MT_EUNSUP, "debuginfod_begin failed");
		return NULL;
	}
	struct mt_debuginfod *r = malloc(sizeof *r);
	if (!r) {
		c.end(c.client);
		mt_err_set(err, MT_ENOMEM, "out of memory");
		return NULL;
	}
	*r = c;
	return r;
}

int mt_debuginfod_find_debuginfo(struct mt_debuginfod *c, const unsigned char *id, int idlen, char **path)
{
	return c->find_debuginfo(c->client, id, idlen, path);
}

void mt_debuginfod_end(struct mt_debuginfod *c)
{
	if (!c)
		return;
	c->end(c->client);
	free(c);
}
