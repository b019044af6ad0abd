/* template_lex: the template language's lexer, text to tokens (the
 * {{ }} / {% %} / {# #} tags and what is inside them); see template.h. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/template_i.h"
#include "lib/utf8.h"

/*** lexer ***/

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
		if (!tmpl_u8_dec(s + k, n - k, &cp) || !tmpl_py_isspace(cp))
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
		size_t k = tmpl_u8_dec(s + i, n - i, &cp);

		if (!k || !tmpl_py_isspace(cp))
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

/*
 * Jinja2 unescapes a literal with
 *	body.encode("ascii", "backslashreplace").decode("unicode-escape")
 * so a non-ASCII character stands for its \xhh / \uhhhh / \Uhhhhhhhh
 * spelling, which matters only right after a backslash.
 */
static int lx_string(struct lexer *lx, struct tok *tk, const char *b, size_t n)
{
	char *out = tmpl_t_alloc(lx->t, 4 * n + 1);
	size_t i = 0, o = 0;

	if (!out)
		return -ENOMEM;
	while (i < n) {
		uint32_t cp;
		size_t k;
		int digits, d;
		char c;

		if (b[i] != '\\') {
			k = tmpl_u8_dec(b + i, n - i, &cp);
			memcpy(out + o, b + i, k);
			o += k;
			i += k;
			continue;
		}
		c = b[i + 1];	/* the lexer guarantees a character follows */
		if ((unsigned char)c >= 0x80) {
			char esc[12];
			int len;

			k = tmpl_u8_dec(b + i + 1, n - i - 1, &cp);
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
				int h = i + (size_t)d < n ? utf8_hexval(b[i + (size_t)d]) : -1;

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
			o += tmpl_u8_enc(out + o, cp);
			continue;
		default:
			break;
		}
		if (c >= '0' && c <= '7') {
			cp = (uint32_t)(c - '0');
			for (d = 0; d < 2 && i < n && b[i] >= '0' && b[i] <= '7'; d++)
				cp = cp * 8 + (uint32_t)(b[i++] - '0');
			o += tmpl_u8_enc(out + o, cp);
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
			tk->str = tmpl_t_alloc(lx->t, k + 1);
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

int tmpl_lex(struct lexer *lx)
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
