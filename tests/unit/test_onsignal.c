/* onsignal: a child process registers cleanups and is sent a signal for
 * real; the parent sees what it left and how it ended (waitpid). */
#define _GNU_SOURCE
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/onsignal.h"
#include "tap.h"

static void remove_file(void *ctx)
{
	unlink(ctx);
}

/* a child that makes path, registers its removal (forgotten again when
 * forget is set), ignores sig first when ignore is set, then gets sig */
static int child(const char *path, int sig, bool ignore, bool forget)
{
	pid_t pid = fork();
	if (pid == 0) {
		FILE *f = fopen(path, "w");
		if (f)
			fclose(f);
		/* from its default disposition: a shell without job control
		 * starts background commands with SIGINT ignored, which
		 * onsignal rightly leaves so */
		signal(sig, ignore ? SIG_IGN : SIG_DFL);
		int slot = mt_onsignal_add(remove_file, (void *)path);
		if (forget)
			mt_onsignal_remove(slot);
		kill(getpid(), sig);
		_exit(7);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	return st;
}

int main(void)
{
	char path[] = "/tmp/test_onsignal.XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0)
		return 1;
	close(fd);
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};
	for (size_t i = 0; i < 4; i++) {
		int st = child(path, sigs[i], false, false);
		char name[96];
		snprintf(name, sizeof name, "signal %d: the cleanup ran, and the child ended by that signal", sigs[i]);
		ok(WIFSIGNALED(st) && WTERMSIG(st) == sigs[i] && access(path, F_OK) != 0, name);
	}
	int st = child(path, SIGTERM, true, false);
	ok(WIFEXITED(st) && WEXITSTATUS(st) == 7 && access(path, F_OK) == 0,
	   "an ignored signal stays ignored: no handler put over it");
	unlink(path);
	st = child(path, SIGTERM, false, true);
	ok(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM && access(path, F_OK) == 0,
	   "a forgotten cleanup does not run");
	unlink(path);
	int n = 0;
	while (mt_onsignal_add(remove_file, path) >= 0 && n < 100)
		n++;
	ok(n == MT_ONSIGNAL_SLOTS, "the slots are bounded, and the one past them says so");
	return tap_done();
}
