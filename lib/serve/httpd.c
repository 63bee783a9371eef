/* httpd: the loopback file server (httpd.h). */
#define _GNU_SOURCE
#include "serve/httpd.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define HEAD_MAX 8192

int mt_httpd_open(struct mt_httpd *h, uint16_t port, struct mt_err *err)
{
	memset(h, 0, sizeof *h);
	h->timeout_ms = 10000;
	unsigned char r[MT_HTTPD_TOKEN_LEN / 2];
	size_t got = 0;
	while (got < sizeof r) {
		ssize_t n = getrandom(r + got, sizeof r - got, 0);
		if (n < 0 && errno != EINTR)
			return mt_err_set(err, MT_EIO, "getrandom: %s", strerror(errno));
		got += n > 0 ? (size_t)n : 0;
	}
	for (size_t i = 0; i < sizeof r; i++)
		snprintf(h->token + 2 * i, 3, "%02x", r[i]);
	/* a viewer's build may have hundreds of files, each held open */
	struct rlimit rl;
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	h->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (h->fd < 0)
		return mt_err_set(err, MT_EIO, "socket: %s", strerror(errno));
	int one = 1;
	setsockopt(h->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (bind(h->fd, (struct sockaddr *)&a, sizeof a) || listen(h->fd, 64)) {
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

static int add_fd(struct mt_httpd *h, const char *url, int fd, const char *type, struct mt_err *err)
{
	if (h->nfiles == MT_HTTPD_MAX_FILES) {
		close(fd);
		return mt_err_set(err, MT_EUSAGE, "more than %d files to serve", MT_HTTPD_MAX_FILES);
	}
	if (!(h->nfiles & (h->nfiles + 1)) || !h->files) { /* grown at 0, 1, 3, 7, ...: doubled */
		struct mt_httpd_file *f = realloc(h->files, (2 * h->nfiles + 2) * sizeof *f);
		if (!f) {
			close(fd);
			return mt_err_set(err, MT_ENOMEM, "out of memory");
		}
		h->files = f;
	}
	struct mt_httpd_file *f = &h->files[h->nfiles];
	if (!(f->url = strdup(url))) {
		close(fd);
		return mt_err_set(err, MT_ENOMEM, "out of memory");
	}
	f->fd = fd;
	snprintf(f->type, sizeof f->type, "%s", type ? type : mt_httpd_type_of(url));
	h->nfiles++;
	return 0;
}

int mt_httpd_add_file(struct mt_httpd *h, const char *url, const char *path, const char *type, struct mt_err *err)
{
	if (url[0] != '/')
		return mt_err_set(err, MT_EUSAGE, "cannot serve %s at %s", path, url);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		int e = fd < 0 ? errno : EINVAL;
		if (fd >= 0)
			close(fd);
		return mt_err_set(err, MT_EIO, "%s: %s", path, e == EINVAL ? "not a regular file" : strerror(e));
	}
	fcntl(fd, F_SETFL, 0);
	return add_fd(h, url, fd, type ? type : mt_httpd_type_of(path), err);
}

/* dir's regular files, fd an open directory, url its URL path ("" the root) */
static int add_tree(struct mt_httpd *h, int dfd, const char *url, int depth, struct mt_err *err)
{
	if (depth > 32) {
		close(dfd);
		return mt_err_set(err, MT_EUSAGE, "%s: deeper than 32 directories", url);
	}
	DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return mt_err_set(err, MT_EIO, "%s: %s", url, strerror(errno));
	}
	struct dirent *e;
	int rc = 0;
	while (!rc && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		char u[PATH_MAX];
		if (snprintf(u, sizeof u, "%s/%s", url, e->d_name) >= (int)sizeof u)
			continue;
		int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
		struct stat st;
		if (fd < 0 || fstat(fd, &st)) { /* a symlink (ELOOP), or unreadable: not served */
			if (fd >= 0)
				close(fd);
			continue;
		}
		if (S_ISDIR(st.st_mode)) {
			rc = add_tree(h, fd, u, depth + 1, err);
		} else if (S_ISREG(st.st_mode)) {
			fcntl(fd, F_SETFL, 0);
			rc = add_fd(h, u, fd, NULL, err);
		} else {
			close(fd);
		}
	}
	closedir(d);
	return rc;
}

int mt_httpd_add_dir(struct mt_httpd *h, const char *dir, struct mt_err *err)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return mt_err_set(err, MT_EUSAGE, "%s: not a directory", dir);
	size_t first = h->nfiles;
	int rc = add_tree(h, fd, "", 0, err);
	if (rc)
		return rc;
	for (size_t i = first, n = h->nfiles; i < n; i++)
		if (!strcmp(h->files[i].url, "/index.html")) {
			int again = dup(h->files[i].fd);
			if (again < 0 || add_fd(h, "/", again, "text/html; charset=utf-8", err))
				return again < 0 ? mt_err_set(err, MT_EIO, "dup: %s", strerror(errno)) : -1;
			break;
		}
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

bool mt_httpd_host_ok(const struct mt_httpd *h, const char *host)
{
	static const char *const names[] = {"127.0.0.1", "localhost", "[::1]"};
	for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
		size_t k = strlen(names[i]);
		char *end;
		if (!strncasecmp(host, names[i], k) && host[k] == ':' && host[k + 1] >= '0' && host[k + 1] <= '9' &&
		    strtoul(host + k + 1, &end, 10) == h->port && !*end)
			return true;
	}
	return false;
}

static int hexval(int c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

int mt_httpd_resolve(const struct mt_httpd *h, const char *target, const struct mt_httpd_file **file)
{
	/* the path, percent-decoded, without its query or fragment */
	char p[4096];
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
		if (c == 0 || n + 1 >= sizeof p)
			return 400;
		p[n++] = (char)c;
	}
	p[n] = '\0';
	/* "/TOKEN/...": compared in time independent of where it differs */
	unsigned diff = n < MT_HTTPD_TOKEN_LEN + 2 || p[MT_HTTPD_TOKEN_LEN + 1] != '/';
	for (size_t i = 0; i < MT_HTTPD_TOKEN_LEN; i++)
		diff |= (unsigned)(i + 1 < n ? p[i + 1] : 0) ^ (unsigned)h->token[i];
	if (diff)
		return 403;
	const char *rest = p + MT_HTTPD_TOKEN_LEN + 1;
	for (size_t i = h->nfiles; i-- > 0;) /* the newest file at a URL wins */
		if (!strcmp(rest, h->files[i].url)) {
			*file = &h->files[i];
			return 200;
		}
	return 404;
}

static void send_all(int fd, const void *b, size_t n, bool *broken)
{
	const char *p = b;
	while (n && !*broken) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		if (w <= 0) { /* SO_SNDTIMEO: no progress for the timeout; or the client went */
			if (w < 0 && errno == EINTR)
				continue;
			*broken = true;
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
	bool broken = false;
	send_all(fd, b, (size_t)n, &broken);
}

static int64_t now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* A request's head, whole within the deadline: its length, 0 when it did
 * not come (closed, too long, too slow). */
static size_t read_head(int fd, char *req, size_t cap, unsigned timeout_ms)
{
	int64_t deadline = now_ms() + timeout_ms;
	size_t n = 0;
	while (n < cap - 1) {
		int64_t left = deadline - now_ms();
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			return 0;
		ssize_t r = recv(fd, req + n, cap - 1 - n, MSG_DONTWAIT);
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r <= 0)
			return 0;
		n += (size_t)r;
		req[n] = '\0';
		if (strstr(req, "\r\n\r\n") || strstr(req, "\n\n"))
			return n;
	}
	return 0;
}

/* The value of header name in a request head ("" none); -1 when it is
 * given twice. */
static int header(const char *req, const char *name, char *val, size_t cap)
{
	size_t k = strlen(name);
	int found = 0;
	val[0] = '\0';
	for (const char *l = strchr(req, '\n'); l && l[1] && l[1] != '\r' && l[1] != '\n'; l = strchr(l + 1, '\n')) {
		const char *s = l + 1;
		if (strncasecmp(s, name, k) || s[k] != ':')
			continue;
		if (found++)
			return -1;
		s += k + 1;
		while (*s == ' ' || *s == '\t')
			s++;
		size_t n = strcspn(s, "\r\n");
		while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
			n--;
		if (n >= cap)
			return -1;
		memcpy(val, s, n);
		val[n] = '\0';
	}
	return 0;
}

static bool answer(struct mt_httpd *h, int fd)
{
	char req[HEAD_MAX];
	if (!read_head(fd, req, sizeof req, h->timeout_ms)) {
		answer_status(fd, 408, "Request Timeout");
		return false;
	}
	char method[16], target[4096], version[16], host[256];
	if (sscanf(req, "%15s %4095s %15s", method, target, version) != 3 || strncmp(version, "HTTP/1.", 7) ||
	    header(req, "Host", host, sizeof host) || !host[0]) { /* HTTP/1.1 asks for one Host */
		answer_status(fd, 400, "Bad Request");
		return false;
	}
	if (!mt_httpd_host_ok(h, host)) {
		answer_status(fd, 421, "Misdirected Request");
		return false;
	}
	bool head = !strcmp(method, "HEAD");
	if (!head && strcmp(method, "GET")) {
		answer_status(fd, 405, "Method Not Allowed");
		return false;
	}
	const struct mt_httpd_file *f = NULL;
	int code = mt_httpd_resolve(h, target, &f);
	struct stat st;
	if (code != 200 || fstat(f->fd, &st)) {
		answer_status(fd, code == 200 ? 404 : code, code == 400 ? "Bad Request" : code == 403 ? "Forbidden" : "Not Found");
		return false;
	}
	char hd[512];
	int hn = snprintf(hd, sizeof hd,
			  "HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %lld\r\nCache-Control: no-store\r\n"
			  "X-Content-Type-Options: nosniff\r\nReferrer-Policy: no-referrer\r\nConnection: close\r\n\r\n",
			  f->type, (long long)st.st_size);
	bool broken = false;
	send_all(fd, hd, (size_t)hn, &broken);
	char buf[65536];
	for (off_t off = 0; !head && !broken && off < st.st_size;) {
		ssize_t r = pread(f->fd, buf, sizeof buf, off);
		if (r <= 0)
			break;
		send_all(fd, buf, (size_t)r, &broken);
		off += r;
	}
	return !broken;
}

struct conn {
	struct mt_httpd *h;
	int fd;
};

static void *connection(void *arg)
{
	struct conn c = *(struct conn *)arg;
	free(arg);
	struct timeval tv = {c.h->timeout_ms / 1000, (c.h->timeout_ms % 1000) * 1000};
	setsockopt(c.fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	__atomic_add_fetch(answer(c.h, c.fd) ? &c.h->served : &c.h->refused, 1, __ATOMIC_RELAXED);
	shutdown(c.fd, SHUT_WR);
	close(c.fd);
	__atomic_sub_fetch(&c.h->conns, 1, __ATOMIC_RELEASE);
	return NULL;
}

int mt_httpd_serve(struct mt_httpd *h, volatile sig_atomic_t *stop, struct mt_err *err)
{
	/* the stopping signals wait, blocked, until ppoll lets them in: never
	 * lost between the check of *stop and the wait, and never taken by a
	 * connection's thread (which inherit the blocked mask) */
	sigset_t stops, waiting, before;
	sigemptyset(&stops);
	sigaddset(&stops, SIGINT);
	sigaddset(&stops, SIGTERM);
	sigaddset(&stops, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &stops, &before);
	waiting = before;
	sigdelset(&waiting, SIGINT);
	sigdelset(&waiting, SIGTERM);
	sigdelset(&waiting, SIGHUP);
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256 << 10);
	int rc = 0;
	while (!*stop) {
		struct pollfd p = {.fd = h->fd, .events = POLLIN};
		if (ppoll(&p, 1, NULL, &waiting) < 0) {
			if (errno == EINTR)
				continue;
			rc = mt_err_set(err, MT_EIO, "poll: %s", strerror(errno));
			break;
		}
		if (*stop)
			break;
		int c = accept4(h->fd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0) {
			if (errno == EINTR || errno == ECONNABORTED || errno == EAGAIN || errno == EMFILE || errno == ENFILE)
				continue;
			rc = mt_err_set(err, MT_EIO, "accept: %s", strerror(errno));
			break;
		}
		struct conn *cn = malloc(sizeof *cn);
		pthread_t t;
		if (__atomic_load_n(&h->conns, __ATOMIC_ACQUIRE) >= MT_HTTPD_CONNS || !cn) {
			free(cn);
			static const char busy[] =
				"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
			send(c, busy, sizeof busy - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
			__atomic_add_fetch(&h->refused, 1, __ATOMIC_RELAXED);
			close(c);
			continue;
		}
		*cn = (struct conn){h, c};
		__atomic_add_fetch(&h->conns, 1, __ATOMIC_ACQ_REL);
		if (pthread_create(&t, &attr, connection, cn)) {
			__atomic_sub_fetch(&h->conns, 1, __ATOMIC_RELEASE);
			free(cn);
			close(c);
		}
	}
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &before, NULL);
	return rc;
}

void mt_httpd_close(struct mt_httpd *h)
{
	if (h->fd >= 0)
		close(h->fd);
	h->fd = -1;
	/* the files stay open while a connection may still read them */
	if (__atomic_load_n(&h->conns, __ATOMIC_ACQUIRE))
		return;
	for (size_t i = 0; i < h->nfiles; i++) {
		close(h->files[i].fd);
		free(h->files[i].url);
	}
	free(h->files);
	h->files = NULL;
	h->nfiles = 0;
}
