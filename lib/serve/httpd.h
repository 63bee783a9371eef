/* httpd: a file server for one viewer on the loopback interface
 * (mt-view): GET and HEAD only, one connection at a time, and only what
 * it was given: named files at fixed paths (the trace) and the regular
 * files under one directory (the viewer's build). No listing of any
 * directory, no path that leaves the directory (a ".." segment, a
 * symlink out, an encoded one), nothing else on the host. */
#ifndef MT_HTTPD_H
#define MT_HTTPD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/mt_err.h"

#define MT_HTTPD_FILES 8

struct mt_httpd {
	int fd;
	uint16_t port;                 /* the port bound (a free one when asked for 0) */
	char root[4096];               /* the viewer's directory, resolved; "" none */
	struct { char url[256], path[4096], type[64]; } files[MT_HTTPD_FILES];
	size_t nfiles;
	uint64_t served, refused;      /* requests answered 200 / otherwise */
};

/* Binds 127.0.0.1:port (0: a free port) and listens. */
int mt_httpd_open(struct mt_httpd *h, uint16_t port, struct mt_err *err);
/* The directory whose regular files are served at their relative paths
 * ("/" is its index.html). */
int mt_httpd_set_root(struct mt_httpd *h, const char *dir, struct mt_err *err);
/* One file at one URL path ("/trace.json"). */
int mt_httpd_add_file(struct mt_httpd *h, const char *url, const char *path, const char *type, struct mt_err *err);
/* The content type of a name, by its ending. */
const char *mt_httpd_type_of(const char *name);
/* The file a request path names, resolved: 200 and path filled, 404 when
 * none (or one outside the root), 400 for a malformed path. Exposed for
 * the unit test. */
int mt_httpd_resolve(const struct mt_httpd *h, const char *target, char *path, size_t cap);
/* Answers connections until stop is set (a signal) or accept fails.
 * Returns 0 when stopped. */
int mt_httpd_serve(struct mt_httpd *h, volatile int *stop, struct mt_err *err);
void mt_httpd_close(struct mt_httpd *h);

#endif
