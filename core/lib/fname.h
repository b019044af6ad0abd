/*
 * fname: the rules for names a caller sends.  Nothing of flowfs here: no
 * store, no session.
 *
 * The kernel already refuses '/' and NUL inside a name and hands FUSE names
 * up to 1024 bytes; everything past that is ours to decide, in one place,
 * so every operation answers a bad name with the same errno.
 */
#ifndef FLOWFS_FNAME_H
#define FLOWFS_FNAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "lib/ferr.h"
#include "lib/sbuf.h"

/* The longest name any directory of flowfs accepts (statfs f_namemax). */
#define FNAME_MAX 255

/*
 * A name inside a writable folder (uploads/, a session's scratch files):
 * 1..FNAME_MAX bytes, not "." or "..".  Any other bytes are allowed, as on
 * ext4.  Returns 0, -ENAMETOOLONG or -EINVAL.
 */
int fname_check_entry(const char *name, struct ferr *err);

/*
 * A session name: an entry name that is also valid UTF-8 (it is the "id"
 * of session.json, a JSON string) and does not start with '.' (the root's
 * hidden names are flowfs's own).  Control characters are allowed, as in
 * any file name; JSON escapes them.  Returns 0, -ENAMETOOLONG or -EINVAL.
 */
int fname_check_session(const char *name, struct ferr *err);

/* Whether `s[0..len)` is well-formed UTF-8 (no overlongs, no surrogates). */
bool fname_valid_utf8(const char *s, size_t len);

/*
 * How a name (or any text a caller, an archive or a model chose) is shown
 * in `status` and the logs: control characters become JSON escapes
 * (\n, \r, \t, \b, \f, else \u001b and the like, DEL \u007f, C1
 * \u0085), and so do the line and paragraph separators and the format
 * controls (fname_unshown(): U+2028, U+2029, U+061C, U+200B..U+200F, the
 * bidi marks U+202A..U+202E and U+2066..U+2069, U+FEFF, ...), so it never
 * makes a line of its own (for a reader either: Python's splitlines()
 * splits at U+2028), never reorders a line, nor reaches a terminal as an
 * escape; a byte that starts no UTF-8 character becomes U+FFFD; every
 * other character stays as it is.  fname_escape() appends at most `max`
 * bytes to `out` (SIZE_MAX: all), never cutting an escape or a UTF-8
 * character (0 or -ENOMEM); fname_shown() gives the same text, malloc'd
 * (NULL: no memory).
 */
int fname_escape(struct sbuf *out, const char *s, size_t max);
/* Whether code point `cp` is one fname_escape() writes as \uXXXX (or
 * \U00XXXXXX past U+FFFF) rather than as it is, above U+007F. */
bool fname_unshown(uint32_t cp);
char *fname_shown(const char *s, size_t max);
/* One line of `status` (a problem, a note): the text printf() makes of
 * `fmt`, escaped as above, then '\n'.  0 or -ENOMEM. */
int fname_line(struct sbuf *out, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * mkdir -p: every folder of the absolute `path` that is missing, made
 * with `mode` (the last too unless `parents_only`).  0 or -errno
 * (-ENAMETOOLONG past PATH_MAX).
 */
int fname_make_dirs(const char *path, mode_t mode, bool parents_only);

#endif
