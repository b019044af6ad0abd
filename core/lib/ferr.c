/* ferr: the error report a person reads; see ferr.h. */
#include "lib/ferr.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void ferr_clear(struct ferr *err)
{
	if (!err)
		return;
	err->line = 0;
	err->column = 0;
	err->path[0] = '\0';
	err->message[0] = '\0';
}

static void set_message(struct ferr *err, const char *fmt, va_list ap)
{
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
}

int ferr_vset(struct ferr *err, int code, const char *fmt, va_list ap)
{
	if (err)
		set_message(err, fmt, ap);
	return code;
}

int ferr_vrefuse(struct ferr *err, int code, const char *path,
		 const char *fmt, va_list ap)
{
	char msg[FERR_MESSAGE_MAX];

	if (!err)
		return code;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	ferr_set_path(err, path);
	if (!*path)
		return ferr_set(err, code, "%s", msg);
	return ferr_set(err, code, "%s: %s", path, msg);
}

int ferr_refuse(struct ferr *err, int code, const char *path,
		const char *fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = ferr_vrefuse(err, code, path, fmt, ap);
	va_end(ap);
	return ret;
}

int ferr_set(struct ferr *err, int code, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return code;
	va_start(ap, fmt);
	set_message(err, fmt, ap);
	va_end(ap);
	return code;
}

int ferr_set_at(struct ferr *err, int code, int line, int column,
		const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return code;
	err->line = line;
	err->column = column;
	va_start(ap, fmt);
	set_message(err, fmt, ap);
	va_end(ap);
	return code;
}

void ferr_set_path(struct ferr *err, const char *path)
{
	if (!err)
		return;
	snprintf(err->path, sizeof(err->path), "%s", path ? path : "");
}

const char *ferr_format(const struct ferr *err, char *buf, size_t size)
{
	if (!size)
		return buf;
	if (err->line > 0 && err->column > 0)
		snprintf(buf, size, "line %d, column %d: %s", err->line,
			 err->column, err->message);
	else if (err->line > 0)
		snprintf(buf, size, "line %d: %s", err->line, err->message);
	else
		snprintf(buf, size, "%s", err->message);
	return buf;
}
