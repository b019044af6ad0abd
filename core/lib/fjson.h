/*
 * fjson: the one JSON reader and writer of flowfs, on top of jansson.
 * Nothing of flowfs here: no files, no store, no session.
 *
 * ---- Writing ----
 * Every JSON document flowfs shows is written by fjson_dump(), so that what
 * a user reads is byte-identical to Python's
 *
 *	json.dumps(obj, indent=2, ensure_ascii=False)
 *
 * for the same object: 2-space indent, "," + newline between items, ": "
 * between key and value, `[]` / `{}` for empty containers, object keys in
 * insertion order (jansson keeps it), raw UTF-8 except for `"`, `\`, and
 * bytes below 0x20 (`\n` `\r` `\t` `\b` `\f`, others `\u00XX`), reals as
 * Python's repr(float) (shortest round-trip digits: `0.1`, `6.0`, `1e-05`,
 * `1e+16`, `-0.0`).  No trailing newline.  The output never depends on the
 * locale.
 *
 *	struct sbuf sb = SBUF_INIT;
 *	if (fjson_dump(&sb, doc) < 0) ...
 *
 * ---- Reading ----
 * Every document flowfs reads goes through fjson_parse(), which parses
 * exactly one JSON value and reports failures in words a person
 * understands, with the 1-based line and column (counted in characters) of
 * the offending token:
 *
 *	struct ferr err = FERR_INIT;
 *	json_t *doc;
 *	if (fjson_parse(&doc, buf, len, &err) < 0)
 *		... "line 3, column 14: expected ',' or '}'"
 *
 * It follows Python's json.loads where jansson allows it: a repeated object
 * key keeps its first position and takes the last value; "\u0000" inside
 * strings is accepted (use json_string_length()).  Where jansson cannot
 * represent what Python would accept, the document is refused with a clear
 * message instead: integers outside int64, reals that overflow a double
 * (Python would give inf), lone UTF-16 surrogate escapes ("\ud800"), and
 * "\u0000" inside object keys.  NaN and Infinity are not JSON and are
 * refused, as are raw NUL bytes anywhere (jansson alone would silently
 * skip some) and nesting deeper than 2048 levels.  Numbers written with a
 * '.' or an exponent are reals (json_real), others integers (json_integer),
 * as in Python; "-0" is the integer 0.
 *
 * ---- Tests ----
 * tests/integration/test_json_fidelity.py checks all of this against
 * Python byte for byte, through the helper tests/unit/json_echo.
 */
#ifndef FLOWFS_FJSON_H
#define FLOWFS_FJSON_H

#include <stddef.h>

#include <jansson.h>

#include "lib/ferr.h"
#include "lib/sbuf.h"

/*
 * Append the serialization of `value` to `out`.  Returns 0, -ENOMEM, or
 * -EINVAL when `value` is NULL or holds something JSON cannot express (a
 * non-finite real).  On failure `out` is truncated back to its length
 * before the call.  The writer recurses once per nesting level.
 */
int fjson_dump(struct sbuf *out, const json_t *value);

/*
 * The same serialization as a malloc'd NUL-terminated string (the output
 * never contains a raw NUL byte).  NULL on ENOMEM or an invalid value.
 */
char *fjson_dumps(const json_t *value);

/*
 * A finite real as fjson_dump() writes it (Python's repr(float): "0.1",
 * "6.0", "1e-05"), NUL-terminated into `buf`; returns its length.
 */
#define FJSON_REAL_SIZE 32
size_t fjson_format_real(char buf[FJSON_REAL_SIZE], double d);

/*
 * Parse `len` bytes of `text` (need not be NUL-terminated) as one whole JSON
 * document of any type; only whitespace may follow it.  On success `*out`
 * holds a new reference and 0 is returned.  On failure `*out` is NULL and
 * the return is -EINVAL (with err's message, line and column set; err's
 * path is left alone) or -ENOMEM.  An empty or whitespace-only text is
 * "the document is empty" with line and column 0.
 */
int fjson_parse(json_t **out, const char *text, size_t len, struct ferr *err);

/*
 * A JSON string of `n` bytes of text that may not be UTF-8 (a server's, a
 * command's, a database row written by an older flowfs): invalid bytes
 * become U+FFFD (utf8_repair()), so it is never refused.  A new
 * reference, or NULL when out of memory.  `s` NULL: "".
 */
json_t *fjson_text(const char *s, size_t n);

#endif
