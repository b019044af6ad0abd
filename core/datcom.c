/* datcom: the datcom skill's parameters to a Digital DATCOM deck; see datcom.h. */
#include "datcom.h"

#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deck.h"
#include "fjson.h"

enum kind {
	K_CASEID,	/* printable ASCII text */
	K_DIM,		/* FT IN M CM */
	K_COUNT,	/* whole number 1..20 */
	K_CODE,		/* whole number lo..hi */
	K_NUM,		/* number, optional range */
	K_LIST,		/* array or comma-separated string of numbers */
	K_NACA,		/* NACA designation */
	K_DERIV,	/* DEG RAD */
	K_BOOL,
};

/* Range flags */
#define LO 1u		/* >= lo */
#define XLO 2u		/* > lo */
#define HI 4u		/* <= hi */
#define XHI 8u		/* < hi */
#define REQ 16u		/* required */

struct dparam {
	const char *name;
	enum kind kind;
	const char *var;	/* the DATCOM variable or card, for messages */
	const char *of;		/* " of the wing", or "" */
	unsigned flags;
	double lo, hi;
};

#define WING " of the wing"
#define HTAIL " of the horizontal tail"
#define VTAIL " of the vertical tail"

/*
 * Schema order (core/skills/datcom/assets/parameter.schema.json); the
 * ranges are the schema's, applied again so that values from elsewhere
 * (string lists, decks, callers that skipped the schema) get them too.
 */
#define PARAMS(X) \
	X(CASE_ID, "case_id", K_CASEID, "CASEID", "", REQ, 0, 0) \
	X(DIMP, "dim", K_DIM, "DIM", "", 0, 0, 0) \
	X(NALPHA, "nalpha", K_COUNT, "NALPHA", "", REQ, 1, 20) \
	X(ALSCHD, "alschd", K_LIST, "ALSCHD", "", REQ | LO | HI, -90, 90) \
	X(NMACH, "nmach", K_COUNT, "NMACH", "", REQ, 1, 20) \
	X(MACH, "mach", K_LIST, "MACH", "", REQ | XLO, 0, 0) \
	X(NALT, "nalt", K_COUNT, "NALT", "", REQ, 1, 20) \
	X(ALT, "alt", K_LIST, "ALT", "", REQ, 0, 0) \
	X(WT, "wt", K_NUM, "WT", "", REQ | XLO, 0, 0) \
	X(SREF, "sref", K_NUM, "SREF", "", XLO, 0, 0) \
	X(CBARR, "cbarr", K_NUM, "CBARR", "", XLO, 0, 0) \
	X(BLREF, "blref", K_NUM, "BLREF", "", XLO, 0, 0) \
	X(XCG, "xcg", K_NUM, "XCG", "", REQ, 0, 0) \
	X(ZCG, "zcg", K_NUM, "ZCG", "", REQ, 0, 0) \
	X(XW, "xw", K_NUM, "XW", "", REQ, 0, 0) \
	X(ZW, "zw", K_NUM, "ZW", "", REQ, 0, 0) \
	X(ALIW, "aliw", K_NUM, "ALIW", "", REQ | LO | HI, -90, 90) \
	X(XH, "xh", K_NUM, "XH", "", REQ, 0, 0) \
	X(ZH, "zh", K_NUM, "ZH", "", REQ, 0, 0) \
	X(ALIH, "alih", K_NUM, "ALIH", "", REQ | LO | HI, -90, 90) \
	X(XV, "xv", K_NUM, "XV", "", REQ, 0, 0) \
	X(ZV, "zv", K_NUM, "ZV", "", REQ, 0, 0) \
	X(NX, "nx", K_COUNT, "NX", "", REQ, 1, 20) \
	X(XC, "x_coords", K_LIST, "X", "", REQ, 0, 0) \
	X(RC, "r_coords", K_LIST, "R", "", REQ | LO, 0, 0) \
	X(ZUC, "zu_coords", K_LIST, "ZU", "", REQ, 0, 0) \
	X(ZLC, "zl_coords", K_LIST, "ZL", "", REQ, 0, 0) \
	X(ITYPE, "itype", K_CODE, "ITYPE", "", REQ, 1, 3) \
	X(METHOD, "method", K_CODE, "METHOD", "", REQ, 1, 2) \
	SURFACE(X, W, "wing_", WING) \
	SURFACE(X, H, "htail_", HTAIL) \
	X(V_NACA, "vtail_naca", K_NACA, "NACA-V", VTAIL, REQ, 0, 0) \
	X(V_CHRDTP, "vtail_chrdtp", K_NUM, "CHRDTP", VTAIL, REQ | LO, 0, 0) \
	X(V_SSPN, "vtail_sspn", K_NUM, "SSPN", VTAIL, REQ | XLO, 0, 0) \
	X(V_SSPNE, "vtail_sspne", K_NUM, "SSPNE", VTAIL, REQ | XLO, 0, 0) \
	X(V_CHRDR, "vtail_chrdr", K_NUM, "CHRDR", VTAIL, REQ | XLO, 0, 0) \
	X(V_SAVSI, "vtail_savsi", K_NUM, "SAVSI", VTAIL, REQ | XLO | XHI, -90, 90) \
	X(V_CHSTAT, "vtail_chstat", K_NUM, "CHSTAT", VTAIL, REQ | LO | HI, 0, 1) \
	X(V_TYPE, "vtail_type", K_CODE, "TYPE", VTAIL, REQ, 1, 3) \
	X(LOOP, "loop", K_CODE, "LOOP", "", 0, 1, 3) \
	X(RNNUB, "rnnub", K_LIST, "RNNUB", "", XLO, 0, 0) \
	X(DERIV, "deriv", K_DERIV, "DERIV", "", 0, 0, 0) \
	X(DAMP, "damp", K_BOOL, "DAMP", "", 0, 0, 0) \
	X(BUILD, "build", K_BOOL, "BUILD", "", 0, 0, 0)

#define SURFACE(X, S, pre, OF) \
	X(S##_NACA, pre "naca", K_NACA, "NACA-" #S, OF, REQ, 0, 0) \
	X(S##_CHRDTP, pre "chrdtp", K_NUM, "CHRDTP", OF, REQ | LO, 0, 0) \
	X(S##_SSPN, pre "sspn", K_NUM, "SSPN", OF, REQ | XLO, 0, 0) \
	X(S##_SSPNE, pre "sspne", K_NUM, "SSPNE", OF, REQ | XLO, 0, 0) \
	X(S##_CHRDR, pre "chrdr", K_NUM, "CHRDR", OF, REQ | XLO, 0, 0) \
	X(S##_SAVSI, pre "savsi", K_NUM, "SAVSI", OF, REQ | XLO | XHI, -90, 90) \
	X(S##_CHSTAT, pre "chstat", K_NUM, "CHSTAT", OF, REQ | LO | HI, 0, 1) \
	X(S##_TWISTA, pre "twista", K_NUM, "TWISTA", OF, REQ | LO | HI, -90, 90) \
	X(S##_DHDADI, pre "dhdadi", K_NUM, "DHDADI", OF, REQ | LO | HI, -90, 90) \
	X(S##_TYPE, pre "type", K_CODE, "TYPE", OF, REQ, 1, 3)

#define X_ENUM(id, name, kind, var, of, flags, lo, hi) P_##id,
enum { PARAMS(X_ENUM) NPARAMS };

#define X_TABLE(id, name, kind, var, of, flags, lo, hi) \
	{ name, kind, var, of, flags, lo, hi },
static const struct dparam params_table[NPARAMS] = { PARAMS(X_TABLE) };

#define DATCOM_REAL_MAX 3.4e38

/* Longest NACA designation kept; a card holds at most 80 columns anyway. */
#define NACA_MAX 80

struct dval {
	bool set;
	double num;		/* K_NUM, K_COUNT, K_CODE, K_BOOL (0/1) */
	size_t n;		/* K_LIST: items given (only 20 are kept) */
	double list[DATCOM_MAX_LIST];
	char text[2 * NACA_MAX + 8];	/* K_CASEID, K_DIM, K_DERIV, K_NACA */
	char series;		/* K_NACA */
};

struct dcase {
	struct dval v[NPARAMS];
};

/* The three planforms, for the rules and namelists they share. */
struct surface {
	const char *noun;	/* "wing" */
	const char *namelist;	/* WGPLNF */
	char letter;		/* W: NACA-W card */
	int first;		/* P_W_NACA */
	bool twist;		/* has TWISTA and DHDADI */
};

static const struct surface surfaces[] = {
	{ "wing", "WGPLNF", 'W', P_W_NACA, true },
	{ "horizontal tail", "HTPLNF", 'H', P_H_NACA, true },
	{ "vertical tail", "VTPLNF", 'V', P_V_NACA, false },
};

/* Offsets inside a surface's run of parameters (schema order). */
enum { S_NACA, S_CHRDTP, S_SSPN, S_SSPNE, S_CHRDR, S_SAVSI, S_CHSTAT };

static int fail(struct ferr *err, int pi, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct ferr *err, int pi, const char *fmt, ...)
{
	char path[FERR_PATH_MAX];
	va_list ap;

	if (!err)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	va_end(ap);
	err->line = err->column = 0;
	snprintf(path, sizeof(path), "parameter.%s", params_table[pi].name);
	ferr_set_path(err, path);
	return -EINVAL;
}

/*
 * A number as Python's repr() shows it (the same spelling as the schema's
 * messages and parameter.json), e.g. "1e-05", "2.0", "25".
 */
static void show(char *buf, size_t size, double v)
{
	json_t *j = json_real(v);
	char *s = j ? fjson_dumps(j) : NULL;

	if (s)
		snprintf(buf, size, "%s", s);
	else
		snprintf(buf, size, "%g", v);
	free(s);
	json_decref(j);
}

/* What a JSON value is, for "must be a number, not a string". */
static const char *jtype(const json_t *j)
{
	if (!j)
		return "nothing";
	switch (json_typeof(j)) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "a list";
	case JSON_STRING: return "a string";
	case JSON_INTEGER: return "an integer";
	case JSON_REAL: return "a number";
	case JSON_TRUE: return "true";
	case JSON_FALSE: return "false";
	case JSON_NULL: return "null";
	}
	return "something else";
}

/* "ALSCHD (alschd)", "TWISTA of the wing (wing_twista)" */
#define LABEL_MAX 96
static const char *label(char *buf, int pi)
{
	const struct dparam *p = &params_table[pi];

	snprintf(buf, LABEL_MAX, "%s%s (%s)", p->var, p->of, p->name);
	return buf;
}

/* "ALSCHD(3) (alschd)" for item i (0-based) of a list */
static const char *item_label(char *buf, int pi, size_t i)
{
	const struct dparam *p = &params_table[pi];

	snprintf(buf, LABEL_MAX, "%s(%zu) (%s)", p->var, i + 1, p->name);
	return buf;
}

/*
 * The range rule of a parameter broken by `v`, as words ("greater than
 * 0"), or NULL when v is within it.
 */
static const char *range_words(const struct dparam *p, double v, char *buf,
			       size_t size)
{
	char lo[40], hi[40];
	bool bad = false;

	if ((p->flags & LO) && !(v >= p->lo))
		bad = true;
	if ((p->flags & XLO) && !(v > p->lo))
		bad = true;
	if ((p->flags & HI) && !(v <= p->hi))
		bad = true;
	if ((p->flags & XHI) && !(v < p->hi))
		bad = true;
	if (!bad)
		return NULL;
	snprintf(lo, sizeof(lo), "%g", p->lo);
	snprintf(hi, sizeof(hi), "%g", p->hi);
	if ((p->flags & LO) && (p->flags & HI))
		snprintf(buf, size, "between %s and %s", lo, hi);
	else if ((p->flags & XLO) && (p->flags & XHI))
		snprintf(buf, size, "strictly between %s and %s", lo, hi);
	else if (p->flags & LO)
		snprintf(buf, size, "at least %s", lo);
	else if (p->flags & XLO)
		snprintf(buf, size, "greater than %s", lo);
	else if (p->flags & HI)
		snprintf(buf, size, "at most %s", hi);
	else
		snprintf(buf, size, "less than %s", hi);
	return buf;
}

/* A value the deck will print: in range, and printable as DATCOM reads it. */
static int check_number(struct ferr *err, int pi, const char *lbl, double v)
{
	char words[160], num[40], shown[40];
	int r;

	if (range_words(&params_table[pi], v, words, sizeof(words))) {
		show(shown, sizeof(shown), v);
		return fail(err, pi, "%s must be %s, not %s", lbl, words,
			    shown);
	}
	/* DATCOM's REALs are single precision: beyond this they overflow */
	if (fabs(v) > DATCOM_REAL_MAX) {
		show(shown, sizeof(shown), v);
		return fail(err, pi, "%s is %s, beyond what a DATCOM REAL "
			    "holds (about 3.4E38)", lbl, shown);
	}
	r = deck_format_number(v, num, sizeof(num));
	if (r == -ERANGE) {
		show(shown, sizeof(shown), v);
		return fail(err, pi,
			    "%s is %s, which a DATCOM card would show as 0.0 "
			    "(numbers are written with at most 4 decimals); "
			    "use a smaller unit or 0", lbl, shown);
	}
	if (r < 0) {
		show(shown, sizeof(shown), v);
		return fail(err, pi, "%s is %s, which cannot be written on a "
			    "DATCOM card", lbl, shown);
	}
	return 0;
}

/* A whole number lo..hi ("1, 2 or 3" for short ranges). */
static int check_whole(struct ferr *err, int pi, const json_t *j,
		       struct dval *out)
{
	const struct dparam *p = &params_table[pi];
	char lbl[LABEL_MAX], shown[40];
	double v;

	if (!json_is_number(j))
		return fail(err, pi, "%s must be a whole number, not %s",
			    label(lbl, pi), jtype(j));
	v = json_number_value(j);
	show(shown, sizeof(shown), v);
	if (json_is_integer(j))
		snprintf(shown, sizeof(shown), "%" JSON_INTEGER_FORMAT,
			 json_integer_value(j));
	if (v != floor(v))
		return fail(err, pi, "%s must be a whole number, not %s",
			    label(lbl, pi), shown);
	if (v < p->lo || v > p->hi) {
		if (p->kind == K_COUNT)
			return fail(err, pi, "%s must be between %g and %g, "
				    "not %s", label(lbl, pi), p->lo, p->hi,
				    shown);
		if (p->hi - p->lo == 1)
			return fail(err, pi, "%s must be %g or %g, not %s",
				    label(lbl, pi), p->lo, p->hi, shown);
		return fail(err, pi, "%s must be %g, %g or %g, not %s",
			    label(lbl, pi), p->lo, p->lo + 1, p->hi, shown);
	}
	out->num = v;
	return 0;
}

/* Printable ASCII, at most `max` bytes, for quoting input in a message. */
static void quote(char *buf, size_t size, const char *s, size_t len)
{
	size_t o = 0, max = 24;

	for (size_t i = 0; i < len && o + 4 < size; i++) {
		if (i == max) {
			memcpy(buf + o, "...", 3);
			o += 3;
			break;
		}
		buf[o++] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
	}
	buf[o] = 0;
}

/*
 * A decimal number, the whole of s[0..len): [+-] digits [. digits] or
 * [+-] . digits, then [eE [+-] digits].  Nothing else (no inf, nan, hex,
 * blanks inside).
 */
static bool decimal_syntax(const char *s, size_t len)
{
	size_t i = 0, digits = 0;

	if (i < len && (s[i] == '+' || s[i] == '-'))
		i++;
	while (i < len && s[i] >= '0' && s[i] <= '9')
		i++, digits++;
	if (i < len && s[i] == '.') {
		i++;
		while (i < len && s[i] >= '0' && s[i] <= '9')
			i++, digits++;
	}
	if (!digits)
		return false;
	if (i < len && (s[i] == 'e' || s[i] == 'E')) {
		size_t ed = 0;

		i++;
		if (i < len && (s[i] == '+' || s[i] == '-'))
			i++;
		while (i < len && s[i] >= '0' && s[i] <= '9')
			i++, ed++;
		if (!ed)
			return false;
	}
	return i == len;
}

static bool blank(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* A list given as "1.0, 2.0,3": strict, locale-independent. */
static int parse_list_string(struct ferr *err, int pi, const char *s,
			     size_t len, struct dval *out)
{
	char lbl[LABEL_MAX], q[40], tok[64];
	locale_t c_locale = (locale_t)0;
	size_t start = 0;
	int ret = 0;

	out->n = 0;
	for (size_t i = 0; i <= len; i++) {
		size_t a = start, b = i;
		double v;
		char *end;

		if (i < len && s[i] != ',')
			continue;
		start = i + 1;
		while (a < b && blank(s[a]))
			a++;
		while (b > a && blank(s[b - 1]))
			b--;
		if (a == b) {
			ret = fail(err, pi, "%s is not a list of numbers: "
				   "item %zu is empty", label(lbl, pi),
				   out->n + 1);
			goto out;
		}
		if (!decimal_syntax(s + a, b - a) || b - a >= sizeof(tok)) {
			quote(q, sizeof(q), s + a, b - a);
			ret = fail(err, pi, "%s is not a list of numbers: "
				   "item %zu (\"%s\") is not a number",
				   label(lbl, pi), out->n + 1, q);
			goto out;
		}
		if (!c_locale) {
			c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
			if (!c_locale) {
				ret = -ENOMEM;
				goto out;
			}
		}
		memcpy(tok, s + a, b - a);
		tok[b - a] = 0;
		errno = 0;
		v = strtod_l(tok, &end, c_locale);
		if (errno == ERANGE || !isfinite(v)) {
			quote(q, sizeof(q), s + a, b - a);
			ret = fail(err, pi, "%s: item %zu (\"%s\") is out of "
				   "range", label(lbl, pi), out->n + 1, q);
			goto out;
		}
		if (out->n < DATCOM_MAX_LIST)
			out->list[out->n] = v;
		out->n++;
	}
out:
	if (c_locale)
		freelocale(c_locale);
	return ret;
}

static int get_list(struct ferr *err, int pi, const json_t *j,
		    struct dval *out)
{
	char lbl[LABEL_MAX];
	size_t i;
	json_t *it;
	int r;

	if (json_is_string(j)) {
		r = parse_list_string(err, pi, json_string_value(j),
				      json_string_length(j), out);
		if (r < 0)
			return r;
	} else if (json_is_array(j)) {
		out->n = json_array_size(j);
		json_array_foreach(j, i, it) {
			if (!json_is_number(it))
				return fail(err, pi, "%s must be a number, "
					    "not %s", item_label(lbl, pi, i),
					    jtype(it));
			if (i < DATCOM_MAX_LIST)
				out->list[i] = json_number_value(it);
		}
	} else {
		return fail(err, pi, "%s must be a list of numbers (a JSON "
			    "array or a comma-separated string), not %s",
			    label(lbl, pi), jtype(j));
	}
	if (!out->n)
		return fail(err, pi, "%s must hold at least one value",
			    label(lbl, pi));
	for (i = 0; i < out->n && i < DATCOM_MAX_LIST; i++) {
		r = check_number(err, pi, item_label(lbl, pi, i),
				 out->list[i]);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Exactly n digits at *p, advancing it. */
static bool digits(const char **p, int n)
{
	for (int i = 0; i < n; i++)
		if ((*p)[i] < '0' || (*p)[i] > '9')
			return false;
	*p += n;
	return true;
}

/* digits [. digits] or . digits */
static bool plain_number(const char **p)
{
	const char *s = *p;
	int d = 0;

	while (*s >= '0' && *s <= '9')
		s++, d++;
	if (*s == '.') {
		s++;
		while (*s >= '0' && *s <= '9')
			s++, d++;
	}
	if (!d)
		return false;
	*p = s;
	return true;
}

/* Does `d` (upper case, no blanks) fit series `series`? */
static bool naca_fits(char series, const char *d)
{
	const char *p = d;

	switch (series) {
	case '1':	/* 16-212 */
		return *p++ == '1' && digits(&p, 1) && *p++ == '-' &&
		       digits(&p, 3) && !*p;
	case '4':	/* 0012, 0012-25 */
	case '5':	/* 23012, 23012-33 */
		if (!digits(&p, series == '4' ? 4 : 5))
			return false;
		if (*p == '-') {
			p++;
			if (!digits(&p, 2))
				return false;
		}
		return !*p;
	case '6':	/* 63-415, 631-012, 64A204 */
		if (*p++ != '6' || !digits(&p, 1))
			return false;
		if (*p >= '0' && *p <= '9')
			p++;
		if (*p != '-' && *p != 'A')
			return false;
		p++;
		return digits(&p, 3) && !*p;
	case 'S':	/* S-1-40.0-9.0, S-3-30.0-2.5-20.0 */
		if (*p < '1' || *p > '3')
			return false;
		p++;
		for (int i = 0; i < 3; i++) {
			if (i == 2 && !*p)
				return true;
			if (*p++ != '-' || !plain_number(&p))
				return false;
		}
		return !*p;
	}
	return false;
}

/* A plain_number() text that is at most 1 (a mean line's chord fraction). */
static bool at_most_one(const char *s)
{
	while (*s == '0')
		s++;
	if (*s == '1') {
		s++;
		if (!*s)
			return true;
		if (*s++ != '.')
			return false;
		while (*s == '0')
			s++;
		return !*s;
	}
	return *s == '.' || !*s;
}

/*
 * Parse a designation into out->series and out->text (the card's text
 * after NACA-s-series-).  false when it is not one.
 */
static bool naca_parse(const char *in, size_t len, struct dval *out)
{
	char buf[NACA_MAX + 1], *d, *mean = NULL;
	size_t a = 0, b = len;

	while (a < b && in[a] == ' ')
		a++;
	while (b > a && in[b - 1] == ' ')
		b--;
	if (b - a > NACA_MAX || a == b)
		return false;
	for (size_t i = a; i < b; i++) {
		char c = in[i];

		if (c < 0x20 || c >= 0x7f)
			return false;
		buf[i - a] = (c >= 'a' && c <= 'z') ? (char)(c - 32) : c;
	}
	buf[b - a] = 0;
	d = buf;
	if (!strncmp(d, "NACA", 4)) {
		d += 4;
		if (*d == ' ' || *d == '-')
			d++;
		while (*d == ' ')
			d++;
	}
	/* a mean line after blanks: "64A204 A=0.8" */
	mean = strchr(d, ' ');
	if (mean) {
		*mean++ = 0;
		while (*mean == ' ')
			mean++;
	}
	if (d[0] && d[1] == '-' && strchr("1456S", d[0])) {
		out->series = d[0];
		d += 2;
		if (!naca_fits(out->series, d))
			return false;
	} else if (naca_fits('4', d)) {
		out->series = '4';
	} else if (naca_fits('5', d)) {
		out->series = '5';
	} else if (naca_fits('6', d)) {
		out->series = '6';
	} else if (naca_fits('1', d)) {
		out->series = '1';
	} else {
		return false;
	}
	if (mean) {
		const char *m = mean + 2;

		if (out->series != '6' || strncmp(mean, "A=", 2) ||
		    !plain_number(&m) || *m || !at_most_one(mean + 2))
			return false;
		snprintf(out->text, sizeof(out->text), "%s A=%s", d, mean + 2);
	} else {
		snprintf(out->text, sizeof(out->text), "%s", d);
	}
	return true;
}

static int get_value(struct ferr *err, int pi, const json_t *j,
		     struct dval *out)
{
	const struct dparam *p = &params_table[pi];
	char lbl[LABEL_MAX], q[40];
	const char *s;
	size_t len;

	switch (p->kind) {
	case K_CASEID:
		if (!json_is_string(j))
			return fail(err, pi, "%s must be a string, not %s",
				    label(lbl, pi), jtype(j));
		s = json_string_value(j);
		len = json_string_length(j);
		while (len && s[len - 1] == ' ')
			len--;
		if (!len)
			return fail(err, pi, "%s must not be empty",
				    label(lbl, pi));
		if (len > DECK_CASEID_MAX)
			return fail(err, pi, "%s has %zu characters; a CASEID "
				    "card holds at most %d", label(lbl, pi),
				    len, DECK_CASEID_MAX);
		for (size_t i = 0; i < len; i++)
			if (s[i] < 0x20 || s[i] >= 0x7f)
				return fail(err, pi, "%s may hold only "
					    "printable ASCII characters (a "
					    "DATCOM card is plain ASCII)",
					    label(lbl, pi));
		memcpy(out->text, s, len);
		out->text[len] = 0;
		return 0;
	case K_DIM:
	case K_DERIV:
		s = json_is_string(j) ? json_string_value(j) : NULL;
		if (s && strlen(s) == json_string_length(j) &&
		    (p->kind == K_DIM ?
		     (!strcmp(s, "FT") || !strcmp(s, "IN") ||
		      !strcmp(s, "M") || !strcmp(s, "CM")) :
		     (!strcmp(s, "DEG") || !strcmp(s, "RAD")))) {
			snprintf(out->text, sizeof(out->text), "%s", s);
			return 0;
		}
		if (s)
			quote(q, sizeof(q), s, json_string_value(j) ?
			      json_string_length(j) : 0);
		if (p->kind == K_DIM)
			return fail(err, pi, "%s must be one of FT, IN, M, "
				    "CM, not %s%s%s", label(lbl, pi),
				    s ? "\"" : "", s ? q : jtype(j),
				    s ? "\"" : "");
		return fail(err, pi, "%s must be DEG or RAD, not %s%s%s",
			    label(lbl, pi), s ? "\"" : "", s ? q : jtype(j),
			    s ? "\"" : "");
	case K_COUNT:
	case K_CODE:
		return check_whole(err, pi, j, out);
	case K_NUM:
		if (!json_is_number(j))
			return fail(err, pi, "%s must be a number, not %s",
				    label(lbl, pi), jtype(j));
		out->num = json_number_value(j);
		return check_number(err, pi, label(lbl, pi), out->num);
	case K_LIST:
		return get_list(err, pi, j, out);
	case K_NACA:
		if (!json_is_string(j))
			return fail(err, pi, "%s must be a NACA designation "
				    "(a string), not %s", label(lbl, pi),
				    jtype(j));
		if (!naca_parse(json_string_value(j), json_string_length(j),
				out)) {
			quote(q, sizeof(q), json_string_value(j),
			      json_string_length(j));
			return fail(err, pi, "%s: \"%s\" is not a NACA "
				    "designation DATCOM reads (4-digit 2412 "
				    "or 0012-25, 5-digit 23012, 6-series "
				    "63-415, 64A204 or 64A204 A=0.8, "
				    "1-series 16-212, supersonic "
				    "S-1-40.0-9.0)", label(lbl, pi), q);
		}
		return 0;
	case K_BOOL:
		if (!json_is_boolean(j))
			return fail(err, pi, "%s must be true or false, not %s",
				    label(lbl, pi), jtype(j));
		out->num = json_is_true(j);
		return 0;
	}
	return -EINVAL;
}

/* "The number of angles of attack (5) must match NALPHA (6)" */
static int check_count(struct ferr *err, const struct dcase *c, int count,
		       int list, const char *what)
{
	const struct dval *n = &c->v[count], *l = &c->v[list];
	char lbl[LABEL_MAX];

	if (!l->set)
		return 0;
	if (n->set && (double)l->n != n->num)
		return fail(err, list, "The number of %s (%zu) must match "
			    "%s (%d)", what, l->n, params_table[count].var,
			    (int)n->num);
	if (l->n > DATCOM_MAX_LIST)
		return fail(err, list, "%s has %zu values; DATCOM's arrays "
			    "hold at most %d", label(lbl, list), l->n,
			    DATCOM_MAX_LIST);
	return 0;
}

/* Each value above the one before (strict) or not below it. */
static int check_order(struct ferr *err, const struct dcase *c, int pi,
		       bool strict, const char *what)
{
	const struct dval *l = &c->v[pi];
	char a[40], b[40];

	if (!l->set)
		return 0;
	for (size_t i = 1; i < l->n && i < DATCOM_MAX_LIST; i++) {
		if (strict ? l->list[i] > l->list[i - 1] :
		    l->list[i] >= l->list[i - 1])
			continue;
		show(a, sizeof(a), l->list[i]);
		show(b, sizeof(b), l->list[i - 1]);
		return fail(err, pi, "%s (%s) must be %sascending: value %zu "
			    "(%s) %s value %zu (%s)", what,
			    params_table[pi].var, strict ? "strictly " : "",
			    i + 1, a, strict ? "does not exceed" :
			    "is less than", i, b);
	}
	return 0;
}

static int check_rules(const struct dcase *c, struct ferr *err)
{
	const struct dval *v = c->v;
	char a[40], b[40];
	int r;

	if ((r = check_count(err, c, P_NALPHA, P_ALSCHD,
			     "angles of attack")) < 0 ||
	    (r = check_count(err, c, P_NMACH, P_MACH, "Mach numbers")) < 0 ||
	    (r = check_count(err, c, P_NALT, P_ALT, "altitudes")) < 0 ||
	    (r = check_count(err, c, P_NX, P_XC,
			     "body stations in x_coords")) < 0 ||
	    (r = check_count(err, c, P_NX, P_RC,
			     "body radii in r_coords")) < 0 ||
	    (r = check_count(err, c, P_NX, P_ZUC,
			     "upper body heights in zu_coords")) < 0 ||
	    (r = check_count(err, c, P_NX, P_ZLC,
			     "lower body heights in zl_coords")) < 0 ||
	    (r = check_count(err, c, P_NMACH, P_RNNUB,
			     "Reynolds numbers in rnnub")) < 0)
		return r;
	/* rnnub has one value per Mach number even when nmach is missing */
	if (v[P_RNNUB].set && !v[P_NMACH].set && v[P_MACH].set &&
	    v[P_RNNUB].n != v[P_MACH].n)
		return fail(err, P_RNNUB, "The number of Reynolds numbers in "
			    "rnnub (%zu) must match the number of Mach "
			    "numbers (%zu)", v[P_RNNUB].n, v[P_MACH].n);
	if (v[P_NALT].set && v[P_NMACH].set &&
	    (!v[P_LOOP].set || v[P_LOOP].num == 1) &&
	    v[P_NALT].num != v[P_NMACH].num)
		return fail(err, P_NALT, "NALT (%d) must equal NMACH (%d) when "
			    "LOOP is 1 (Mach number and altitude vary "
			    "together; set loop to 2 or 3 for every "
			    "combination)", (int)v[P_NALT].num,
			    (int)v[P_NMACH].num);
	if ((r = check_order(err, c, P_ALSCHD, true,
			     "The angles of attack")) < 0 ||
	    (r = check_order(err, c, P_XC, false, "The body stations")) < 0)
		return r;
	for (size_t s = 0; s < sizeof(surfaces) / sizeof(*surfaces); s++) {
		const struct surface *sf = &surfaces[s];
		const struct dval *sspn = &v[sf->first + S_SSPN];
		const struct dval *sspne = &v[sf->first + S_SSPNE];

		if (!sspn->set || !sspne->set || sspne->num <= sspn->num)
			continue;
		show(a, sizeof(a), sspne->num);
		show(b, sizeof(b), sspn->num);
		return fail(err, sf->first + S_SSPNE, "The %s's exposed "
			    "semi-span SSPNE (%s = %s) must not exceed its "
			    "semi-span SSPN (%s = %s)", sf->noun,
			    params_table[sf->first + S_SSPNE].name, a,
			    params_table[sf->first + S_SSPN].name, b);
	}
	return 0;
}

/* Read and check everything present in `params` into `c`. */
static int load(const json_t *params, struct dcase *c, struct ferr *err)
{
	int r;

	memset(c, 0, sizeof(*c));
	if (!json_is_object(params)) {
		if (err) {
			ferr_set(err, -EINVAL, "the parameters must be a JSON "
				 "object, not %s", jtype(params));
			ferr_set_path(err, "parameter");
		}
		return -EINVAL;
	}
	for (int i = 0; i < NPARAMS; i++) {
		const json_t *j = json_object_get(params,
						  params_table[i].name);

		if (!j)
			continue;
		r = get_value(err, i, j, &c->v[i]);
		if (r < 0)
			return r;
		c->v[i].set = true;
	}
	return check_rules(c, err);
}

int datcom_check(const json_t *params, struct ferr *err)
{
	struct dcase *c = malloc(sizeof(*c));
	int r;

	if (!c)
		return -ENOMEM;
	r = load(params, c, err);
	free(c);
	return r;
}

int datcom_missing(const json_t *params, struct sbuf *out)
{
	int n = 0;

	for (int i = 0; i < NPARAMS; i++) {
		if (!(params_table[i].flags & REQ))
			continue;
		if (json_is_object(params) &&
		    json_object_get(params, params_table[i].name))
			continue;
		if ((n && sbuf_addstr(out, ", ") < 0) ||
		    sbuf_addstr(out, params_table[i].name) < 0)
			return -ENOMEM;
		n++;
	}
	return n;
}

/* The namelists the deck is built from, each a run of parameters. */
static const int fltcon[] = { P_NMACH, P_MACH, P_NALT, P_ALT, P_NALPHA,
			      P_ALSCHD, P_WT, P_LOOP, P_RNNUB };
static const int optins[] = { P_SREF, P_CBARR, P_BLREF };
static const int synths[] = { P_XCG, P_ZCG, P_XW, P_ZW, P_ALIW, P_XH, P_ZH,
			      P_ALIH, P_XV, P_ZV };
static const int body[] = { P_NX, P_XC, P_RC, P_ZUC, P_ZLC, P_ITYPE,
			    P_METHOD };

/* Fill a namelist with the parameters of `ids` that are set. */
static int add_vars(struct deck_namelist *nl, const struct dcase *c,
		    const int *ids, size_t n, struct ferr *err)
{
	for (size_t k = 0; k < n; k++) {
		const struct dval *v = &c->v[ids[k]];
		const struct dparam *p = &params_table[ids[k]];
		int r;

		if (!v->set)
			continue;
		if (p->kind == K_LIST)
			r = deck_add_array(nl, p->var, 1, v->list, v->n);
		else
			r = deck_add_number(nl, p->var, v->num);
		if (r == -ENOMEM)
			return r;
		if (r < 0) {
			/* datcom_check() let through a value deck refuses */
			char lbl[LABEL_MAX];

			return fail(err, ids[k], "%s cannot be written on a "
				    "DATCOM card (%s)", label(lbl, ids[k]),
				    strerror(-r));
		}
	}
	return 0;
}

static int add_namelist(struct deck_case *dc, const char *name,
			const struct dcase *c, const int *ids, size_t n,
			struct ferr *err)
{
	struct deck_namelist *nl;
	int r = deck_add_namelist(dc, name, &nl);

	if (r < 0)
		return r;
	return add_vars(nl, c, ids, n, err);
}

#define NELEM(a) (sizeof(a) / sizeof(*(a)))

static int add_control(struct deck_case *dc, const char *line,
		       struct ferr *err, int pi)
{
	int r = deck_add_control(dc, line);

	if (r < 0 && r != -ENOMEM)
		return fail(err, pi, "%s: the card \"%s\" is not one DATCOM "
			    "reads", params_table[pi].name, line);
	return r;
}

static int build_case(struct deck_case *dc, const struct dcase *c,
		      struct ferr *err)
{
	const struct dval *v = c->v;
	char line[256];
	int r;

	r = deck_add_caseid(dc, v[P_CASE_ID].text);
	if (r < 0)
		return r == -ENOMEM ? r : fail(err, P_CASE_ID, "CASEID "
					       "(case_id) cannot be written "
					       "on a CASEID card");
	snprintf(line, sizeof(line), "DIM %s",
		 v[P_DIMP].set ? v[P_DIMP].text : "FT");
	if ((r = add_control(dc, line, err, P_DIMP)) < 0 ||
	    (r = add_namelist(dc, "FLTCON", c, fltcon, NELEM(fltcon),
			      err)) < 0)
		return r;
	if (v[P_SREF].set || v[P_CBARR].set || v[P_BLREF].set) {
		r = add_namelist(dc, "OPTINS", c, optins, NELEM(optins), err);
		if (r < 0)
			return r;
	}
	if ((r = add_namelist(dc, "SYNTHS", c, synths, NELEM(synths),
			      err)) < 0 ||
	    (r = add_namelist(dc, "BODY", c, body, NELEM(body), err)) < 0)
		return r;
	for (size_t s = 0; s < NELEM(surfaces); s++) {
		const struct surface *sf = &surfaces[s];
		int ids[10], n = 0;

		/* CHRDTP SSPN SSPNE CHRDR SAVSI CHSTAT [TWISTA DHDADI] TYPE */
		for (int k = S_CHRDTP; k <= S_CHSTAT; k++)
			ids[n++] = sf->first + k;
		if (sf->twist) {
			ids[n++] = sf->first + S_CHSTAT + 1;
			ids[n++] = sf->first + S_CHSTAT + 2;
			ids[n++] = sf->first + S_CHSTAT + 3;
		} else {
			ids[n++] = sf->first + S_CHSTAT + 1;
		}
		r = add_namelist(dc, sf->namelist, c, ids, (size_t)n, err);
		if (r < 0)
			return r;
		snprintf(line, sizeof(line), "NACA-%c-%c-%s", sf->letter,
			 v[sf->first + S_NACA].series,
			 v[sf->first + S_NACA].text);
		if (strlen(line) > DECK_COLUMNS) {
			char lbl[LABEL_MAX];

			return fail(err, sf->first + S_NACA, "%s is too long: "
				    "the card %.12s... would be wider than "
				    "%d columns", label(lbl, sf->first),
				    line, DECK_COLUMNS);
		}
		if ((r = add_control(dc, line, err, sf->first + S_NACA)) < 0)
			return r;
	}
	if (v[P_DERIV].set) {
		snprintf(line, sizeof(line), "DERIV %s", v[P_DERIV].text);
		if ((r = add_control(dc, line, err, P_DERIV)) < 0)
			return r;
	}
	if (v[P_DAMP].set && v[P_DAMP].num &&
	    (r = add_control(dc, "DAMP", err, P_DAMP)) < 0)
		return r;
	if (v[P_BUILD].set && v[P_BUILD].num &&
	    (r = add_control(dc, "BUILD", err, P_BUILD)) < 0)
		return r;
	return 0;
}

int datcom_build(const json_t *params, struct deck **out, struct ferr *err)
{
	struct dcase *c = malloc(sizeof(*c));
	struct sbuf missing = SBUF_INIT;
	struct deck *d = NULL;
	struct deck_case *dc;
	int r;

	*out = NULL;
	if (!c)
		return -ENOMEM;
	r = load(params, c, err);
	if (r < 0)
		goto out;
	r = datcom_missing(params, &missing);
	if (r < 0)
		goto out;
	if (r > 0) {
		if (err) {
			ferr_set(err, -EINVAL, "missing required parameters: "
				 "%s", missing.buf);
			ferr_set_path(err, "parameter");
		}
		r = -EINVAL;
		goto out;
	}
	d = deck_new();
	if (!d) {
		r = -ENOMEM;
		goto out;
	}
	if ((r = deck_add_case(d, &dc)) < 0 ||
	    (r = build_case(dc, c, err)) < 0)
		goto out;
	*out = d;
	d = NULL;
out:
	deck_free(d);
	sbuf_release(&missing);
	free(c);
	return r;
}

int datcom_render(const json_t *params, struct sbuf *out, struct ferr *err)
{
	struct deck *d;
	size_t len = out->len;
	int r = datcom_build(params, &d, err);

	if (r < 0)
		return r;
	r = deck_write(d, out);
	if (r < 0) {
		sbuf_setlen(out, len);
		if (r != -ENOMEM && err)
			ferr_set(err, r, "the deck could not be written");
	}
	deck_free(d);
	return r;
}
