/* httpd: the loopback file server (httpd.h). */
#define _GNU_SOURCE
#include "serve/httpd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

int mt_httpd_open(struct mt_httpd *h, uint16_t port, struct mt_err *err)
{
	memset(h, 0, sizeof *h);
	h->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (h->fd < 0)
		return mt_err_set(err, MT_EIO, "socket: %s", strerror(errno));
	int one = 1;
	setsockopt(h->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (bind(h->fd, (struct sockaddr *)&a, sizeof a) || listen(h->fd, 16)) {
		int e = errno;
		close(h->fd);
		h->fd = -1;
		return mt_err_set(err, MT_EIO, "127.0.0.1:%u: %s", port, strerror(e));
	}
	socklen_t n = sizeof a;
	getsockname(h->fd, (struct sockaddr *)&a, &n);
	h->port = ntohs(a.sin_port);
	return 0;
}

int mt_httpd_set_root(struct mt_httpd *h, const char *dir, struct mt_err *err)
{
	char r[PATH_MAX];
	struct stat st;
	if (!realpath(dir, r) || stat(r, &st) || !S_ISDIR(st.st_mode) || strlen(r) >= sizeof h->root)
		return mt_err_set(err, MT_EUSAGE, "%s: not a directory", dir);
	snprintf(h->root, sizeof h->root, "%s", r);
	return 0;
}

int mt_httpd_add_file(struct mt_httpd *h, const char *url, const char *path, const char *type, struct mt_err *err)
{
	if (h->nfiles == MT_HTTPD_FILES || strlen(url) >= sizeof h->files[0].url || url[0] != '/')
		return mt_err_set(err, MT_EUSAGE, "cannot serve %s at %s", path, url);
	char r[PATH_MAX];
	if (!realpath(path, r))
		return mt_err_set(err, MT_EIO, "%s: %s", path, strerror(errno));
	snprintf(h->files[h->nfiles].url, sizeof h->files[0].url, "%s", url);
	snprintf(h->files[h->nfiles].path, sizeof h->files[0].path, "%s", r);
	snprintf(h->files[h->nfiles].type, sizeof h->files[0].type, "%s", type ? type : mt_httpd_type_of(path));
	h->nfiles++;
	return 0;
}

const char *mt_httpd_type_of(const char *name)
{
	static const struct { const char *end, *type; } types[] = {
		{".html", "text/html; charset=utf-8"}, {".js", "text/javascript"}, {".mjs", "text/javascript"},
		{".css", "text/css"}, {".json", "application/json"}, {".wasm", "application/wasm"},
		{".png", "image/png"}, {".ico", "image/x-icon"}, {".svg", "image/svg+xml"},
		{".woff2", "font/woff2"}, {".ttf", "font/ttf"}, {".txt", "text/plain; charset=utf-8"},
		{".folded", "text/plain; charset=utf-8"},
	};
	size_t n = strlen(name);
	for (size_t i = 0; i < sizeof types / sizeof *types; i++) {
		size_t k = strlen(types[i].end);
		if (n >= k && !strcmp(name + n - k, types[i].end))
			return types[i].type;
	}
	return "application/octet-stream";
}

static int hexval(int c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

int mt_httpd_resolve(const struct mt_httpd *h, const char *target, char *path, size_t cap)
{
	/* the path, percent-decoded, without its query or fragment */
	char p[2048];
	size_t n = 0;
	if (target[0] != '/')
		return 400;
	for (const char *s = target; *s && *s != '?' && *s != '#'; s++) {
		int c = (unsigned char)*s;
		if (c == '%') {
			int a = hexval(s[1]), b = a < 0 ? -1 : hexval(s[2]);
			if (b < 0)
				return 400;
			c = a * 16 + b;
			s += 2;
		}
		if (c == 0 || c == '\\' || n + 1 >= sizeof p)
			return 400;
		p[n++] = (char)c;
	}
	p[n] = '\0';
	for (size_t i = 0; i < h->nfiles; i++)
		if (!strcmp(p, h->files[i].url)) {
			snprintf(path, cap, "%s", h->files[i].path);
			return 200;
		}
	if (!h->root[0])
		return 404;
	/* no segment may be "." or "..", none empty (no "//"): no way out by name */
	for (const char *seg = p + 1; *seg;) {
		const char *end = strchr(seg, '/');
		size_t len = end ? (size_t)(end - seg) : strlen(seg);
		if ((len == 1 && seg[0] == '.') || (len == 2 && seg[0] == '.' && seg[1] == '.') || (!len && end))
			return 404;
		seg += len + (end != NULL);
	}
	char joined[sizeof h->root + sizeof p + 16], real[PATH_MAX];
	snprintf(joined, sizeof joined, "%s%s%s", h->root, p, !strcmp(p, "/") ? "index.html" : "");
	struct stat st;
	/* ... and none by a symlink: the file itself must lie under the root */
	if (!realpath(joined, real) || strncmp(real, h->root, strlen(h->root)) || real[strlen(h->root)] != '/' ||
	    stat(real, &st) || !S_ISREG(st.st_mode))
		return 404;
	snprintf(path, cap, "%s", real);
	return 200;
}

static void send_all(int fd, const void *b, size_t n)
{
	const char *p = b;
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		if (w <= 0) {
			if (w < 0 && errno == EINTR)
				continue;
			return;
		}
		p += w;
		n -= (size_t)w;
	}
}

static void answer_status(int fd, int code, const char *reason)
{
	char b[256];
	int n = snprintf(b, sizeof b,
			 "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s\n",
			 code, reason, strlen(reason) + 1, reason);
	send_all(fd, b, (size_t)n);
}

static void answer(struct mt_httpd *h, int fd)
{
	/* a request's head, at most 8 KB, within 10 s */
	struct timeval tv = {10, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	char req[8192];
	size_t n = 0;
	while (n < sizeof req - 1) {
		ssize_t r = recv(fd, req + n, sizeof req - 1 - n, 0);
		if (r <= 0)
			break;
		n += (size_t)r;
		req[n] = '\0';
		if (strstr(req, "\r\n\r\n") || strstr(req, "\n\n"))
			break;
	}
	req[n] = '\0';
	char method[16], target[4096];
	if (sscanf(req, "%15s %4095s", method, target) != 2) {
		h->refused++;
		answer_status(fd, 400, "Bad Request");
		return;
	}
	bool head = !strcmp(method, "HEAD");
	if (!head && strcmp(method, "GET")) {
		h->refused++;
		answer_status(fd, 405, "Method Not Allowed");
		return;
	}
	char path[PATH_MAX];
	int code = mt_httpd_resolve(h, target, path, sizeof path);
	int file = code == 200 ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	struct stat st;
	if (file < 0 || fstat(file, &st)) {
		if (file >= 0)
			close(file);
		h->refused++;
		answer_status(fd, code == 400 ? 400 : 404, code == 400 ? "Bad Request" : "Not Found");
		return;
	}
	const char *type = mt_httpd_type_of(path);
	for (size_t i = 0; i < h->nfiles; i++)
		if (!strcmp(path, h->files[i].path))
			type = h->files[i].type;
	char hd[512];
	int hn = snprintf(hd, sizeof hd,
			  "HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %lld\r\nCache-Control: no-store\r\n"
			  "X-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n",
			  type, (long long)st.st_size);
	send_all(fd, hd, (size_t)hn);
	char buf[65536];
	ssize_t r;
	while (!head && (r = read(file, buf, sizeof buf)) > 0)
		send_all(fd, buf, (size_t)r);
	close(file);
	h->served++;
}

int mt_httpd_serve(struct mt_httpd *h, volatile int *stop, struct mt_err *err)
{
	while (!*stop) {
		int c = accept4(h->fd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			return mt_err_set(err, MT_EIO, "accept: %s", strerror(errno));
		}
		answer(h, c);
		shutdown(c, SHUT_WR);
		close(c);
	}
	return 0;
}

void mt_httpd_close(struct mt_httpd *h)
{
	if (h->fd >= 0)
		close(h->fd);
	h->fd = -1;
}
