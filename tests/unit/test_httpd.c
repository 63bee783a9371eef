/* httpd: which file a request path names, and that nothing outside the
 * viewer's directory can be named (a tree made here, with a symlink out
 * and a directory, is the oracle); then one real request over loopback. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <limits.h>
#include <netinet/in.h>
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

static volatile int stop;
static void *serve(void *h)
{
	struct mt_err err;
	mt_httpd_serve(h, &stop, &err);
	return NULL;
}

int main(void)
{
	char dir[] = "/tmp/test_httpd.XXXXXX", p[PATH_MAX + 64], got[PATH_MAX];
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
	char link[PATH_MAX + 64];
	snprintf(link, sizeof link, "%s/www/out", dir);
	if (symlink(p, link))
		return 1;
	snprintf(p, sizeof p, "%s/trace.json", dir);
	put(p, "{}");

	struct mt_httpd h;
	struct mt_err err = {0};
	ok(!mt_httpd_open(&h, 0, &err) && h.port > 0, "bound to a free port");
	snprintf(p, sizeof p, "%s/www", dir);
	ok(!mt_httpd_set_root(&h, p, &err), "the viewer's directory");
	snprintf(p, sizeof p, "%s/trace.json", dir);
	ok(!mt_httpd_add_file(&h, "/trace.json", p, NULL, &err), "the trace at /trace.json");
	ok(mt_httpd_resolve(&h, "/", got, sizeof got) == 200 && strstr(got, "/www/index.html"), "/ is index.html");
	ok(mt_httpd_resolve(&h, "/sub/app.js?x=1#y", got, sizeof got) == 200 && strstr(got, "/www/sub/app.js"),
	   "a file under it, query and fragment aside");
	ok(mt_httpd_resolve(&h, "/trace.json", got, sizeof got) == 200 && strstr(got, "/trace.json") &&
		   !strstr(got, "/www/"),
	   "the trace, from outside the directory, by its fixed path only");
	ok(mt_httpd_resolve(&h, "/%74race.json", got, sizeof got) == 200, "percent-encoding decoded");
	static const char *const refused[] = {
		"/../secret", "/sub/../../secret", "/%2e%2e/secret", "/%2E%2E%2Fsecret", "/sub/", "/sub", "/out",
		"//etc/passwd", "/./index.html", "/nothing", "/etc/passwd", "/..%5csecret",
	};
	int bad = 0;
	for (size_t i = 0; i < sizeof refused / sizeof *refused; i++) {
		int c = mt_httpd_resolve(&h, refused[i], got, sizeof got);
		if (c == 200) {
			printf("# served %s as %s\n", refused[i], got);
			bad++;
		}
	}
	ok(!bad, "no way out: .., encoded .., a directory, a symlink out, //, ., absent files");
	ok(mt_httpd_resolve(&h, "/%zz", got, sizeof got) == 400 && mt_httpd_resolve(&h, "/a%00b", got, sizeof got) == 400 &&
		   mt_httpd_resolve(&h, "x", got, sizeof got) == 400,
	   "malformed: bad escape, NUL, no leading /");

	pthread_t th;
	pthread_create(&th, NULL, serve, &h);
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(h.port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	char resp[1024] = "";
	if (!connect(s, (struct sockaddr *)&a, sizeof a)) {
		const char *req = "GET /trace.json HTTP/1.1\r\nHost: x\r\n\r\n";
		if (write(s, req, strlen(req)) > 0) {
			size_t n = 0;
			ssize_t r;
			while ((r = read(s, resp + n, sizeof resp - 1 - n)) > 0)
				n += (size_t)r;
			resp[n] = '\0';
		}
	}
	close(s);
	ok(!strncmp(resp, "HTTP/1.1 200 OK\r\n", 17) && strstr(resp, "Content-Type: application/json") &&
		   strstr(resp, "\r\n\r\n{}"),
	   "a real request: 200, its type, its bytes");
	s = socket(AF_INET, SOCK_STREAM, 0);
	int got405 = 0;
	if (!connect(s, (struct sockaddr *)&a, sizeof a)) {
		const char *req = "POST / HTTP/1.1\r\n\r\n";
		if (write(s, req, strlen(req)) > 0 && read(s, resp, sizeof resp - 1) > 0)
			got405 = !strncmp(resp, "HTTP/1.1 405", 12);
	}
	close(s);
	ok(got405, "POST: 405");
	/* stop set only now, while the loop waits in accept: set before the
	 * POST, the loop could see it and end with the POST's connection
	 * queued and never answered (the read above then waited forever) */
	stop = 1;
	s = socket(AF_INET, SOCK_STREAM, 0);
	if (connect(s, (struct sockaddr *)&a, sizeof a)) /* wakes the loop to see stop */
		return 1;
	close(s);
	pthread_join(th, NULL);
	mt_httpd_close(&h);
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	if (system(cmd))
		return 1;
	return tap_done();
}
