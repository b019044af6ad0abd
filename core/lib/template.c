#include "lib/template.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/fjson.h"
#include "lib/utf8.h"

#define MAX_TEXT (16u << 20)
/* Jinja2 compiles a template to Python, which refuses more than 20 nested
 * loops and 100 levels of indentation, and whose parser and compiler
 * recurse per level of an expression: stay well inside all of that. */
#define MAX_BLOCK_DEPTH 16
#define MAX_EXPR_DEPTH 32
#define MAX_STEPS 5000000L
#define MAX_OUTPUT ((size_t)64 << 20)
/* Far below Python's recursion limit, so whatever Python would print at
 * any nesting level flowfs prints the same or refuses. */
#define MAX_VALUE_DEPTH 100

struct case_run {
	uint32_t first, last;
	int32_t delta;
	uint32_t stride;
};

struct case_multi {
	uint32_t cp;
	uint32_t map[3];
};

#include "lib/template_tables.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

const char tmpl_default_prompt[] =
	"Please call the skill named \"{{ skill.id }}\".\n"
	"\n"
	"# Inputs\n"
	"{% for key, value in input.items() %}\n"
	"- {{ key }}: {{ value }}\n"
	"{% endfor %}\n"
	"\n"
	"# Parameters\n"
	"{% for key, value in parameter.items() %}\n"
	"- {{ key }}: {{ value }}\n"
	"{% endfor %}\n"
	"\n"
	"Task: Execute the skill using the above inputs and parameters.\n";

/*** UTF-8 and Python's character classes ***/

/* Decode one code point (utf8.h); 0 when the bytes are not valid
 * UTF-8 or there are none. */
static size_t u8_dec(const char *p, size_t n, uint32_t *cp)
{
	return n ? utf8_decode((const unsigned char *)p, n, cp) : 0;
}

static size_t u8_enc(char *out, uint32_t cp)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xC0 | cp >> 6);
		out[1] = (char)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xE0 | cp >> 12);
		out[1] = (char)(0x80 | (cp >> 6 & 0x3F));
		out[2] = (char)(0x80 | (cp & 0x3F));
		return 3;
	}
	out[0] = (char)(0xF0 | cp >> 18);
	out[1] = (char)(0x80 | (cp >> 12 & 0x3F));
	out[2] = (char)(0x80 | (cp >> 6 & 0x3F));
	out[3] = (char)(0x80 | (cp & 0x3F));
	return 4;
}

static bool in_ranges(const uint32_t (*r)[2], size_t n, uint32_t cp)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cp < r[mid][0])
			hi = mid;
		else if (cp > r[mid][1])
			lo = mid + 1;
		else
			return true;
	}
	return false;
}

/* str.isspace(), which is also what Python's re module calls \s. */
static bool py_isspace(uint32_t cp)
{
	if (cp < 0x80)
		return (cp >= 9 && cp <= 13) || (cp >= 0x1C && cp <= 0x20);
	return in_ranges(whitespace, ARRAY_SIZE(whitespace), cp);
}

static bool py_isprintable(uint32_t cp)
{
	if (cp < 0x80)
		return cp >= 0x20 && cp < 0x7F;
	return !in_ranges(nonprintable, ARRAY_SIZE(nonprintable), cp);
}

/* One code point's str.upper()/str.lower(): up to 3 code points. */
static int case_map(const struct case_run *runs, size_t nruns,
		    const struct case_multi *multi, size_t nmulti, uint32_t cp,
		    uint32_t out[3])
{
	size_t i;

	for (i = 0; i < nmulti; i++) {
		if (multi[i].cp == cp) {
			int n = 0;

			while (n < 3 && multi[i].map[n])
				n++;
			memcpy(out, multi[i].map, sizeof(uint32_t) * 3);
			return n;
		}
	}
	for (i = 0; i < nruns && runs[i].first <= cp; i++) {
		if (cp <= runs[i].last &&
		    (cp - runs[i].first) % runs[i].stride == 0) {
			out[0] = (uint32_t)((int32_t)cp + runs[i].delta);
			return 1;
		}
	}
	out[0] = cp;
	return 1;
}

/*** the parsed template ***/

enum ekind {
	E_CONST, E_NAME, E_ATTR, E_ITEM, E_ITEMS, E_NOT, E_AND, E_OR, E_CMP,
	E_FILTER, E_TEST
};

enum filter_id { F_DEFAULT, F_TOJSON, F_LENGTH, F_JOIN, F_UPPER, F_LOWER,
		 F_TRIM };

struct filter_spec {
	const char *name;
	enum filter_id id;
	int nparams;
	const char *params[2];
};

/* Jinja2 3.1's filter signatures (after the value). */
static const struct filter_spec filters[] = {
	{ "default", F_DEFAULT, 2, { "default_value", "boolean" } },
	{ "d", F_DEFAULT, 2, { "default_value", "boolean" } },
	{ "tojson", F_TOJSON, 1, { "indent", NULL } },
	{ "length", F_LENGTH, 0, { NULL, NULL } },
	{ "count", F_LENGTH, 0, { NULL, NULL } },
	{ "join", F_JOIN, 2, { "d", "attribute" } },
	{ "upper", F_UPPER, 0, { NULL, NULL } },
	{ "lower", F_LOWER, 0, { NULL, NULL } },
	{ "trim", F_TRIM, 1, { "chars", NULL } },
};

/* The rest of Jinja2's built-in filters and tests, named as unsupported
 * rather than unknown. */
static const char *const jinja_filters[] = {
	"abs", "attr", "batch", "capitalize", "center", "dictsort", "e",
	"escape", "filesizeformat", "first", "float", "forceescape", "format",
	"groupby", "indent", "int", "items", "last", "list", "map", "max",
	"min", "pprint", "random", "reject", "rejectattr", "replace",
	"reverse", "round", "safe", "select", "selectattr", "slice", "sort",
	"string", "striptags", "sum", "title", "truncate", "unique",
	"urlencode", "urlize", "wordcount", "wordwrap", "xmlattr",
};

static const char *const jinja_tags[] = {
	"autoescape", "block", "break", "call", "continue", "do", "extends",
	"filter", "from", "import", "include", "macro", "pluralize", "raw",
	"set", "trans", "with",
};

static const char *const jinja_globals[] = {
	"cycler", "dict", "joiner", "lipsum", "namespace", "range",
};

struct expr {
	enum ekind kind;
	int line, col;
	struct expr *a, *b;
	json_t *cst;			/* E_CONST */
	const char *name;		/* E_NAME, E_ATTR; filter/test name */
	int op;				/* E_CMP: 1 for !=; E_FILTER: filter_id;
					   E_TEST: 1 for 'undefined' */
	bool negated;			/* E_TEST */
	struct expr *args[2];		/* E_FILTER, by parameter */
	struct expr *next;		/* E_CMP, E_AND, E_OR: the next operand
					   (in the next node's a) */
	int height;			/* of the tree below: bounds recursion */
};

enum skind { S_TEXT, S_PRINT, S_IF, S_FOR };

struct stmt {
	enum skind kind;
	int line;
	struct stmt *next;
	const char *text;		/* S_TEXT */
	size_t len;
	struct expr *e;			/* S_PRINT, S_IF test, S_FOR iterable */
	struct stmt *body, *orelse;	/* S_IF: orelse may be one S_IF (elif) */
	const char **targets;		/* S_FOR */
	int ntargets;
	bool elif;			/* an S_IF that is another's orelse */
};

struct tmpl {
	char *src;			/* normalized text; S_TEXT points in */
	void **allocs;
	size_t nallocs, allocs_cap;
	json_t **consts;
	size_t nconsts, consts_cap;
	struct stmt *body;
};

static void *t_alloc(struct tmpl *t, size_t size)
{
	void *p;

	if (t->nallocs == t->allocs_cap) {
		size_t cap = t->allocs_cap ? 2 * t->allocs_cap : 64;
		void **a = realloc(t->allocs, cap * sizeof(*a));

		if (!a)
			return NULL;
		t->allocs = a;
		t->allocs_cap = cap;
	}
	p = calloc(1, size ? size : 1);
	if (p)
		t->allocs[t->nallocs++] = p;
	return p;
}

static int t_keep(struct tmpl *t, json_t *j)
{
	if (!j)
		return -ENOMEM;
	if (t->nconsts == t->consts_cap) {
		size_t cap = t->consts_cap ? 2 * t->consts_cap : 16;
		json_t **a = realloc(t->consts, cap * sizeof(*a));

		if (!a) {
			json_decref(j);
			return -ENOMEM;
		}
		t->consts = a;
		t->consts_cap = cap;
	}
	t->consts[t->nconsts++] = j;
	return 0;
}

void tmpl_free(struct tmpl *t)
{
	size_t i;

	if (!t)
		return;
	for (i = 0; i < t->nallocs; i++)
		free(t->allocs[i]);
	for (i = 0; i < t->nconsts; i++)
		json_decref(t->consts[i]);
	free(t->allocs);
	free(t->consts);
	free(t->src);
	free(t);
}

/*** lexer ***/

enum ttype {
	T_DATA, T_VAR_BEGIN, T_VAR_END, T_BLOCK_BEGIN, T_BLOCK_END, T_NAME,
	T_STRING, T_INT, T_FLOAT, T_OP, T_EOF
};

struct tok {
	enum ttype type;
	int line, col;
	const char *s;		/* raw span (T_DATA: the text after stripping) */
	size_t n;
	char *str;		/* T_STRING: decoded; T_NAME: NUL-terminated */
	size_t slen;
	uint64_t ival;		/* T_INT, up to 2^63 */
	double fval;
};

struct lexer {
	struct tmpl *t;
	const char *s;
	size_t n, pos;
	int line, col;
	struct tok *toks;
	size_t ntoks, cap;
	struct ferr *err;
};

static void lx_advance(struct lexer *lx, size_t k)
{
	size_t end = lx->pos + k;

	for (; lx->pos < end; lx->pos++) {
		unsigned char c = (unsigned char)lx->s[lx->pos];

		if (c == '\n') {
			lx->line++;
			lx->col = 1;
		} else if ((c & 0xC0) != 0x80) {
			lx->col++;
		}
	}
}

static struct tok *lx_push(struct lexer *lx, enum ttype type, size_t len)
{
	struct tok *tk;

	if (lx->ntoks == lx->cap) {
		size_t cap = lx->cap ? 2 * lx->cap : 256;
		struct tok *a = realloc(lx->toks, cap * sizeof(*a));

		if (!a)
			return NULL;
		lx->toks = a;
		lx->cap = cap;
	}
	tk = &lx->toks[lx->ntoks++];
	memset(tk, 0, sizeof(*tk));
	tk->type = type;
	tk->line = lx->line;
	tk->col = lx->col;
	tk->s = lx->s + lx->pos;
	tk->n = len;
	return tk;
}

static int lx_fail(struct lexer *lx, const char *fmt, const char *arg)
{
	return ferr_set_at(lx->err, -EINVAL, lx->line, lx->col, fmt, arg);
}

/* Python's str.rstrip() / the \s* after "-%}" on UTF-8 text. */
static size_t rstrip_len(const char *s, size_t n)
{
	while (n) {
		size_t k = n - 1;
		uint32_t cp;

		while (k && ((unsigned char)s[k] & 0xC0) == 0x80)
			k--;
		if (!u8_dec(s + k, n - k, &cp) || !py_isspace(cp))
			break;
		n = k;
	}
	return n;
}

static size_t lstrip_len(const char *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		uint32_t cp;
		size_t k = u8_dec(s + i, n - i, &cp);

		if (!k || !py_isspace(cp))
			break;
		i += k;
	}
	return i;
}

static bool starts(const struct lexer *lx, size_t at, const char *lit)
{
	size_t k = strlen(lit);

	return at <= lx->n && lx->n - at >= k && !memcmp(lx->s + at, lit, k);
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * Jinja2 unescapes a literal with
 *	body.encode("ascii", "backslashreplace").decode("unicode-escape")
 * so a non-ASCII character stands for its \xhh / \uhhhh / \Uhhhhhhhh
 * spelling, which matters only right after a backslash.
 */
static int lx_string(struct lexer *lx, struct tok *tk, const char *b, size_t n)
{
	char *out = t_alloc(lx->t, 4 * n + 1);
	size_t i = 0, o = 0;

	if (!out)
		return -ENOMEM;
	while (i < n) {
		uint32_t cp;
		size_t k;
		int digits, d;
		char c;

		if (b[i] != '\\') {
			k = u8_dec(b + i, n - i, &cp);
			memcpy(out + o, b + i, k);
			o += k;
			i += k;
			continue;
		}
		c = b[i + 1];	/* the lexer guarantees a character follows */
		if ((unsigned char)c >= 0x80) {
			char esc[12];
			int len;

			k = u8_dec(b + i + 1, n - i - 1, &cp);
			len = cp < 0x100 ? snprintf(esc, sizeof(esc), "x%02x", cp)
			      : cp < 0x10000 ? snprintf(esc, sizeof(esc), "u%04x", cp)
			      : snprintf(esc, sizeof(esc), "U%08x", cp);
			out[o++] = '\\';
			memcpy(out + o, esc, (size_t)len);
			o += (size_t)len;
			i += 1 + k;
			continue;
		}
		i += 2;
		switch (c) {
		case '\n': continue;
		case '\\': out[o++] = '\\'; continue;
		case '\'': out[o++] = '\''; continue;
		case '"': out[o++] = '"'; continue;
		case 'a': out[o++] = '\a'; continue;
		case 'b': out[o++] = '\b'; continue;
		case 'f': out[o++] = '\f'; continue;
		case 'n': out[o++] = '\n'; continue;
		case 'r': out[o++] = '\r'; continue;
		case 't': out[o++] = '\t'; continue;
		case 'v': out[o++] = '\v'; continue;
		case 'N':
			return lx_fail(lx, "unsupported string escape '\\N'",
				       NULL);
		case 'x':
		case 'u':
		case 'U':
			digits = c == 'x' ? 2 : c == 'u' ? 4 : 8;
			cp = 0;
			for (d = 0; d < digits; d++) {
				int h = i + (size_t)d < n ? hexval(b[i + (size_t)d]) : -1;

				if (h < 0)
					return ferr_set_at(lx->err, -EINVAL,
						tk->line, tk->col,
						"truncated \\%c escape in string literal",
						c);
				cp = cp << 4 | (uint32_t)h;
			}
			i += (size_t)digits;
			if (cp > 0x10FFFF)
				return ferr_set_at(lx->err, -EINVAL, tk->line,
					tk->col, "illegal Unicode character in string literal");
			if (cp >= 0xD800 && cp <= 0xDFFF)
				return ferr_set_at(lx->err, -EINVAL, tk->line,
					tk->col, "unsupported string escape: surrogate");
			o += u8_enc(out + o, cp);
			continue;
		default:
			break;
		}
		if (c >= '0' && c <= '7') {
			cp = (uint32_t)(c - '0');
			for (d = 0; d < 2 && i < n && b[i] >= '0' && b[i] <= '7'; d++)
				cp = cp * 8 + (uint32_t)(b[i++] - '0');
			o += u8_enc(out + o, cp);
			continue;
		}
		/* unknown escapes stay as written */
		out[o++] = '\\';
		out[o++] = c;
	}
	out[o] = '\0';
	tk->str = out;
	tk->slen = o;
	return 0;
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_name_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
static bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

/* Jinja2's float rule, without '_' separators: digits then a fraction, an
 * exponent or both; never right after a '.' (so a.0.1 is a[0][1]). */
static size_t float_len(const struct lexer *lx)
{
	const char *s = lx->s + lx->pos;
	size_t n = lx->n - lx->pos, i = 0, frac_end = 0, j;

	if (lx->pos && lx->s[lx->pos - 1] == '.')
		return 0;
	while (i < n && is_digit(s[i]))
		i++;
	if (!i)
		return 0;
	if (i + 1 < n && s[i] == '.' && is_digit(s[i + 1])) {
		i++;
		while (i < n && is_digit(s[i]))
			i++;
		frac_end = i;
	}
	j = i;
	if (j < n && (s[j] == 'e' || s[j] == 'E')) {
		j++;
		if (j < n && (s[j] == '+' || s[j] == '-'))
			j++;
		if (j < n && is_digit(s[j])) {
			while (j < n && is_digit(s[j]))
				j++;
			return j;
		}
	}
	return frac_end;
}

static int lx_number(struct lexer *lx)
{
	const char *s = lx->s + lx->pos;
	size_t n = lx->n - lx->pos, i = 0, flen = float_len(lx);
	struct tok *tk;

	if (flen) {
		/* Rewrite as "<digits>e<exp>": strtod then reads it the same in
		 * every locale. */
		char buf[64];
		size_t nd = 0, sig = 0;
		long exp10 = 0;
		bool frac = false;

		tk = lx_push(lx, T_FLOAT, flen);
		if (!tk)
			return -ENOMEM;
		for (i = 0; i < flen && s[i] != 'e' && s[i] != 'E'; i++) {
			if (s[i] == '.') {
				frac = true;
				continue;
			}
			if (!sig && s[i] == '0') {
				if (frac)
					exp10--;
				continue;
			}
			sig = 1;
			if (nd < 40) {
				buf[nd++] = s[i];
				if (frac)
					exp10--;
			} else if (!frac) {
				exp10++;
			}
		}
		if (i < flen) {
			long e = 0;
			bool neg = false;

			i++;
			if (s[i] == '+' || s[i] == '-')
				neg = s[i++] == '-';
			for (; i < flen; i++)
				if (e < 100000)
					e = e * 10 + (s[i] - '0');
			exp10 += neg ? -e : e;
		}
		if (!nd)
			buf[nd++] = '0';
		snprintf(buf + nd, sizeof(buf) - nd, "e%ld", exp10);
		tk->fval = strtod(buf, NULL);
		if (!isfinite(tk->fval))
			return ferr_set_at(lx->err, -EINVAL, tk->line, tk->col,
				"unsupported number literal: %.*s (out of range)",
				(int)(flen > 40 ? 40 : flen), s);
		lx_advance(lx, flen);
		return 0;
	}
	/* Jinja2's integer rule "[1-9](_?\d)*|0(_?0)*": "07" is 0 then 7 */
	if (s[0] == '0') {
		while (i < n && s[i] == '0')
			i++;
	} else {
		while (i < n && is_digit(s[i]))
			i++;
	}
	tk = lx_push(lx, T_INT, i);
	if (!tk)
		return -ENOMEM;
	for (size_t k = 0; k < i; k++) {
		unsigned d = (unsigned)(s[k] - '0');

		if (tk->ival > ((uint64_t)1 << 63) / 10 ||
		    tk->ival * 10 + d > ((uint64_t)1 << 63))
			return ferr_set_at(lx->err, -EINVAL, tk->line, tk->col,
				"unsupported number literal: %.*s (outside 64 bits)",
				(int)(i > 40 ? 40 : i), s);
		tk->ival = tk->ival * 10 + d;
	}
	lx_advance(lx, i);
	return 0;
}

/* Tokens of one {{ }} or {% %}; the begin token is already pushed. */
static int lx_tag(struct lexer *lx, bool block)
{
	for (;;) {
		const char *s;
		char c;
		struct tok *tk;
		int ret;

		while (lx->pos < lx->n && strchr(" \t\n\r\f\v", lx->s[lx->pos]) &&
		       lx->s[lx->pos])
			lx_advance(lx, 1);
		if (lx->pos >= lx->n)
			return lx_fail(lx, "unexpected end of template inside %s",
				       block ? "a '{%' tag" : "'{{ }}'");
		s = lx->s + lx->pos;
		c = *s;
		if (block ? starts(lx, lx->pos, "-%}") || starts(lx, lx->pos, "+%}") ||
			    starts(lx, lx->pos, "%}")
			  : starts(lx, lx->pos, "-}}") || starts(lx, lx->pos, "}}")) {
			size_t k = c == '-' || c == '+' ? 3 : 2;

			if (!lx_push(lx, block ? T_BLOCK_END : T_VAR_END, k))
				return -ENOMEM;
			lx_advance(lx, k);
			if (c == '-')
				lx_advance(lx, lstrip_len(lx->s + lx->pos,
							 lx->n - lx->pos));
			return 0;
		}
		if (is_digit(c)) {
			ret = lx_number(lx);
			if (ret < 0)
				return ret;
			continue;
		}
		if (is_name_start(c)) {
			size_t k = 1;

			while (lx->pos + k < lx->n && is_name_char(s[k]))
				k++;
			if (lx->pos + k < lx->n && (unsigned char)s[k] >= 0x80)
				return lx_fail(lx, "unsupported: non-ASCII name",
					       NULL);
			tk = lx_push(lx, T_NAME, k);
			if (!tk)
				return -ENOMEM;
			tk->str = t_alloc(lx->t, k + 1);
			if (!tk->str)
				return -ENOMEM;
			memcpy(tk->str, s, k);
			lx_advance(lx, k);
			continue;
		}
		if (c == '\'' || c == '"') {
			size_t k = 1;

			while (lx->pos + k < lx->n && s[k] != c) {
				if (s[k] == '\\' && lx->pos + k + 1 < lx->n)
					k++;
				k++;
			}
			if (lx->pos + k >= lx->n)
				return lx_fail(lx, "unterminated string literal",
					       NULL);
			tk = lx_push(lx, T_STRING, k + 1);
			if (!tk)
				return -ENOMEM;
			ret = lx_string(lx, tk, s + 1, k - 1);
			if (ret < 0)
				return ret;
			lx_advance(lx, k + 1);
			continue;
		}
		if (starts(lx, lx->pos, "==") || starts(lx, lx->pos, "!=") ||
		    starts(lx, lx->pos, "//") || starts(lx, lx->pos, "**") ||
		    starts(lx, lx->pos, ">=") || starts(lx, lx->pos, "<=")) {
			if (!lx_push(lx, T_OP, 2))
				return -ENOMEM;
			lx_advance(lx, 2);
			continue;
		}
		if (c && strchr("+-/*%~[](){}=.:|,;<>", c)) {
			if (!lx_push(lx, T_OP, 1))
				return -ENOMEM;
			lx_advance(lx, 1);
			continue;
		}
		if ((unsigned char)c >= 0x80 || c < 0x20 || c == 0x7F)
			return ferr_set_at(lx->err, -EINVAL, lx->line, lx->col,
					   "unexpected character (code %u) in a tag",
					   (unsigned)(unsigned char)c);
		return ferr_set_at(lx->err, -EINVAL, lx->line, lx->col,
				   "unexpected character '%c' in a tag", c);
	}
}

static int lex(struct lexer *lx)
{
	for (;;) {
		size_t start = lx->pos, at = lx->pos, textlen;
		int sline = lx->line, scol = lx->col;
		struct tok *tk;
		char kind = 0, sign;

		while (at + 1 < lx->n) {
			if (lx->s[at] == '{' && strchr("{%#", lx->s[at + 1]) &&
			    lx->s[at + 1]) {
				kind = lx->s[at + 1];
				break;
			}
			at++;
		}
		if (!kind)
			at = lx->n;
		textlen = at - start;
		sign = kind && at + 2 < lx->n ? lx->s[at + 2] : 0;
		if (sign == '-')
			textlen = rstrip_len(lx->s + start, textlen);
		if (textlen) {
			tk = lx_push(lx, T_DATA, textlen);
			if (!tk)
				return -ENOMEM;
			tk->line = sline;
			tk->col = scol;
			tk->s = lx->s + start;
		}
		lx_advance(lx, at - lx->pos);
		if (!kind)
			break;
		if (kind == '#') {
			size_t p = at + 2 + (sign == '-' || sign == '+');
			int cline = lx->line, ccol = lx->col;

			/* Jinja2's lexer stops without a complaint when "{#"
			 * is all that is left of the text. */
			if (p >= lx->n) {
				lx_advance(lx, lx->n - lx->pos);
				break;
			}
			for (; p < lx->n; p++) {
				if (starts(lx, p, "+#}") || starts(lx, p, "-#}") ||
				    starts(lx, p, "#}"))
					break;
			}
			if (p >= lx->n)
				return ferr_set_at(lx->err, -EINVAL, cline, ccol,
						   "missing end of comment tag");
			sign = lx->s[p];
			lx_advance(lx, p - lx->pos + (sign == '#' ? 2 : 3));
			if (sign == '-')
				lx_advance(lx, lstrip_len(lx->s + lx->pos,
							 lx->n - lx->pos));
			continue;
		}
		tk = lx_push(lx, kind == '{' ? T_VAR_BEGIN : T_BLOCK_BEGIN,
			     sign == '-' || sign == '+' ? 3 : 2);
		if (!tk)
			return -ENOMEM;
		lx_advance(lx, tk->n);
		{
			int ret = lx_tag(lx, kind == '%');

			if (ret < 0)
				return ret;
		}
	}
	return lx_push(lx, T_EOF, 0) ? 0 : -ENOMEM;
}

/*** parser ***/

struct parser {
	struct tmpl *t;
	struct tok *toks;
	size_t pos;
	struct ferr *err;
	int depth;		/* expression nesting */
	int blocks;		/* block nesting */
	bool items_ok;		/* a for's iterable: x.items() allowed */
	bool items_seen;
};

static struct tok *cur(struct parser *p) { return &p->toks[p->pos]; }
static struct tok *peek(struct parser *p, size_t k)
{
	size_t i;

	for (i = 0; i < k && p->toks[p->pos + i].type != T_EOF; i++)
		;
	return &p->toks[p->pos + i];
}

static bool is_op(const struct tok *tk, const char *op)
{
	return tk->type == T_OP && tk->n == strlen(op) &&
	       !memcmp(tk->s, op, tk->n);
}

static bool is_name(const struct tok *tk, const char *name)
{
	return tk->type == T_NAME && !strcmp(tk->str, name);
}

static const char *describe(const struct tok *tk, char *buf, size_t size)
{
	switch (tk->type) {
	case T_DATA: return "template text";
	case T_VAR_BEGIN: return "'{{'";
	case T_VAR_END: return "end of print statement";
	case T_BLOCK_BEGIN: return "'{%'";
	case T_BLOCK_END: return "end of statement block";
	case T_EOF: return "end of template";
	case T_STRING: return "string literal";
	case T_INT: return "integer";
	case T_FLOAT: return "float";
	default:
		snprintf(buf, size, "'%.*s'", (int)(tk->n > 40 ? 40 : tk->n),
			 tk->s);
		return buf;
	}
}

static int p_fail_at(struct parser *p, const struct tok *tk, const char *fmt,
		     const char *arg)
{
	return ferr_set_at(p->err, -EINVAL, tk->line, tk->col, fmt, arg);
}

/* An error for an unexpected token, naming the unsupported construct when
 * that is what it is. */
static int p_unexpected(struct parser *p, const char *expected)
{
	struct tok *tk = cur(p);
	char buf[64], msg[160];

	if (tk->type == T_OP) {
		if (is_op(tk, "["))
			return p_fail_at(p, tk, "unsupported expression: %s",
					 "list literal");
		if (is_op(tk, "{"))
			return p_fail_at(p, tk, "unsupported expression: %s",
					 "dict literal");
		if (is_op(tk, ","))
			return p_fail_at(p, tk, "unsupported expression: %s",
					 "tuple");
		if (is_op(tk, "("))
			return p_fail_at(p, tk, "unsupported expression: %s",
					 "call");
		if (is_op(tk, ":"))
			return p_fail_at(p, tk, "unsupported syntax: %s",
					 "':' here");
		if (!is_op(tk, ")") && !is_op(tk, "]") && !is_op(tk, "}")) {
			snprintf(msg, sizeof(msg), "%s", describe(tk, buf, sizeof(buf)));
			return p_fail_at(p, tk, "unsupported operator %s", msg);
		}
	}
	if (tk->type == T_NAME) {
		static const char *const ops[] = { "in", "if", "else" };
		size_t i;

		for (i = 0; i < ARRAY_SIZE(ops); i++)
			if (is_name(tk, ops[i]))
				return p_fail_at(p, tk,
					!strcmp(ops[i], "in") ? "unsupported operator '%s'"
					: "unsupported expression: inline '%s'",
					ops[i]);
	}
	snprintf(msg, sizeof(msg), "%s expected, found %s", expected,
		 describe(tk, buf, sizeof(buf)));
	return p_fail_at(p, tk, "%s", msg);
}

static struct expr *new_expr(struct parser *p, enum ekind kind,
			     const struct tok *at)
{
	struct expr *e = t_alloc(p->t, sizeof(*e));

	if (e) {
		e->kind = kind;
		e->line = at->line;
		e->col = at->col;
		e->height = 1;
	}
	return e;
}

/* Account for `child` below `e`; fails when the tree gets too high. */
static int grow(struct parser *p, struct expr *e, const struct expr *child)
{
	if (child && child->height + 1 > e->height)
		e->height = child->height + 1;
	if (e->height > MAX_EXPR_DEPTH)
		return ferr_set_at(p->err, -EINVAL, e->line, e->col, "%s",
				   "expression nested too deeply");
	return 0;
}

static int parse_or(struct parser *p, struct expr **out);

static int const_expr(struct parser *p, const struct tok *at, json_t *j,
		      struct expr **out)
{
	struct expr *e;

	if (t_keep(p->t, j) < 0)
		return -ENOMEM;
	e = new_expr(p, E_CONST, at);
	if (!e)
		return -ENOMEM;
	e->cst = j;
	*out = e;
	return 0;
}

static bool reserved_name(const char *s)
{
	static const char *const kw[] = {
		"and", "or", "not", "is", "in", "if", "else", "elif",
		"endif", "for", "endfor", "recursive",
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(kw); i++)
		if (!strcmp(s, kw[i]))
			return true;
	return false;
}

static int parse_primary(struct parser *p, struct expr **out)
{
	struct tok *tk = cur(p);
	int ret;

	if (tk->type == T_NAME) {
		const char *s = tk->str;

		if (!strcmp(s, "true") || !strcmp(s, "True") ||
		    !strcmp(s, "false") || !strcmp(s, "False")) {
			p->pos++;
			return const_expr(p, tk, json_boolean(s[0] == 't' ||
							       s[0] == 'T'), out);
		}
		if (!strcmp(s, "none") || !strcmp(s, "None")) {
			p->pos++;
			return const_expr(p, tk, json_null(), out);
		}
		if (reserved_name(s))
			return p_unexpected(p, "an expression");
		*out = new_expr(p, E_NAME, tk);
		if (!*out)
			return -ENOMEM;
		(*out)->name = s;
		p->pos++;
		return 0;
	}
	if (tk->type == T_STRING) {
		struct sbuf sb = SBUF_INIT;
		json_t *j;

		while (cur(p)->type == T_STRING) {
			if (sbuf_add(&sb, cur(p)->str, cur(p)->slen) < 0) {
				sbuf_release(&sb);
				return -ENOMEM;
			}
			p->pos++;
		}
		j = json_stringn(sb.buf, sb.len);
		sbuf_release(&sb);
		return const_expr(p, tk, j, out);
	}
	if (tk->type == T_INT) {
		if (tk->ival > INT64_MAX)
			return p_fail_at(p, tk, "unsupported number literal: %s",
					 "outside 64 bits");
		p->pos++;
		return const_expr(p, tk, json_integer((json_int_t)tk->ival), out);
	}
	if (tk->type == T_FLOAT) {
		p->pos++;
		return const_expr(p, tk, json_real(tk->fval), out);
	}
	if (is_op(tk, "(")) {
		p->pos++;
		if (is_op(cur(p), ")"))
			return p_fail_at(p, cur(p), "unsupported expression: %s",
					 "tuple");
		ret = parse_or(p, out);
		if (ret < 0)
			return ret;
		if (!is_op(cur(p), ")"))
			return p_unexpected(p, "')'");
		p->pos++;
		return 0;
	}
	return p_unexpected(p, "an expression");
}

static int parse_postfix(struct parser *p, struct expr **node)
{
	for (;;) {
		struct tok *tk = cur(p);
		struct expr *e;
		int ret;

		if (is_op(tk, ".")) {
			struct tok *nm = peek(p, 1);

			if (nm->type == T_INT) {
				if (nm->ival > INT64_MAX)
					return p_fail_at(p, nm,
						"unsupported number literal: %s",
						"outside 64 bits");
				e = new_expr(p, E_ITEM, tk);
				if (!e)
					return -ENOMEM;
				e->a = *node;
				p->pos += 2;
				ret = const_expr(p, nm,
					json_integer((json_int_t)nm->ival), &e->b);
				if (!ret)
					ret = grow(p, e, e->a);
				if (ret < 0)
					return ret;
				*node = e;
				continue;
			}
			if (nm->type != T_NAME) {
				p->pos++;
				return p_unexpected(p, "a name or number");
			}
			if (is_op(peek(p, 2), "(")) {
				if (p->items_ok && !strcmp(nm->str, "items") &&
				    is_op(peek(p, 3), ")")) {
					e = new_expr(p, E_ITEMS, tk);
					if (!e)
						return -ENOMEM;
					e->a = *node;
					*node = e;
					p->pos += 4;
					if (grow(p, e, e->a) < 0)
						return -EINVAL;
					p->items_ok = false;
					p->items_seen = true;
					continue;
				}
				return p_fail_at(p, peek(p, 2),
						 "unsupported expression: %s",
						 "method call");
			}
			e = new_expr(p, E_ATTR, tk);
			if (!e)
				return -ENOMEM;
			e->a = *node;
			e->name = nm->str;
			p->pos += 2;
			*node = e;
			if (grow(p, e, e->a) < 0)
				return -EINVAL;
			continue;
		}
		if (is_op(tk, "[")) {
			e = new_expr(p, E_ITEM, tk);
			if (!e)
				return -ENOMEM;
			e->a = *node;
			p->pos++;
			if (is_op(cur(p), ":"))
				return p_fail_at(p, cur(p),
					"unsupported expression: %s", "slice");
			if (++p->depth > MAX_EXPR_DEPTH)
				return p_fail_at(p, tk, "%s",
					"expression nested too deeply");
			ret = parse_or(p, &e->b);
			p->depth--;
			if (ret < 0)
				return ret;
			if (is_op(cur(p), ":"))
				return p_fail_at(p, cur(p),
					"unsupported expression: %s", "slice");
			if (!is_op(cur(p), "]"))
				return p_unexpected(p, "']'");
			p->pos++;
			*node = e;
			if (grow(p, e, e->a) < 0 || grow(p, e, e->b) < 0)
				return -EINVAL;
			continue;
		}
		if (is_op(tk, "("))
			return p_fail_at(p, tk, "unsupported expression: %s",
					 (*node)->kind == E_NAME ? "function call"
								: "method call");
		return 0;
	}
}

static const struct filter_spec *find_filter(const char *name)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(filters); i++)
		if (!strcmp(filters[i].name, name))
			return &filters[i];
	return NULL;
}

static int parse_filter(struct parser *p, struct expr **node)
{
	struct tok *nm = peek(p, 1);
	const struct filter_spec *f;
	struct expr *e;
	int npos = 0, ret;
	bool kw = false;
	size_t i;

	if (nm->type != T_NAME) {
		p->pos++;
		return p_unexpected(p, "a filter name");
	}
	if (is_op(peek(p, 2), "."))
		return p_fail_at(p, nm, "unknown filter '%s'", nm->str);
	f = find_filter(nm->str);
	if (!f) {
		for (i = 0; i < ARRAY_SIZE(jinja_filters); i++)
			if (!strcmp(jinja_filters[i], nm->str))
				return p_fail_at(p, nm, "unsupported filter '%s'",
						 nm->str);
		return p_fail_at(p, nm, "unknown filter '%s'", nm->str);
	}
	e = new_expr(p, E_FILTER, nm);
	if (!e)
		return -ENOMEM;
	e->a = *node;
	e->op = f->id;
	e->name = f->name;
	p->pos += 2;
	if (is_op(cur(p), "(")) {
		p->pos++;
		if (++p->depth > MAX_EXPR_DEPTH)
			return p_fail_at(p, nm, "%s", "expression nested too deeply");
		while (!is_op(cur(p), ")")) {
			struct tok *at = cur(p);
			int slot;

			if (npos || kw) {
				if (!is_op(cur(p), ","))
					return p_unexpected(p, "',' or ')'");
				p->pos++;
				if (is_op(cur(p), ")"))
					break;
				at = cur(p);
			}
			if (at->type == T_NAME && is_op(peek(p, 1), "=")) {
				for (slot = 0; slot < f->nparams; slot++)
					if (!strcmp(f->params[slot], at->str))
						break;
				if (slot == f->nparams)
					return ferr_set_at(p->err, -EINVAL,
						at->line, at->col,
						"filter '%s' has no parameter '%s'",
						f->name, at->str);
				if (e->args[slot])
					return ferr_set_at(p->err, -EINVAL,
						at->line, at->col,
						"filter '%s' got parameter '%s' twice",
						f->name, at->str);
				kw = true;
				p->pos += 2;
			} else {
				if (is_op(at, "*") || is_op(at, "**"))
					return p_fail_at(p, at,
						"unsupported expression: %s",
						"argument unpacking");
				if (kw)
					return p_fail_at(p, at, "%s",
						"positional argument after a keyword argument");
				slot = npos++;
				if (slot >= f->nparams)
					return ferr_set_at(p->err, -EINVAL,
						at->line, at->col,
						"filter '%s' takes at most %d argument%s",
						f->name, f->nparams,
						f->nparams == 1 ? "" : "s");
			}
			ret = parse_or(p, &e->args[slot]);
			if (ret < 0)
				return ret;
		}
		p->depth--;
		p->pos++;
	}
	if (f->id == F_JOIN && e->args[1])
		return p_fail_at(p, nm, "unsupported: %s",
				 "join's 'attribute' parameter");
	*node = e;
	if (grow(p, e, e->a) < 0 || grow(p, e, e->args[0]) < 0 ||
	    grow(p, e, e->args[1]) < 0)
		return -EINVAL;
	return 0;
}

static int parse_test(struct parser *p, struct expr **node)
{
	struct tok *is = cur(p), *nm;
	struct expr *e;
	bool negated = false;

	p->pos++;
	if (is_name(cur(p), "not")) {
		negated = true;
		p->pos++;
	}
	nm = cur(p);
	if (nm->type != T_NAME)
		return p_unexpected(p, "a test name");
	if (strcmp(nm->str, "defined") && strcmp(nm->str, "undefined"))
		return p_fail_at(p, nm, "unsupported test '%s'", nm->str);
	if (is_op(peek(p, 1), "."))
		return p_fail_at(p, nm, "unsupported test '%s.…'", nm->str);
	p->pos++;
	if (is_op(cur(p), "(")) {
		if (!is_op(peek(p, 1), ")"))
			return p_fail_at(p, cur(p), "test '%s' takes no argument",
					 nm->str);
		p->pos += 2;
	} else {
		struct tok *tk = cur(p);

		if ((tk->type == T_NAME && !is_name(tk, "else") &&
		     !is_name(tk, "or") && !is_name(tk, "and")) ||
		    tk->type == T_STRING || tk->type == T_INT ||
		    tk->type == T_FLOAT || is_op(tk, "(") || is_op(tk, "[") ||
		    is_op(tk, "{"))
			return p_fail_at(p, tk, "test '%s' takes no argument",
					 nm->str);
	}
	e = new_expr(p, E_TEST, is);
	if (!e)
		return -ENOMEM;
	e->a = *node;
	e->op = nm->str[0] == 'u';
	e->negated = negated;
	*node = e;
	return grow(p, e, e->a);
}

static int parse_unary(struct parser *p, struct expr **out)
{
	struct tok *tk = cur(p);
	int ret;

	if (is_op(tk, "-")) {
		struct tok *num = peek(p, 1);
		json_t *j;

		if (num->type == T_INT)
			j = json_integer(num->ival == (uint64_t)1 << 63 ? INT64_MIN
					 : -(json_int_t)num->ival);
		else if (num->type == T_FLOAT)
			j = json_real(-num->fval);
		else
			return p_fail_at(p, tk, "unsupported operator %s",
					 "'-' (only before a number)");
		p->pos += 2;
		ret = const_expr(p, tk, j, out);
		if (ret < 0)
			return ret;
		if (is_op(cur(p), ".") || is_op(cur(p), "[") || is_op(cur(p), "("))
			return p_fail_at(p, cur(p), "unsupported expression: %s",
					 "lookup on a negated number");
	} else if (is_op(tk, "+")) {
		return p_fail_at(p, tk, "unsupported operator %s", "'+'");
	} else {
		ret = parse_primary(p, out);
		if (ret < 0)
			return ret;
		ret = parse_postfix(p, out);
		if (ret < 0)
			return ret;
	}
	for (;;) {
		if (is_op(cur(p), "|"))
			ret = parse_filter(p, out);
		else if (is_name(cur(p), "is"))
			ret = parse_test(p, out);
		else if (is_op(cur(p), "("))
			return p_fail_at(p, cur(p), "unsupported expression: %s",
					 "call");
		else
			return 0;
		if (ret < 0)
			return ret;
	}
}

static int parse_compare(struct parser *p, struct expr **out)
{
	struct expr *first, *cmp = NULL, **tail = NULL;
	int ret = parse_unary(p, &first);

	if (ret < 0)
		return ret;
	for (;;) {
		struct tok *tk = cur(p);
		struct expr *e;

		if (is_op(tk, ">") || is_op(tk, "<") || is_op(tk, ">=") ||
		    is_op(tk, "<=") || is_name(tk, "in") ||
		    (is_name(tk, "not") && is_name(peek(p, 1), "in")))
			return p_fail_at(p, tk, "unsupported operator %s",
					 is_name(tk, "not") ? "'not in'" :
					 is_name(tk, "in") ? "'in'" : "(comparison)");
		if (!is_op(tk, "==") && !is_op(tk, "!="))
			break;
		if (!cmp) {
			cmp = new_expr(p, E_CMP, tk);
			if (!cmp)
				return -ENOMEM;
			cmp->a = first;
			tail = &cmp->next;
		}
		e = new_expr(p, E_CMP, tk);
		if (!e)
			return -ENOMEM;
		e->op = tk->s[0] == '!';
		p->pos++;
		ret = parse_unary(p, &e->a);
		if (!ret)
			ret = grow(p, cmp, first);
		if (!ret)
			ret = grow(p, cmp, e->a);
		if (ret < 0)
			return ret;
		*tail = e;
		tail = &e->next;
	}
	*out = cmp ? cmp : first;
	return 0;
}

static int parse_not(struct parser *p, struct expr **out)
{
	struct tok *tk = cur(p);
	struct expr *e;
	int ret;

	if (!is_name(tk, "not") || is_name(peek(p, 1), "in"))
		return parse_compare(p, out);
	if (++p->depth > MAX_EXPR_DEPTH)
		return p_fail_at(p, tk, "%s", "expression nested too deeply");
	e = new_expr(p, E_NOT, tk);
	if (!e)
		return -ENOMEM;
	p->pos++;
	ret = parse_not(p, &e->a);
	p->depth--;
	*out = e;
	return ret ? ret : grow(p, e, e->a);
}

/* `a and b and c` as one node with a list of operands, so evaluating a
 * long chain does not recurse. */
static int parse_chain(struct parser *p, struct expr **out, enum ekind kind,
		       const char *word,
		       int (*operand)(struct parser *, struct expr **))
{
	struct expr *first, *chain = NULL, **tail = NULL;
	int ret = operand(p, &first);

	while (ret == 0 && is_name(cur(p), word)) {
		struct expr *e;

		if (!chain) {
			chain = new_expr(p, kind, cur(p));
			if (!chain)
				return -ENOMEM;
			chain->a = first;
			tail = &chain->next;
			ret = grow(p, chain, first);
			if (ret < 0)
				return ret;
		}
		e = new_expr(p, kind, cur(p));
		if (!e)
			return -ENOMEM;
		p->pos++;
		ret = operand(p, &e->a);
		if (!ret)
			ret = grow(p, chain, e->a);
		*tail = e;
		tail = &e->next;
	}
	*out = chain ? chain : first;
	return ret;
}

static int parse_and(struct parser *p, struct expr **out)
{
	return parse_chain(p, out, E_AND, "and", parse_not);
}

static int parse_or(struct parser *p, struct expr **out)
{
	int ret;

	if (++p->depth > MAX_EXPR_DEPTH)
		return p_fail_at(p, cur(p), "%s", "expression nested too deeply");
	ret = parse_chain(p, out, E_OR, "or", parse_and);
	p->depth--;
	return ret;
}

/* A whole expression, then the end of its tag. */
static int parse_tag_expr(struct parser *p, struct expr **out,
			  enum ttype end)
{
	int ret = parse_or(p, out);

	if (ret < 0)
		return ret;
	if (cur(p)->type != end)
		return p_unexpected(p, end == T_VAR_END ? "'}}'" : "'%}'");
	p->pos++;
	return 0;
}

static int expect_block_end(struct parser *p)
{
	if (cur(p)->type != T_BLOCK_END)
		return p_unexpected(p, "'%}'");
	p->pos++;
	return 0;
}

static bool in_list(const char *s, const char *const *list)
{
	for (; *list; list++)
		if (!strcmp(s, *list))
			return true;
	return false;
}

/*
 * Statements up to end of template or a block tag whose name is in `ends`
 * (left unconsumed, p->pos at its name).
 */
static int parse_body(struct parser *p, struct stmt **out,
		      const char *const *ends, const char *want);

static int parse_if(struct parser *p, struct stmt **out)
{
	static const char *const ends[] = { "elif", "else", "endif", NULL };
	static const char *const endif[] = { "endif", NULL };
	struct stmt **slot = out;
	bool elif = false;
	int ret;

	/* elif chains are a loop, not recursion: any number of them */
	for (;;) {
		struct stmt *s = t_alloc(p->t, sizeof(*s));
		struct tok *kw = cur(p);

		if (!s)
			return -ENOMEM;
		s->kind = S_IF;
		s->line = kw->line;
		s->elif = elif;
		*slot = s;
		p->pos++;
		ret = parse_tag_expr(p, &s->e, T_BLOCK_END);
		if (ret < 0)
			return ret;
		ret = parse_body(p, &s->body, ends, "'elif', 'else' or 'endif'");
		if (ret < 0)
			return ret;
		if (is_name(cur(p), "elif")) {
			slot = &s->orelse;
			elif = true;
			continue;
		}
		if (is_name(cur(p), "else")) {
			p->pos++;
			ret = expect_block_end(p);
			if (ret < 0)
				return ret;
			ret = parse_body(p, &s->orelse, endif, "'endif'");
			if (ret < 0)
				return ret;
		}
		break;
	}
	p->pos++;	/* endif */
	return expect_block_end(p);
}

static int parse_for(struct parser *p, struct stmt **out)
{
	static const char *const ends[] = { "else", "endfor", NULL };
	static const char *const endfor[] = { "endfor", NULL };
	struct stmt *s = t_alloc(p->t, sizeof(*s));
	struct tok *kw = cur(p);
	int ret, n = 0;
	size_t start;

	if (!s)
		return -ENOMEM;
	s->kind = S_FOR;
	s->line = kw->line;
	p->pos++;
	start = p->pos;
	for (;;) {
		struct tok *tk = cur(p);

		if (tk->type != T_NAME || reserved_name(tk->str)) {
			if (is_op(tk, "("))
				return p_fail_at(p, tk, "unsupported syntax: %s",
						 "parenthesized loop targets");
			return p_unexpected(p, "a loop variable name");
		}
		if (!strcmp(tk->str, "loop"))
			return p_fail_at(p, tk, "%s",
				"can't assign to special loop variable in for-loop target");
		if (!strcmp(tk->str, "true") || !strcmp(tk->str, "True") ||
		    !strcmp(tk->str, "false") || !strcmp(tk->str, "False") ||
		    !strcmp(tk->str, "none") || !strcmp(tk->str, "None"))
			return p_fail_at(p, tk, "unsupported loop variable name '%s'",
					 tk->str);
		n++;
		p->pos++;
		if (!is_op(cur(p), ","))
			break;
		p->pos++;
		if (is_name(cur(p), "in"))
			return p_fail_at(p, cur(p), "unsupported syntax: %s",
					 "trailing ',' in loop targets");
	}
	if (!is_name(cur(p), "in"))
		return p_unexpected(p, "'in'");
	s->targets = t_alloc(p->t, sizeof(*s->targets) * (size_t)n);
	if (!s->targets)
		return -ENOMEM;
	for (s->ntargets = 0; s->ntargets < n; s->ntargets++) {
		int i;

		s->targets[s->ntargets] = p->toks[start + 2 * (size_t)s->ntargets].str;
		for (i = 0; i < s->ntargets; i++)
			if (!strcmp(s->targets[i], s->targets[s->ntargets]))
				return p_fail_at(p, &p->toks[start + 2 * (size_t)s->ntargets],
					"unsupported: loop variable '%s' named twice",
					s->targets[i]);
	}
	p->pos++;
	p->items_ok = true;
	p->items_seen = false;
	{
		struct tok *at = cur(p);

		ret = parse_or(p, &s->e);
		p->items_ok = false;
		if (ret < 0)
			return ret;
		if (p->items_seen && s->e->kind != E_ITEMS)
			return p_fail_at(p, at, "unsupported expression: %s",
					 "method call");
		if (s->e->kind == E_ITEMS && n != 2)
			return p_fail_at(p, at, "unsupported: %s",
					 "a loop over .items() needs two loop variables");
	}
	if (is_name(cur(p), "if") || is_name(cur(p), "recursive"))
		return p_fail_at(p, cur(p), "unsupported: '%s' in a for loop",
				 cur(p)->str);
	ret = expect_block_end(p);
	if (ret < 0)
		return ret;
	ret = parse_body(p, &s->body, ends, "'else' or 'endfor'");
	if (ret < 0)
		return ret;
	if (is_name(cur(p), "else")) {
		p->pos++;
		ret = expect_block_end(p);
		if (ret < 0)
			return ret;
		ret = parse_body(p, &s->orelse, endfor, "'endfor'");
		if (ret < 0)
			return ret;
	}
	p->pos++;	/* endfor */
	*out = s;
	return expect_block_end(p);
}

static int parse_body(struct parser *p, struct stmt **out,
		      const char *const *ends, const char *want)
{
	static const char *const all_ends[] = {
		"elif", "else", "endif", "endfor", NULL
	};
	struct stmt **tail = out;
	int ret = 0;

	*out = NULL;
	if (++p->blocks > MAX_BLOCK_DEPTH + 1)	/* + the top level */
		return p_fail_at(p, cur(p), "%s", "blocks nested too deeply");
	for (;;) {
		struct tok *tk = cur(p);
		struct stmt *s = NULL;

		if (tk->type == T_EOF) {
			if (ends)
				return p_fail_at(p, tk,
					"%s expected, found end of template", want);
			break;
		}
		if (tk->type == T_DATA) {
			s = t_alloc(p->t, sizeof(*s));
			if (!s)
				return -ENOMEM;
			s->kind = S_TEXT;
			s->line = tk->line;
			s->text = tk->s;
			s->len = tk->n;
			p->pos++;
		} else if (tk->type == T_VAR_BEGIN) {
			s = t_alloc(p->t, sizeof(*s));
			if (!s)
				return -ENOMEM;
			s->kind = S_PRINT;
			s->line = tk->line;
			p->pos++;
			ret = parse_tag_expr(p, &s->e, T_VAR_END);
			if (ret < 0)
				return ret;
		} else if (tk->type == T_BLOCK_BEGIN) {
			struct tok *nm = peek(p, 1);

			if (nm->type != T_NAME) {
				p->pos++;
				return p_unexpected(p, "a tag name");
			}
			if (ends && in_list(nm->str, ends)) {
				p->pos++;
				break;
			}
			if (in_list(nm->str, all_ends))
				return ends ? ferr_set_at(p->err, -EINVAL, nm->line,
						nm->col, "%s expected, found '%s'",
						want, nm->str)
					    : p_fail_at(p, nm, "unexpected '%s'",
							nm->str);
			p->pos++;
			if (!strcmp(nm->str, "if"))
				ret = parse_if(p, &s);
			else if (!strcmp(nm->str, "for"))
				ret = parse_for(p, &s);
			else {
				size_t i;

				for (i = 0; i < ARRAY_SIZE(jinja_tags); i++)
					if (!strcmp(jinja_tags[i], nm->str))
						return p_fail_at(p, nm,
							"unsupported tag '%s'", nm->str);
				return p_fail_at(p, nm, "unknown tag '%s'", nm->str);
			}
			if (ret < 0)
				return ret;
		} else {
			return p_unexpected(p, "template text or a tag");
		}
		*tail = s;
		tail = &s->next;
	}
	p->blocks--;
	return ret;
}

int tmpl_parse(struct tmpl **out, const char *text, size_t len,
	       struct ferr *err)
{
	struct tmpl *t = NULL;
	struct lexer lx = { 0 };
	struct parser p = { 0 };
	size_t i, o = 0;
	int line = 1, col = 1, ret;

	*out = NULL;
	if (len > MAX_TEXT)
		return ferr_set(err, -EINVAL, "template larger than %u bytes",
				MAX_TEXT);
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->src = malloc(len + 1);
	if (!t->src) {
		ret = -ENOMEM;
		goto out;
	}
	/* Jinja2 reads "\r\n" and "\r" as "\n", then drops one final newline
	 * (keep_trailing_newline=False). */
	for (i = 0; i < len;) {
		uint32_t cp;
		size_t k = utf8_decode((const unsigned char *)text + i, len - i,
				       &cp);

		if (!k) {
			ret = ferr_set_at(err, -EINVAL, line, col, "%s",
					  "template is not valid UTF-8");
			goto out;
		}
		if (text[i] == '\r') {
			t->src[o++] = '\n';
			i += i + 1 < len && text[i + 1] == '\n' ? 2 : 1;
			line++;
			col = 1;
			continue;
		}
		if (text[i] == '\n') {
			line++;
			col = 1;
		} else {
			col++;
		}
		memcpy(t->src + o, text + i, k);
		o += k;
		i += k;
	}
	if (o && t->src[o - 1] == '\n')
		o--;
	t->src[o] = '\0';

	lx.t = t;
	lx.s = t->src;
	lx.n = o;
	lx.line = 1;
	lx.col = 1;
	lx.err = err;
	ret = lex(&lx);
	if (ret < 0)
		goto out;
	p.t = t;
	p.toks = lx.toks;
	p.err = err;
	ret = parse_body(&p, &t->body, NULL, NULL);
	if (ret < 0)
		goto out;
	*out = t;
	t = NULL;
out:
	free(lx.toks);
	tmpl_free(t);
	return ret;
}

/*** values: Python semantics of what json.loads gives ***/

enum vkind { V_UNDEF, V_JSON, V_LOOP };

struct loopst {
	size_t index0, length;
};

struct val {
	enum vkind k;
	json_t *j;			/* V_JSON: an owned reference */
	const struct loopst *loop;	/* V_LOOP */
	const char *uname;		/* V_UNDEF: the missing name, if known */
	const char *utype;		/* V_UNDEF: its owner's type, if any */
};

struct frame {
	struct frame *up;
	const struct stmt *s;
	json_t **vals;
	struct loopst loop;
};

struct render {
	const json_t *context;
	struct sbuf *out;
	size_t start;
	struct ferr *err;
	long steps;
	struct frame *top;
	const struct expr *at;	/* for error positions */
};

static void v_release(struct val *v)
{
	if (v->k == V_JSON)
		json_decref(v->j);
	v->k = V_UNDEF;
	v->j = NULL;
	v->uname = v->utype = NULL;
}

static int v_json(struct val *v, json_t *j)
{
	v->k = V_JSON;
	v->j = j;
	v->loop = NULL;
	return j ? 0 : -ENOMEM;
}

static int r_fail(struct render *r, const struct expr *at, const char *fmt,
		  ...) __attribute__((format(printf, 3, 4)));

static int r_fail(struct render *r, const struct expr *at, const char *fmt,
		  ...)
{
	va_list ap;
	char msg[FERR_MESSAGE_MAX];

	if (!at)
		at = r->at;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return ferr_set_at(r->err, -EINVAL, at ? at->line : 0,
			   at ? at->col : 0, "%s", msg);
}

static const char *type_name(const struct val *v)
{
	if (v->k == V_UNDEF)
		return "Undefined";
	if (v->k == V_LOOP)
		return "LoopContext";
	switch (json_typeof(v->j)) {
	case JSON_OBJECT: return "dict";
	case JSON_ARRAY: return "list";
	case JSON_STRING: return "str";
	case JSON_INTEGER: return "int";
	case JSON_REAL: return "float";
	case JSON_TRUE:
	case JSON_FALSE: return "bool";
	default: return "NoneType";
	}
}

static int undefined_error(struct render *r, const struct val *v)
{
	if (v->utype)
		return r_fail(r, NULL, "'%s object' has no attribute '%s'",
			      v->utype, v->uname ? v->uname : "?");
	if (v->uname)
		return r_fail(r, NULL, "'%s' is undefined", v->uname);
	return r_fail(r, NULL, "%s", "undefined value used");
}

/* Python truth; -EINVAL for the loop object. */
static int truth(struct render *r, const struct val *v, bool *out)
{
	if (v->k == V_UNDEF) {
		*out = false;
		return 0;
	}
	if (v->k == V_LOOP)
		return r_fail(r, NULL, "%s", "unsupported: the loop object as a value");
	switch (json_typeof(v->j)) {
	case JSON_OBJECT: *out = json_object_size(v->j) > 0; break;
	case JSON_ARRAY: *out = json_array_size(v->j) > 0; break;
	case JSON_STRING: *out = json_string_length(v->j) > 0; break;
	case JSON_INTEGER: *out = json_integer_value(v->j) != 0; break;
	case JSON_REAL: *out = json_real_value(v->j) != 0.0; break;
	case JSON_TRUE: *out = true; break;
	default: *out = false; break;
	}
	return 0;
}

static bool is_intlike(const json_t *j, json_int_t *out)
{
	if (json_is_integer(j))
		*out = json_integer_value(j);
	else if (json_is_boolean(j))
		*out = json_is_true(j);
	else
		return false;
	return true;
}

static bool int_eq_real(json_int_t i, double d)
{
	if (d != d || d < -9223372036854775808.0 || d >= 9223372036854775808.0 ||
	    d != trunc(d))
		return false;
	return (json_int_t)d == i;
}

/* Python ==; 1/0, or -EINVAL when nested too deeply. */
static int json_py_eq(const json_t *a, const json_t *b, int depth)
{
	json_int_t ia, ib;
	size_t i, n;

	if (depth > MAX_VALUE_DEPTH)
		return -EINVAL;
	if (is_intlike(a, &ia)) {
		if (is_intlike(b, &ib))
			return ia == ib;
		if (json_is_real(b))
			return int_eq_real(ia, json_real_value(b));
		return 0;
	}
	if (json_is_real(a)) {
		if (is_intlike(b, &ib))
			return int_eq_real(ib, json_real_value(a));
		return json_is_real(b) && json_real_value(a) == json_real_value(b);
	}
	if (json_typeof(a) != json_typeof(b))
		return 0;
	switch (json_typeof(a)) {
	case JSON_STRING:
		return json_string_length(a) == json_string_length(b) &&
		       !memcmp(json_string_value(a), json_string_value(b),
			       json_string_length(a));
	case JSON_NULL:
		return 1;
	case JSON_ARRAY:
		n = json_array_size(a);
		if (n != json_array_size(b))
			return 0;
		for (i = 0; i < n; i++) {
			int e = json_py_eq(json_array_get(a, i),
					   json_array_get(b, i), depth + 1);

			if (e <= 0)
				return e;
		}
		return 1;
	case JSON_OBJECT: {
		const char *key;
		json_t *va;

		if (json_object_size(a) != json_object_size(b))
			return 0;
		json_object_foreach((json_t *)a, key, va) {
			json_t *vb = json_object_get(b, key);
			int e;

			if (!vb)
				return 0;
			e = json_py_eq(va, vb, depth + 1);
			if (e <= 0)
				return e;
		}
		return 1;
	}
	default:
		return 0;
	}
}

static int py_eq(struct render *r, const struct val *a, const struct val *b,
		 bool *out)
{
	int e;

	if (a->k == V_LOOP || b->k == V_LOOP)
		return r_fail(r, NULL, "%s", "unsupported: the loop object as a value");
	if (a->k == V_UNDEF || b->k == V_UNDEF) {
		*out = a->k == b->k;
		return 0;
	}
	e = json_py_eq(a->j, b->j, 0);
	if (e < 0)
		return r_fail(r, NULL, "unsupported: comparing values nested deeper than %d levels",
			      MAX_VALUE_DEPTH);
	*out = e;
	return 0;
}

/* repr() of a str, by Python's unicode_repr rules. */
static int repr_str(struct sbuf *sb, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	bool sq = memchr(s, '\'', n) != NULL, dq = memchr(s, '"', n) != NULL;
	char quote = sq && !dq ? '"' : '\'';
	size_t i = 0;
	int ret = sbuf_addch(sb, quote);

	while (!ret && i < n) {
		uint32_t cp;
		size_t k = u8_dec(s + i, n - i, &cp);
		char esc[12];
		int len = 0;

		if (!k)
			return -EINVAL;
		if (cp == (uint32_t)quote || cp == '\\') {
			esc[0] = '\\';
			esc[1] = (char)cp;
			len = 2;
		} else if (cp == '\t' || cp == '\n' || cp == '\r') {
			esc[0] = '\\';
			esc[1] = cp == '\t' ? 't' : cp == '\n' ? 'n' : 'r';
			len = 2;
		} else if (!py_isprintable(cp)) {
			int digits = cp < 0x100 ? 2 : cp < 0x10000 ? 4 : 8, d;

			esc[0] = '\\';
			esc[1] = digits == 2 ? 'x' : digits == 4 ? 'u' : 'U';
			for (d = 0; d < digits; d++)
				esc[2 + d] = hex[cp >> (4 * (digits - 1 - d)) & 15];
			len = 2 + digits;
		}
		ret = len ? sbuf_add(sb, esc, (size_t)len) : sbuf_add(sb, s + i, k);
		i += k;
	}
	return ret ? ret : sbuf_addch(sb, quote);
}

/* str() (repr for items of containers) of a JSON value. */
static int json_py_str(struct sbuf *sb, const json_t *j, bool repr, int depth)
{
	size_t i, n;
	int ret = 0;

	if (depth > MAX_VALUE_DEPTH)
		return -EINVAL;
	switch (json_typeof(j)) {
	case JSON_STRING:
		if (repr)
			return repr_str(sb, json_string_value(j),
					json_string_length(j));
		return sbuf_add(sb, json_string_value(j), json_string_length(j));
	case JSON_INTEGER:
	case JSON_REAL:
		return fjson_dump(sb, j);	/* Python's int and float repr */
	case JSON_TRUE:
		return sbuf_addstr(sb, "True");
	case JSON_FALSE:
		return sbuf_addstr(sb, "False");
	case JSON_NULL:
		return sbuf_addstr(sb, "None");
	case JSON_ARRAY:
		n = json_array_size(j);
		ret = sbuf_addch(sb, '[');
		for (i = 0; !ret && i < n; i++) {
			if (i)
				ret = sbuf_add(sb, ", ", 2);
			if (!ret)
				ret = json_py_str(sb, json_array_get(j, i), true,
						  depth + 1);
		}
		return ret ? ret : sbuf_addch(sb, ']');
	case JSON_OBJECT: {
		void *it = json_object_iter((json_t *)j);

		ret = sbuf_addch(sb, '{');
		for (i = 0; !ret && it; i++, it = json_object_iter_next((json_t *)j, it)) {
			if (i)
				ret = sbuf_add(sb, ", ", 2);
			if (!ret)
				ret = repr_str(sb, json_object_iter_key(it),
					       json_object_iter_key_len(it));
			if (!ret)
				ret = sbuf_add(sb, ": ", 2);
			if (!ret)
				ret = json_py_str(sb, json_object_iter_value(it),
						  true, depth + 1);
		}
		return ret ? ret : sbuf_addch(sb, '}');
	}
	}
	return -EINVAL;
}

static int py_str(struct render *r, struct sbuf *sb, const struct val *v)
{
	size_t start = sb->len;
	int ret;

	if (v->k == V_UNDEF)
		return 0;
	if (v->k == V_LOOP)
		return r_fail(r, NULL, "%s", "unsupported: printing the loop object");
	ret = json_py_str(sb, v->j, false, 0);
	if (ret == -EINVAL) {
		sbuf_setlen(sb, start);
		return r_fail(r, NULL, "unsupported: printing a value nested deeper than %d levels (or not UTF-8)",
			      MAX_VALUE_DEPTH);
	}
	return ret;
}

/* A new str value from a buffer, within the size limit. */
static int v_from_sbuf(struct render *r, struct val *v, const struct sbuf *sb)
{
	if (sb->len > MAX_OUTPUT)
		return r_fail(r, NULL, "string larger than %zu bytes", MAX_OUTPUT);
	return v_json(v, json_stringn_nocheck(sb->buf, sb->len));
}

/*** lookups (Jinja2's Environment.getattr / getitem) ***/

static int cmp_name(const void *key, const void *elem)
{
	const char *k = key, *e = *(const char *const *)elem;

	return strcmp(k, e);
}

static bool has_py_attr(const struct val *v, const char *name, size_t len)
{
	const char *const *list;
	size_t n;

	if (strlen(name) != len)	/* a NUL inside: never an attribute */
		return false;
	if (v->k == V_LOOP) {
		list = attrs_loop;
		n = ARRAY_SIZE(attrs_loop);
	} else {
		switch (json_typeof(v->j)) {
		case JSON_OBJECT: list = attrs_dict; n = ARRAY_SIZE(attrs_dict); break;
		case JSON_ARRAY: list = attrs_list; n = ARRAY_SIZE(attrs_list); break;
		case JSON_STRING: list = attrs_str; n = ARRAY_SIZE(attrs_str); break;
		case JSON_REAL: list = attrs_float; n = ARRAY_SIZE(attrs_float); break;
		case JSON_NULL: list = attrs_none; n = ARRAY_SIZE(attrs_none); break;
		default: list = attrs_int; n = ARRAY_SIZE(attrs_int); break;
		}
	}
	return bsearch(name, list, n, sizeof(*list), cmp_name) != NULL;
}

/* getattr(obj, name) found something: the loop's supported attributes, or
 * a refusal. */
static int py_attr(struct render *r, const struct val *obj, const char *name,
		   struct val *out)
{
	if (obj->k == V_LOOP) {
		const struct loopst *lp = obj->loop;
		size_t len = lp->length, i0 = lp->index0;

		if (!strcmp(name, "index"))
			return v_json(out, json_integer((json_int_t)i0 + 1));
		if (!strcmp(name, "index0"))
			return v_json(out, json_integer((json_int_t)i0));
		if (!strcmp(name, "revindex"))
			return v_json(out, json_integer((json_int_t)(len - i0)));
		if (!strcmp(name, "revindex0"))
			return v_json(out, json_integer((json_int_t)(len - i0 - 1)));
		if (!strcmp(name, "first"))
			return v_json(out, json_boolean(i0 == 0));
		if (!strcmp(name, "last"))
			return v_json(out, json_boolean(i0 + 1 == len));
		if (!strcmp(name, "length"))
			return v_json(out, json_integer((json_int_t)len));
		return r_fail(r, NULL, "unsupported: loop.%s", name);
	}
	return r_fail(r, NULL, "unsupported: '%s' is an attribute of Python's %s, not a value",
		      name, type_name(obj));
}

static void set_undef(struct val *out, const char *name, const char *type)
{
	out->k = V_UNDEF;
	out->j = NULL;
	out->uname = name;
	out->utype = type;
}

/* One character of a str as a new str value. */
static int str_char(const json_t *s, json_int_t idx, struct val *out, bool *found)
{
	const char *p = json_string_value(s);
	size_t n = json_string_length(s), i = 0, count = 0, k;
	uint32_t cp;

	*found = false;
	if (idx < 0) {
		idx += (json_int_t)utf8_count(p, n);
		if (idx < 0)
			return 0;
		i = 0;
	}
	for (count = 0; i < n; i += k, count++) {
		k = u8_dec(p + i, n - i, &cp);
		if (!k)
			return -EINVAL;
		if ((json_int_t)count == idx) {
			*found = true;
			return v_json(out, json_stringn_nocheck(p + i, k));
		}
	}
	return 0;
}

/* obj[key] as Python does it for our types: 1 found, 0 not found (a
 * LookupError or TypeError). */
static int py_getitem(const struct val *obj, const struct val *key,
		      struct val *out)
{
	json_int_t idx;
	bool found;
	int ret;

	if (obj->k != V_JSON || key->k == V_LOOP)
		return 0;
	if (json_is_object(obj->j)) {
		json_t *v;

		if (key->k != V_JSON || !json_is_string(key->j))
			return 0;
		v = json_object_getn(obj->j, json_string_value(key->j),
				     json_string_length(key->j));
		if (!v)
			return 0;
		v_json(out, json_incref(v));
		return 1;
	}
	if (key->k != V_JSON || !is_intlike(key->j, &idx))
		return 0;
	if (json_is_array(obj->j)) {
		json_int_t n = (json_int_t)json_array_size(obj->j);

		if (idx < 0)
			idx += n;
		if (idx < 0 || idx >= n)
			return 0;
		v_json(out, json_incref(json_array_get(obj->j, (size_t)idx)));
		return 1;
	}
	if (json_is_string(obj->j)) {
		ret = str_char(obj->j, idx, out, &found);
		if (ret < 0)
			return ret;
		return found;
	}
	return 0;
}

static const char *owner_name(const struct val *v)
{
	return v->k == V_LOOP ? "LoopContext" : type_name(v);
}

/* a.name: getattr first, then getitem. */
static int do_getattr(struct render *r, const struct val *obj,
		      const char *name, struct val *out)
{
	struct val key = { 0 };
	int ret;

	if (obj->k == V_UNDEF)
		return undefined_error(r, obj);
	if (has_py_attr(obj, name, strlen(name)))
		return py_attr(r, obj, name, out);
	ret = v_json(&key, json_string(name));
	if (ret < 0)
		return ret;
	ret = py_getitem(obj, &key, out);
	v_release(&key);
	if (ret < 0)
		return ret == -EINVAL ? r_fail(r, NULL, "%s", "invalid UTF-8 in a value") : ret;
	if (!ret)
		set_undef(out, name, owner_name(obj));
	return 0;
}

/* a[key]: getitem first, then getattr for str keys. */
static int do_getitem(struct render *r, const struct val *obj,
		      const struct val *key, struct val *out)
{
	int ret;

	if (obj->k == V_UNDEF)
		return undefined_error(r, obj);
	ret = py_getitem(obj, key, out);
	if (ret < 0)
		return ret == -EINVAL ? r_fail(r, NULL, "%s", "invalid UTF-8 in a value") : ret;
	if (ret)
		return 0;
	if (key->k == V_JSON && json_is_string(key->j)) {
		const char *name = json_string_value(key->j);

		if (has_py_attr(obj, name, json_string_length(key->j)))
			return py_attr(r, obj, name, out);
	}
	set_undef(out, NULL, NULL);
	return 0;
}

/*** iteration ***/

/* The items of an iterable value, as Python's iter() gives them: list
 * items, dict keys, str characters; none for an undefined value. */
struct iter {
	const json_t *j;
	enum { IT_NONE, IT_LIST, IT_DICT, IT_STR } kind;
	size_t i, n;
	void *it;
};

static int iter_init(struct render *r, const struct val *v, struct iter *it)
{
	memset(it, 0, sizeof(*it));
	if (v->k == V_UNDEF)
		return 0;
	if (v->k == V_LOOP)
		return r_fail(r, NULL, "%s", "unsupported: iterating the loop object");
	it->j = v->j;
	switch (json_typeof(v->j)) {
	case JSON_ARRAY:
		it->kind = IT_LIST;
		it->n = json_array_size(v->j);
		return 0;
	case JSON_OBJECT:
		it->kind = IT_DICT;
		it->n = json_object_size(v->j);
		it->it = json_object_iter((json_t *)v->j);
		return 0;
	case JSON_STRING: {
		it->kind = IT_STR;
		it->n = utf8_count(json_string_value(v->j),
				   json_string_length(v->j));
		return 0;
	}
	default:
		return r_fail(r, NULL, "'%s' object is not iterable", type_name(v));
	}
}

/* Next item as a new reference in *out; 0 = done, 1 = got one. */
static int iter_next(struct render *r, struct iter *it, json_t **out)
{
	switch (it->kind) {
	case IT_LIST:
		if (it->i >= it->n)
			return 0;
		*out = json_incref(json_array_get(it->j, it->i++));
		return 1;
	case IT_DICT:
		if (!it->it)
			return 0;
		*out = json_stringn_nocheck(json_object_iter_key(it->it),
					    json_object_iter_key_len(it->it));
		it->it = json_object_iter_next((json_t *)it->j, it->it);
		return *out ? 1 : -ENOMEM;
	case IT_STR: {
		const char *s = json_string_value(it->j);
		size_t n = json_string_length(it->j);
		uint32_t cp;
		size_t k;

		if (it->i >= n)
			return 0;
		k = u8_dec(s + it->i, n - it->i, &cp);
		if (!k)
			return r_fail(r, NULL, "%s", "invalid UTF-8 in a value");
		*out = json_stringn_nocheck(s + it->i, k);
		it->i += k;
		return *out ? 1 : -ENOMEM;
	}
	default:
		return 0;
	}
}

/*** filters ***/

static int eval(struct render *r, const struct expr *e, struct val *out);

static int tojson_str(struct sbuf *sb, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t i = 0;
	int ret = sbuf_addch(sb, '"');

	while (!ret && i < n) {
		uint32_t cp;
		size_t k = u8_dec(s + i, n - i, &cp);
		char esc[14];
		int len;

		if (!k)
			return -EINVAL;
		i += k;
		if (cp == '"' || cp == '\\') {
			esc[0] = '\\';
			esc[1] = (char)cp;
			len = 2;
		} else if (cp == '\n' || cp == '\r' || cp == '\t' || cp == '\b' ||
			   cp == '\f') {
			esc[0] = '\\';
			esc[1] = cp == '\n' ? 'n' : cp == '\r' ? 'r' : cp == '\t' ? 't'
				 : cp == '\b' ? 'b' : 'f';
			len = 2;
		} else if (cp >= 0x20 && cp < 0x7F) {
			esc[0] = (char)cp;
			len = 1;
		} else if (cp < 0x10000) {
			len = snprintf(esc, sizeof(esc), "\\u%c%c%c%c",
				       hex[cp >> 12], hex[cp >> 8 & 15],
				       hex[cp >> 4 & 15], hex[cp & 15]);
		} else {
			uint32_t v = cp - 0x10000, hi = 0xD800 | v >> 10,
				 lo = 0xDC00 | (v & 0x3FF);

			len = snprintf(esc, sizeof(esc), "\\u%c%c%c%c\\u%c%c%c%c",
				       hex[hi >> 12], hex[hi >> 8 & 15],
				       hex[hi >> 4 & 15], hex[hi & 15],
				       hex[lo >> 12], hex[lo >> 8 & 15],
				       hex[lo >> 4 & 15], hex[lo & 15]);
		}
		ret = sbuf_add(sb, esc, (size_t)len);
	}
	return ret ? ret : sbuf_addch(sb, '"');
}

static int cmp_keys(const void *a, const void *b)
{
	const char *const *x = a, *const *y = b;

	return strcmp(*x, *y);
}

static int newline_indent(struct sbuf *sb, const struct sbuf *ind, int level)
{
	int ret = sbuf_addch(sb, '\n');

	while (!ret && level-- > 0)
		ret = sbuf_add(sb, ind->buf, ind->len);
	return ret;
}

/* json.dumps(j, sort_keys=True[, indent]) with ensure_ascii. */
static int tojson_value(struct sbuf *sb, const json_t *j,
			const struct sbuf *ind, int level)
{
	size_t i, n;
	int ret = 0;

	if (level > MAX_VALUE_DEPTH)
		return -EINVAL;
	if (sb->len > MAX_OUTPUT)
		return -EFBIG;
	switch (json_typeof(j)) {
	case JSON_STRING:
		return tojson_str(sb, json_string_value(j), json_string_length(j));
	case JSON_INTEGER:
	case JSON_REAL:
		return fjson_dump(sb, j);
	case JSON_TRUE:
		return sbuf_addstr(sb, "true");
	case JSON_FALSE:
		return sbuf_addstr(sb, "false");
	case JSON_NULL:
		return sbuf_addstr(sb, "null");
	case JSON_ARRAY:
		n = json_array_size(j);
		if (!n)
			return sbuf_addstr(sb, "[]");
		ret = sbuf_addch(sb, '[');
		for (i = 0; !ret && i < n; i++) {
			if (i)
				ret = sbuf_addstr(sb, ind ? "," : ", ");
			if (!ret && ind)
				ret = newline_indent(sb, ind, level + 1);
			if (!ret)
				ret = tojson_value(sb, json_array_get(j, i), ind,
						   level + 1);
		}
		if (!ret && ind)
			ret = newline_indent(sb, ind, level);
		return ret ? ret : sbuf_addch(sb, ']');
	case JSON_OBJECT: {
		const char **keys;
		const char *key;
		json_t *v;

		n = json_object_size(j);
		if (!n)
			return sbuf_addstr(sb, "{}");
		keys = malloc(n * sizeof(*keys));
		if (!keys)
			return -ENOMEM;
		i = 0;
		json_object_foreach((json_t *)j, key, v)
			keys[i++] = key;
		/* Python sorts by code point, which is UTF-8 byte order. */
		qsort(keys, n, sizeof(*keys), cmp_keys);
		ret = sbuf_addch(sb, '{');
		for (i = 0; !ret && i < n; i++) {
			if (i)
				ret = sbuf_addstr(sb, ind ? "," : ", ");
			if (!ret && ind)
				ret = newline_indent(sb, ind, level + 1);
			if (!ret)
				ret = tojson_str(sb, keys[i], strlen(keys[i]));
			if (!ret)
				ret = sbuf_add(sb, ": ", 2);
			if (!ret)
				ret = tojson_value(sb, json_object_get(j, keys[i]),
						   ind, level + 1);
		}
		free(keys);
		if (!ret && ind)
			ret = newline_indent(sb, ind, level);
		return ret ? ret : sbuf_addch(sb, '}');
	}
	}
	return -EINVAL;
}

/* Jinja2's htmlsafe_json_dumps: json.dumps, then <>&' as \u escapes. */
static int f_tojson(struct render *r, const struct expr *e,
		    const struct val *v, const struct val *indent,
		    struct val *out)
{
	struct sbuf sb = SBUF_INIT, ind = SBUF_INIT, esc = SBUF_INIT;
	bool use_indent = indent->k != V_UNDEF || e->args[0];
	size_t i;
	int ret;

	if (v->k != V_JSON) {
		ret = r_fail(r, e, "Object of type %s is not JSON serializable",
			     type_name(v));
		goto out;
	}
	if (use_indent && indent->k == V_JSON && json_is_null(indent->j))
		use_indent = false;
	/* json.dumps turns indent into a string only for non-str values */
	if (use_indent && !json_is_string(v->j)) {
		json_int_t n;
		/* only a non-empty container ever writes the indent */
		bool needed = (json_is_array(v->j) && json_array_size(v->j)) ||
			      (json_is_object(v->j) && json_object_size(v->j));

		if (indent->k == V_JSON && is_intlike(indent->j, &n)) {
			if (!needed)
				n = 0;
			if (n > (json_int_t)MAX_OUTPUT) {
				ret = r_fail(r, e, "%s", "tojson indent too large");
				goto out;
			}
			for (; n > 0 && !(ret = sbuf_addch(&ind, ' ')); n--)
				;
			if (n > 0)
				goto out;
		} else if (indent->k == V_JSON && json_is_string(indent->j)) {
			ret = sbuf_add(&ind, json_string_value(indent->j),
				       json_string_length(indent->j));
			if (ret < 0)
				goto out;
		} else {
			ret = r_fail(r, e, "can't multiply sequence by non-int of type '%s'",
				     type_name(indent));
			goto out;
		}
	}
	ret = tojson_value(&sb, v->j, use_indent ? &ind : NULL, 0);
	if (ret == -EINVAL) {
		ret = r_fail(r, e, "unsupported: tojson of a value nested deeper than %d levels",
			     MAX_VALUE_DEPTH);
		goto out;
	}
	if (ret == -EFBIG) {
		ret = r_fail(r, e, "string larger than %zu bytes", MAX_OUTPUT);
		goto out;
	}
	if (ret < 0)
		goto out;
	for (i = 0; !ret && i < sb.len; i++) {
		switch (sb.buf[i]) {
		case '<': ret = sbuf_addstr(&esc, "\\u003c"); break;
		case '>': ret = sbuf_addstr(&esc, "\\u003e"); break;
		case '&': ret = sbuf_addstr(&esc, "\\u0026"); break;
		case '\'': ret = sbuf_addstr(&esc, "\\u0027"); break;
		default: ret = sbuf_addch(&esc, sb.buf[i]); break;
		}
	}
	if (!ret)
		ret = v_from_sbuf(r, out, &esc);
out:
	sbuf_release(&sb);
	sbuf_release(&ind);
	sbuf_release(&esc);
	return ret;
}

/* soft_str(): str values as they are, anything else through str(). */
static int soft_str(struct render *r, const struct val *v, struct sbuf *sb)
{
	if (v->k == V_JSON && json_is_string(v->j))
		return sbuf_add(sb, json_string_value(v->j),
				json_string_length(v->j));
	return py_str(r, sb, v);
}

static int f_case(struct render *r, const struct expr *e, const struct val *v,
		  bool upper, struct val *out)
{
	struct sbuf in = SBUF_INIT, sb = SBUF_INIT;
	size_t i = 0;
	int ret = soft_str(r, v, &in);

	while (!ret && i < in.len) {
		uint32_t cp, m[3];
		size_t k = u8_dec(in.buf + i, in.len - i, &cp);
		char buf[12];
		int n, j;
		size_t o = 0;

		if (!k) {
			ret = r_fail(r, e, "%s", "invalid UTF-8 in a value");
			break;
		}
		i += k;
		if (cp < 0x80) {
			if (upper && cp >= 'a' && cp <= 'z')
				cp -= 32;
			else if (!upper && cp >= 'A' && cp <= 'Z')
				cp += 32;
			ret = sbuf_addch(&sb, (char)cp);
			continue;
		}
		if (!upper && cp == 0x3A3) {
			ret = r_fail(r, e, "%s", "unsupported: lower() of a string with U+03A3 (final sigma)");
			break;
		}
		n = upper ? case_map(upper_runs, ARRAY_SIZE(upper_runs), upper_multi,
				     ARRAY_SIZE(upper_multi), cp, m)
			  : case_map(lower_runs, ARRAY_SIZE(lower_runs), lower_multi,
				     ARRAY_SIZE(lower_multi), cp, m);
		for (j = 0; j < n; j++)
			o += u8_enc(buf + o, m[j]);
		ret = sbuf_add(&sb, buf, o);
	}
	if (!ret)
		ret = v_from_sbuf(r, out, &sb);
	sbuf_release(&in);
	sbuf_release(&sb);
	return ret;
}

static bool cp_in(const uint32_t *set, size_t n, uint32_t cp)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (set[i] == cp)
			return true;
	return false;
}

/* str.strip(chars) */
static int f_trim(struct render *r, const struct expr *e, const struct val *v,
		  const struct val *chars, struct val *out)
{
	struct sbuf in = SBUF_INIT, sb = SBUF_INIT;
	uint32_t *set = NULL;
	size_t nset = 0, a, b;
	bool ws = true;
	int ret;

	if (e->args[0] && !(chars->k == V_JSON && json_is_null(chars->j))) {
		const char *s;
		size_t n, i;

		if (chars->k != V_JSON || !json_is_string(chars->j))
			return r_fail(r, e, "%s", "strip arg must be None or str");
		ws = false;
		s = json_string_value(chars->j);
		n = json_string_length(chars->j);
		set = malloc((n + 1) * sizeof(*set));
		if (!set)
			return -ENOMEM;
		for (i = 0; i < n;) {
			size_t k = u8_dec(s + i, n - i, &set[nset]);

			if (!k) {
				free(set);
				return r_fail(r, e, "%s", "invalid UTF-8 in a value");
			}
			i += k;
			nset++;
		}
	}
	ret = soft_str(r, v, &in);
	if (ret < 0)
		goto out;
	a = 0;
	b = in.len;
	while (a < b) {
		uint32_t cp;
		size_t k = u8_dec(in.buf + a, b - a, &cp);

		if (!k || !(ws ? py_isspace(cp) : cp_in(set, nset, cp)))
			break;
		a += k;
	}
	while (b > a) {
		size_t k = b - 1;
		uint32_t cp;

		while (k > a && ((unsigned char)in.buf[k] & 0xC0) == 0x80)
			k--;
		if (!u8_dec(in.buf + k, b - k, &cp) ||
		    !(ws ? py_isspace(cp) : cp_in(set, nset, cp)))
			break;
		b = k;
	}
	ret = sbuf_add(&sb, in.buf + a, b - a);
	if (!ret)
		ret = v_from_sbuf(r, out, &sb);
out:
	free(set);
	sbuf_release(&in);
	sbuf_release(&sb);
	return ret;
}

static int f_join(struct render *r, const struct expr *e, const struct val *v,
		  const struct val *sep, struct val *out)
{
	struct sbuf sb = SBUF_INIT, ssep = SBUF_INIT;
	struct iter it;
	json_t *item = NULL;
	bool first = true;
	int ret;

	ret = py_str(r, &ssep, sep);
	if (ret < 0)
		goto out;
	ret = iter_init(r, v, &it);
	if (ret < 0)
		goto out;
	while ((ret = iter_next(r, &it, &item)) > 0) {
		struct val iv = { 0 };

		v_json(&iv, item);
		ret = 0;
		if (!first)
			ret = sbuf_add(&sb, ssep.buf, ssep.len);
		first = false;
		if (!ret)
			ret = py_str(r, &sb, &iv);
		v_release(&iv);
		if (!ret && sb.len > MAX_OUTPUT)
			ret = r_fail(r, e, "string larger than %zu bytes", MAX_OUTPUT);
		if (ret < 0)
			goto out;
	}
	if (!ret)
		ret = v_from_sbuf(r, out, &sb);
out:
	sbuf_release(&sb);
	sbuf_release(&ssep);
	return ret;
}

static int f_length(struct render *r, const struct expr *e,
		    const struct val *v, struct val *out)
{
	size_t n = 0;

	if (v->k == V_LOOP)
		return r_fail(r, e, "%s", "unsupported: the loop object as a value");
	if (v->k == V_JSON) {
		switch (json_typeof(v->j)) {
		case JSON_ARRAY: n = json_array_size(v->j); break;
		case JSON_OBJECT: n = json_object_size(v->j); break;
		case JSON_STRING:
			n = utf8_count(json_string_value(v->j),
				       json_string_length(v->j));
			break;
		default:
			return r_fail(r, e, "object of type '%s' has no len()",
				      type_name(v));
		}
	}
	return v_json(out, json_integer((json_int_t)n));
}

static int apply_filter(struct render *r, const struct expr *e,
			struct val *v, struct val args[2], struct val *out)
{
	bool b;
	int ret;

	switch ((enum filter_id)e->op) {
	case F_DEFAULT:
		if (v->k != V_UNDEF) {
			if (!e->args[1])
				goto keep;
			ret = truth(r, &args[1], &b);
			if (ret < 0)
				return ret;
			if (b) {
				ret = truth(r, v, &b);
				if (ret < 0)
					return ret;
				if (b)
					goto keep;
			} else {
				goto keep;
			}
		}
		if (!e->args[0])
			return v_json(out, json_string(""));
		*out = args[0];
		args[0].k = V_UNDEF;
		return 0;
	case F_TOJSON:
		return f_tojson(r, e, v, &args[0], out);
	case F_LENGTH:
		return f_length(r, e, v, out);
	case F_JOIN:
		if (!e->args[0]) {
			struct val empty = { 0 };

			ret = v_json(&empty, json_string(""));
			if (ret < 0)
				return ret;
			ret = f_join(r, e, v, &empty, out);
			v_release(&empty);
			return ret;
		}
		return f_join(r, e, v, &args[0], out);
	case F_UPPER:
	case F_LOWER:
		return f_case(r, e, v, e->op == F_UPPER, out);
	case F_TRIM:
		return f_trim(r, e, v, &args[0], out);
	}
	return -EINVAL;
keep:
	*out = *v;
	v->k = V_UNDEF;
	return 0;
}

/*** evaluation ***/

static int lookup_name(struct render *r, const struct expr *e,
		       struct val *out)
{
	struct frame *f;
	json_t *j;
	size_t i;

	for (f = r->top; f; f = f->up) {
		int t;

		if (!strcmp(e->name, "loop")) {
			out->k = V_LOOP;
			out->j = NULL;
			out->loop = &f->loop;
			return 0;
		}
		for (t = 0; t < f->s->ntargets; t++)
			if (!strcmp(f->s->targets[t], e->name))
				return v_json(out, json_incref(f->vals[t]));
	}
	j = r->context ? json_object_get(r->context, e->name) : NULL;
	if (j)
		return v_json(out, json_incref(j));
	for (i = 0; i < ARRAY_SIZE(jinja_globals); i++)
		if (!strcmp(jinja_globals[i], e->name))
			return r_fail(r, e, "unsupported: Jinja's global '%s'",
				      e->name);
	set_undef(out, e->name, NULL);
	return 0;
}

static int eval(struct render *r, const struct expr *e, struct val *out)
{
	struct val a = { 0 }, b = { 0 }, args[2] = { { 0 }, { 0 } };
	bool t;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	if (++r->steps > MAX_STEPS)
		return r_fail(r, e, "template too expensive to render (over %ld steps)",
			      MAX_STEPS);
	r->at = e;
	switch (e->kind) {
	case E_CONST:
		return v_json(out, json_incref(e->cst));
	case E_NAME:
		return lookup_name(r, e, out);
	case E_ATTR:
		ret = eval(r, e->a, &a);
		r->at = e;
		if (!ret)
			ret = do_getattr(r, &a, e->name, out);
		break;
	case E_ITEM:
		ret = eval(r, e->a, &a);
		if (!ret)
			ret = eval(r, e->b, &b);
		r->at = e;
		if (!ret)
			ret = do_getitem(r, &a, &b, out);
		break;
	case E_ITEMS:
		return r_fail(r, e, "%s", "unsupported expression: method call");
	case E_NOT:
		ret = eval(r, e->a, &a);
		r->at = e;
		if (!ret)
			ret = truth(r, &a, &t);
		if (!ret)
			ret = v_json(out, json_boolean(!t));
		break;
	case E_AND:
	case E_OR: {
		const struct expr *c;

		/* Python: the first operand that decides, else the last */
		ret = eval(r, e->a, &a);
		for (c = e->next; !ret && c; c = c->next) {
			r->at = e;
			ret = truth(r, &a, &t);
			if (ret || t == (e->kind == E_OR))
				break;
			v_release(&a);
			ret = eval(r, c->a, &a);
		}
		if (!ret) {
			*out = a;
			return 0;
		}
		break;
	}
	case E_CMP: {
		const struct expr *c;
		bool res = true;

		ret = eval(r, e->a, &a);
		for (c = e->next; !ret && c; c = c->next) {
			ret = eval(r, c->a, &b);
			r->at = c;
			if (!ret)
				ret = py_eq(r, &a, &b, &t);
			v_release(&a);
			a = b;
			memset(&b, 0, sizeof(b));
			if (!ret && t == (c->op == 1)) {
				res = false;	/* Python's chain stops here */
				break;
			}
		}
		if (!ret)
			ret = v_json(out, json_boolean(res));
		break;
	}
	case E_FILTER:
		ret = eval(r, e->a, &a);
		if (!ret && e->args[0])
			ret = eval(r, e->args[0], &args[0]);
		if (!ret && e->args[1])
			ret = eval(r, e->args[1], &args[1]);
		r->at = e;
		if (!ret)
			ret = apply_filter(r, e, &a, args, out);
		break;
	case E_TEST:
		ret = eval(r, e->a, &a);
		if (!ret) {
			t = (a.k != V_UNDEF) != (e->op == 1);
			ret = v_json(out, json_boolean(t != e->negated));
		}
		break;
	}
	v_release(&a);
	v_release(&b);
	v_release(&args[0]);
	v_release(&args[1]);
	return ret;
}

static int exec_body(struct render *r, const struct stmt *s);

static int check_output(struct render *r, const struct stmt *s)
{
	if (r->out->len - r->start > MAX_OUTPUT)
		return ferr_set_at(r->err, -EINVAL, s->line, 0,
				   "output larger than %zu bytes", MAX_OUTPUT);
	return 0;
}

/* Bind one item to the loop variables (unpacking when there are several). */
static int bind_targets(struct render *r, const struct stmt *s,
			struct frame *f, json_t *item)
{
	int t;

	for (t = 0; t < s->ntargets; t++) {
		json_decref(f->vals[t]);
		f->vals[t] = NULL;
	}
	if (s->ntargets == 1) {
		f->vals[0] = item;
		return 0;
	}
	{
		struct val v = { 0 };
		struct iter it;
		json_t *x;
		int ret;

		v_json(&v, item);
		r->at = s->e;
		if (json_is_array(item) || json_is_object(item) ||
		    json_is_string(item)) {
			ret = iter_init(r, &v, &it);
			if (!ret && it.n != (size_t)s->ntargets)
				ret = r_fail(r, s->e, it.n > (size_t)s->ntargets
					     ? "too many values to unpack (expected %d)"
					     : "not enough values to unpack (expected %d)",
					     s->ntargets);
			for (t = 0; !ret && t < s->ntargets; t++) {
				ret = iter_next(r, &it, &x);
				if (ret > 0) {
					f->vals[t] = x;
					ret = 0;
				}
			}
		} else {
			ret = r_fail(r, s->e, "cannot unpack non-iterable %s object",
				     type_name(&v));
		}
		v_release(&v);
		return ret;
	}
}

static int exec_for(struct render *r, const struct stmt *s)
{
	struct val v = { 0 };
	struct frame f = { 0 };
	struct iter it;
	json_t *item;
	int ret, t;
	bool any = false;

	f.vals = calloc((size_t)s->ntargets, sizeof(*f.vals));
	if (!f.vals)
		return -ENOMEM;
	f.up = r->top;
	f.s = s;
	if (s->e->kind == E_ITEMS) {
		ret = eval(r, s->e->a, &v);
		if (ret < 0)
			goto out;
		r->at = s->e;
		if (v.k == V_UNDEF) {
			ret = undefined_error(r, &v);
			goto out;
		}
		if (v.k != V_JSON || !json_is_object(v.j)) {
			ret = r_fail(r, s->e, "'%s' object has no method items()",
				     type_name(&v));
			goto out;
		}
		f.loop.length = json_object_size(v.j);
		r->top = &f;
		for (it.it = json_object_iter(v.j); it.it;
		     it.it = json_object_iter_next(v.j, it.it)) {
			any = true;
			for (t = 0; t < 2; t++)
				json_decref(f.vals[t]);
			f.vals[0] = json_stringn_nocheck(json_object_iter_key(it.it),
					json_object_iter_key_len(it.it));
			f.vals[1] = json_incref(json_object_iter_value(it.it));
			ret = f.vals[0] ? exec_body(r, s->body) : -ENOMEM;
			if (ret < 0)
				break;
			f.loop.index0++;
		}
		r->top = f.up;
		if (ret < 0)
			goto out;
	} else {
		ret = eval(r, s->e, &v);
		if (!ret)
			ret = iter_init(r, &v, &it);
		if (ret < 0)
			goto out;
		f.loop.length = it.n;
		r->top = &f;
		while ((ret = iter_next(r, &it, &item)) > 0) {
			any = true;
			ret = bind_targets(r, s, &f, item);
			if (!ret)
				ret = exec_body(r, s->body);
			if (ret < 0)
				break;
			f.loop.index0++;
		}
		r->top = f.up;
		if (ret < 0)
			goto out;
	}
	if (!any)
		ret = exec_body(r, s->orelse);	/* in the outer scope */
out:
	for (t = 0; t < s->ntargets; t++)
		json_decref(f.vals[t]);
	free(f.vals);
	v_release(&v);
	return ret;
}

static int exec_body(struct render *r, const struct stmt *s)
{
	int ret = 0;

	for (; s && !ret; s = s->next) {
		struct val v = { 0 };
		bool t;

		if (++r->steps > MAX_STEPS)
			return ferr_set_at(r->err, -EINVAL, s->line, 0,
				"template too expensive to render (over %ld steps)",
				MAX_STEPS);
		switch (s->kind) {
		case S_TEXT:
			ret = sbuf_add(r->out, s->text, s->len);
			if (!ret)
				ret = check_output(r, s);
			break;
		case S_PRINT:
			ret = eval(r, s->e, &v);
			if (!ret)
				ret = py_str(r, r->out, &v);
			if (!ret)
				ret = check_output(r, s);
			v_release(&v);
			break;
		case S_IF: {
			const struct stmt *c = s;

			for (;;) {
				ret = eval(r, c->e, &v);
				if (!ret)
					ret = truth(r, &v, &t);
				v_release(&v);
				if (ret || t || !c->orelse || !c->orelse->elif)
					break;
				c = c->orelse;
			}
			if (!ret)
				ret = exec_body(r, t ? c->body : c->orelse);
			break;
		}
		case S_FOR:
			ret = exec_for(r, s);
			break;
		}
	}
	return ret;
}

int tmpl_render(const struct tmpl *t, const json_t *context, struct sbuf *out,
		struct ferr *err)
{
	struct ferr scratch = FERR_INIT;
	struct render r = { 0 };
	int ret;

	if (context && !json_is_object(context))
		return ferr_set(err, -EINVAL, "%s",
				"the template context must be a JSON object");
	r.context = context;
	r.out = out;
	r.start = out->len;
	r.err = err ? err : &scratch;
	ret = exec_body(&r, t->body);
	if (ret < 0)
		sbuf_setlen(out, r.start);
	return ret;
}
