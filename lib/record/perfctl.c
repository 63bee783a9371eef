/* perfctl: start, ready, snapshot and stop a perf record (perfctl.h). */
#define _GNU_SOURCE
#include "record/perfctl.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static bool at_least(const struct mt_perfctl *p, int major, int minor)
{
	return p->major > major || (p->major == major && p->minor >= minor);
}

bool mt_perfctl_has_ctlfd(const struct mt_perfctl *p)
{
	return at_least(p, 5, 10);
}

int mt_perfctl_init(struct mt_perfctl *p, const char *version, enum mt_snapshot_when when, int *perf_ctl,
		    int *perf_ack, struct mt_err *err)
{
	*p = (struct mt_perfctl){.ctl_w = -1, .ack_r = -1, .ctl_r = -1, .ack_w = -1, .when = when,
				 .ack_timeout_ms = 8000, .relay_r = -1};
	if (!version || sscanf(version, "%d.%d", &p->major, &p->minor) != 2)
		return mt_err_set(err, MT_EUSAGE, "perf version '%s' not understood", version ? version : "");
	*perf_ctl = *perf_ack = -1;
	if (!mt_perfctl_has_ctlfd(p))
		return 0;
	/* perf's ends are inherited through exec; ours must not reach perf or
	 * the traced program, or perf would never see EOF on its end */
	int ctl[2], ack[2];
	if (pipe(ctl) < 0)
		return mt_err_set(err, MT_EIO, "pipe: %s", strerror(errno));
	if (pipe(ack) < 0) {
		close(ctl[0]);
		close(ctl[1]);
		return mt_err_set(err, MT_EIO, "pipe: %s", strerror(errno));
	}
	fcntl(ctl[1], F_SETFD, FD_CLOEXEC);
	fcntl(ack[0], F_SETFD, FD_CLOEXEC);
	p->ctl_r = *perf_ctl = ctl[0];
	p->ctl_w = ctl[1];
	p->ack_r = ack[0];
	p->ack_w = *perf_ack = ack[1];
	return 0;
}

/* Copies perf's standard error to ours line by line, hide_path written as
 * hide_as. */
static void *relay_stderr(void *arg)
{
	struct mt_perfctl *p = arg;
	FILE *in = fdopen(p->relay_r, "r");
	if (!in) {
		close(p->relay_r);
		return NULL;
	}
	char *line = NULL;
	size_t cap = 0, hl = strlen(p->hide_path);
	ssize_t n;
	while ((n = getline(&line, &cap, in)) > 0) {
		char *at, *from = line;
		while (hl && (at = strstr(from, p->hide_path))) {
			fwrite(from, 1, (size_t)(at - from), stderr);
			fputs(p->hide_as, stderr);
			from = at + hl;
		}
		fputs(from, stderr);
		fflush(stderr);
	}
	free(line);
	fclose(in);
	return NULL;
}

int mt_perfctl_start(struct mt_perfctl *p, char *const argv[], struct mt_err *err)
{
	int relay[2] = {-1, -1};
	if (p->hide_path && pipe(relay) < 0)
		return mt_err_set(err, MT_EIO, "pipe: %s", strerror(errno));
	if (relay[0] >= 0)
		fcntl(relay[0], F_SETFD, FD_CLOEXEC);
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		if (relay[0] >= 0) {
			close(relay[0]);
			close(relay[1]);
		}
		return mt_err_set(err, MT_EIO, "fork: %s", strerror(errno));
	}
	if (pid == 0) {
		if (relay[1] >= 0) {
			dup2(relay[1], 2);
			close(relay[1]);
		}
		setpgid(0, 0);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		setenv("PAGER", "cat", 1);
		execvp(argv[0], argv);
		fprintf(stderr, "%s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	setpgid(pid, pid); /* both sides, so it holds before either runs on */
	p->pid = pid;
	if (relay[1] >= 0) {
		close(relay[1]);
		p->relay_r = relay[0];
		p->relaying = !pthread_create(&p->relay, NULL, relay_stderr, p);
		if (!p->relaying) {
			close(p->relay_r); /* perf's messages are lost, not its run */
			p->relay_r = -1;
		}
	}
	if (p->ctl_r >= 0) {
		close(p->ctl_r);
		close(p->ack_w);
		p->ctl_r = p->ack_w = -1;
	}
	return 0;
}

bool mt_perfctl_poll_exit(struct mt_perfctl *p)
{
	if (p->exited || !p->pid)
		return p->exited;
	int st;
	if (waitpid(p->pid, &st, WNOHANG) == p->pid) {
		p->exited = true;
		p->status = st;
	}
	return p->exited;
}

static void wait_exit(struct mt_perfctl *p)
{
	int st;
	while (!p->exited && p->pid) {
		pid_t r = waitpid(p->pid, &st, 0);
		if (r == p->pid) {
			p->exited = true;
			p->status = st;
		} else if (r < 0 && errno != EINTR) {
			p->exited = true; /* not ours to reap any more */
			p->status = 0;
		}
	}
}

long mt_monotonic_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

/* One command, then its acknowledgement "ack\n\0". 1 when perf closed the
 * pipe instead (it exited), 0 on the ack, negative on a timeout or a reply
 * that is not an ack. */
static int command(struct mt_perfctl *p, const char *cmd, struct mt_err *err)
{
	char line[32];
	int len = snprintf(line, sizeof line, "%s\n", cmd);
	ssize_t w;
	do
		w = write(p->ctl_w, line, (size_t)len);
	while (w < 0 && errno == EINTR);
	if (w < 0 && errno == EPIPE)
		return 1;
	if (w != len)
		return mt_err_set(err, MT_EIO, "perf control fd: %s", w < 0 ? strerror(errno) : "short write");
	char ack[8];
	size_t got = 0;
	long deadline = mt_monotonic_ms() + p->ack_timeout_ms;
	while (got < 5) {
		long left = deadline - mt_monotonic_ms();
		if (left <= 0)
			return mt_err_set(err, MT_EIO, "perf did not acknowledge '%s' within %u ms", cmd,
					  p->ack_timeout_ms);
		struct pollfd pfd = {.fd = p->ack_r, .events = POLLIN};
		int r = poll(&pfd, 1, (int)left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			continue;
		ssize_t n = read(p->ack_r, ack + got, 5 - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return 1;
		got += (size_t)n;
	}
	if (memcmp(ack, "ack\n", 5))
		return mt_err_set(err, MT_EFORMAT, "perf sent a malformed acknowledgement to '%s'", cmd);
	return 0;
}

static int perf_gone(struct mt_perfctl *p, const char *when, struct mt_err *err)
{
	wait_exit(p);
	if (WIFEXITED(p->status))
		return mt_err_set(err, MT_EIO, "perf record exited with status %d %s", WEXITSTATUS(p->status), when);
	return mt_err_set(err, MT_EIO, "perf record killed by signal %d %s", WTERMSIG(p->status), when);
}

int mt_perfctl_ready(struct mt_perfctl *p, struct mt_err *err)
{
	if (mt_perfctl_has_ctlfd(p)) {
		/* perf reads its control fd only from its main loop, after it has
		 * enabled the events: the ack says it records. `ping` is answered
		 * by perf 6.1 (tested); before 5.12 `enable` is the command known
		 * to be acknowledged since the control fd came in. */
		int r = command(p, at_least(p, 5, 12) ? "ping" : "enable", err);
		if (r == 1)
			return perf_gone(p, "before it was ready", err);
		return r;
	}
	/* no way to ask: magic-trace's wait, cut short when perf dies */
	for (int i = 0; i < 50; i++) {
		if (mt_perfctl_poll_exit(p))
			return perf_gone(p, "before it was ready", err);
		usleep(10000);
	}
	return 0;
}

int mt_perfctl_snapshot(struct mt_perfctl *p, struct mt_err *err)
{
	if (mt_perfctl_poll_exit(p))
		return mt_err_set(err, MT_EIO, "perf record exited: no snapshot"); /* before it was asked */
	p->stopping = p->when == MT_SNAP_AT_EXIT && at_least(p, 5, 4);
	if (mt_perfctl_has_ctlfd(p)) {
		int r = command(p, p->when == MT_SNAP_AT_EXIT ? "stop" : "snapshot", err);
		if (r < 0 && p->stopping) {
			kill(p->pid, SIGTERM); /* an unanswered stop: perf takes SIGTERM as the end too */
			p->term_sent = true;
		}
		return r == 1 ? mt_err_set(err, MT_EIO, "perf record exited: no snapshot") : r;
	}
	int sig = p->stopping ? SIGINT : SIGUSR2;
	if (kill(p->pid, sig) < 0)
		return mt_err_set(err, MT_EIO, "perf record: %s", strerror(errno));
	return 0;
}

/* After mt-record's own SIGTERM: perf writes what it has and exits; one
 * that does not within a minute is killed, and that is an error. */
static int wait_after_term(struct mt_perfctl *p, struct mt_err *err)
{
	for (int i = 0; i < 60 * 20; i++) {
		if (mt_perfctl_poll_exit(p))
			return 0;
		usleep(50000);
	}
	kill(p->pid, SIGKILL);
	wait_exit(p);
	return mt_err_set(err, MT_EIO, "perf record did not end within 60 s of SIGTERM: killed");
}

int mt_perfctl_stop(struct mt_perfctl *p, struct mt_err *err)
{
	if (!p->pid)
		return 0;
	bool termed = p->term_sent;
	if (!mt_perfctl_poll_exit(p) && !p->stopping) {
		p->stopping = true;
		int r = mt_perfctl_has_ctlfd(p) ? command(p, "stop", err) : -1;
		if (r < 0) {
			/* no control fd, or an unanswered stop: a signal perf also
			 * takes as the end */
			kill(p->pid, SIGTERM);
			termed = true;
		}
	}
	if (termed)
		return wait_after_term(p, err);
	wait_exit(p);
	return err->code;
}

void mt_perfctl_kill(struct mt_perfctl *p)
{
	if (p->pid && !mt_perfctl_poll_exit(p)) {
		kill(p->pid, SIGKILL);
		wait_exit(p);
	}
}

void mt_perfctl_relay_join(struct mt_perfctl *p)
{
	if (p->relaying) {
		pthread_join(p->relay, NULL);
		p->relaying = false;
		p->relay_r = -1;
	}
}

void mt_perfctl_close(struct mt_perfctl *p)
{
	mt_perfctl_relay_join(p);
	int *fds[] = {&p->ctl_w, &p->ack_r, &p->ctl_r, &p->ack_w};
	for (size_t i = 0; i < sizeof fds / sizeof *fds; i++)
		if (*fds[i] >= 0) {
			close(*fds[i]);
			*fds[i] = -1;
		}
}
