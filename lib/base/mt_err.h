/* mt_err: error values and messages shared by every library module.
 * Library functions return 0 / positive on success and a negative MT_E* code
 * on failure, with a human message in a caller-owned struct mt_err; only
 * tools print and exit. */
#ifndef MT_ERR_H
#define MT_ERR_H

#include <stddef.h>

enum mt_errcode {
	MT_OK = 0,
	MT_EIO = -1,      /* read/write failure (errno in message) */
	MT_EFORMAT = -2,  /* input is not what it claims to be */
	MT_ETRUNC = -3,   /* input ends early */
	MT_ENOMEM = -4,
	MT_EUSAGE = -5,   /* bad argument from the caller */
	MT_EUNSUP = -6,   /* valid but unsupported input */
};

struct mt_err {
	int code;
	char msg[512];
};

/* Records the first error only: later calls do not overwrite a message that
 * explains the root cause. Returns code, so callers can `return mt_err_set(...)`. */
int mt_err_set(struct mt_err *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void mt_err_clear(struct mt_err *err);
const char *mt_err_str(int code);
/* Formats a message (up to 8 KiB) and hands it to a library's message
 * callback, when there is one: warnings and notes the tool prints. */
void mt_say(void (*fn)(void *ctx, const char *msg), void *ctx, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
