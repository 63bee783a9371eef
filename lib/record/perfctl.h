/* perfctl: drive a running `perf record` the way magic-trace does
 * (shared/docs/magic-trace-behaviour.md section 3.3): start it in its own
 * process group, know when it is recording, take snapshots and shut it
 * down -- by its control fd where perf has one (>= 5.10), by signals
 * before. One change: readiness is a command perf acknowledges, not
 * magic-trace's fixed 500 ms sleep (its #258), wherever perf has a control
 * fd. */
#ifndef MT_PERFCTL_H
#define MT_PERFCTL_H

#include <pthread.h>
#include <stdbool.h>
#include <sys/types.h>

#include "base/mt_err.h"
#include "record/perfargs.h"


struct mt_perfctl {
	pid_t pid;                  /* perf, 0 before it starts */
	int ctl_w, ack_r;           /* our ends of the control pipes; -1 without */
	int ctl_r, ack_w;           /* perf's ends, closed here once it runs */
	int major, minor;           /* perf's version */
	enum mt_snapshot_when when;
	bool stopping;              /* told to end (an At_exit snapshot ends it) */
	bool term_sent;             /* SIGTERM sent for an unanswered stop */
	bool exited;                /* reaped; status is its wait status */
	int status;
	unsigned ack_timeout_ms;    /* 8000, as magic-trace */
	/* set before start: perf's standard error passes through a relay that
	 * writes hide_as for hide_path (a temporary perf.data, removed before
	 * anyone could open it: perf's "Captured and wrote PATH") */
	const char *hide_path, *hide_as;
	int relay_r;                /* our end of perf's stderr; -1 without */
	bool relaying;
	pthread_t relay;
};

/* Sets up for a perf of version "MAJOR.MINOR[...]": the control pipes when
 * it has a control fd. *perf_ctl and *perf_ack are then the descriptors to
 * name in --control=fd:CTL,ACK; -1 without. */
int mt_perfctl_init(struct mt_perfctl *p, const char *version, enum mt_snapshot_when when, int *perf_ctl,
		    int *perf_ack, struct mt_err *err);
/* Does this perf take --control (>= 5.10)? */
bool mt_perfctl_has_ctlfd(const struct mt_perfctl *p);
/* fork + exec argv (NULL-terminated) with PR_SET_PDEATHSIG(SIGKILL), in a
 * process group of its own so a terminal's ^C reaches the caller, not perf. */
int mt_perfctl_start(struct mt_perfctl *p, char *const argv[], struct mt_err *err);
/* Waits until perf records: a command it acknowledges (ping; enable before
 * perf 5.12, harmless on enabled events), or, without a control fd,
 * magic-trace's 500 ms. MT_EIO when perf exits first or does not answer. */
int mt_perfctl_ready(struct mt_perfctl *p, struct mt_err *err);
/* Takes one snapshot: `snapshot` on the control fd, SIGUSR2 before, and for
 * At_exit on perf 5.4-5.9 SIGINT (perf snapshots as it exits). */
int mt_perfctl_snapshot(struct mt_perfctl *p, struct mt_err *err);
/* Shuts perf down (`stop`, SIGTERM before 5.10) and waits for it to write
 * its file and exit. A perf already gone is fine. An unanswered `stop` is
 * followed by SIGTERM (and reported); a perf still there a minute after a
 * SIGTERM is killed (an error). */
int mt_perfctl_stop(struct mt_perfctl *p, struct mt_err *err);
/* Reaps perf without waiting: true once it has exited. */
bool mt_perfctl_poll_exit(struct mt_perfctl *p);
/* Kills perf (SIGKILL) and reaps it: for a perf that failed to start. */
void mt_perfctl_kill(struct mt_perfctl *p);
/* Closes the pipes. */
void mt_perfctl_close(struct mt_perfctl *p);
/* Waits until perf's standard error has all passed the relay (its end
 * closed: perf exited); nothing without a relay. */
void mt_perfctl_relay_join(struct mt_perfctl *p);
/* CLOCK_MONOTONIC in milliseconds: the deadlines of commands and sessions. */
long mt_monotonic_ms(void);

#endif
