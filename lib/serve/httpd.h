/* httpd: a file server for one viewer on the loopback interface
 * (mt-view). GET and HEAD only, and only what it was given: every file is
 * opened when it is added, before serving starts, and answered from that
 * descriptor (a file swapped for a symlink afterwards changes nothing);
 * a request names one of them exactly or gets 404, so no path can lead
 * elsewhere on the host.
 *
 * Only the user who started it: every URL begins with a random secret
 * (/TOKEN/..., as Jupyter's token; the viewer's relative URLs keep it),
 * a request without it gets 403, and a Host header other than
 * 127.0.0.1:PORT, localhost:PORT or [::1]:PORT gets 421 (a page on
 * another site that rebinds its name to 127.0.0.1 cannot read the trace).
 *
 * One stalled client stops nothing: each connection has its own thread
 * (at most MT_HTTPD_CONNS at once; more get 503), a request's whole head
 * must arrive within the timeout, a send that makes no progress for the
 * timeout ends its connection, and a signal ends serving at once whatever
 * the clients do. */
#ifndef MT_HTTPD_H
#define MT_HTTPD_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/mt_err.h"

#define MT_HTTPD_MAX_FILES 4096  /* a viewer's build: speedscope has 15, Perfetto's UI some hundred */
#define MT_HTTPD_CONNS 64
#define MT_HTTPD_TOKEN_LEN 32    /* hex digits: 128 random bits */

struct mt_httpd_file {
	char *url;             /* "/index.html": the path after the token */
	int fd;
	char type[64];
};

struct mt_httpd {
	int fd;
	uint16_t port;             /* the port bound (a free one when asked for 0) */
	char token[MT_HTTPD_TOKEN_LEN + 1];
	unsigned timeout_ms;       /* a request head's deadline; a stalled send's limit */
	struct mt_httpd_file *files;
	size_t nfiles;
	uint64_t served, refused;  /* requests answered 200 / otherwise (atomic) */
	unsigned conns;            /* connections being answered (atomic) */
};

/* Binds 127.0.0.1:port (0: a free port), listens, and draws the token. */
int mt_httpd_open(struct mt_httpd *h, uint16_t port, struct mt_err *err);
/* Every regular file under dir at its relative path, and its index.html
 * also at "/". Symlinks are not followed (not served); more than
 * MT_HTTPD_MAX_FILES files, or a tree deeper than 32, is an error. */
int mt_httpd_add_dir(struct mt_httpd *h, const char *dir, struct mt_err *err);
/* One file at one URL path ("/trace.json"); a URL given again is the
 * newer file's. type NULL: by the name's ending. */
int mt_httpd_add_file(struct mt_httpd *h, const char *url, const char *path, const char *type, struct mt_err *err);
/* The content type of a name, by its ending. */
const char *mt_httpd_type_of(const char *name);
/* Whether a Host header names this server: 127.0.0.1, localhost or [::1]
 * with its port. */
bool mt_httpd_host_ok(const struct mt_httpd *h, const char *host);
/* What a request target gets: 200 with *file set, 403 without the token,
 * 404 for no file of ours, 400 for a malformed path. */
int mt_httpd_resolve(const struct mt_httpd *h, const char *target, const struct mt_httpd_file **file);
/* Answers connections until *stop is set by a signal (SIGINT, SIGTERM and
 * SIGHUP reach only this thread while it waits; the connections' threads
 * block them) or accept fails. Returns 0 when stopped; connections still
 * open are left to end with the process. */
int mt_httpd_serve(struct mt_httpd *h, volatile sig_atomic_t *stop, struct mt_err *err);
void mt_httpd_close(struct mt_httpd *h);

#endif
