/*
 * ferr: the error report every core function fills when a person will read
 * the text.  Nothing of flowfs here: no store, no session.
 *
 * Core functions return 0 on success or a negative errno, and when they take
 * a `struct ferr *` they also describe the failure there: a message, and
 * where known the 1-based line and column in the document that was being
 * read (0 = unknown) and the path of the thing at fault (a JSON path such as
 * `parameter.nalpha`, or a file path inside a session).
 *
 * The struct is plain data owned by the caller, usually on the stack:
 *
 *	struct ferr err = FERR_INIT;
 *	if (store_open(&store, path, &err) < 0)
 *		fprintf(stderr, "flowfs: %s\n", err.message);
 *
 * Passing NULL is allowed everywhere: the function then only returns the
 * errno.  A function that fails without setting a message leaves the struct
 * untouched, so callers may pre-fill a fallback.
 */
#ifndef FLOWFS_FERR_H
#define FLOWFS_FERR_H

#include <stdarg.h>
#include <stddef.h>

#define FERR_MESSAGE_MAX 512
#define FERR_PATH_MAX 256

struct ferr {
	int line;	/* 1-based, 0 when not about a position in a text */
	int column;	/* 1-based, 0 when unknown */
	char path[FERR_PATH_MAX];	/* what is at fault, "" when none */
	char message[FERR_MESSAGE_MAX];
};

#define FERR_INIT { 0, 0, "", "" }

/* Reset to the empty state. */
void ferr_clear(struct ferr *err);

/*
 * Set the message printf-style (truncated to fit) and return `code`, so a
 * failure is one statement: `return ferr_set(err, -EINVAL, "bad %s", x);`.
 * Line, column and path are left as they are.
 */
int ferr_set(struct ferr *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* As ferr_set, also recording the position in the text being read. */
int ferr_set_at(struct ferr *err, int code, int line, int column,
		const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

/* Record what is at fault (copied, truncated to fit). */
void ferr_set_path(struct ferr *err, const char *path);

/* ferr_set with a va_list, for functions that wrap it. */
int ferr_vset(struct ferr *err, int code, const char *fmt, va_list ap);

/*
 * A refusal about `path` (a JSON path, a file): records the path and sets
 * the message "<path>: <message>" (just the message when path is ""), so
 * the text reads on its own in status.
 */
int ferr_refuse(struct ferr *err, int code, const char *path,
		const char *fmt, ...) __attribute__((format(printf, 4, 5)));
int ferr_vrefuse(struct ferr *err, int code, const char *path,
		 const char *fmt, va_list ap);

/*
 * Render the error as one line for a person: "line 3, column 14: message",
 * or just the message when no position is known.  Returns `buf`.
 */
const char *ferr_format(const struct ferr *err, char *buf, size_t size);

#endif
