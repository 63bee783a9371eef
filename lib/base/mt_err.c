#include "base/mt_err.h"

#include <stdarg.h>
#include <stdio.h>

int mt_err_set(struct mt_err *err, int code, const char *fmt, ...)
{
	if (!err || err->code)
		return code;
	err->code = code;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof err->msg, fmt, ap);
	va_end(ap);
	return code;
}

void mt_err_clear(struct mt_err *err)
{
	err->code = 0;
	err->msg[0] = '\0';
}

const char *mt_err_str(int code)
{
	switch (code) {
	case MT_OK: return "success";
	case MT_EIO: return "input/output error";
	case MT_EFORMAT: return "bad format";
	case MT_ETRUNC: return "truncated input";
	case MT_ENOMEM: return "out of memory";
	case MT_EUSAGE: return "bad usage";
	case MT_EUNSUP: return "unsupported";
	}
	return "unknown error";
}

void mt_say(void (*fn)(void *ctx, const char *msg), void *ctx, const char *fmt, ...)
{
	if (!fn)
		return;
	char msg[8400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	fn(ctx, msg);
}
