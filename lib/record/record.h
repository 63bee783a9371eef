/* record: one recording session, the way mt-record runs it. COMMAND is
 * held at its first instruction (or running processes are watched) while
 * perf (perfctl) gets ready, then released; the session lasts until a
 * signal, COMMAND's exit (or every watched process's), a trigger hit
 * (trigger), perf's own end or a deadline; then the due snapshot, perf
 * stopped and waited for, and COMMAND waited for. Messages go through a
 * callback; the tool prints them. */
#ifndef MT_RECORD_H
#define MT_RECORD_H

#include <stdbool.h>
#include <sys/types.h>

#include "base/mt_err.h"
#include "record/perfctl.h"
#include "record/trigger.h"

#define MT_RECORD_MAX_PIDS 64
#define MT_RECORD_MAX_HITS 1024 /* hits kept for the bundle's manifest */

enum mt_record_end {
	MT_END_NONE,
	MT_END_SIGNAL,       /* SIGINT, SIGTERM or SIGHUP: .signal */
	MT_END_PERF_EXIT,
	MT_END_COMMAND_EXIT, /* COMMAND, or every watched process */
	MT_END_TRIGGER,
	MT_END_DURATION,
};

struct mt_recording {
	struct mt_perfctl perf;
	struct mt_trigger *trigger;     /* NULL: none */
	const char *trigger_what;
	bool multi_snapshot;            /* a snapshot per hit, recording goes on */
	pid_t command;                  /* run mode: COMMAND, 0 for an attach */
	bool command_done;
	int command_status;             /* its wait status, once done */
	pid_t pids[MT_RECORD_MAX_PIDS]; /* attach mode */
	int pidfds[MT_RECORD_MAX_PIDS];
	size_t npids;
	long deadline_ms;               /* monotonic, 0: none */
	unsigned snapshots, hits;
	struct mt_trigger_hit hit_log[MT_RECORD_MAX_HITS]; /* the first hits, for the bundle */
	size_t nlogged;
	int signal;                     /* the signal that ended it */
	void (*say)(void *ctx, const char *msg);
	void *say_ctx;
};

/* SIGINT, SIGTERM and SIGHUP end a session, SIGCHLD wakes it. Handlers,
 * not SIG_IGN, which exec would pass on to perf and COMMAND; SIGPIPE gets
 * a handler too, so a write to a perf that is gone fails with EPIPE. */
int mt_record_catch_signals(struct mt_err *err);
/* fork + exec argv, stopped at the exec (PTRACE_TRACEME, as magic-trace),
 * dying with the caller (PR_SET_PDEATHSIG); its standard output on
 * standard error when stdout_to_stderr. The pid, or -1. */
pid_t mt_record_spawn_stopped(char **argv, bool stdout_to_stderr, struct mt_err *err);
/* Kills (SIGKILL) and reaps a child. */
void mt_record_kill(pid_t pid);

void mt_recording_init(struct mt_recording *r);
/* Watch these running processes (pidfds where the kernel has them). */
void mt_recording_watch(struct mt_recording *r, const pid_t *pids, size_t n);
/* Let the held COMMAND run (PTRACE_DETACH). */
int mt_recording_release(struct mt_recording *r, struct mt_err *err);
/* Milliseconds from now until the session ends by itself (0: never). */
void mt_recording_set_duration(struct mt_recording *r, long ms);
/* Records until one of the ends above. */
enum mt_record_end mt_recording_run(struct mt_recording *r);
/* The end: the snapshot at exit where one is due and not taken, perf
 * stopped and waited for, the trigger closed (after perf: removing a
 * uprobe takes tens of ms perf would record through). Errors are said. */
void mt_recording_stop(struct mt_recording *r, enum mt_record_end why);
/* Waits for COMMAND: after a signal end it gets the same signal first;
 * a signal while waiting is passed on. */
void mt_recording_wait_command(struct mt_recording *r, enum mt_record_end why);
/* Releases what the session holds (pidfds, pipes, trigger). */
void mt_recording_close(struct mt_recording *r);
const char *mt_record_end_str(enum mt_record_end why);

#endif
