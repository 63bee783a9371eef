/* record: one recording session (record.h). */
#define _GNU_SOURCE
#include "record/record.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* Signals (and child exits) reach the loop through this pipe. */
static int signal_pipe[2] = {-1, -1};
static volatile sig_atomic_t pending_signal;

static void on_signal(int sig)
{
	int saved = errno;
	if (sig != SIGCHLD)
		pending_signal = sig;
	if (signal_pipe[1] >= 0 && write(signal_pipe[1], "", 1) < 0) {
		/* full pipe: the loop wakes up anyway */
	}
	errno = saved;
}

static void on_sigpipe(int sig)
{
	(void)sig;
}

int mt_record_catch_signals(struct mt_err *err)
{
	if (signal_pipe[0] < 0) {
		if (pipe(signal_pipe) < 0)
			return mt_err_set(err, MT_EIO, "pipe: %s", strerror(errno));
		for (int i = 0; i < 2; i++) {
			fcntl(signal_pipe[i], F_SETFD, FD_CLOEXEC);
			fcntl(signal_pipe[i], F_SETFL, O_NONBLOCK);
		}
	}
	struct sigaction sa = {.sa_handler = on_signal};
	sigemptyset(&sa.sa_mask);
	int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGCHLD};
	for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++)
		sigaction(sigs[i], &sa, NULL);
	sa.sa_handler = on_sigpipe;
	sigaction(SIGPIPE, &sa, NULL);
	return 0;
}

static void drain_signal_pipe(void)
{
	char drain[64];
	while (read(signal_pipe[0], drain, sizeof drain) == (ssize_t)sizeof drain)
		;
}

pid_t mt_record_spawn_stopped(char **argv, bool stdout_to_stderr, struct mt_err *err)
{
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0)
		return mt_err_set(err, MT_EIO, "fork: %s", strerror(errno));
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		if (stdout_to_stderr)
			dup2(2, 1);
		if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) < 0) {
			fprintf(stderr, "ptrace(PTRACE_TRACEME): %s\n", strerror(errno));
			_exit(126);
		}
		execvp(argv[0], argv);
		fprintf(stderr, "%s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return mt_err_set(err, MT_EIO, "waitpid: %s", strerror(errno));
	if (!WIFSTOPPED(st))
		return mt_err_set(err, MT_EIO, "%s did not start (%s %d)", argv[0],
				  WIFEXITED(st) ? "exit status" : "signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	return pid;
}

void mt_record_kill(pid_t pid)
{
	int st;
	kill(pid, SIGKILL);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
}

void mt_recording_init(struct mt_recording *r)
{
	memset(r, 0, sizeof *r);
	r->perf.ctl_w = r->perf.ack_r = r->perf.ctl_r = r->perf.ack_w = -1;
	for (size_t i = 0; i < MT_RECORD_MAX_PIDS; i++)
		r->pidfds[i] = -1;
}

static int pidfd_of(pid_t pid)
{
#ifdef SYS_pidfd_open
	return (int)syscall(SYS_pidfd_open, pid, 0);
#else
	(void)pid;
	return -1;
#endif
}

void mt_recording_watch(struct mt_recording *r, const pid_t *pids, size_t n)
{
	r->npids = n < MT_RECORD_MAX_PIDS ? n : MT_RECORD_MAX_PIDS;
	for (size_t i = 0; i < r->npids; i++) {
		r->pids[i] = pids[i];
		r->pidfds[i] = pidfd_of(pids[i]);
	}
}

int mt_recording_release(struct mt_recording *r, struct mt_err *err)
{
	if (ptrace(PTRACE_DETACH, r->command, NULL, NULL) < 0)
		return mt_err_set(err, MT_EIO, "ptrace(PTRACE_DETACH): %s", strerror(errno));
	return 0;
}

void mt_recording_set_duration(struct mt_recording *r, long ms)
{
	r->deadline_ms = ms > 0 ? mt_monotonic_ms() + ms : 0;
}

/* Has a process we did not start ended? Its pidfd says so (Linux >= 5.3);
 * else /proc: gone, or a zombie its parent has not reaped. */
static bool process_ended(pid_t pid, int pidfd)
{
	if (pidfd >= 0) {
		struct pollfd p = {.fd = pidfd, .events = POLLIN};
		return poll(&p, 1, 0) > 0;
	}
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return true;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	const char *paren = strrchr(buf, ')');
	return !paren || paren[1] != ' ' || paren[2] == 'Z' || paren[2] == 'X';
}

static void reap_command(struct mt_recording *r)
{
	if (!r->command || r->command_done)
		return;
	int st;
	pid_t w;
	while ((w = waitpid(r->command, &st, WNOHANG)) < 0 && errno == EINTR)
		;
	if (w == r->command) {
		r->command_done = true;
		r->command_status = st;
	} else if (w < 0) {
		r->command_done = true;
	}
}

static bool all_watched_ended(const struct mt_recording *r)
{
	for (size_t i = 0; i < r->npids; i++)
		if (!process_ended(r->pids[i], r->pidfds[i]))
			return false;
	return r->npids > 0;
}

/* Hits: each said, then a snapshot where the snapshot is the trigger's.
 * True when the session ends here. */
static bool handle_hits(struct mt_recording *r)
{
	struct mt_trigger_hit hits[64];
	bool ended = false;
	struct mt_err err = {0};
	for (;;) {
		bool was_ended = ended;
		uint64_t lost = 0;
		size_t n = mt_trigger_read(r->trigger, hits, 64, &lost);
		if (lost)
			mt_say(r->say, r->say_ctx, "%" PRIu64 " trigger hits lost (the kernel's buffer was full)", lost);
		for (size_t i = 0; i < n; i++) {
			r->hits++;
			if (r->nlogged < MT_RECORD_MAX_HITS)
				r->hit_log[r->nlogged++] = hits[i];
			mt_say(r->say, r->say_ctx, "trigger hit: %s in pid %u thread %u at 0x%" PRIx64 ", time %" PRIu64
			       " ns, args 0x%" PRIx64 " 0x%" PRIx64,
			    r->trigger_what, hits[i].pid, hits[i].tid, hits[i].ip, hits[i].time, hits[i].arg0, hits[i].arg1);
			if (r->perf.when == MT_SNAP_FUNCTION_CALL) {
				/* a snapshot refused ends the session; the hits read
				 * with it are still said, each with that reason (they
				 * are out of the kernel's buffer now: unsaid, they
				 * were lost) */
				if (ended || mt_perfctl_snapshot(&r->perf, &err)) {
					mt_say(r->say, r->say_ctx, "trigger hit %u: %s", r->hits, err.msg);
					ended = true;
					continue;
				}
				r->snapshots++;
				mt_say(r->say, r->say_ctx, "snapshot %u taken", r->snapshots);
			}
			if (!r->multi_snapshot)
				return true;
		}
		/* once the session ends, so does the trigger: what the kernel
		 * wrote while the refused snapshot was asked for (perf gone
		 * with the program, its last hits after ours) is read too,
		 * until a read after the end comes short */
		if (!ended || (was_ended && n < 64))
			return ended;
	}
}

enum mt_record_end mt_recording_run(struct mt_recording *r)
{
	for (;;) {
		if (pending_signal) {
			r->signal = pending_signal;
			return MT_END_SIGNAL;
		}
		bool perf_gone = mt_perfctl_poll_exit(&r->perf);
		reap_command(r);
		if (perf_gone || (r->command && r->command_done) || all_watched_ended(r)) {
			/* the kernel wrote every hit before the exit (perf ends
			 * when the program does): a hit since the last poll is
			 * still said, and ends a single-snapshot recording as the
			 * trigger */
			if (r->trigger && handle_hits(r) && !perf_gone)
				return MT_END_TRIGGER;
			return perf_gone ? MT_END_PERF_EXIT : MT_END_COMMAND_EXIT;
		}
		struct pollfd fds[2 + MT_RECORD_MAX_PIDS];
		nfds_t n = 0;
		fds[n++] = (struct pollfd){.fd = signal_pipe[0], .events = POLLIN};
		if (r->trigger)
			fds[n++] = (struct pollfd){.fd = mt_trigger_fd(r->trigger), .events = POLLIN};
		for (size_t i = 0; i < r->npids; i++)
			if (r->pidfds[i] >= 0)
				fds[n++] = (struct pollfd){.fd = r->pidfds[i], .events = POLLIN};
		/* a timeout too: processes without a pidfd are polled in /proc */
		int wait_ms = 250;
		if (r->deadline_ms) {
			long left = r->deadline_ms - mt_monotonic_ms();
			if (left <= 0)
				return MT_END_DURATION;
			if (left < wait_ms)
				wait_ms = (int)left;
		}
		if (poll(fds, n, wait_ms) < 0 && errno != EINTR)
			return MT_END_PERF_EXIT;
		if (fds[0].revents & POLLIN)
			drain_signal_pipe();
		if (r->trigger && handle_hits(r))
			return MT_END_TRIGGER;
	}
}

void mt_recording_stop(struct mt_recording *r, enum mt_record_end why)
{
	struct mt_err err = {0};
	if (r->trigger_what && !r->hits)
		mt_say(r->say, r->say_ctx, "the trigger %s was never hit%s", r->trigger_what,
		    r->perf.when == MT_SNAP_FUNCTION_CALL ? ": no snapshot taken" : "");
	if (r->perf.when == MT_SNAP_AT_EXIT && why != MT_END_PERF_EXIT && !mt_perfctl_poll_exit(&r->perf)) {
		if (mt_perfctl_snapshot(&r->perf, &err))
			mt_say(r->say, r->say_ctx, "%s", err.msg);
		else
			r->snapshots++;
	}
	mt_err_clear(&err);
	if (mt_perfctl_stop(&r->perf, &err))
		mt_say(r->say, r->say_ctx, "%s", err.msg);
	mt_perfctl_close(&r->perf);
	mt_trigger_close(r->trigger);
	r->trigger = NULL;
}

void mt_recording_wait_command(struct mt_recording *r, enum mt_record_end why)
{
	if (!r->command)
		return;
	reap_command(r);
	if (r->command_done)
		return;
	if (why == MT_END_SIGNAL)
		kill(r->command, r->signal);
	else
		mt_say(r->say, r->say_ctx, "recording ended (%s); waiting for pid %d to exit", mt_record_end_str(why), (int)r->command);
	for (;;) {
		pending_signal = 0;
		reap_command(r);
		if (r->command_done)
			return;
		struct pollfd p = {.fd = signal_pipe[0], .events = POLLIN};
		poll(&p, 1, 250);
		drain_signal_pipe();
		if (pending_signal) {
			r->signal = pending_signal;
			kill(r->command, r->signal);
		}
	}
}

void mt_recording_close(struct mt_recording *r)
{
	for (size_t i = 0; i < r->npids; i++)
		if (r->pidfds[i] >= 0) {
			close(r->pidfds[i]);
			r->pidfds[i] = -1;
		}
	mt_perfctl_close(&r->perf);
	mt_trigger_close(r->trigger);
	r->trigger = NULL;
}

const char *mt_record_end_str(enum mt_record_end why)
{
	switch (why) {
	case MT_END_SIGNAL: return "signal";
	case MT_END_PERF_EXIT: return "perf exited";
	case MT_END_COMMAND_EXIT: return "the traced program exited";
	case MT_END_TRIGGER: return "trigger hit";
	case MT_END_DURATION: return "--duration reached";
	case MT_END_NONE: break;
	}
	return "";
}
