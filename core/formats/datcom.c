/* datcom: the datcom skill's parameters to a Digital DATCOM deck; see datcom.h. */
#include "formats/datcom.h"

#include <errno.h>
#include <float.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/deck.h"
#include "lib/fjson.h"

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
	X(CASE_ID, "case_id", K_CASEID, "CASEID", "", 0, 0, 0) \
	X(DIMP, "dim", K_DIM, "DIM", "", 0, 0, 0) \
	X(NALPHA, "nalpha", K_COUNT, "NALPHA", "", REQ, 1, 20) \
	X(ALSCHD, "alschd", K_LIST, "ALSCHD", "", REQ | LO | HI, -90, 90) \
	X(NMACH, "nmach", K_COUNT, "NMACH", "", REQ, 1, 20) \
	X(MACH, "mach", K_LIST, "MACH", "", REQ | XLO, 0, 0) \
	X(NALT, "nalt", K_COUNT, "NALT", "", 0, 1, 20) \
	X(ALT, "alt", K_LIST, "ALT", "", REQ, 0, 0) \
	X(WT, "wt", K_NUM, "WT", "", XLO, 0, 0) \
	X(SREF, "sref", K_NUM, "SREF", "", XLO, 0, 0) \
	X(CBARR, "cbarr", K_NUM, "CBARR", "", XLO, 0, 0) \
	X(BLREF, "blref", K_NUM, "BLREF", "", XLO, 0, 0) \
	X(XCG, "xcg", K_NUM, "XCG", "", REQ, 0, 0) \
	X(ZCG, "zcg", K_NUM, "ZCG", "", REQ, 0, 0) \
	X(XW, "xw", K_NUM, "XW", "", REQ, 0, 0) \
	X(ZW, "zw", K_NUM, "ZW", "", REQ, 0, 0) \
	X(ALIW, "aliw", K_NUM, "ALIW", "", LO | HI, -90, 90) \
	X(XH, "xh", K_NUM, "XH", "", REQ, 0, 0) \
	X(ZH, "zh", K_NUM, "ZH", "", REQ, 0, 0) \
	X(ALIH, "alih", K_NUM, "ALIH", "", LO | HI, -90, 90) \
	X(XV, "xv", K_NUM, "XV", "", REQ, 0, 0) \
	X(ZV, "zv", K_NUM, "ZV", "", REQ, 0, 0) \
	X(NX, "nx", K_COUNT, "NX", "", REQ, 1, 20) \
	X(XC, "x_coords", K_LIST, "X", "", REQ, 0, 0) \
	X(RC, "r_coords", K_LIST, "R", "", LO, 0, 0) \
	X(ZUC, "zu_coords", K_LIST, "ZU", "", 0, 0, 0) \
	X(ZLC, "zl_coords", K_LIST, "ZL", "", 0, 0, 0) \
	X(ITYPE, "itype", K_CODE, "ITYPE", "", 0, 1, 3) \
	X(METHOD, "method", K_CODE, "METHOD", "", 0, 1, 2) \
	SURFACE(X, W, "wing_", WING) \
	SURFACE(X, H, "htail_", HTAIL) \
	X(V_NACA, "vtail_naca", K_NACA, "NACA-V", VTAIL, REQ, 0, 0) \
	X(V_CHRDTP, "vtail_chrdtp", K_NUM, "CHRDTP", VTAIL, REQ | LO, 0, 0) \
	X(V_SSPN, "vtail_sspn", K_NUM, "SSPN", VTAIL, REQ | XLO, 0, 0) \
	X(V_SSPNE, "vtail_sspne", K_NUM, "SSPNE", VTAIL, REQ | XLO, 0, 0) \
	X(V_CHRDR, "vtail_chrdr", K_NUM, "CHRDR", VTAIL, REQ | XLO, 0, 0) \
	X(V_SAVSI, "vtail_savsi", K_NUM, "SAVSI", VTAIL, REQ | XLO | XHI, -90, 90) \
	X(V_CHSTAT, "vtail_chstat", K_NUM, "CHSTAT", VTAIL, LO | HI, 0, 1) \
	X(V_TYPE, "vtail_type", K_CODE, "TYPE", VTAIL, REQ, 1, 3) \
	X(LOOP, "loop", K_CODE, "LOOP", "", 0, 1, 3) \
	X(RNNUB, "rnnub", K_LIST, "RNNUB", "", XLO, 0, 0) \
	X(STMACH, "stmach", K_NUM, "STMACH", "", LO | HI, 0.6, 0.99) \
	X(TSMACH, "tsmach", K_NUM, "TSMACH", "", LO | HI, 1.01, 1.4) \
	X(DERIV, "deriv", K_DERIV, "DERIV", "", 0, 0, 0) \
	X(DAMP, "damp", K_BOOL, "DAMP", "", 0, 0, 0) \
	X(BUILD, "build", K_BOOL, "BUILD", "", 0, 0, 0) \
	BREAKS(X, W, "wing_", WING) \
	X(W_DHDADO, "wing_dhdado", K_NUM, "DHDADO", WING, LO | HI, -90, 90) \
	BREAKS(X, H, "htail_", HTAIL) \
	X(H_DHDADO, "htail_dhdado", K_NUM, "DHDADO", HTAIL, LO | HI, -90, 90) \
	BREAKS(X, V, "vtail_", VTAIL)

/* A cranked or double-delta planform's break point (TYPE 2, 3) */
#define BREAKS(X, S, pre, OF) \
	X(S##_CHRDBP, pre "chrdbp", K_NUM, "CHRDBP", OF, LO, 0, 0) \
	X(S##_SSPNOP, pre "sspnop", K_NUM, "SSPNOP", OF, LO, 0, 0) \
	X(S##_SAVSO, pre "savso", K_NUM, "SAVSO", OF, XLO | XHI, -90, 90)

#define SURFACE(X, S, pre, OF) \
	X(S##_NACA, pre "naca", K_NACA, "NACA-" #S, OF, REQ, 0, 0) \
	X(S##_CHRDTP, pre "chrdtp", K_NUM, "CHRDTP", OF, REQ | LO, 0, 0) \
	X(S##_SSPN, pre "sspn", K_NUM, "SSPN", OF, REQ | XLO, 0, 0) \
	X(S##_SSPNE, pre "sspne", K_NUM, "SSPNE", OF, REQ | XLO, 0, 0) \
	X(S##_CHRDR, pre "chrdr", K_NUM, "CHRDR", OF, REQ | XLO, 0, 0) \
	X(S##_SAVSI, pre "savsi", K_NUM, "SAVSI", OF, REQ | XLO | XHI, -90, 90) \
	X(S##_CHSTAT, pre "chstat", K_NUM, "CHSTAT", OF, LO | HI, 0, 1) \
	X(S##_TWISTA, pre "twista", K_NUM, "TWISTA", OF, LO | HI, -90, 90) \
	X(S##_DHDADI, pre "dhdadi", K_NUM, "DHDADI", OF, LO | HI, -90, 90) \
	X(S##_TYPE, pre "type", K_CODE, "TYPE", OF, REQ, 1, 3)

#define X_ENUM(id, name, kind, var, of, flags, lo, hi) P_##id,
enum { PARAMS(X_ENUM) NPARAMS };

#define X_TABLE(id, name, kind, var, of, flags, lo, hi) \
	{ name, kind, var, of, flags, lo, hi },
static const struct dparam params_table[NPARAMS] = { PARAMS(X_TABLE) };

#define NELEM(a) (sizeof(a) / sizeof(*(a)))

#define DATCOM_REAL_MAX 3.4e38
/* DATCOM's section method (SLOPE) iterates to a zero-lift angle that
 * single precision cannot find at very low Mach numbers: it ran without
 * end at 0.001 (issue 15) and on some sections at 0.005 to 0.009; from
 * 0.01 on it finished on every one of 2,500 sections (issue 28) */
#define DATCOM_MACH_MIN 0.01
/* As fast as anything flies in the atmosphere (re-entry).  DATCOM
 * finished every deck of issue 28's runs up to Mach 100 once the Mach
 * numbers were in order: the limit is the flight, not the program. */
#define DATCOM_MACH_MAX 25.0
/* FLTCON STMACH's and TSMACH's defaults: between them DATCOM's methods
 * are transonic, above TSMACH supersonic */
#define DATCOM_STMACH 0.6
#define DATCOM_TSMACH 1.4

/* Longest NACA designation kept; a card holds at most 80 columns anyway. */
#define NACA_MAX 80
/* Columns of a NACA card before the designation: "NACA-W-6-" */
#define NACA_PREFIX 9

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
	bool twist;		/* has TWISTA and DHDADI (and DHDADO) */
	int breaks;		/* P_W_CHRDBP: CHRDBP SSPNOP SAVSO [DHDADO] */
};

static const struct surface surfaces[] = {
	{ "wing", "WGPLNF", 'W', P_W_NACA, true, P_W_CHRDBP },
	{ "horizontal tail", "HTPLNF", 'H', P_H_NACA, true, P_H_CHRDBP },
	{ "vertical tail", "VTPLNF", 'V', P_V_NACA, false, P_V_CHRDBP },
};

/* The break-point parameters of surface sf (3, or 4 with DHDADO). */
static size_t break_count(const struct surface *sf)
{
	return sf->twist ? 4 : 3;
}

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
	ferr_vset(err, -EINVAL, fmt, ap);
	va_end(ap);
	err->line = err->column = 0;
	snprintf(path, sizeof(path), "parameter.%s", params_table[pi].name);
	ferr_set_path(err, path);
	return -EINVAL;
}

/*
 * A number as Python's repr() shows it (the same spelling as the schema's
 * messages and parameter.json), e.g. "1e-05", "2.0".  Every number shown
 * is finite: JSON holds no other, and list strings refuse them.
 */
static const char *show(char buf[FJSON_REAL_SIZE], double v)
{
	fjson_format_real(buf, v);
	return buf;
}

/* A JSON number as given: "25" for an integer, as show() for a real. */
static const char *show_json(char buf[FJSON_REAL_SIZE], const json_t *j)
{
	if (!json_is_integer(j))
		return show(buf, json_number_value(j));
	snprintf(buf, FJSON_REAL_SIZE, "%" JSON_INTEGER_FORMAT,
		 json_integer_value(j));
	return buf;
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

/* The item of check_number() that is not in a list. */
#define NO_ITEM ((size_t)-1)

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

/*
 * A value the deck will print (the parameter's, or item `item` of its
 * list): in range, and one a DATCOM REAL holds.  v is finite; the deck
 * prints it as it is (deck_format_number()).
 */
static int check_number(struct ferr *err, int pi, size_t item, double v)
{
	char words[160], lbl[LABEL_MAX], shown[FJSON_REAL_SIZE];
	bool range = range_words(&params_table[pi], v, words, sizeof(words));
	/* DATCOM's REALs are single precision: beyond this they overflow */
	bool big = fabs(v) > DATCOM_REAL_MAX;

	if (!range && !big)
		return 0;
	if (item == NO_ITEM)
		label(lbl, pi);
	else
		item_label(lbl, pi, item);
	show(shown, v);
	if (range)
		return fail(err, pi, "%s must be %s, not %s", lbl, words,
			    shown);
	return fail(err, pi, "%s is %s, beyond what a DATCOM REAL holds"
		    " (about 3.4E38)", lbl, shown);
}

/* A whole number lo..hi ("1, 2 or 3" for short ranges). */
static int check_whole(struct ferr *err, int pi, const json_t *j,
		       struct dval *out)
{
	const struct dparam *p = &params_table[pi];
	char lbl[LABEL_MAX], shown[FJSON_REAL_SIZE];
	double v;

	if (!json_is_number(j))
		return fail(err, pi, "%s must be a whole number, not %s",
			    label(lbl, pi), jtype(j));
	v = json_number_value(j);
	if (v != floor(v))
		return fail(err, pi, "%s must be a whole number, not %s",
			    label(lbl, pi), show_json(shown, j));
	if (v < p->lo || v > p->hi) {
		label(lbl, pi);
		show_json(shown, j);
		if (p->kind == K_COUNT)
			return fail(err, pi, "%s must be between %g and %g, "
				    "not %s", lbl, p->lo, p->hi, shown);
		if (p->hi - p->lo == 1)
			return fail(err, pi, "%s must be %g or %g, not %s",
				    lbl, p->lo, p->hi, shown);
		return fail(err, pi, "%s must be %g, %g or %g, not %s", lbl,
			    p->lo, p->lo + 1, p->hi, shown);
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
		r = check_number(err, pi, i, out->list[i]);
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
		/* a cambered section (a design lift first) with a
		 * thickness: DATCOM hung on 00120 (and runs 65415, a
		 * public deck's) */
		if (series == '5' && (d[0] == '0' || (d[3] == '0' &&
						      d[4] == '0')))
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

/*
 * Why DATCOM computes nothing for a section naca_parse() took, or NULL.
 * Found by running it (issue 28): SLOPE, its section method, fails on a
 * section without thickness (64-000, 63-000, 16-000 at Mach 0.55:
 * COMPUTATIONS IN SUBROUTINE SLOPE HAVE FAILED, and the run stops), and
 * a 4-digit mean line divides by the camber's position, so camber at 0
 * gives NaN (6015, 8013, 9012 at every Mach tried).
 */
static const char *naca_degenerate(const struct dval *v)
{
	const char *d = v->text, *end = strchr(d, ' ');
	size_t len = end ? (size_t)(end - d) : strlen(d);
	const char *t;

	switch (v->series) {
	case '4':
		if (d[0] != '0' && d[1] == '0')
			return "has camber but no camber position (its second "
			       "digit is 0): the mean line divides by it, and "
			       "DATCOM's coefficients come out NaN";
		t = d + 2;
		break;
	case '5':
		t = d + 3;
		break;
	case '6':
	case '1':
		t = d + len - 2;
		break;
	default:
		return NULL;
	}
	if (t[0] == '0' && t[1] == '0')
		return "has no thickness (its last two digits are 00): "
		       "DATCOM's section method fails on it (COMPUTATIONS IN "
		       "SUBROUTINE SLOPE HAVE FAILED) and the run stops";
	return NULL;
}

static int get_value(struct ferr *err, int pi, const json_t *j,
		     struct dval *out)
{
	const struct dparam *p = &params_table[pi];
	char lbl[LABEL_MAX], q[40];
	const char *s, *why;
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
		return check_number(err, pi, NO_ITEM, out->num);
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
		why = naca_degenerate(out);
		if (why) {
			quote(q, sizeof(q), json_string_value(j),
			      json_string_length(j));
			return fail(err, pi, "%s: \"%s\" %s", label(lbl, pi),
				    q, why);
		}
		/* the card is NACA-<surface>-<series>-<designation> */
		if (strlen(out->text) > DECK_COLUMNS - NACA_PREFIX)
			return fail(err, pi, "%s is too long: its card "
				    "%s-%c-%.16s... would have %zu columns; a "
				    "DATCOM card holds at most %d",
				    label(lbl, pi), p->var, out->series,
				    out->text, NACA_PREFIX + strlen(out->text),
				    DECK_COLUMNS);
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

/* Each value above the one before (strict) or not below it; `why`
 * follows the message (may be ""). */
static int check_order(struct ferr *err, const struct dcase *c, int pi,
		       bool strict, const char *what, const char *why)
{
	const struct dval *l = &c->v[pi];
	char a[FJSON_REAL_SIZE], b[FJSON_REAL_SIZE];

	if (!l->set)
		return 0;
	for (size_t i = 1; i < l->n && i < DATCOM_MAX_LIST; i++) {
		if (strict ? l->list[i] > l->list[i - 1] :
		    l->list[i] >= l->list[i - 1])
			continue;
		return fail(err, pi, "%s (%s) must be %sascending: value %zu "
			    "(%s) %s value %zu (%s)%s", what,
			    params_table[pi].var, strict ? "strictly " : "",
			    i + 1, show(a, l->list[i]),
			    strict ? "does not exceed" : "is less than", i,
			    show(b, l->list[i - 1]), why);
	}
	return 0;
}

/*
 * What DATCOM accepts but cannot compute, each found by running the real
 * program (issue 15): a refusal naming the parameter and why.
 */
static int check_computable(const struct dcase *c, struct ferr *err)
{
	static const int types[] = { P_W_TYPE, P_H_TYPE, P_V_TYPE };
	const struct dval *v = c->v;
	char lbl[LABEL_MAX], a[FJSON_REAL_SIZE], b[FJSON_REAL_SIZE];

	if (v[P_NX].set && v[P_NX].num < 2)
		return fail(err, P_NX, "%s is %d: DATCOM needs at least 2 body "
			    "stations (with one, every coefficient is NaN)",
			    label(lbl, P_NX), (int)v[P_NX].num);
	for (size_t i = 0; v[P_MACH].set && i < v[P_MACH].n &&
	     i < DATCOM_MAX_LIST; i++)
		if (v[P_MACH].list[i] < DATCOM_MACH_MIN)
			return fail(err, P_MACH, "%s is %s: DATCOM does not "
				    "always finish below Mach %g (its section "
				    "method ran without end at 0.001, and on "
				    "some sections at 0.005 to 0.009)",
				    item_label(lbl, P_MACH, i),
				    show(a, v[P_MACH].list[i]),
				    DATCOM_MACH_MIN);
		else if (v[P_MACH].list[i] > DATCOM_MACH_MAX)
			return fail(err, P_MACH, "%s is %s: above Mach %g, "
				    "faster than anything flies in the "
				    "atmosphere, DATCOM's methods have nothing "
				    "to say", item_label(lbl, P_MACH, i),
				    show(a, v[P_MACH].list[i]),
				    DATCOM_MACH_MAX);
	for (size_t i = 0; v[P_ALSCHD].set && i < v[P_ALSCHD].n &&
	     i < DATCOM_MAX_LIST; i++)
		if (fabs(v[P_ALSCHD].list[i]) >= 90)
			return fail(err, P_ALSCHD, "%s is %s: DATCOM gives no "
				    "coefficients at 90 degrees or beyond (rows "
				    "of NaN); angles of attack must be between "
				    "-90 and 90", item_label(lbl, P_ALSCHD, i),
				    show(a, v[P_ALSCHD].list[i]));
	for (size_t s = 0; s < sizeof(types) / sizeof(*types); s++) {
		const struct surface *sf = &surfaces[s];
		char lacking[160] = "";

		if (!v[types[s]].set || v[types[s]].num == 1)
			continue;
		/* CHRDBP, SSPNOP and SAVSO; DHDADO may be 0, DATCOM's
		 * default */
		for (size_t k = 0; k < 3; k++)
			if (!v[sf->breaks + (int)k].set)
				snprintf(lacking + strlen(lacking),
					 sizeof(lacking) - strlen(lacking),
					 "%s%s", lacking[0] ? ", " : "",
					 params_table[sf->breaks + (int)k].name);
		if (lacking[0])
			return fail(err, types[s], "%s is %d (%s): DATCOM needs "
				    "its break point, %s (without, DATCOM says "
				    "WING NOT STRAIGHT TAPERED and gives no "
				    "coefficients)", label(lbl, types[s]),
				    (int)v[types[s]].num,
				    v[types[s]].num == 2 ? "double delta"
							 : "cranked", lacking);
		if (v[sf->first + S_SSPN].set &&
		    v[sf->breaks + 1].num >= v[sf->first + S_SSPN].num)
			return fail(err, sf->breaks + 1, "The %s's outboard "
				    "panel SSPNOP (%s) must be shorter than its "
				    "semi-span SSPN (%s)", sf->noun,
				    show(a, v[sf->breaks + 1].num),
				    show(b, v[sf->first + S_SSPN].num));
	}
	return 0;
}

static int load(const json_t *params, struct dcase *c, struct ferr *err);
static int check_rules(const struct dcase *c, struct ferr *err);

static bool surface_given(const struct dcase *c, const json_t *params,
			  int s);

/* Whether the case a deck carries through (may be NULL) gives `var` in a
 * namelist `nl`. */
static bool rest_gives(const struct deck_case *rest, const char *nl,
		       const char *var)
{
	const struct deck_namelist *n;
	size_t pos = 0;

	while (rest && (n = deck_find_namelist(rest, nl, &pos)))
		if (deck_find_var(n, var))
			return true;
	return false;
}

/*
 * Append the Mach numbers of a speed range, ", "-separated: with
 * transonic, above STMACH `st` and below TSMACH `ts`, else at or above
 * `ts` (supersonic).  Compared in single precision, as DATCOM does
 * (main00.f: SUBSON at or below STMACH, SUPERS at or above TSMACH).
 * How many, or -ENOMEM.
 */
static int machs_in(const struct dcase *c, bool transonic, double st,
		    double ts, struct sbuf *out)
{
	char num[FJSON_REAL_SIZE];
	int n = 0;

	for (size_t i = 0; i < c->v[P_MACH].n && i < DATCOM_MAX_LIST; i++) {
		double m = c->v[P_MACH].list[i];
		bool in = transonic ? (float)m > (float)st && (float)m < (float)ts
				    : (float)m >= (float)ts;

		if (!in)
			continue;
		if ((n++ && sbuf_addstr(out, ", ") < 0) ||
		    sbuf_addstr(out, show(num, m)) < 0)
			return -ENOMEM;
	}
	return n;
}

/*
 * The lines of datcom_warnings_with() for a set load() and check_rules()
 * passed.  Each is what DATCOM printed for such decks in issue 28's runs.
 */
static int warnings(const struct dcase *c, const struct deck_case *rest,
		    struct sbuf *out)
{
	const struct dval *v = c->v;
	struct sbuf list = SBUF_INIT;
	char a[FJSON_REAL_SIZE], b[FJSON_REAL_SIZE];
	double st = v[P_STMACH].set ? v[P_STMACH].num : DATCOM_STMACH;
	double ts = v[P_TSMACH].set ? v[P_TSMACH].num : DATCOM_TSMACH;
	int loop = v[P_LOOP].set ? (int)v[P_LOOP].num : 1;
	bool wing = surface_given(c, NULL, 0);
	int n, r = 0;

	/* A public deck (pydatcom's SenecaII) that DATCOM runs has NMACH 1,
	 * NALT 3 with LOOP 1: a deck DATCOM runs must import, so this is
	 * said, not refused (DATCOM itself sets both to the smaller). */
	if (v[P_NALT].set && v[P_NMACH].set && loop == 1 &&
	    v[P_NALT].num != v[P_NMACH].num)
		r = sbuf_addf(out, "NALT (%d) differs from NMACH (%d) while "
			      "LOOP is 1 (Mach number and altitude vary "
			      "together, in pairs): DATCOM says so and takes "
			      "the first %d of each (loop 2 or 3 computes every "
			      "combination)\n", (int)v[P_NALT].num,
			      (int)v[P_NMACH].num,
			      (int)(v[P_NALT].num < v[P_NMACH].num ?
				    v[P_NALT].num : v[P_NMACH].num));
	if (!r && loop != 1 && !v[P_ALT].set)
		r = sbuf_addf(out, "LOOP %d (loop) varies the altitude, but "
			      "only Reynolds numbers (rnnub) are given: DATCOM "
			      "says ATMOSPHERIC DATA ARE NOT DEFINED and runs "
			      "LOOP 1 instead\n", loop);
	if (!r && v[P_MACH].set) {
		n = machs_in(c, true, st, ts, &list);
		if (n > 0)
			r = sbuf_addf(out, "MACH %s %s above STMACH %s and "
				      "below TSMACH %s (transonic), where DATCOM has "
				      "few methods: its tables there print NDM "
				      "(no method) for most coefficients, CD "
				      "alone at best (stmach, up to 0.99, and "
				      "tsmach, 1.01 to 1.4, move the limits)\n",
				      list.buf, n == 1 ? "is" : "are",
				      show(a, st), show(b, ts));
		else
			r = n;
	}
	sbuf_release(&list);
	/* with them (sprob.in's bodies, issue 28's runs) the supersonic
	 * tables have numbers */
	if (!r && v[P_MACH].set && !(rest_gives(rest, "BODY", "BLN") &&
				      rest_gives(rest, "BODY", "BLA"))) {
		n = machs_in(c, false, st, ts, &list);
		if (n > 0)
			r = sbuf_addf(out, "MACH %s %s at or above TSMACH %s "
				      "(supersonic): there DATCOM's body method "
				      "needs the nose and afterbody lengths BLN "
				      "and BLA, which only a deck's $BODY carries "
				      "through, and without them CD and CL print "
				      "NaN or NDM wherever the body is\n",
				      list.buf,
				      n == 1 ? "is" : "are", show(a, ts));
		else
			r = n;
	}
	sbuf_release(&list);
	if (!r && wing && v[P_W_TYPE].num != 1 &&
	    (surface_given(c, NULL, 1) || surface_given(c, NULL, 2)))
		r = sbuf_addf(out, "The wing's planform is TYPE %d (%s): with a "
			      "tail, DATCOM computes the configurations up to "
			      "wing-body, and those with a tail print NDM (no "
			      "method)\n", (int)v[P_W_TYPE].num,
			      v[P_W_TYPE].num == 2 ? "double delta" : "cranked");
	if (!r && !wing && (!v[P_CBARR].set || !v[P_BLREF].set))
		r = sbuf_addf(out, "Without a wing DATCOM has no reference "
			      "lengths of its own: without %s%s%s its %s%s%s "
			      "print ****, Inf or values near 1E28\n",
			      v[P_CBARR].set ? "" : "cbarr",
			      !v[P_CBARR].set && !v[P_BLREF].set ? " and " : "",
			      v[P_BLREF].set ? "" : "blref",
			      v[P_CBARR].set ? "" : "CM, XCP and CMA",
			      !v[P_CBARR].set && !v[P_BLREF].set ? " and " : "",
			      v[P_BLREF].set ? "" : "CNB and CLB");
	return r < 0 ? -ENOMEM : 0;
}

/* The first case of a deck carried through, or NULL. */
static const struct deck_case *first_case(const struct deck *rest)
{
	return rest && rest->nr ? rest->cases[0] : NULL;
}

int datcom_warnings_with(const json_t *params, const struct deck *rest,
			 struct sbuf *out)
{
	struct dcase *c = malloc(sizeof(*c));
	struct ferr err = FERR_INIT;
	int ret = 0;

	if (!c)
		return -ENOMEM;
	if (load(params, c, &err) == 0)
		ret = warnings(c, first_case(rest), out);
	free(c);
	return ret;
}

int datcom_warnings(const json_t *params, struct sbuf *out)
{
	return datcom_warnings_with(params, NULL, out);
}

/*
 * What a complete set leaves out that DATCOM cannot do without, given
 * what the deck carries through (may be NULL).  Only a complete set can
 * be judged so: a request alone may leave these to a deck.
 */
static int check_complete(const struct dcase *c,
			  const struct deck_case *rest, struct ferr *err)
{
	const struct dval *v = c->v;
	bool r = v[P_RC].set, s = rest_gives(rest, "BODY", "S");
	bool p = rest_gives(rest, "BODY", "P");
	int loop = v[P_LOOP].set ? (int)v[P_LOOP].num : 1;

	/* inputb.f: R alone, S alone, or R, S and P; else GONOGO is false
	 * and the case is not computed */
	if (!r && !s && !p)
		return fail(err, P_RC, "The body is given by its stations X "
			    "alone: DATCOM needs its radii R (r_coords), or "
			    "its areas S in a $BODY of a deck, and without "
			    "either prints THE BODY IS NOT ADEQUATELY DEFINED "
			    "and computes nothing");
	if (!((r && !s && !p) || (s && !r && !p) || (r && s && p)))
		return fail(err, P_RC, "The body gives %s%s%s%s%s: DATCOM takes "
			    "R (r_coords) alone, S alone, or R, S and P "
			    "together, and otherwise prints THE BODY IS NOT "
			    "ADEQUATELY DEFINED and computes nothing",
			    r ? "R" : "", r && (s || p) ? " and " : "",
			    s ? "S" : "", s && p ? " and " : "",
			    p ? "P" : "");
	/* datcom.f: LOOP 2 and 3 run DO K=1,NALT */
	if (loop != 1 && v[P_ALT].set && !v[P_NALT].set)
		return fail(err, P_NALT, "NALT (nalt) is needed with LOOP %d "
			    "(loop): DATCOM loops over NALT altitudes, and "
			    "without it over none (no flight condition, "
			    "nothing computed)", loop);
	if (!v[P_SREF].set && !surface_given(c, NULL, 0))
		return fail(err, P_SREF, "SREF (sref) is needed without a wing: "
			    "DATCOM takes the reference area from the wing, "
			    "and without one its coefficients print NDM, **** "
			    "or NaN");
	return 0;
}

static int check_rules(const struct dcase *c, struct ferr *err)
{
	const struct dval *v = c->v;
	char a[FJSON_REAL_SIZE], b[FJSON_REAL_SIZE];
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
	/* DATCOM interpolates its tables over the Mach numbers in their
	 * order: lists going down stopped it with a runtime error in TBFUNX
	 * (issue 28: every such crash; none once the same lists were
	 * sorted, equal neighbours included) */
	if ((r = check_order(err, c, P_ALSCHD, true,
			     "The angles of attack", "")) < 0 ||
	    (r = check_order(err, c, P_MACH, false, "The Mach numbers",
			     " (DATCOM interpolates over them in order: a "
			     "list that goes down stops it with a runtime "
			     "error; with LOOP 1, reorder ALT with them)")) < 0 ||
	    (r = check_order(err, c, P_XC, false, "The body stations",
			     "")) < 0)
		return r;
	for (size_t s = 0; s < sizeof(surfaces) / sizeof(*surfaces); s++) {
		const struct surface *sf = &surfaces[s];
		const struct dval *sspn = &v[sf->first + S_SSPN];
		const struct dval *sspne = &v[sf->first + S_SSPNE];

		if (!sspn->set || !sspne->set || sspne->num <= sspn->num)
			continue;
		return fail(err, sf->first + S_SSPNE, "The %s's exposed "
			    "semi-span SSPNE (%s = %s) must not exceed its "
			    "semi-span SSPN (%s = %s)", sf->noun,
			    params_table[sf->first + S_SSPNE].name,
			    show(a, sspne->num),
			    params_table[sf->first + S_SSPN].name,
			    show(b, sspn->num));
	}
	return check_computable(c, err);
}

/* Read and check everything present in `params` into `c`. */
static int load(const json_t *params, struct dcase *c, struct ferr *err)
{
	int r;

	memset(c, 0, sizeof(*c));
	if (!json_is_object(params)) {
		ferr_set_path(err, "parameter");
		return ferr_set(err, -EINVAL, "the parameters must be a JSON "
				"object, not %s", jtype(params));
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

int datcom_check_with(const json_t *params, const struct deck *rest,
		      struct ferr *err)
{
	struct dcase *c = malloc(sizeof(*c));
	int r;

	if (!c)
		return -ENOMEM;
	r = load(params, c, err);
	if (!r)
		r = check_complete(c, first_case(rest), err);
	free(c);
	return r;
}

/* Whether parameter `pi` is given: loaded into `c`, or with c NULL in
 * `params`. */
static bool given(const struct dcase *c, const json_t *params, int pi)
{
	return c ? c->v[pi].set : json_is_object(params) &&
		   json_object_get(params, params_table[pi].name);
}

/*
 * The surface (surfaces[]) parameter `pi` belongs to, -1 for none: its
 * planform's, its NACA section and its place in SYNTHS.  A configuration
 * has any of them, or none (a body alone, the orbiter without horizontal
 * tail): a surface is there when any of its planform's parameters or its
 * section is given (a place in SYNTHS alone is not one: DanAlex03's deck
 * gives XH for a tail it has not), and then those DATCOM needs are
 * required.
 */
static bool is_place(int pi)
{
	return pi == P_XW || pi == P_ZW || pi == P_ALIW || pi == P_XH ||
	       pi == P_ZH || pi == P_ALIH || pi == P_XV || pi == P_ZV;
}

static int surface_of(int pi)
{
	if (pi == P_XW || pi == P_ZW || pi == P_ALIW ||
	    (pi >= P_W_NACA && pi <= P_W_TYPE) ||
	    (pi >= P_W_CHRDBP && pi <= P_W_DHDADO))
		return 0;
	if (pi == P_XH || pi == P_ZH || pi == P_ALIH ||
	    (pi >= P_H_NACA && pi <= P_H_TYPE) ||
	    (pi >= P_H_CHRDBP && pi <= P_H_DHDADO))
		return 1;
	if (pi == P_XV || pi == P_ZV || (pi >= P_V_NACA && pi <= P_V_TYPE) ||
	    (pi >= P_V_CHRDBP && pi <= P_V_SAVSO))
		return 2;
	return -1;
}

static bool surface_given(const struct dcase *c, const json_t *params,
			  int s)
{
	for (int i = 0; i < NPARAMS; i++)
		if (surface_of(i) == s && !is_place(i) && given(c, params, i))
			return true;
	return false;
}

/* The namelists that stand for a surface's section: its profile given
 * point by point (katiakms's deck gives $WGSCHR, no NACA-W). */
static const char *const section_namelists[] = { "WGSCHR", "HTSCHR",
						 "VTSCHR" };

/*
 * datcom_missing() of the parameters loaded into `c` (load() marked those
 * given), or with c NULL of `params` itself; `rest` (may be NULL) is what
 * the deck carries through.
 */
static int missing(const struct dcase *c, const json_t *params,
		   const struct deck_case *rest, struct sbuf *out)
{
	bool there[NELEM(surfaces)], section[NELEM(surfaces)];
	int n = 0;

	for (size_t s = 0; s < NELEM(surfaces); s++) {
		there[s] = surface_given(c, params, (int)s);
		section[s] = rest && deck_find_namelist(rest,
						section_namelists[s], NULL);
	}
	for (int i = 0; i < NPARAMS; i++) {
		int s = surface_of(i);

		if (!(params_table[i].flags & REQ) || (s >= 0 && !there[s]))
			continue;
		if (s >= 0 && section[s] && i == surfaces[s].first + S_NACA)
			continue;
		/* the Reynolds numbers stand for the altitudes (sprob.in) */
		if (i == P_ALT && given(c, params, P_RNNUB))
			continue;
		if (given(c, params, i))
			continue;
		if ((n && sbuf_addstr(out, ", ") < 0) ||
		    sbuf_addstr(out, params_table[i].name) < 0)
			return -ENOMEM;
		n++;
	}
	return n;
}

int datcom_missing(const json_t *params, struct sbuf *out)
{
	return missing(NULL, params, NULL, out);
}

int datcom_missing_with(const json_t *params, const struct deck *rest,
			struct sbuf *out)
{
	return missing(NULL, params, rest && rest->nr ? rest->cases[0] : NULL,
		       out);
}

/* The namelists the deck is built from, each a run of parameters. */
static const int fltcon[] = { P_NMACH, P_MACH, P_NALT, P_ALT, P_NALPHA,
			      P_ALSCHD, P_WT, P_LOOP, P_RNNUB, P_STMACH,
			      P_TSMACH };
static const int optins[] = { P_SREF, P_CBARR, P_BLREF };
static const int synths[] = { P_XCG, P_ZCG, P_XW, P_ZW, P_ALIW, P_XH, P_ZH,
			      P_ALIH, P_XV, P_ZV };
static const int body[] = { P_NX, P_XC, P_RC, P_ZUC, P_ZLC, P_ITYPE,
			    P_METHOD };

/*
 * Fill a namelist with the parameters of `ids` that are set.  load()
 * checked every value as deck_add_array() does (and each list's length):
 * only -ENOMEM is left.
 */
static int add_vars(struct deck_namelist *nl, const struct dcase *c,
		    const int *ids, size_t n)
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
		if (r < 0)
			return r;
	}
	return 0;
}

/* Is `name` one of the namelists the parameters are written to? */
static const char *const mapped_namelists[] = {
	"FLTCON", "OPTINS", "SYNTHS", "BODY", "WGPLNF", "HTPLNF", "VTPLNF",
};


static bool is_mapped_namelist(const char *name)
{
	for (size_t i = 0; i < NELEM(mapped_namelists); i++)
		if (!strcmp(name, mapped_namelists[i]))
			return true;
	return false;
}

/* The parameters of a planform namelist, in the order they are written. */
static size_t surface_ids(const struct surface *sf, int *ids)
{
	size_t n = 0;

	/* CHRDTP SSPN SSPNE CHRDR SAVSI CHSTAT [TWISTA DHDADI] TYPE, then
	 * the break point: CHRDBP SSPNOP SAVSO [DHDADO] (at most 14) */
	for (int k = S_CHRDTP; k <= S_CHSTAT; k++)
		ids[n++] = sf->first + k;
	ids[n++] = sf->first + S_CHSTAT + 1;
	if (sf->twist) {
		ids[n++] = sf->first + S_CHSTAT + 2;
		ids[n++] = sf->first + S_CHSTAT + 3;
	}
	for (size_t k = 0; k < break_count(sf); k++)
		ids[n++] = sf->breaks + (int)k;
	return n;
}

/*
 * The parameters written to namelist `name` (ids, returns how many), 0
 * for a namelist no parameter goes to.
 */
static size_t namelist_ids(const char *name, int *ids)
{
	static const struct {
		const char *name;
		const int *ids;
		size_t n;
	} fixed[] = {
		{ "FLTCON", fltcon, NELEM(fltcon) },
		{ "OPTINS", optins, NELEM(optins) },
		{ "SYNTHS", synths, NELEM(synths) },
		{ "BODY", body, NELEM(body) },
	};

	for (size_t i = 0; i < NELEM(fixed); i++)
		if (!strcmp(name, fixed[i].name)) {
			memcpy(ids, fixed[i].ids, fixed[i].n * sizeof(*ids));
			return fixed[i].n;
		}
	for (size_t s = 0; s < NELEM(surfaces); s++)
		if (!strcmp(name, surfaces[s].namelist))
			return surface_ids(&surfaces[s], ids);
	return 0;
}

/* The parameter variable `var` of namelist `nl` is written from, or -1. */
static int mapped_param(const char *nl, const char *var)
{
	int ids[16];
	size_t n = namelist_ids(nl, ids);

	for (size_t k = 0; k < n; k++)
		if (!strcmp(params_table[ids[k]].var, var))
			return ids[k];
	return -1;
}

/* Append the variables of every namelist `name` of rest (may be NULL). */
static int add_extras(struct deck_namelist *nl, const struct deck_case *rest)
{
	const struct deck_namelist *src;
	size_t pos = 0;
	int r;

	if (!rest)
		return 0;
	while ((src = deck_find_namelist(rest, nl->name, &pos)))
		for (size_t i = 0; i < src->nr; i++)
			if ((r = deck_copy_var(nl, src->vars[i])) < 0)
				return r;
	return 0;
}

static int add_namelist(struct deck_case *dc, const char *name,
			const struct dcase *c, const int *ids, size_t n,
			const struct deck_case *rest)
{
	struct deck_namelist *nl;
	int r = deck_add_namelist(dc, name, &nl);

	if (r < 0)
		return r;
	r = add_vars(nl, c, ids, n);
	if (r < 0)
		return r;
	return add_extras(nl, rest);
}

/* Copy rest's cards: its other namelists (controls false) or controls. */
static int add_rest(struct deck_case *dc, const struct deck_case *rest,
		    bool controls)
{
	int r;

	if (!rest)
		return 0;
	for (size_t i = 0; i < rest->nr; i++) {
		const struct deck_card *card = rest->cards[i];

		if (controls != (card->type == DECK_CONTROL))
			continue;
		if (!controls && is_mapped_namelist(card->namelist->name))
			continue;
		if ((r = deck_copy_card(dc, card)) < 0)
			return r;
	}
	return 0;
}

/*
 * The deck of the parameters load() read into `c`, all required ones
 * there.  Every card is one DATCOM reads (load() checked the CASEID text
 * and the NACA designations, DIM and DERIV are from a fixed set) and
 * every value writable: only -ENOMEM is left (or what copying `rest`
 * meets).
 */
static int build_case(struct deck_case *dc, const struct dcase *c,
		      const struct deck_case *rest)
{
	const struct dval *v = c->v;
	char line[256];
	int r;

	/* DATCOM needs neither card: CASEID titles the output, DIM is FT
	 * unless given (so a deck without them comes back without) */
	snprintf(line, sizeof(line), "DIM %s", v[P_DIMP].text);
	if ((v[P_CASE_ID].set &&
	     (r = deck_add_caseid(dc, v[P_CASE_ID].text)) < 0) ||
	    (v[P_DIMP].set && (r = deck_add_control(dc, line)) < 0) ||
	    (r = add_namelist(dc, "FLTCON", c, fltcon, NELEM(fltcon),
			      rest)) < 0)
		return r;
	if (v[P_SREF].set || v[P_CBARR].set || v[P_BLREF].set ||
	    (rest && deck_find_namelist(rest, "OPTINS", NULL))) {
		r = add_namelist(dc, "OPTINS", c, optins, NELEM(optins), rest);
		if (r < 0)
			return r;
	}
	if ((r = add_namelist(dc, "SYNTHS", c, synths, NELEM(synths),
			      rest)) < 0 ||
	    (r = add_namelist(dc, "BODY", c, body, NELEM(body), rest)) < 0)
		return r;
	for (size_t s = 0; s < NELEM(surfaces); s++) {
		const struct surface *sf = &surfaces[s];
		int ids[16];
		size_t n = surface_ids(sf, ids);

		/* a configuration without it */
		if (!surface_given(c, NULL, (int)s))
			continue;
		r = add_namelist(dc, sf->namelist, c, ids, n, rest);
		if (r < 0)
			return r;
		/* its section is $..SCHR, carried through (missing()) */
		if (!v[sf->first + S_NACA].set)
			continue;
		snprintf(line, sizeof(line), "NACA-%c-%c-%s", sf->letter,
			 v[sf->first + S_NACA].series,
			 v[sf->first + S_NACA].text);
		if ((r = deck_add_control(dc, line)) < 0)
			return r;
	}
	if ((r = add_rest(dc, rest, false)) < 0)
		return r;
	if (v[P_DERIV].set) {
		snprintf(line, sizeof(line), "DERIV %s", v[P_DERIV].text);
		if ((r = deck_add_control(dc, line)) < 0)
			return r;
	}
	if (v[P_DAMP].set && v[P_DAMP].num &&
	    (r = deck_add_control(dc, "DAMP")) < 0)
		return r;
	if (v[P_BUILD].set && v[P_BUILD].num &&
	    (r = deck_add_control(dc, "BUILD")) < 0)
		return r;
	return add_rest(dc, rest, true);
}

static int build(const json_t *params, const struct deck_case *rest,
		 struct deck **out, struct ferr *err)
{
	struct dcase *c = malloc(sizeof(*c));
	struct sbuf lacking = SBUF_INIT;
	struct deck *d = NULL;
	struct deck_case *dc;
	int r;

	*out = NULL;
	if (!c)
		return -ENOMEM;
	r = load(params, c, err);
	if (r < 0)
		goto out;
	r = missing(c, params, rest, &lacking);
	if (r < 0)
		goto out;
	if (r > 0) {
		ferr_set_path(err, "parameter");
		r = ferr_set(err, -EINVAL, "missing required parameters: %s",
			     lacking.buf);
		goto out;
	}
	r = check_complete(c, rest, err);
	if (r < 0)
		goto out;
	d = deck_new();
	if (!d) {
		r = -ENOMEM;
		goto out;
	}
	if ((r = deck_add_case(d, &dc)) < 0 ||
	    (r = build_case(dc, c, rest)) < 0)
		goto out;
	*out = d;
	d = NULL;
out:
	deck_free(d);
	sbuf_release(&lacking);
	free(c);
	return r;
}

int datcom_build(const json_t *params, struct deck **out, struct ferr *err)
{
	return build(params, NULL, out, err);
}

int datcom_render_with(const json_t *params, const struct deck *rest,
		       struct sbuf *out, struct ferr *err)
{
	struct deck *d;
	size_t len = out->len;
	int r = build(params, rest && rest->nr ? rest->cases[0] : NULL, &d,
		      err);

	if (r < 0)
		return r;
	r = deck_write(d, out);
	if (r < 0) {
		sbuf_setlen(out, len);
		if (r != -ENOMEM)
			ferr_set(err, r, "the deck could not be written");
	}
	deck_free(d);
	return r;
}

int datcom_render(const json_t *params, struct sbuf *out, struct ferr *err)
{
	return datcom_render_with(params, NULL, out, err);
}

/* ------------------------------------------------------------ import */

/* Most elements read of one variable; DATCOM's arrays hold at most 50. */
#define READ_MAX 1024

struct importer {
	const struct deck_case *c;
	json_t *params;
	struct sbuf *notes;
	double *buf;		/* READ_MAX */
	bool alpha;		/* FLTCON ALPHA was taken as ALSCHD */
};

static int note(struct importer *im, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int note(struct importer *im, const char *fmt, ...)
{
	va_list ap;
	int r;

	if (!im->notes)
		return 0;
	va_start(ap, fmt);
	r = sbuf_vaddf(im->notes, fmt, ap);
	va_end(ap);
	if (r < 0)
		return r;
	return sbuf_addch(im->notes, '\n');
}

static int set(struct importer *im, int pi, json_t *v)
{
	if (!v)
		return -ENOMEM;
	return json_object_set_new(im->params, params_table[pi].name, v) ?
		-ENOMEM : 0;
}

/* The first value of `var` in namelists `nl` that is not a number. */
static const struct deck_value *non_number(const struct deck_case *c,
					   const char *nl, const char *var)
{
	const struct deck_namelist *n;
	size_t pos = 0;

	while ((n = deck_find_namelist(c, nl, &pos)))
		for (size_t i = 0; i < n->nr; i++) {
			const struct deck_var *v = n->vars[i];

			if (strcmp(v->name, var))
				continue;
			for (size_t j = 0; j < v->nr; j++)
				if (v->values[j].type != DECK_NUMBER)
					return &v->values[j];
		}
	return NULL;
}

/* How many times `var` is assigned in namelists `nl`. */
static size_t occurrences(const struct deck_case *c, const char *nl,
			  const char *var)
{
	const struct deck_namelist *n;
	size_t pos = 0, count = 0;

	while ((n = deck_find_namelist(c, nl, &pos)))
		for (size_t i = 0; i < n->nr; i++)
			count += !strcmp(n->vars[i]->name, var);
	return count;
}

/*
 * A number as the parameter's JSON type: whole counts and codes integer.
 * One beyond a double (`1.0E999`, read as an infinity, which JSON cannot
 * hold) becomes the largest double of its sign, which datcom_check()
 * refuses as beyond a DATCOM REAL, naming the parameter.
 */
static json_t *number_json(int pi, double v)
{
	enum kind k = params_table[pi].kind;

	if (isinf(v))
		v = v > 0 ? DBL_MAX : -DBL_MAX;
	if ((k == K_COUNT || k == K_CODE) && v == floor(v) && fabs(v) < 1e15)
		return json_integer((json_int_t)v);
	return json_real(v);
}

static int import_var(struct importer *im, const char *nl, int pi)
{
	const char *var = params_table[pi].var;
	const struct deck_value *bad;
	bool list = params_table[pi].kind == K_LIST;
	size_t n = 0, times;
	json_t *arr;
	int r;

	r = deck_get_numbers(im->c, nl, var, im->buf, READ_MAX, &n);
	if (r == -ENOENT && pi == P_ALSCHD) {
		/* DATCOM's other name for the angles of attack (the F-16's
		 * public deck gives ALPHA) */
		var = "ALPHA";
		r = deck_get_numbers(im->c, nl, var, im->buf, READ_MAX, &n);
		if (r != -ENOENT) {
			int nr = note(im, "FLTCON ALPHA is taken as ALSCHD, "
				      "the angles of attack");

			if (nr < 0)
				return nr;
			im->alpha = true;
		}
	}
	if (r == -ENOENT)
		return 0;
	if (r == -EINVAL) {
		bad = non_number(im->c, nl, var);
		if (bad && bad->type == DECK_LOGICAL) {
			r = note(im, "%s %s holds %s, not a number", nl, var,
				 bad->logical ? ".TRUE." : ".FALSE.");
			return r < 0 ? r : set(im, pi,
					       json_boolean(bad->logical));
		} else {
			char q[DECK_VALUE_MAX + 3];

			snprintf(q, sizeof(q), "'%s'",
				 bad && bad->text ? bad->text : "");
			r = note(im, "%s %s holds %s, not a number", nl, var,
				 q);
			return r < 0 ? r : set(im, pi, json_string(q));
		}
	}
	if (r < 0)
		return r;
	times = occurrences(im->c, nl, var);
	if (!list && n == 1 && !isnan(im->buf[0])) {
		if (times > 1 &&
		    (r = note(im, "%s %s is given %zu times; the last value "
			      "is used", nl, var, times)) < 0)
			return r;
		return set(im, pi, number_json(pi, im->buf[0]));
	}
	if (!list && (r = note(im, "%s %s is given %zu values; it takes one",
			       nl, var, n)) < 0)
		return r;
	if (n > READ_MAX) {
		if ((r = note(im, "%s %s has %zu elements; only the first %d "
			      "are read", nl, var, n, READ_MAX)) < 0)
			return r;
		n = READ_MAX;
	}
	arr = json_array();
	if (!arr)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		double v = im->buf[i];
		json_t *item;

		if (isnan(v)) {
			item = json_null();
			r = note(im, "%s %s(%zu) is never given", nl, var,
				 i + 1);
		} else {
			item = number_json(pi, v);
		}
		if (r < 0 || json_array_append_new(arr, item)) {
			json_decref(arr);
			return r < 0 ? r : -ENOMEM;
		}
	}
	return set(im, pi, arr);
}

/*
 * The designation of a NACA card (its text from column 10) in the form
 * the schema takes: alone when the series would be inferred from it, else
 * "series-designation"; the card's text unchanged when it is not one
 * DATCOM reads (datcom_check() then says so).
 */
static json_t *naca_json(char series, const char *desig)
{
	struct dval full, alone;
	char given[sizeof(full.text) + 4];

	snprintf(given, sizeof(given), "%c-%s", series, desig);
	memset(&full, 0, sizeof(full));
	memset(&alone, 0, sizeof(alone));
	if (!naca_parse(given, strlen(given), &full))
		return json_string(given);
	if (naca_parse(full.text, strlen(full.text), &alone) &&
	    alone.series == full.series && !strcmp(alone.text, full.text))
		return json_string(full.text);
	snprintf(given, sizeof(given), "%c-%s", full.series, full.text);
	return json_string(given);
}

/* The control card kinds that parameters come from. */
enum { C_CASEID, C_DIM, C_NACA_W, C_NACA_H, C_NACA_V, C_DERIV, C_DAMP,
       C_BUILD, NCONTROLS, C_OTHER = NCONTROLS };

static int control_kind(const char *s)
{
	static const char *const words[] = { "CASEID", "DIM", NULL, NULL,
					     NULL, "DERIV", "DAMP", "BUILD" };
	size_t len = strlen(s);

	if (len >= 9 && !strncmp(s, "NACA", 4))
		return s[5] == 'W' ? C_NACA_W : s[5] == 'H' ? C_NACA_H :
		       s[5] == 'V' ? C_NACA_V : C_OTHER;
	for (int k = 0; k < NCONTROLS; k++) {
		size_t wl;

		if (!words[k])
			continue;
		wl = strlen(words[k]);
		if (!strncmp(s, words[k], wl) && (s[wl] == 0 || s[wl] == ' '))
			return k;
	}
	return C_OTHER;
}

static const char *const control_names[NCONTROLS] = {
	"CASEID", "DIM", "NACA-W", "NACA-H", "NACA-V", "DERIV", "DAMP", "BUILD",
};

/* The argument of a control card after its keyword and a blank, or "". */
static const char *argument(const char *s, size_t keyword)
{
	return strlen(s) > keyword ? s + keyword + 1 : "";
}

static int import_control(struct importer *im, int kind, const char *s)
{
	int pi;

	switch (kind) {
	case C_CASEID:
		return set(im, P_CASE_ID, json_string(argument(s, 6)));
	case C_DIM:
		return set(im, P_DIMP, json_string(argument(s, 3)));
	case C_NACA_W:
	case C_NACA_H:
	case C_NACA_V:
		pi = surfaces[kind - C_NACA_W].first + S_NACA;
		return set(im, pi, naca_json(s[7], s + 9));
	case C_DERIV:
		return set(im, P_DERIV, json_string(argument(s, 5)));
	case C_DAMP:
	case C_BUILD:
		pi = kind == C_DAMP ? P_DAMP : P_BUILD;
		/* `DAMP` alone means yes; anything after it is not ours */
		return set(im, pi, strlen(s) == strlen(control_names[kind]) ?
			   json_true() : json_string(s));
	}
	return 0;
}

/* Sections carried through by a NACA card's absence. */
static const struct {
	const char *namelist, *noun, *param;
	int kind;
} sections[] = {
	{ "WGSCHR", "the wing section", "wing_naca", C_NACA_W },
	{ "HTSCHR", "the horizontal tail section", "htail_naca", C_NACA_H },
	{ "VTSCHR", "the vertical tail section", "vtail_naca", C_NACA_V },
};

static int import_case(struct importer *im, struct deck_case *rc)
{
	const struct deck_case *c = im->c;
	size_t seen[NCONTROLS] = { 0 };
	int ids[16], r;

	/* the parameters of the mapped namelists */
	for (size_t m = 0; m < NELEM(mapped_namelists); m++) {
		size_t n = namelist_ids(mapped_namelists[m], ids);

		for (size_t k = 0; k < n; k++)
			if ((r = import_var(im, mapped_namelists[m],
					    ids[k])) < 0)
				return r;
	}
	/* the control cards: the last of each kind wins */
	for (size_t i = 0; i < c->nr; i++) {
		const struct deck_card *card = c->cards[i];
		int kind;

		if (card->type != DECK_CONTROL)
			continue;
		kind = control_kind(card->control);
		if (kind == C_OTHER)
			continue;
		seen[kind]++;
		if ((r = import_control(im, kind, card->control)) < 0)
			return r;
	}
	for (int k = 0; k < NCONTROLS; k++)
		if (seen[k] > 1 &&
		    (r = note(im, "%zu %s cards; the last is used", seen[k],
			      control_names[k])) < 0)
			return r;
	for (size_t s = 0; s < NELEM(sections); s++)
		if (!seen[sections[s].kind] &&
		    deck_find_namelist(c, sections[s].namelist, NULL) &&
		    (r = note(im, "$%s (%s) is carried through; %s is not set "
			      "from it", sections[s].namelist,
			      sections[s].noun, sections[s].param)) < 0)
			return r;

	/* rest 1: the other variables of the mapped namelists, merged */
	for (size_t m = 0; m < NELEM(mapped_namelists); m++) {
		const char *name = mapped_namelists[m];
		const struct deck_namelist *src;
		struct deck_namelist *dst = NULL;
		size_t pos = 0;

		while ((src = deck_find_namelist(c, name, &pos)))
			for (size_t i = 0; i < src->nr; i++) {
				if (mapped_param(name, src->vars[i]->name) >= 0 ||
				    (im->alpha && !strcmp(name, "FLTCON") &&
				     !strcmp(src->vars[i]->name, "ALPHA")))
					continue;
				if (!dst &&
				    (r = deck_add_namelist(rc, name, &dst)) < 0)
					return r;
				if ((r = deck_copy_var(dst, src->vars[i])) < 0)
					return r;
			}
	}
	/* rest 2 and 3: the other namelists, then the other control cards */
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < c->nr; i++) {
			const struct deck_card *card = c->cards[i];

			if (pass == 0 ? card->type != DECK_NAMELIST_CARD ||
			    is_mapped_namelist(card->namelist->name) :
			    card->type != DECK_CONTROL ||
			    control_kind(card->control) != C_OTHER)
				continue;
			if ((r = deck_copy_card(rc, card)) < 0)
				return r;
		}
	return 0;
}

int datcom_from_deck(const struct deck *d, json_t **params,
		     struct deck **rest, struct sbuf *notes, struct ferr *err)
{
	struct importer im = { .notes = notes };
	struct deck *rd = NULL;
	struct deck_case *rc;
	size_t notes_len = notes ? notes->len : 0;
	int r;

	*params = NULL;
	*rest = NULL;
	if (!d || !d->nr) {
		ferr_set_path(err, "deck");
		return ferr_set(err, -EINVAL, "the deck has no case (no card "
				"before the end)");
	}
	im.c = d->cases[0];
	im.params = json_object();
	im.buf = malloc(READ_MAX * sizeof(*im.buf));
	rd = deck_new();
	if (!im.params || !im.buf || !rd) {
		r = -ENOMEM;
		goto out;
	}
	if (d->nr > 1 &&
	    (r = note(&im, "%zu cases; the first is used", d->nr)) < 0)
		goto out;
	if ((r = deck_add_case(rd, &rc)) < 0 ||
	    (r = import_case(&im, rc)) < 0)
		goto out;
	*params = im.params;
	*rest = rd;
	im.params = NULL;
	rd = NULL;
out:
	if (r < 0 && notes)
		sbuf_setlen(notes, notes_len);
	json_decref(im.params);
	deck_free(rd);
	free(im.buf);
	return r;
}
