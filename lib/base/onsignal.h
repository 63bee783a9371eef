/* onsignal: what a process must remove when a signal ends it (SIGINT,
 * SIGTERM, SIGHUP, SIGPIPE): temporary output files, extracted bundles.
 * One handler for every module, installed only over a default disposition
 * (a signal the tool ignores or handles itself stays so); it runs the
 * registered cleanups, then ends the process by the same signal, so the
 * exit status still says which. */
#ifndef MT_ONSIGNAL_H
#define MT_ONSIGNAL_H

/* A cleanup runs inside the signal handler: it should use only
 * async-signal-safe calls (unlink, rmdir); the process is ending either
 * way. */
typedef void (*mt_onsignal_fn)(void *ctx);

#define MT_ONSIGNAL_SLOTS 16

/* Registers fn(ctx); returns its slot, or -1 when all are taken. */
int mt_onsignal_add(mt_onsignal_fn fn, void *ctx);
/* Forgets a slot (a negative one is ignored). */
void mt_onsignal_remove(int slot);

#endif
