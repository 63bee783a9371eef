/* dwload: libdw loaded on demand. Oracle: the functions this test links
 * from libdw itself (the same library, so the same addresses once both
 * are loaded), and dlerror's words for a library that is not there. The
 * failing loads run in child processes: a load is once a process. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "trace/dwload.h"
#include "tap.h"

/* In a child with MT_LIBDW=name: 0 when the load fails saying want. */
static int load_fails(const char *name, const char *want)
{
	fflush(stdout); /* the child must not write what is buffered again */
	pid_t pid = fork();
	if (pid == 0) {
		setenv("MT_LIBDW", name, 1);
		const char *why = NULL;
		const struct mt_dw *dw = mt_dw_load(&why);
		printf("# MT_LIBDW=%s: %s\n", name, dw ? "loaded" : why);
		fflush(stdout);
		_exit(!dw && why && strstr(why, want) ? 0 : 1);
	}
	int st;
	return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

int main(void)
{
	ok(load_fails("/nonexistent/libdw.so.1", "libdw could not be loaded: /nonexistent/libdw.so.1") == 0,
	   "a library that is not there: said, with dlerror's reason");
	ok(load_fails("libz.so.1", "has no dwfl_begin") == 0, "a library without libdw's functions: said, by name");
	unsetenv("MT_LIBDW");
	const char *why = NULL;
	const struct mt_dw *dw = mt_dw_load(&why);
	ok(dw && !why, "libdw.so.1 loaded");
	ok(dw && dw->dwfl_begin == dwfl_begin && dw->dwarf_frame_register == dwarf_frame_register &&
		   dw->dwfl_frame_reg == dwfl_frame_reg && dw->dwfl_standard_find_debuginfo == dwfl_standard_find_debuginfo,
	   "its functions are libdw's own");
	ok(mt_dw_load(NULL) == dw, "loaded once");
	return tap_done();
}
