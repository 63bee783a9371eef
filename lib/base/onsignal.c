#define _GNU_SOURCE
#include "base/onsignal.h"

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

static struct slot {
	mt_onsignal_fn volatile fn;
	void *volatile ctx;
} slots[MT_ONSIGNAL_SLOTS];

static const int signals[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};

static void run_cleanups(int sig)
{
	for (size_t i = 0; i < MT_ONSIGNAL_SLOTS; i++) {
		mt_onsignal_fn fn = slots[i].fn;
		if (fn) {
			slots[i].fn = NULL; /* once, even if a second signal comes */
			fn(slots[i].ctx);
		}
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

static void install(void)
{
	static bool done;
	if (done)
		return;
	done = true;
	for (size_t i = 0; i < sizeof signals / sizeof *signals; i++) {
		struct sigaction old, sa = {.sa_handler = run_cleanups};
		sigemptyset(&sa.sa_mask);
		for (size_t k = 0; k < sizeof signals / sizeof *signals; k++)
			sigaddset(&sa.sa_mask, signals[k]);
		if (!sigaction(signals[i], NULL, &old) && !(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_DFL)
			sigaction(signals[i], &sa, NULL);
	}
}

int mt_onsignal_add(mt_onsignal_fn fn, void *ctx)
{
	install();
	for (int i = 0; i < MT_ONSIGNAL_SLOTS; i++)
		if (!slots[i].fn) {
			slots[i].ctx = ctx;
			slots[i].fn = fn;
			return i;
		}
	return -1;
}

void mt_onsignal_remove(int slot)
{
	if (slot >= 0 && slot < MT_ONSIGNAL_SLOTS) {
		slots[slot].fn = NULL;
		slots[slot].ctx = NULL;
	}
}
