/* httpd: which file a request target names (only the files added, only
 * under the token), which Host headers pass, and that a tree made here
 * with a symlink out and a directory serves neither; then real requests
 * over loopback: one answered while another client stalls, the head's
 * deadline, a file swapped after it was added. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "serve/httpd.h"
#include "tap.h"

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static volatile sig_atomic_t stop;
static void *serve(void *h)
{
	struct mt_err err;
	mt_httpd_serve(h, &stop, &err);
	return NULL;
}

static int dial(uint16_t port)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (connect(s, (struct sockaddr *)&a, sizeof a)) {
		close(s);
		return -1;
	}
	return s;
}

/* One request, its whole answer in resp. */
static void ask(uint16_t port, const char *req, char *resp, size_t cap)
{
	resp[0] = '\0';
	int s = dial(port);
	if (s < 0)
		return;
	if (write(s, req, strlen(req)) > 0) {
		size_t n = 0;
		ssize_t r;
		while (n + 1 < cap && (r = read(s, resp + n, cap - 1 - n)) > 0)
			n += (size_t)r;
		resp[n] = '\0';
	}
	close(s);
}

static int code_of(const struct mt_httpd *h, const char *target)
{
	const struct mt_httpd_file *f;
	char t[8192];
	snprintf(t, sizeof t, "/%s%s", h->token, target);
	return mt_httpd_resolve(h, t, &f);
}

int main(void)
{
	char dir[] = "/tmp/test_httpd.XXXXXX", p[PATH_MAX + 64], q[PATH_MAX + 64];
	if (!mkdtemp(dir))
		return 1;
	snprintf(p, sizeof p, "%s/www", dir);
	mkdir(p, 0755);
	snprintf(p, sizeof p, "%s/www/index.html", dir);
	put(p, "<html>viewer</html>");
	snprintf(p, sizeof p, "%s/www/sub", dir);
	mkdir(p, 0755);
	snprintf(p, sizeof p, "%s/www/sub/app.js", dir);
	put(p, "js");
	snprintf(p, sizeof p, "%s/secret", dir);
	put(p, "secret");
	snprintf(q, sizeof q, "%s/www/out", dir);
	if (symlink(p, q))
		return 1;
	snprintf(p, sizeof p, "%s/trace.json", dir);
	put(p, "{}");

	struct mt_httpd h;
	struct mt_err err = {0};
	ok(!mt_httpd_open(&h, 0, &err) && h.port > 0, "bound to a free port");
	ok(strlen(h.token) == MT_HTTPD_TOKEN_LEN && strspn(h.token, "0123456789abcdef") == MT_HTTPD_TOKEN_LEN,
	   "a token of 32 hex digits");
	struct mt_httpd other;
	ok(!mt_httpd_open(&other, 0, &err) && strcmp(other.token, h.token), "another server: another token");
	mt_httpd_close(&other);
	snprintf(p, sizeof p, "%s/www", dir);
	ok(!mt_httpd_add_dir(&h, p, &err), "the viewer's directory");
	snprintf(p, sizeof p, "%s/trace.json", dir);
	ok(!mt_httpd_add_file(&h, "/trace.json", p, NULL, &err), "the trace at /trace.json");
	ok(code_of(&h, "/") == 200 && code_of(&h, "/index.html") == 200, "/ is index.html");
	ok(code_of(&h, "/sub/app.js?x=1#y") == 200, "a file under it, query and fragment aside");
	ok(code_of(&h, "/trace.json") == 200 && code_of(&h, "/%74race.json") == 200, "the trace; percent-encoding decoded");
	static const char *const refused[] = {
		"/../secret", "/sub/../../secret", "/%2e%2e/secret", "/%2E%2E%2Fsecret", "/sub/", "/sub", "/out",
		"//etc/passwd", "/./index.html", "/nothing", "/etc/passwd", "/..%5csecret", "/sub/./app.js", "/sub//app.js",
	};
	int bad = 0;
	for (size_t i = 0; i < sizeof refused / sizeof *refused; i++)
		if (code_of(&h, refused[i]) != 404) {
			printf("# %s: %d\n", refused[i], code_of(&h, refused[i]));
			bad++;
		}
	ok(!bad, "404: .., encoded .., a directory, a symlink out, //, ., absent files");
	const struct mt_httpd_file *f;
	char t[128];
	snprintf(t, sizeof t, "/%.31s/trace.json", h.token);
	int short_token = mt_httpd_resolve(&h, t, &f);
	snprintf(t, sizeof t, "/%.31sx/trace.json", h.token);
	int wrong_token = mt_httpd_resolve(&h, t, &f);
	snprintf(t, sizeof t, "/%s", h.token);
	int bare_token = mt_httpd_resolve(&h, t, &f);
	ok(mt_httpd_resolve(&h, "/trace.json", &f) == 403 && mt_httpd_resolve(&h, "/", &f) == 403 && short_token == 403 &&
		   wrong_token == 403 && bare_token == 403,
	   "403 without the token, with a wrong one, one too short");
	ok(mt_httpd_resolve(&h, "/%zz", &f) == 400 && code_of(&h, "/a%00b") == 400 && mt_httpd_resolve(&h, "x", &f) == 400,
	   "400: a bad escape, NUL, no leading /");
	char host[64];
	snprintf(host, sizeof host, "127.0.0.1:%u", h.port);
	bool hosts_ok = mt_httpd_host_ok(&h, host);
	snprintf(host, sizeof host, "LocalHost:%u", h.port);
	hosts_ok = hosts_ok && mt_httpd_host_ok(&h, host);
	snprintf(host, sizeof host, "[::1]:%u", h.port);
	hosts_ok = hosts_ok && mt_httpd_host_ok(&h, host);
	ok(hosts_ok, "Host: 127.0.0.1, localhost, [::1] with the port");
	snprintf(host, sizeof host, "evil.example:%u", h.port);
	bool any_bad = mt_httpd_host_ok(&h, host) || mt_httpd_host_ok(&h, "127.0.0.1") || mt_httpd_host_ok(&h, "") ||
		       mt_httpd_host_ok(&h, "127.0.0.1:1");
	snprintf(host, sizeof host, "127.0.0.1:%ux", h.port);
	any_bad = any_bad || mt_httpd_host_ok(&h, host);
	snprintf(host, sizeof host, "localhost.evil.example:%u", h.port);
	any_bad = any_bad || mt_httpd_host_ok(&h, host);
	ok(!any_bad, "refused: another name, no port, another port, junk after it, a name that begins as ours");

	/* the trace swapped for a symlink to the secret after it was added:
	 * the descriptor opened at the start is still what is served */
	snprintf(p, sizeof p, "%s/trace.json", dir);
	snprintf(q, sizeof q, "%s/secret", dir);
	unlink(p);
	if (symlink(q, p))
		return 1;

	h.timeout_ms = 500;
	pthread_t th;
	pthread_create(&th, NULL, serve, &h);
	char req[512], resp[4096];
	/* a client that sends half a head and stalls */
	int stalled = dial(h.port);
	if (stalled < 0 || write(stalled, "GET / HTTP/1.1\r\nHost: 127", 25) != 25)
		return 1;
	snprintf(req, sizeof req, "GET /%s/trace.json HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n\r\n", h.token, h.port);
	ask(h.port, req, resp, sizeof resp);
	ok(!strncmp(resp, "HTTP/1.1 200 OK\r\n", 17) && strstr(resp, "Content-Type: application/json") &&
		   strstr(resp, "\r\n\r\n{}") && !strstr(resp, "secret"),
	   "answered while another client stalls; the file as it was when added, not the symlink put there since");
	struct pollfd pf = {.fd = stalled, .events = POLLIN};
	int ready = poll(&pf, 1, 3000);
	char got[256] = "";
	ssize_t gn = ready == 1 ? read(stalled, got, sizeof got - 1) : -1;
	if (gn > 0)
		got[gn] = '\0';
	ok(ready == 1 && !strncmp(got, "HTTP/1.1 408", 12), "the stalled head: 408 at the deadline, connection closed");
	close(stalled);
	snprintf(req, sizeof req, "GET /%s/trace.json HTTP/1.1\r\nHost: attacker.example\r\n\r\n", h.token);
	ask(h.port, req, resp, sizeof resp);
	ok(!strncmp(resp, "HTTP/1.1 421", 12) && !strstr(resp, "{}"), "another Host: 421, nothing served");
	snprintf(req, sizeof req, "GET /%s/trace.json HTTP/1.1\r\n\r\n", h.token);
	ask(h.port, req, resp, sizeof resp);
	ok(!strncmp(resp, "HTTP/1.1 400", 12), "no Host: 400");
	snprintf(req, sizeof req, "GET /trace.json HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n\r\n", h.port);
	ask(h.port, req, resp, sizeof resp);
	ok(!strncmp(resp, "HTTP/1.1 403", 12), "no token: 403");
	snprintf(req, sizeof req, "POST /%s/ HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n\r\n", h.token, h.port);
	ask(h.port, req, resp, sizeof resp);
	ok(!strncmp(resp, "HTTP/1.1 405", 12), "POST: 405");
	stop = 1;
	int s = dial(h.port); /* wakes the loop to see stop */
	if (s >= 0)
		close(s);
	pthread_join(th, NULL);
	ok(h.served == 1 && h.refused == 5, "1 served, 5 refused, counted");
	mt_httpd_close(&h);
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	if (system(cmd))
		return 1;
	return tap_done();
}
