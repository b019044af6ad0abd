/* fjson: JSON read and written byte for byte as Python's json module does;
 * see fjson.h. */
#include "lib/fjson.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/utf8.h"

/*
 * jansson refuses to parse deeper than this (its JSON_PARSER_MAX_DEPTH,
 * which is not in its public header; a unit test pins it).  The writer
 * refuses the same depth, so whatever it writes can be read back, and a
 * value that contains itself fails instead of overflowing the stack.
 */
#define FJSON_MAX_DEPTH 2048

/*** writer ***/

/* Sticky error, so the emitters stay straight-line code. */
struct writer {
	struct sbuf *sb;
	int err;
};

static void w_add(struct writer *w, const char *s, size_t n)
{
	if (!w->err && sbuf_add(w->sb, s, n) < 0)
		w->err = -ENOMEM;
}

static void w_newline_indent(struct writer *w, int level)
{
	size_t n = 1 + 2 * (size_t)level;
	char *p;

	if (w->err)
		return;
	if (sbuf_grow(w->sb, n) < 0) {
		w->err = -ENOMEM;
		return;
	}
	p = w->sb->buf + w->sb->len;
	p[0] = '\n';
	memset(p + 1, ' ', n - 1);
	sbuf_setlen(w->sb, w->sb->len + n);
}

/*
 * Per byte: 0 = copied as is, otherwise the letter after the backslash
 * ('u' = \u00XX).  Python escapes exactly these with ensure_ascii=False.
 */
static const char escape_table[256] = {
	['\b'] = 'b', ['\t'] = 't', ['\n'] = 'n', ['\f'] = 'f', ['\r'] = 'r',
	[0] = 'u', [1] = 'u', [2] = 'u', [3] = 'u', [4] = 'u', [5] = 'u',
	[6] = 'u', [7] = 'u', [11] = 'u', [14] = 'u', [15] = 'u', [16] = 'u',
	[17] = 'u', [18] = 'u', [19] = 'u', [20] = 'u', [21] = 'u', [22] = 'u',
	[23] = 'u', [24] = 'u', [25] = 'u', [26] = 'u', [27] = 'u', [28] = 'u',
	[29] = 'u', [30] = 'u', [31] = 'u',
	['"'] = '"', ['\\'] = '\\',
};

static void w_string(struct writer *w, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t i = 0, start;

	w_add(w, "\"", 1);
	while (i < n) {
		unsigned char c;
		char esc[6];

		start = i;
		while (i < n && !escape_table[(unsigned char)s[i]])
			i++;
		w_add(w, s + start, i - start);
		if (i == n)
			break;
		c = (unsigned char)s[i++];
		esc[0] = '\\';
		esc[1] = escape_table[c];
		if (esc[1] != 'u') {
			w_add(w, esc, 2);
			continue;
		}
		esc[2] = '0';
		esc[3] = '0';
		esc[4] = hex[c >> 4];
		esc[5] = hex[c & 15];
		w_add(w, esc, 6);
	}
	w_add(w, "\"", 1);
}

static void w_integer(struct writer *w, json_int_t v)
{
	char buf[24];
	char *p = buf + sizeof(buf);
	unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v
				     : (unsigned long long)v;

	do {
		*--p = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		*--p = '-';
	w_add(w, p, (size_t)(buf + sizeof(buf) - p));
}

/*
 * The significant digits (no leading or trailing zeros; "0" for zero) of
 * the shortest decimal that strtod() reads back as `d` (> 0 or zero), and
 * the decimal exponent of the first digit.  For normal doubles the
 * correctly rounded 15-digit form, stripped, is the shortest whenever any
 * form of at most 15 digits round-trips, so only 15, 16 and 17 digits need
 * trying; subnormals have too few bits for that argument and try from 1.
 */
static int shortest_digits(double d, char digits[20], int *exp10)
{
	char tmp[48], check[48];
	int prec, n = 0;

	if (d == 0) {
		digits[0] = '0';
		*exp10 = 0;
		return 1;
	}
	for (prec = d < DBL_MIN ? 1 : 15; prec <= 17; prec++) {
		const char *p;

		/* printf's decimal point follows the locale: keep only the
		 * digits and the exponent. */
		snprintf(tmp, sizeof(tmp), "%.*e", prec - 1, d);
		n = 0;
		for (p = tmp; *p && *p != 'e'; p++)
			if (*p >= '0' && *p <= '9')
				digits[n++] = *p;
		*exp10 = *p == 'e' ? atoi(p + 1) : 0;
		while (n > 1 && digits[n - 1] == '0')
			n--;
		if (prec == 17)
			break;
		/* "123e-4" has no decimal point, so strtod reads it the same
		 * in every locale. */
		snprintf(check, sizeof(check), "%.*se%d", n, digits,
			 *exp10 - (n - 1));
		if (strtod(check, NULL) == d)
			break;
	}
	return n;
}

/* Python's float_repr_style 'short' layout of repr(float). */
static size_t format_real(char *buf, double d)
{
	char digits[20];
	char *p = buf;
	int n, e, i;

	if (signbit(d)) {
		*p++ = '-';
		d = -d;
	}
	n = shortest_digits(d, digits, &e);
	if (e < -4 || e >= 16) {
		int ae = e < 0 ? -e : e;

		*p++ = digits[0];
		if (n > 1) {
			*p++ = '.';
			memcpy(p, digits + 1, (size_t)n - 1);
			p += n - 1;
		}
		*p++ = 'e';
		*p++ = e < 0 ? '-' : '+';
		if (ae >= 100)
			*p++ = (char)('0' + ae / 100);
		*p++ = (char)('0' + ae / 10 % 10);
		*p++ = (char)('0' + ae % 10);
	} else if (e >= 0) {
		for (i = 0; i <= e; i++)
			*p++ = i < n ? digits[i] : '0';
		*p++ = '.';
		if (n > e + 1) {
			memcpy(p, digits + e + 1, (size_t)(n - e - 1));
			p += n - e - 1;
		} else {
			*p++ = '0';
		}
	} else {
		*p++ = '0';
		*p++ = '.';
		for (i = -1; i > e; i--)
			*p++ = '0';
		memcpy(p, digits, (size_t)n);
		p += n;
	}
	return (size_t)(p - buf);
}

size_t fjson_format_real(char buf[FJSON_REAL_SIZE], double d)
{
	size_t n = format_real(buf, d);

	buf[n] = '\0';
	return n;
}

static void w_value(struct writer *w, const json_t *v, int level)
{
	char buf[40];
	size_t i, n;

	if (w->err)
		return;
	if (!v || level >= FJSON_MAX_DEPTH) {
		w->err = -EINVAL;
		return;
	}
	switch (json_typeof(v)) {
	case JSON_OBJECT: {
		/* jansson's iteration API is not const-qualified; it does not
		 * modify the object. */
		json_t *obj = (json_t *)v;
		void *it = json_object_iter(obj);

		if (!it) {
			w_add(w, "{}", 2);
			return;
		}
		w_add(w, "{", 1);
		for (i = 0; it; it = json_object_iter_next(obj, it), i++) {
			if (i)
				w_add(w, ",", 1);
			w_newline_indent(w, level + 1);
			w_string(w, json_object_iter_key(it),
				 json_object_iter_key_len(it));
			w_add(w, ": ", 2);
			w_value(w, json_object_iter_value(it), level + 1);
		}
		w_newline_indent(w, level);
		w_add(w, "}", 1);
		return;
	}
	case JSON_ARRAY:
		n = json_array_size(v);
		if (!n) {
			w_add(w, "[]", 2);
			return;
		}
		w_add(w, "[", 1);
		for (i = 0; i < n; i++) {
			if (i)
				w_add(w, ",", 1);
			w_newline_indent(w, level + 1);
			w_value(w, json_array_get(v, i), level + 1);
		}
		w_newline_indent(w, level);
		w_add(w, "]", 1);
		return;
	case JSON_STRING:
		w_string(w, json_string_value(v), json_string_length(v));
		return;
	case JSON_INTEGER:
		w_integer(w, json_integer_value(v));
		return;
	case JSON_REAL:
		if (!isfinite(json_real_value(v))) {
			w->err = -EINVAL;
			return;
		}
		w_add(w, buf, format_real(buf, json_real_value(v)));
		return;
	case JSON_TRUE:
		w_add(w, "true", 4);
		return;
	case JSON_FALSE:
		w_add(w, "false", 5);
		return;
	case JSON_NULL:
		w_add(w, "null", 4);
		return;
	}
	w->err = -EINVAL;
}

int fjson_dump(struct sbuf *out, const json_t *value)
{
	struct writer w = { out, 0 };
	size_t start = out->len;

	w_value(&w, value, 0);
	if (w.err)
		sbuf_setlen(out, start);
	return w.err;
}

char *fjson_dumps(const json_t *value)
{
	struct sbuf sb = SBUF_INIT;

	if (fjson_dump(&sb, value) < 0) {
		sbuf_release(&sb);
		return NULL;
	}
	return sbuf_detach(&sb, NULL);
}

/*** reader ***/

static bool is_ws(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static bool is_structural(char c)
{
	return c == '{' || c == '}' || c == '[' || c == ']' || c == ':' ||
	       c == ',';
}

static void offset_to_line_col(const char *text, size_t off, int *line,
			       int *col)
{
	size_t i;
	int l = 1, c = 1;

	for (i = 0; i < off; i++) {
		if (text[i] == '\n') {
			l++;
			c = 1;
		} else if (((unsigned char)text[i] & 0xC0) != 0x80) {
			c++;	/* count characters, not UTF-8 bytes */
		}
	}
	*line = l;
	*col = c;
}

/*
 * Where the token holding byte `t` starts, and where it ends.  jansson
 * reports the position after the last byte it read, i.e. the end of the
 * offending token; a person wants to be pointed at its start.  Strings
 * never span lines (a raw newline is an error), so scanning from the start
 * of t's line finds the token boundaries.
 */
static size_t token_at(const char *text, size_t len, size_t t, size_t *end)
{
	size_t i = t, s;

	while (i > 0 && text[i - 1] != '\n')
		i--;
	while (i <= t && i < len) {
		while (i < len && is_ws(text[i]))
			i++;
		s = i;
		if (i >= len)
			break;
		if (text[i] == '"') {
			i++;
			while (i < len && text[i] != '"' && text[i] != '\n')
				i += text[i] == '\\' ? 2 : 1;
			if (i < len && text[i] == '"')
				i++;
		} else if (is_structural(text[i])) {
			i++;
		} else {
			i++;
			while (i < len && !is_ws(text[i]) &&
			       !is_structural(text[i]) && text[i] != '"')
				i++;
		}
		if (i > len)
			i = len;
		if (s <= t && t < i) {
			*end = i;
			return s;
		}
	}
	*end = t < len ? t + 1 : len;
	return t;
}

static bool follows_comma(const char *text, size_t pos)
{
	while (pos > 0 && is_ws(text[pos - 1]))
		pos--;
	return pos > 0 && text[pos - 1] == ',';
}

/* The token for a message: quoted, cut at a character boundary. */
static void show_token(char *buf, size_t size, const char *s, size_t n)
{
	const size_t max = 40;
	size_t i, o = 0;
	bool cut = n > max;

	if (cut)
		n = utf8_cut(s, n, max);
	for (i = 0; i < n && o + 8 < size; i++) {
		unsigned char c = (unsigned char)s[i];

		buf[o++] = c < 0x20 || c == 0x7f ? '?' : (char)c;
	}
	if (cut && o + 4 < size) {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	buf[o] = '\0';
}

static bool starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Turn jansson's error into one a person can act on. */
static int explain(const char *text, size_t len, const json_error_t *je,
		   struct ferr *err)
{
	enum json_error_code code = json_error_code(je);
	const char *msg = je->text;
	size_t off = je->position > 0 ? (size_t)je->position : 0;
	size_t last, tok, tok_end, at;
	char shown[64];
	bool eof;
	int line, col;

	if (code == json_error_out_of_memory || !msg[0])
		return -ENOMEM;
	if (off > len)
		off = len;
	last = off ? off - 1 : 0;
	tok = token_at(text, len, last, &tok_end);
	show_token(shown, sizeof(shown), text + tok, tok_end - tok);
	eof = code == json_error_premature_end_of_input;
	at = eof ? len : tok;

#define SAY(...) do { \
	offset_to_line_col(text, at, &line, &col); \
	return ferr_set_at(err, -EINVAL, line, col, __VA_ARGS__); \
} while (0)

	if (starts_with(msg, "unable to decode byte")) {
		at = off;
		SAY("the text is not valid UTF-8 (byte 0x%02x)",
		    (unsigned char)text[off < len ? off : len - 1]);
	}
	if (starts_with(msg, "end of file expected"))
		SAY("unexpected '%s' after the end of the document", shown);
	if (starts_with(msg, "'}' expected")) {
		if (eof)
			SAY("the document ends before the object is closed");
		SAY("expected ',' or '}'");
	}
	if (starts_with(msg, "']' expected")) {
		if (eof)
			SAY("the document ends before the array is closed");
		SAY("expected ',' or ']'");
	}
	if (starts_with(msg, "':' expected")) {
		if (eof)
			SAY("the document ends after an object key");
		SAY("expected ':' after the object key");
	}
	if (starts_with(msg, "string or '}' expected")) {
		if (eof)
			SAY("the document ends before the object is closed");
		if (text[tok] == '}')
			SAY("expected a key after ',' (no comma may come "
			    "before '}')");
		SAY("expected an object key (a string in double quotes)");
	}
	if (starts_with(msg, "unexpected token")) {
		if (eof)
			SAY("the document ends where a value was expected");
		if (text[tok] == ']' && follows_comma(text, tok))
			SAY("expected a value after ',' (no comma may come "
			    "before ']')");
		SAY("expected a value, found '%s'", shown);
	}
	if (starts_with(msg, "invalid token")) {
		unsigned char c = (unsigned char)text[tok];

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
			SAY("'%s' is not a JSON value (JSON has true, false, "
			    "null, numbers, and strings in double quotes)",
			    shown);
		if ((c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.')
			SAY("invalid number '%s'", shown);
		if (c == '\'')
			SAY("strings must be in double quotes");
		if (tok == 0 && starts_with(text, "\xef\xbb\xbf"))
			SAY("the document starts with a byte order mark "
			    "(U+FEFF); remove it");
		SAY("unexpected character '%s'", shown);
	}
	if (starts_with(msg, "premature end of input")) {
		at = tok;
		SAY("this string is never closed (missing '\"')");
	}
	if (starts_with(msg, "unexpected newline")) {
		at = off;
		SAY("line break inside a string (write it as \\n, or close "
		    "the string with '\"')");
	}
	if (starts_with(msg, "control character")) {
		unsigned char c = (unsigned char)text[off < len ? off : last];

		at = off;
		if (escape_table[c] && escape_table[c] != 'u')
			SAY("control character 0x%02x inside a string (write "
			    "it as \\%c)", c, escape_table[c]);
		SAY("control character 0x%02x inside a string (write it as "
		    "\\u%04x)", c, c);
	}
	if (starts_with(msg, "invalid escape")) {
		size_t b = off;

		while (b > tok && text[b - 1] != '\\')
			b--;
		at = b > tok ? b - 1 : tok;
		show_token(shown, sizeof(shown), text + at, off - at);
		SAY("invalid escape '%s' in a string (valid escapes: \\\" "
		    "\\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)", shown);
	}
	if (starts_with(msg, "invalid Unicode '")) {
		const char *q = msg + strlen("invalid Unicode '");
		const char *qe = strchr(q, '\'');

		SAY("string contains '%.*s', a UTF-16 surrogate that is not "
		    "part of a pair (not valid Unicode)",
		    (int)(qe ? qe - q : 12), q);
	}
	if (starts_with(msg, "too big"))
		SAY("integer %s is out of range (%lld to %lld)", shown,
		    (long long)INT64_MIN, (long long)INT64_MAX);
	if (starts_with(msg, "real number overflow"))
		SAY("number %s is too large", shown);
	if (starts_with(msg, "maximum parsing depth"))
		SAY("the document is nested too deeply (more than %d levels)",
		    FJSON_MAX_DEPTH);
	if (starts_with(msg, "NUL byte in object key"))
		SAY("object keys must not contain \\u0000");
#undef SAY

	/* Unknown to us: keep jansson's words and position. */
	{
		char plain[JSON_ERROR_TEXT_LENGTH];
		char *near;

		snprintf(plain, sizeof(plain), "%s", msg);
		near = strstr(plain, " near ");
		if (near)
			*near = '\0';
		return ferr_set_at(err, -EINVAL, je->line > 0 ? je->line : 0,
				   je->column > 0 ? je->column : 0, "%s",
				   plain);
	}
}

int fjson_parse(json_t **out, const char *text, size_t len, struct ferr *err)
{
	json_error_t je;
	const char *nul;
	size_t i, n;
	int line, col;

	*out = NULL;
	for (i = 0; i < len && is_ws(text[i]); i++)
		;
	/* Where a value was expected, as Python's json.loads says it. */
	if (i == len) {
		int line = 1, col = 1;

		for (size_t k = 0; k < len; k++) {
			col++;
			if (text[k] == '\n') {
				line++;
				col = 1;
			}
		}
		return ferr_set_at(err, -EINVAL, line, col,
				   "the document is empty");
	}
	/*
	 * jansson already behaves as Python's json.loads for repeated keys:
	 * the later value replaces the earlier one in place, so the key
	 * keeps its first position.
	 */
	/*
	 * jansson's lexer drops a raw NUL byte in some places and takes it
	 * for the end of the text in others, so parse only what comes before
	 * the first one: an error there comes first, otherwise the NUL is it.
	 */
	nul = memchr(text, '\0', len);
	n = nul ? (size_t)(nul - text) : len;
	*out = json_loadb(text, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
	if (*out && !nul)
		return 0;
	if (!*out && (!nul || json_error_code(&je) !=
			      json_error_premature_end_of_input))
		return explain(text, n, &je, err);
	json_decref(*out);
	*out = NULL;
	offset_to_line_col(text, n, &line, &col);
	return ferr_set_at(err, -EINVAL, line, col,
			   "unexpected NUL byte (inside a string, write it "
			   "as \\u0000)");
}

json_t *fjson_text(const char *s, size_t n)
{
	struct sbuf fixed = SBUF_INIT;
	json_t *j;

	if (!s)
		return json_string("");
	j = json_stringn(s, n);
	if (j)
		return j;
	if (utf8_repair(&fixed, s, n) < 0)
		return NULL;
	j = json_stringn(fixed.buf, fixed.len);
	sbuf_release(&fixed);
	return j;
}
