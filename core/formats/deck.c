/*
 * deck: Digital DATCOM input decks.  See deck.h for the contract and
 * ../shared/datcom/CARDS.md for the rules behind it.
 */
#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/deck.h"
#include "lib/sbuf.h"

/* ---------------------------------------------------------------- memory */

/* Make room for one more element in a (ptr, nr, alloc) list. */
static int grow(void **v, size_t *alloc, size_t nr, size_t elem)
{
	size_t n;
	void *p;

	if (nr < *alloc)
		return 0;
	n = *alloc ? *alloc * 2 : 8;
	if (n > SIZE_MAX / elem)
		return -ENOMEM;
	p = realloc(*v, n * elem);
	if (!p)
		return -ENOMEM;
	*v = p;
	*alloc = n;
	return 0;
}

/* grow() for the list `v` of elements *v, counted by `nr` and `alloc`. */
#define GROW(v, nr, alloc) grow((void **)&(v), &(alloc), (nr), sizeof(*(v)))

static void var_free(struct deck_var *v)
{
	size_t i;

	if (!v)
		return;
	for (i = 0; i < v->nr; i++)
		free(v->values[i].text);
	free(v->values);
	free(v);
}

static void namelist_free(struct deck_namelist *nl)
{
	size_t i;

	if (!nl)
		return;
	for (i = 0; i < nl->nr; i++)
		var_free(nl->vars[i]);
	free(nl->vars);
	free(nl);
}

static void card_free(struct deck_card *c)
{
	if (!c)
		return;
	free(c->control);
	namelist_free(c->namelist);
	free(c);
}

static void case_free(struct deck_case *c)
{
	size_t i;

	if (!c)
		return;
	for (i = 0; i < c->nr; i++)
		card_free(c->cards[i]);
	free(c->cards);
	free(c);
}

struct deck *deck_new(void)
{
	return calloc(1, sizeof(struct deck));
}

void deck_free(struct deck *d)
{
	size_t i;

	if (!d)
		return;
	for (i = 0; i < d->nr; i++)
		case_free(d->cases[i]);
	free(d->cases);
	free(d);
}

int deck_add_case(struct deck *d, struct deck_case **out)
{
	struct deck_case *c;

	if (GROW(d->cases, d->nr, d->alloc) < 0)
		return -ENOMEM;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	d->cases[d->nr++] = c;
	if (out)
		*out = c;
	return 0;
}

static int case_push(struct deck_case *c, struct deck_card *card)
{
	if (GROW(c->cards, c->nr, c->alloc) < 0)
		return -ENOMEM;
	c->cards[c->nr++] = card;
	return 0;
}

static int nl_push(struct deck_namelist *nl, struct deck_var *v)
{
	if (GROW(nl->vars, nl->nr, nl->alloc) < 0)
		return -ENOMEM;
	nl->vars[nl->nr++] = v;
	return 0;
}

static int var_push(struct deck_var *v, const struct deck_value *val)
{
	if (GROW(v->values, v->nr, v->alloc) < 0)
		return -ENOMEM;
	v->values[v->nr++] = *val;
	return 0;
}

/* ------------------------------------------------------------ validation */

static bool is_upper_alnum(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static bool name_ok(const char *s)
{
	size_t i, n = strlen(s);

	if (n < 1 || n > DECK_NAME_MAX || !(s[0] >= 'A' && s[0] <= 'Z'))
		return false;
	for (i = 1; i < n; i++)
		if (!is_upper_alnum(s[i]))
			return false;
	return true;
}

/*
 * DATCOM reads a number (TODEC in todec.f) by adding up the digits before
 * its point, and those after it, each in a 32-bit INTEGER: a part above
 * 2147483647 overflows into another number (issue 28: 0.8327717748460195
 * read so, and a TBFUNX crash after it).  Nine digits always fit.
 */
#define DECK_PART_DIGITS 9
#define DECK_PART_MAX 2147483647ULL

static bool printable(char c)
{
	return c >= 0x20 && c <= 0x7e;
}

/* Whether DATCOM's reader adds up the digits s[0..n) of one part of a
 * number without overflowing (DECK_PART_MAX). */
static bool part_fits(const char *s, size_t n)
{
	unsigned long long v = 0;

	for (size_t i = 0; i < n; i++) {
		v = v * 10 + (unsigned)(s[i] - '0');
		if (v > DECK_PART_MAX)
			return false;
	}
	return true;
}

/*
 * A DATCOM REAL spelling its input check (CONERR's RVALUE) passes and its
 * reader (TODEC) reads: [+-](d+.d*|.d+)(E[+-]d+)?, the exponent not 0,
 * neither part of the mantissa above DECK_PART_MAX.
 */
static bool number_spelling_ok(const char *s)
{
	size_t i = 0, mant = 0, ip;

	if (s[i] == '+' || s[i] == '-')
		i++;
	ip = i;
	while (isdigit((unsigned char)s[i]))
		i++, mant++;
	if (s[i] != '.' || !part_fits(s + ip, i - ip))
		return false;
	ip = ++i;
	while (isdigit((unsigned char)s[i]))
		i++, mant++;
	if (!mant || !part_fits(s + ip, i - ip))
		return false;
	if (s[i] == 'E') {
		size_t e = 0;
		bool nonzero = false;

		i++;
		if (s[i] == '+' || s[i] == '-')
			i++;
		while (isdigit((unsigned char)s[i]))
			nonzero |= s[i] != '0', i++, e++;
		/* DATCOM's input check marks an exponent of 0 an error */
		if (!e || !nonzero)
			return false;
	}
	return s[i] == '\0';
}

static bool text_ok(const char *s)
{
	size_t i, n = strlen(s);

	if (n > DECK_VALUE_MAX - 2)
		return false;
	for (i = 0; i < n; i++)
		if (!printable(s[i]) || s[i] == '\'' || s[i] == '$')
			return false;
	return true;
}

static const char *const keywords[] = {
	"DERIV", "DAMP", "BUILD", "SAVE", "TRIM", "PART", "PLOT", "DUMP",
	"WRITE", "NAMELIST",
};

int deck_control_check(const char *s, size_t len, const char **why)
{
	const char *reason = NULL;
	size_t i, w;

	if (len == 0) {
		reason = "empty control card";
		goto out;
	}
	if (len > DECK_COLUMNS) {
		reason = "longer than 80 columns";
		goto out;
	}
	for (i = 0; i < len; i++)
		if (!printable(s[i])) {
			reason = "not printable ASCII";
			goto out;
		}
	if (s[0] == ' ') {
		reason = "column 1 is blank";
		goto out;
	}
	if (s[len - 1] == ' ') {
		reason = "trailing blank";
		goto out;
	}
	if (len >= 4 && !memcmp(s, "NACA", 4) &&
	    (len == 4 || s[4] == '-' || s[4] == ' ')) {
		if (len < 10 || !strchr("WHVF", s[5]) || s[5] == '\0' ||
		    (s[6] != '-' && s[6] != ' ') ||
		    !strchr("1456S", s[7]) || s[7] == '\0' ||
		    (s[8] != '-' && s[8] != ' ') || s[9] == ' ')
			reason = "NACA card needs `NACA-s-t-designation`: "
				 "surface W/H/V/F in column 6, series "
				 "1/4/5/6/S in column 8";
		goto out;
	}
	for (w = 0; w < len && s[w] != ' '; w++)
		;
	if (w == 6 && !memcmp(s, "CASEID", 6))
		goto out;
	if (w == 3 && !memcmp(s, "DIM", 3)) {
		if (!((len == 6 && (!memcmp(s, "DIM FT", 6) ||
				    !memcmp(s, "DIM IN", 6) ||
				    !memcmp(s, "DIM CM", 6))) ||
		      (len == 5 && !memcmp(s, "DIM M", 5))))
			reason = "DIM card must be exactly `DIM FT`, `DIM IN`, "
				 "`DIM M` or `DIM CM`";
		goto out;
	}
	if (w == 4 && !memcmp(s, "NEXT", 4)) {
		if (len != 9 || memcmp(s, "NEXT CASE", 9))
			reason = "must be exactly `NEXT CASE`";
		goto out;
	}
	for (i = 0; i < sizeof(keywords) / sizeof(keywords[0]); i++)
		if (strlen(keywords[i]) == w && !memcmp(s, keywords[i], w))
			goto out;
	reason = "unknown control card (ILLEGAL CONTROL CARD)";
out:
	if (reason && why)
		*why = reason;
	return reason ? -EINVAL : 0;
}

static bool is_next_case(const char *s, size_t len)
{
	return len == 9 && !memcmp(s, "NEXT CASE", 9);
}

/* ------------------------------------------------------------ numbers */


int deck_number_check(double v)
{
	return isfinite(v) ? 0 : -EDOM;
}

/*
 * The fewest significant digits that read back as |v| (v finite, not
 * 0): into digits (NUL-terminated, no sign or point, no zeros at the
 * end), their count returned, and *exp10 the power of ten of the first
 * (|v| = d.ddd... * 10^exp10).  printf and strtod agree on the decimal
 * point whatever the locale, and only the digits are taken from it.
 */
static int shortest_digits(double v, char digits[20], int *exp10)
{
	char tmp[64];
	const char *t;
	int p, n = 0;

	v = fabs(v);
	for (p = 0; p < 16; p++) {
		snprintf(tmp, sizeof(tmp), "%.*e", p, v);
		if (strtod(tmp, NULL) == v)
			break;
	}
	snprintf(tmp, sizeof(tmp), "%.*e", p, v);
	for (t = tmp; *t && *t != 'e'; t++)
		if (isdigit((unsigned char)*t))
			digits[n++] = *t;
	while (n > 1 && digits[n - 1] == '0')
		n--;
	digits[n] = 0;
	*exp10 = atoi(t + 1);
	return n;
}

/*
 * Whether the digits of v (shortest_digits(): nd of them, the first at
 * 10^e) written plain take at most DECK_PART_DIGITS before the point and
 * as many after it from the first that is not 0 (DATCOM's reader adds
 * each part up in a 32-bit INTEGER), and DECK_VALUE_MAX characters.
 */
static bool plain_fits(const char *digits, int nd, int e, bool neg)
{
	int frac = 0, len;

	if (e >= 0) {
		int i = e + 1;

		while (i < nd && digits[i] == '0')
			i++;
		frac = i < nd ? nd - i : 0;
		len = (e + 3 > nd + 1 ? e + 3 : nd + 1) + neg;
	} else {
		frac = nd;
		len = 1 - e + nd + neg;
	}
	return e < DECK_PART_DIGITS && frac <= DECK_PART_DIGITS &&
	       len <= DECK_VALUE_MAX;
}

int deck_format_number(double v, char *buf, size_t size)
{
	char digits[20], res[DECK_NUMBER_SIZE + 40];
	int n = deck_number_check(v), nd, e, o = 0, k;

	if (n < 0)
		return n;
	if (v == 0.0) {
		/* -0.0 too */
		n = snprintf(res, sizeof(res), "0.0");
		goto out;
	}
	nd = shortest_digits(v, digits, &e);
	if (v < 0)
		res[o++] = '-';
	/* plain: the digits around a point, zeros filling up to it */
	if (plain_fits(digits, nd, e, v < 0)) {
		if (e >= 0) {
			for (int i = 0; i <= e; i++)
				res[o++] = i < nd ? digits[i] : '0';
			res[o++] = '.';
			if (nd > e + 1)
				for (int i = e + 1; i < nd; i++)
					res[o++] = digits[i];
			else
				res[o++] = '0';
		} else {
			res[o++] = '0';
			res[o++] = '.';
			for (int i = 0; i < -e - 1; i++)
				res[o++] = '0';
			for (int i = 0; i < nd; i++)
				res[o++] = digits[i];
		}
		res[o] = 0;
		n = o;
		goto out;
	}
	/*
	 * mantissa E exponent: one digit before the point, or as many as
	 * leave DECK_PART_DIGITS after it (8327717.748460195E-7).  DATCOM's
	 * input check wants the point before the E and an exponent other
	 * than 0 (rvalue.f): plain would have fitted where it is 0.
	 */
	k = nd > DECK_PART_DIGITS + 1 ? nd - DECK_PART_DIGITS : 1;
	n = o + snprintf(res + o, sizeof(res) - (size_t)o, "%.*s.%sE%d", k,
			 digits, nd > k ? digits + k : "0", e - k + 1);
out:
	if (n < 0 || n > DECK_VALUE_MAX)
		return -ERANGE;
	if ((size_t)n >= size)
		return -ENOSPC;
	memcpy(buf, res, (size_t)n + 1);
	return n;
}

/* ------------------------------------------------------------ building */

/* Append control card `line`, known to be legal and not NEXT CASE. */
static int add_control(struct deck_case *c, const char *line)
{
	struct deck_card *card = calloc(1, sizeof(*card));

	if (!card)
		return -ENOMEM;
	card->type = DECK_CONTROL;
	card->control = strdup(line);
	if (!card->control || case_push(c, card) < 0) {
		card_free(card);
		return -ENOMEM;
	}
	return 0;
}

int deck_add_control(struct deck_case *c, const char *line)
{
	size_t len = strlen(line);

	if (deck_control_check(line, len, NULL) < 0 || is_next_case(line, len))
		return -EINVAL;
	return add_control(c, line);
}

int deck_add_caseid(struct deck_case *c, const char *text)
{
	char line[DECK_COLUMNS + 1];
	size_t n = strlen(text);

	while (n && text[n - 1] == ' ')
		n--;
	if (n > DECK_CASEID_MAX)
		return -EINVAL;
	if (n)
		snprintf(line, sizeof(line), "CASEID %.*s", (int)n, text);
	else
		strcpy(line, "CASEID");
	return deck_add_control(c, line);
}

int deck_add_namelist(struct deck_case *c, const char *name,
		      struct deck_namelist **out)
{
	struct deck_card *card;

	if (!name_ok(name))
		return -EINVAL;
	card = calloc(1, sizeof(*card));
	if (!card)
		return -ENOMEM;
	card->type = DECK_NAMELIST_CARD;
	card->namelist = calloc(1, sizeof(*card->namelist));
	if (!card->namelist || case_push(c, card) < 0) {
		card_free(card);
		return -ENOMEM;
	}
	strcpy(card->namelist->name, name);
	if (out)
		*out = card->namelist;
	return 0;
}

/* A variable without values; name_ok(name), index <= DECK_INDEX_MAX. */
static struct deck_var *var_new(const char *name, unsigned index)
{
	struct deck_var *v = calloc(1, sizeof(*v));

	if (v) {
		strcpy(v->name, name);
		v->index = index;
	}
	return v;
}

int deck_add_array(struct deck_namelist *nl, const char *name,
		   unsigned index, const double *vals, size_t n)
{
	struct deck_var *v;
	size_t i;
	int ret;

	if (!name_ok(name) || index > DECK_INDEX_MAX || n == 0)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		ret = deck_number_check(vals[i]);
		if (ret < 0)
			return ret;
	}
	v = var_new(name, index);
	if (!v)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		struct deck_value val = { DECK_NUMBER, vals[i], false, 1, NULL };

		if (var_push(v, &val) < 0)
			goto nomem;
	}
	if (nl_push(nl, v) < 0)
		goto nomem;
	return 0;
nomem:
	var_free(v);
	return -ENOMEM;
}

int deck_add_number(struct deck_namelist *nl, const char *name, double v)
{
	return deck_add_array(nl, name, 0, &v, 1);
}

static int add_single(struct deck_namelist *nl, const char *name,
		      struct deck_value *val)
{
	struct deck_var *v;

	if (!name_ok(name))
		return -EINVAL;
	v = var_new(name, 0);
	if (!v)
		return -ENOMEM;
	if (var_push(v, val) < 0 || nl_push(nl, v) < 0) {
		var_free(v);
		return -ENOMEM;
	}
	return 0;
}

int deck_add_logical(struct deck_namelist *nl, const char *name, bool b)
{
	struct deck_value val = { DECK_LOGICAL, 0.0, b, 1, NULL };

	return add_single(nl, name, &val);
}

int deck_add_text(struct deck_namelist *nl, const char *name,
		  const char *text)
{
	struct deck_value val = { DECK_TEXT, 0.0, false, 1, NULL };
	int ret;

	if (!text_ok(text))
		return -EINVAL;
	val.text = strdup(text);
	if (!val.text)
		return -ENOMEM;
	ret = add_single(nl, name, &val);
	if (ret < 0)
		free(val.text);
	return ret;
}

static struct deck_var *var_dup(const struct deck_var *src)
{
	struct deck_var *v = calloc(1, sizeof(*v));
	size_t i;

	if (!v)
		return NULL;
	memcpy(v->name, src->name, sizeof(v->name));
	v->index = src->index;
	for (i = 0; i < src->nr; i++) {
		struct deck_value val = src->values[i];

		if (val.text && !(val.text = strdup(val.text)))
			goto fail;
		if (var_push(v, &val) < 0) {
			free(val.text);
			goto fail;
		}
	}
	return v;
fail:
	var_free(v);
	return NULL;
}

int deck_copy_var(struct deck_namelist *dst, const struct deck_var *src)
{
	struct deck_var *v = var_dup(src);

	if (!v || nl_push(dst, v) < 0) {
		var_free(v);
		return -ENOMEM;
	}
	return 0;
}

int deck_copy_card(struct deck_case *dst, const struct deck_card *src)
{
	struct deck_namelist *nl = NULL;
	size_t i;
	int ret;

	if (src->type == DECK_CONTROL)
		return deck_add_control(dst, src->control);
	ret = deck_add_namelist(dst, src->namelist->name, &nl);
	for (i = 0; !ret && i < src->namelist->nr; i++)
		ret = deck_copy_var(nl, src->namelist->vars[i]);
	if (ret < 0 && nl) {
		/* Take back the half-copied card: nothing added on failure. */
		card_free(dst->cards[--dst->nr]);
	}
	return ret;
}

void deck_remove_var(struct deck_namelist *nl, size_t i)
{
	if (i >= nl->nr)
		return;
	var_free(nl->vars[i]);
	memmove(nl->vars + i, nl->vars + i + 1,
		(nl->nr - i - 1) * sizeof(*nl->vars));
	nl->nr--;
}

struct deck_namelist *deck_find_namelist(const struct deck_case *c,
					 const char *name, size_t *pos)
{
	size_t i;

	for (i = pos ? *pos : 0; i < c->nr; i++) {
		const struct deck_card *card = c->cards[i];

		if (card->type == DECK_NAMELIST_CARD &&
		    !strcmp(card->namelist->name, name)) {
			if (pos)
				*pos = i + 1;
			return card->namelist;
		}
	}
	if (pos)
		*pos = c->nr;
	return NULL;
}

struct deck_var *deck_find_var(const struct deck_namelist *nl,
			       const char *name)
{
	size_t i;

	for (i = 0; i < nl->nr; i++)
		if (!strcmp(nl->vars[i]->name, name))
			return nl->vars[i];
	return NULL;
}

int deck_get_numbers(const struct deck_case *c, const char *nlname,
		     const char *name, double *out, size_t max, size_t *n)
{
	const struct deck_namelist *nl;
	size_t pos = 0, i, j, high = 0;
	bool found = false;

	for (i = 0; i < max; i++)
		out[i] = NAN;
	while ((nl = deck_find_namelist(c, nlname, &pos))) {
		for (i = 0; i < nl->nr; i++) {
			const struct deck_var *v = nl->vars[i];
			size_t at = v->index ? v->index : 1;

			if (strcmp(v->name, name))
				continue;
			found = true;
			for (j = 0; j < v->nr; j++) {
				const struct deck_value *val = &v->values[j];
				unsigned r;

				if (val->type != DECK_NUMBER)
					return -EINVAL;
				for (r = 0; r < val->repeat; r++, at++) {
					if (at <= max)
						out[at - 1] = val->number;
					if (at > high)
						high = at;
				}
			}
		}
	}
	if (!found)
		return -ENOENT;
	if (n)
		*n = high;
	return 0;
}

/* ------------------------------------------------------------ writing */

/* The spelling of one value, repeat prefix included, into buf. */
static int value_spell(const struct deck_value *val, char *buf, size_t size)
{
	char num[DECK_VALUE_MAX + 16];
	const char *body;
	int n;

	if (val->repeat < 1 || val->repeat > DECK_REPEAT_MAX)
		return -EINVAL;
	switch (val->type) {
	case DECK_NUMBER:
		if (val->text) {
			if (!number_spelling_ok(val->text))
				return -EINVAL;
			body = val->text;
		} else {
			n = deck_format_number(val->number, num, sizeof(num));
			if (n < 0)
				return n;
			body = num;
		}
		break;
	case DECK_LOGICAL:
		body = val->logical ? ".TRUE." : ".FALSE.";
		break;
	case DECK_TEXT:
		if (!val->text || !text_ok(val->text))
			return -EINVAL;
		snprintf(num, sizeof(num), "'%s'", val->text);
		body = num;
		break;
	default:
		return -EINVAL;
	}
	if (val->repeat > 1)
		n = snprintf(buf, size, "%u*%s", val->repeat, body);
	else
		n = snprintf(buf, size, "%s", body);
	if (n < 0 || (size_t)n >= size || n > DECK_VALUE_MAX)
		return -EINVAL;
	return n;
}

struct line {
	char buf[DECK_COLUMNS + 1];
	size_t len;
};

static int flush_line(struct sbuf *out, struct line *l)
{
	int ret = sbuf_add(out, l->buf, l->len);

	if (!ret)
		ret = sbuf_addch(out, '\n');
	l->len = 0;
	return ret;
}

static int write_namelist(const struct deck_namelist *nl, struct sbuf *out)
{
	struct line l;
	size_t i, j, nitems = 0, item = 0;
	int ret;

	if (!name_ok(nl->name))
		return -EINVAL;
	for (i = 0; i < nl->nr; i++)
		nitems += nl->vars[i]->nr;
	l.len = (size_t)snprintf(l.buf, sizeof(l.buf), " $%s", nl->name);
	if (!nitems) {
		memcpy(l.buf + l.len, " $", 3);
		l.len += 2;
		return flush_line(out, &l);
	}
	for (i = 0; i < nl->nr; i++) {
		const struct deck_var *v = nl->vars[i];

		if (!name_ok(v->name) || v->index > DECK_INDEX_MAX ||
		    v->nr == 0)
			return -EINVAL;
		for (j = 0; j < v->nr; j++, item++) {
			char tok[DECK_COLUMNS + 1], val[DECK_VALUE_MAX + 8];
			size_t tl = 0;
			int n = value_spell(&v->values[j], val, sizeof(val));

			if (n < 0)
				return n;
			if (j == 0 && v->index)
				tl = (size_t)snprintf(tok, sizeof(tok), "%s(%u)=",
						      v->name, v->index);
			else if (j == 0)
				tl = (size_t)snprintf(tok, sizeof(tok), "%s=",
						      v->name);
			if (tl + (size_t)n + 1 > DECK_COLUMNS - 2)
				return -EINVAL;
			memcpy(tok + tl, val, (size_t)n);
			tl += (size_t)n;
			tok[tl++] = item + 1 == nitems ? '$' : ',';
			/* Blank after ` $NAME`, then items; wrap after commas. */
			if (item == 0 && l.len + 1 + tl <= DECK_COLUMNS) {
				l.buf[l.len++] = ' ';
			} else if (item == 0 || l.len + tl > DECK_COLUMNS) {
				ret = flush_line(out, &l);
				if (ret < 0)
					return ret;
				memcpy(l.buf, "  ", 2);
				l.len = 2;
			}
			memcpy(l.buf + l.len, tok, tl);
			l.len += tl;
		}
	}
	return flush_line(out, &l);
}

int deck_write(const struct deck *d, struct sbuf *out)
{
	size_t i, j;
	int ret;

	for (i = 0; i < d->nr; i++) {
		const struct deck_case *c = d->cases[i];

		for (j = 0; j < c->nr; j++) {
			const struct deck_card *card = c->cards[j];

			if (card->type == DECK_CONTROL) {
				size_t len = strlen(card->control);

				if (deck_control_check(card->control, len,
						       NULL) < 0 ||
				    is_next_case(card->control, len))
					return -EINVAL;
				ret = sbuf_add(out, card->control, len);
				if (!ret)
					ret = sbuf_addch(out, '\n');
			} else if (card->type == DECK_NAMELIST_CARD) {
				ret = write_namelist(card->namelist, out);
			} else {
				ret = -EINVAL;
			}
			if (ret < 0)
				return ret;
		}
		ret = sbuf_addstr(out, "NEXT CASE\n");
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* ------------------------------------------------------------ problems */

void deck_problems_release(struct deck_problems *p)
{
	size_t i;

	if (!p)
		return;
	for (i = 0; i < p->nr; i++)
		free(p->v[i].message);
	free(p->v);
	p->v = NULL;
	p->nr = p->alloc = 0;
}

size_t deck_problems_count(const struct deck_problems *p,
			   enum deck_severity severity)
{
	size_t i, n = 0;

	for (i = 0; p && i < p->nr; i++)
		if (p->v[i].severity >= severity)
			n++;
	return n;
}

/* ------------------------------------------------------------ parsing */

enum nl_state {
	ST_START,	/* after ` $NAME`: a variable name or `$` */
	ST_EQUALS,	/* after `NAME=`: a value */
	ST_VALUE,	/* after a value: `,` or `$` */
	ST_COMMA,	/* after `,`: a value, a variable name or `$` */
};

struct parser {
	struct deck *d;
	struct deck_problems *probs;
	locale_t loc;
	struct deck_case *cur;		/* NULL after NEXT CASE */
	struct deck_namelist *nl;	/* open namelist or NULL */
	unsigned nl_line, nl_col;
	enum nl_state st;
	struct deck_var *var;		/* variable receiving values */
	unsigned line;
	unsigned last;			/* last line holding a card */
	const char *s;			/* current line, columns 1-80 */
	size_t len;
	bool skip_bare;			/* second half of a decimal comma */
	size_t namelists;		/* so far, over all cases */
};

__attribute__((format(printf, 6, 7)))
static int problem(struct parser *p, enum deck_problem_kind kind,
		   enum deck_severity sev, unsigned line, unsigned col,
		   const char *fmt, ...)
{
	struct deck_problems *pr = p->probs;
	struct sbuf sb = SBUF_INIT;
	struct deck_problem *e;
	va_list ap;
	int ret;

	if (!pr)
		return sev == DECK_FATAL ? -EINVAL : 0;
	va_start(ap, fmt);
	ret = sbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	if (ret < 0 || GROW(pr->v, pr->nr, pr->alloc) < 0) {
		sbuf_release(&sb);
		return -ENOMEM;
	}
	e = &pr->v[pr->nr++];
	e->kind = kind;
	e->severity = sev;
	e->line = line;
	e->column = col;
	e->message = sbuf_detach(&sb, NULL);
	if (!e->message) {
		pr->nr--;
		return -ENOMEM;
	}
	return sev == DECK_FATAL ? -EINVAL : 0;
}

#define FATAL(p, col, ...) \
	problem(p, DECK_P_SYNTAX, DECK_FATAL, (p)->line, (unsigned)(col) + 1, \
		__VA_ARGS__)

static int ensure_case(struct parser *p)
{
	if (p->cur)
		return 0;
	if (p->d->nr >= DECK_MAX_CASES)
		return FATAL(p, 0, "more than %d cases: a deck holds at most %d",
			     DECK_MAX_CASES, DECK_MAX_CASES);
	return deck_add_case(p->d, &p->cur);
}

/* End the open namelist; `how` says why when it was not closed by `$`. */
static int close_namelist(struct parser *p, const char *how)
{
	int ret = 0;

	if (!p->nl)
		return 0;
	/* A variable interrupted before its first value has nothing to keep. */
	if (p->var && p->var->nr == 0)
		deck_remove_var(p->nl, p->nl->nr - 1);
	if (how)
		ret = problem(p, DECK_P_UNCLOSED_NAMELIST, DECK_ERROR,
			      p->nl_line, p->nl_col,
			      "namelist %s is never closed with `$` (%s); "
			      "DATCOM crashes or misreads the cards after it",
			      p->nl->name, how);
	p->nl = NULL;
	p->var = NULL;
	return ret;
}

static int skip_blanks(struct parser *p, size_t i)
{
	while (i < p->len && p->s[i] == ' ')
		i++;
	return (int)i;
}

/* An identifier [A-Za-z][A-Za-z0-9]* at i; its end. */
static size_t ident_end(struct parser *p, size_t i)
{
	while (i < p->len && isalnum((unsigned char)p->s[i]))
		i++;
	return i;
}

/* Copy an identifier upper-cased, reporting lower case and length. */
static int take_name(struct parser *p, size_t i, size_t e, char *name)
{
	size_t k;
	bool lower = false;
	int ret;

	if (e - i > DECK_NAME_MAX)
		return FATAL(p, i, "name `%.*s` is longer than %d characters",
			     (int)(e - i), p->s + i, DECK_NAME_MAX);
	for (k = i; k < e; k++) {
		char c = p->s[k];

		if (c >= 'a' && c <= 'z') {
			lower = true;
			c = (char)(c - 'a' + 'A');
		}
		name[k - i] = c;
	}
	name[e - i] = '\0';
	if (lower) {
		ret = problem(p, DECK_P_NAME, DECK_ERROR, p->line,
			      (unsigned)i + 1,
			      "name `%.*s` has lower-case letters: DATCOM "
			      "names are upper case", (int)(e - i), p->s + i);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* `NAME[(i)]=` at i (identifier ends at e); returns the index past `=`. */
static int parse_var(struct parser *p, size_t i, size_t e)
{
	char name[DECK_NAME_MAX + 1];
	unsigned long index = 0;
	struct deck_var *v;
	int ret;
	size_t k;

	ret = take_name(p, i, e, name);
	if (ret < 0)
		return ret;
	k = (size_t)skip_blanks(p, e);
	if (k < p->len && p->s[k] == '(') {
		size_t d;

		k = (size_t)skip_blanks(p, k + 1);
		for (d = k; d < p->len && isdigit((unsigned char)p->s[d]); d++)
			if (index <= DECK_INDEX_MAX)
				index = index * 10 + (unsigned)(p->s[d] - '0');
		if (d == k || index < 1 || index > DECK_INDEX_MAX)
			return FATAL(p, k, "index of %s must be 1 to %d", name,
				     DECK_INDEX_MAX);
		k = (size_t)skip_blanks(p, d);
		if (k >= p->len || p->s[k] != ')')
			return FATAL(p, k, "`)` expected after the index of %s",
				     name);
		k = (size_t)skip_blanks(p, k + 1);
	}
	if (k >= p->len || p->s[k] != '=')
		return FATAL(p, k, "`=` expected after %s", name);
	if (p->var && p->var->nr == 0)
		return FATAL(p, i, "%s has no value", p->var->name);
	v = var_new(name, (unsigned)index);
	if (!v || nl_push(p->nl, v) < 0) {
		var_free(v);
		return -ENOMEM;
	}
	p->var = v;
	p->st = ST_EQUALS;
	return (int)k + 1;
}

static int push_value(struct parser *p, struct deck_value *val)
{
	if (var_push(p->var, val) < 0) {
		free(val->text);
		return -ENOMEM;
	}
	p->st = ST_VALUE;
	return 0;
}

static bool value_end(struct parser *p, size_t i)
{
	return i >= p->len || strchr(" ,$!", p->s[i]);
}

/* A number (with optional `r*`) at i; returns the index after it. */
/* Whether the exponent digits s[0..n) are all zeros. */
static bool zero_exponent(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] != '0')
			return false;
	return true;
}

static int parse_number(struct parser *p, size_t i)
{
	struct deck_value val = { DECK_NUMBER, 0.0, false, 1, NULL };
	char norm[DECK_VALUE_MAX + 8];
	size_t start = i, k, mant = 0, ip, il, fp = 0, fl = 0;
	size_t ep = 0, el = 0;
	bool dot = false, has_exp = false, misread;
	char sign = 0, esign = 0, elet = 0;
	int ret, n;

	/* Repeat count: digits then `*`. */
	for (k = i; k < p->len && isdigit((unsigned char)p->s[k]); k++)
		;
	if (k > i && k < p->len && p->s[k] == '*') {
		unsigned long r = 0;
		size_t d;

		for (d = i; d < k; d++)
			if (r <= DECK_REPEAT_MAX)
				r = r * 10 + (unsigned)(p->s[d] - '0');
		if (r < 1 || r > DECK_REPEAT_MAX)
			return FATAL(p, i, "repeat count must be 1 to %d",
				     DECK_REPEAT_MAX);
		val.repeat = (unsigned)r;
		i = k + 1;
	}
	k = i;
	if (k < p->len && (p->s[k] == '+' || p->s[k] == '-'))
		sign = p->s[k++];
	ip = k;
	while (k < p->len && isdigit((unsigned char)p->s[k]))
		k++;
	il = k - ip;
	if (k < p->len && p->s[k] == '.') {
		dot = true;
		fp = ++k;
		while (k < p->len && isdigit((unsigned char)p->s[k]))
			k++;
		fl = k - fp;
	}
	mant = il + fl;
	if (!mant)
		return FATAL(p, start, "a number or logical value expected");
	if (k < p->len && strchr("EeDd", p->s[k])) {
		has_exp = true;
		elet = p->s[k++];
		if (k < p->len && (p->s[k] == '+' || p->s[k] == '-'))
			esign = p->s[k++];
		ep = k;
		while (k < p->len && isdigit((unsigned char)p->s[k]))
			k++;
		el = k - ep;
		if (!el)
			return FATAL(p, start, "exponent without digits in "
				     "`%.*s`", (int)(k - start), p->s + start);
	}
	if (!value_end(p, k))
		return FATAL(p, k, "malformed number: `%c` after `%.*s`",
			     p->s[k], (int)(k - start), p->s + start);
	if (has_exp && elet != 'E') {
		ret = problem(p, DECK_P_LOWER_EXPONENT, DECK_ERROR, p->line,
			      (unsigned)start + 1,
			      elet == 'e' ? "lower-case exponent in `%.*s`: "
			      "DATCOM stops the whole job; write `E`"
			      : "`D` exponent in `%.*s`: write a REAL with `E`",
			      (int)(k - start), p->s + start);
		if (ret < 0)
			return ret;
	}
	if (!dot && !has_exp && p->skip_bare) {
		/* second half of a decimal comma, reported with the first */
		p->skip_bare = false;
	} else if (!dot && !has_exp) {
		/* `0,5489`: two bare integers glued by a comma. */
		size_t d = k + 1;

		while (d < p->len && isdigit((unsigned char)p->s[d]))
			d++;
		if (k + 1 < p->len && p->s[k] == ',' && d > k + 1 &&
		    value_end(p, d) && !sign && val.repeat == 1) {
			p->skip_bare = true;
			ret = problem(p, DECK_P_DECIMAL_COMMA, DECK_ERROR,
				      p->line, (unsigned)start + 1,
				      "`%.*s` looks like a number with a "
				      "decimal comma: DATCOM reads two values; "
				      "the decimal point is `.`",
				      (int)(d - start), p->s + start);
		} else {
			ret = problem(p, DECK_P_BARE_INTEGER, DECK_ERROR,
				      p->line, (unsigned)start + 1,
				      "bare integer `%.*s`: every DATCOM "
				      "number is REAL, write `%.*s.0`",
				      (int)(k - start), p->s + start,
				      (int)(k - start), p->s + start);
		}
		if (ret < 0)
			return ret;
	}
	if (has_exp && (!dot || zero_exponent(p->s + ep, el))) {
		ret = problem(p, DECK_P_EXPONENT, DECK_ERROR, p->line,
			      (unsigned)start + 1,
			      !dot ? "no `.` before the exponent in `%.*s`: "
			      "DATCOM reads it but marks the card ** ERROR ** "
			      "(write a REAL such as `1.5E3`)"
			      : "exponent 0 in `%.*s`: DATCOM reads it but marks "
			      "the card ** ERROR ** (write it without the "
			      "exponent)", (int)(k - start), p->s + start);
		if (ret < 0)
			return ret;
	}
	/* an exponent of 0 goes: DATCOM's input check refuses it */
	if (has_exp && zero_exponent(p->s + ep, el))
		has_exp = false, esign = 0, el = 0;
	/* digits DATCOM's reader overflows on: the value is kept, written
	 * again in a form it reads (text NULL: deck_format_number()) */
	misread = !part_fits(p->s + ip, il) || !part_fits(p->s + fp, fl);
	if (misread) {
		ret = problem(p, DECK_P_DIGITS, DECK_ERROR, p->line,
			      (unsigned)start + 1,
			      "`%.*s` has more digits %s its point than DATCOM's "
			      "reader adds up (it overflows a 32-bit integer, "
			      "above 2147483647, and reads another number)",
			      (int)(k - start), p->s + start,
			      !part_fits(p->s + ip, il) ? "before" : "after");
		if (ret < 0)
			return ret;
	}
	/* Respell legally: a `.` always, `E` exponent. */
	n = snprintf(norm, sizeof(norm), "%s%.*s.%.*s%s%s%s%.*s",
		     sign == '-' ? "-" : sign == '+' ? "+" : "",
		     (int)il, p->s + ip,
		     (int)(dot ? fl : (il ? 1 : 0)), dot ? p->s + fp : "0",
		     has_exp ? "E" : "",
		     esign == '-' ? "-" : "", esign == '+' ? "+" : "",
		     (int)el, p->s + ep);
	if (n < 0 || (size_t)n >= sizeof(norm) ||
	    (size_t)n + (val.repeat > 1 ? 4 : 0) > DECK_VALUE_MAX)
		return FATAL(p, start, "number `%.*s` is too long",
			     (int)(k - start), p->s + start);
	errno = 0;
	val.number = strtod_l(norm, NULL, p->loc);
	if (!isfinite(val.number) || fabs(val.number) > FLT_MAX ||
	    (val.number != 0 && fabs(val.number) < FLT_MIN) ||
	    (val.number == 0 && errno == ERANGE)) {
		ret = problem(p, DECK_P_RANGE, DECK_ERROR, p->line,
			      (unsigned)start + 1,
			      "`%.*s` is beyond the range of a Fortran REAL",
			      (int)(k - start), p->s + start);
		if (ret < 0)
			return ret;
	}
	if (!misread) {
		val.text = strdup(norm);
		if (!val.text)
			return -ENOMEM;
	} else if (deck_number_check(val.number) < 0) {
		/* beyond a double: DECK_P_RANGE said so; its largest */
		val.number = val.number > 0 ? DBL_MAX : -DBL_MAX;
	}
	ret = push_value(p, &val);
	return ret < 0 ? ret : (int)k;
}

/* `.TRUE.`, `.FALSE.` and the spellings Fortran also takes. */
static int parse_logical(struct parser *p, size_t i, size_t e)
{
	struct deck_value val = { DECK_LOGICAL, 0.0, false, 1, NULL };
	char w[8];
	size_t k, n = 0;
	int ret;

	for (k = i; k < e && n < sizeof(w) - 1; k++)
		if (p->s[k] != '.')
			w[n++] = (char)toupper((unsigned char)p->s[k]);
	w[n] = '\0';
	if (!strcmp(w, "TRUE") || !strcmp(w, "T"))
		val.logical = true;
	else if (strcmp(w, "FALSE") && strcmp(w, "F"))
		return FATAL(p, i, "unknown value `%.*s`", (int)(e - i),
			     p->s + i);
	if (!((e - i == 6 && !memcmp(p->s + i, ".TRUE.", 6)) ||
	      (e - i == 7 && !memcmp(p->s + i, ".FALSE.", 7)))) {
		ret = problem(p, DECK_P_LOGICAL, DECK_ERROR, p->line,
			      (unsigned)i + 1,
			      "logical `%.*s`: write .TRUE. or .FALSE.",
			      (int)(e - i), p->s + i);
		if (ret < 0)
			return ret;
	}
	ret = push_value(p, &val);
	return ret < 0 ? ret : (int)e;
}

/* Namelist text of the current line from column i+1. */
static int parse_content(struct parser *p, size_t i)
{
	int ret;

	for (;;) {
		char c;
		size_t e;

		i = (size_t)skip_blanks(p, i);
		if (i >= p->len)
			return 0;
		c = p->s[i];
		if (c == '$') {
			if (p->st == ST_EQUALS)
				return FATAL(p, i, "%s has no value",
					     p->var->name);
			ret = close_namelist(p, NULL);
			if (ret < 0)
				return ret;
			i = (size_t)skip_blanks(p, i + 1);
			if (i < p->len)
				return problem(p, DECK_P_AFTER_END, DECK_ERROR,
					       p->line, (unsigned)i + 1,
					       "text after the closing `$` "
					       "is ignored");
			return 0;
		}
		if (c == '!')
			return problem(p, DECK_P_COMMENT, DECK_ERROR, p->line,
				       (unsigned)i + 1,
				       "inline `!` comment (DATCOM+ only): "
				       "DATCOM rejects it");
		if (c == ',') {
			if (p->st != ST_VALUE)
				return FATAL(p, i, "empty value before `,`");
			p->st = ST_COMMA;
			p->skip_bare = p->skip_bare && i + 1 < p->len &&
				       isdigit((unsigned char)p->s[i + 1]);
			i++;
			continue;
		}
		if (p->st == ST_VALUE) {
			ret = problem(p, DECK_P_SEPARATOR, DECK_ERROR, p->line,
				      (unsigned)i + 1,
				      "`,` missing between values");
			if (ret < 0)
				return ret;
			p->st = ST_COMMA;
		}
		p->skip_bare = p->skip_bare && p->st == ST_COMMA &&
			       i > 0 && p->s[i - 1] == ',';
		if (isalpha((unsigned char)c)) {
			size_t k;

			e = ident_end(p, i);
			k = (size_t)skip_blanks(p, e);
			if (k < p->len && (p->s[k] == '=' || p->s[k] == '(')) {
				if (p->st == ST_EQUALS)
					return FATAL(p, i, "%s has no value",
						     p->var->name);
				ret = parse_var(p, i, e);
				if (ret < 0)
					return ret;
				i = (size_t)ret;
				continue;
			}
			if (p->st == ST_START)
				return FATAL(p, i, "variable name expected");
			if (value_end(p, e) && (e - i == 1) &&
			    (toupper((unsigned char)c) == 'T' ||
			     toupper((unsigned char)c) == 'F')) {
				ret = parse_logical(p, i, e);
				if (ret < 0)
					return ret;
				i = (size_t)ret;
				continue;
			}
			return FATAL(p, i, "`=` expected after `%.*s`",
				     (int)(e - i), p->s + i);
		}
		if (p->st == ST_START)
			return FATAL(p, i, "variable name expected");
		if (c == '.' && i + 1 < p->len &&
		    isalpha((unsigned char)p->s[i + 1])) {
			e = ident_end(p, i + 1);
			if (e >= p->len || p->s[e] != '.' ||
			    !value_end(p, e + 1))
				return FATAL(p, i, "unknown value");
			ret = parse_logical(p, i, e + 1);
		} else if (c == '\'') {
			struct deck_value val = { DECK_TEXT, 0.0, false, 1,
						  NULL };
			const char *q = memchr(p->s + i + 1, '\'',
					       p->len - i - 1);

			if (!q || memchr(p->s + i + 1, '$',
					 (size_t)(q - p->s) - i - 1))
				return FATAL(p, i, "text not closed by `'` on "
					     "this card");
			e = (size_t)(q - p->s);
			if (e - i + 1 > DECK_VALUE_MAX)
				return FATAL(p, i, "text is too long");
			if (!value_end(p, e + 1))
				return FATAL(p, e + 1, "`,` expected");
			val.text = strndup(p->s + i + 1, e - i - 1);
			if (!val.text)
				return -ENOMEM;
			ret = push_value(p, &val);
			if (ret >= 0)
				ret = (int)e + 1;
		} else if (isdigit((unsigned char)c) || strchr("+-.", c)) {
			ret = parse_number(p, i);
		} else {
			return FATAL(p, i, "unexpected character `%c`", c);
		}
		if (ret < 0)
			return ret;
		i = (size_t)ret;
	}
}

/* ` $NAME ...` (or `$NAME` in column 1): name starts at i. */
static int start_namelist(struct parser *p, size_t i, unsigned col)
{
	char name[DECK_NAME_MAX + 1];
	struct deck_namelist *nl;
	size_t e = ident_end(p, i);
	int ret;

	ret = close_namelist(p, "a new namelist starts");
	if (ret < 0)
		return ret;
	if (e == i || !isalpha((unsigned char)p->s[i]))
		return FATAL(p, i, "namelist name expected after `$`");
	ret = take_name(p, i, e, name);
	if (!ret && ++p->namelists > DECK_MAX_NAMELISTS)
		ret = FATAL(p, i, "more than %d namelists: a deck holds at most %d",
			    DECK_MAX_NAMELISTS, DECK_MAX_NAMELISTS);
	if (!ret)
		ret = ensure_case(p);
	if (!ret)
		ret = deck_add_namelist(p->cur, name, &nl);
	if (ret < 0)
		return ret;
	p->cur->cards[p->cur->nr - 1]->line = p->line;
	p->nl = nl;
	p->nl_line = p->line;
	p->nl_col = col;
	p->var = NULL;
	p->st = ST_START;
	p->skip_bare = false;
	if (e < p->len && p->s[e] != ' ' && p->s[e] != '$')
		return FATAL(p, e, "blank expected after the namelist name");
	return parse_content(p, e);
}

static int control_card(struct parser *p)
{
	const char *why = NULL;
	int ret;

	ret = close_namelist(p, "a control card follows");
	if (ret < 0)
		return ret;
	if (is_next_case(p->s, p->len)) {
		ret = ensure_case(p);
		p->cur = NULL;
		return ret;
	}
	if (deck_control_check(p->s, p->len, &why) < 0)
		return problem(p, DECK_P_CONTROL_CARD, DECK_ERROR, p->line, 1,
			       "`%.*s`: %s; the card is ignored",
			       (int)(p->len > 20 ? 20 : p->len), p->s, why);
	ret = ensure_case(p);
	if (!ret)
		ret = add_control(p->cur, p->s);
	if (!ret)
		p->cur->cards[p->cur->nr - 1]->line = p->line;
	return ret;
}

/* One raw line (no newline, CR stripped). */
static int parse_line(struct parser *p, const char *raw, size_t rawlen)
{
	char buf[DECK_COLUMNS + 1];
	size_t i, n = rawlen < DECK_COLUMNS ? rawlen : DECK_COLUMNS;
	bool tab = false, bad = false;
	int ret = 0;

	for (i = 0; i < rawlen; i++) {
		char c = raw[i];

		if (c == '\t' && !tab) {
			tab = true;
			ret = problem(p, DECK_P_TAB, DECK_ERROR, p->line,
				      (unsigned)i + 1,
				      "TAB character: DATCOM reads it as an "
				      "illegal character; use blanks");
		} else if (c != '\t' && !printable(c) && !bad) {
			bad = true;
			ret = problem(p, DECK_P_CHARACTER, DECK_ERROR, p->line,
				      (unsigned)i + 1,
				      "byte 0x%02x is not printable ASCII",
				      (unsigned char)c);
		} else if (i >= DECK_COLUMNS && c != ' ' && c != '\t' &&
			   printable(c)) {
			ret = problem(p, DECK_P_LONG_LINE, DECK_ERROR, p->line,
				      DECK_COLUMNS + 1,
				      "text past column 80 is dropped by "
				      "DATCOM: `%.*s`",
				      (int)(rawlen - DECK_COLUMNS > 30 ? 30 :
					    rawlen - DECK_COLUMNS),
				      raw + DECK_COLUMNS);
			i = rawlen;	/* once per line */
		}
		if (ret < 0)
			return ret;
	}
	for (i = 0; i < n; i++)
		buf[i] = printable(raw[i]) ? raw[i] : ' ';
	while (n && buf[n - 1] == ' ')
		n--;
	buf[n] = '\0';
	p->s = buf;
	p->len = n;
	if (n == 0)
		return problem(p, DECK_P_BLANK_LINE, DECK_ERROR, p->line, 0,
			       "blank line: DATCOM flags it as an error");
	if (rawlen && (raw[0] == '*' || raw[0] == '!' || raw[0] == '#'))
		return problem(p, DECK_P_COMMENT, DECK_ERROR, p->line, 1,
			       "comment line (DATCOM+ only): DATCOM reads it "
			       "as an ILLEGAL CONTROL CARD");
	p->last = p->line;
	if (buf[0] == '$') {
		ret = problem(p, DECK_P_DOLLAR_COLUMN1, DECK_ERROR, p->line, 1,
			      "`$` in column 1 is an ILLEGAL CONTROL CARD; a "
			      "namelist starts with a blank then `$`");
		return ret < 0 ? ret : start_namelist(p, 1, 1);
	}
	if (buf[0] != ' ')
		return control_card(p);
	if (n > 1 && buf[1] == '$')
		return start_namelist(p, 2, 2);
	if (!p->nl)
		return problem(p, DECK_P_CONTINUATION, DECK_ERROR, p->line, 0,
			       "continuation card but no namelist is open");
	return parse_content(p, 1);
}

int deck_parse(const char *text, size_t len, struct deck **out,
	       struct deck_problems *problems)
{
	struct parser p;
	size_t pos = 0;
	int ret = 0;

	memset(&p, 0, sizeof(p));
	*out = NULL;
	p.probs = problems;
	p.d = deck_new();
	p.loc = newlocale(LC_ALL_MASK, "C", (locale_t)0);
	if (!p.d || !p.loc) {
		ret = -ENOMEM;
		goto out;
	}
	if (len > DECK_MAX_SIZE) {
		ret = problem(&p, DECK_P_SYNTAX, DECK_FATAL, 1, 0,
			      "the deck is %zu bytes: at most %d are read",
			      len, DECK_MAX_SIZE);
		goto out;
	}
	while (pos < len) {
		const char *nlp = memchr(text + pos, '\n', len - pos);
		size_t end = nlp ? (size_t)(nlp - text) : len;
		size_t l = end - pos;

		if (l && text[pos + l - 1] == '\r')
			l--;
		p.line++;
		ret = parse_line(&p, text + pos, l);
		if (ret < 0)
			goto out;
		pos = end + 1;
	}
	ret = close_namelist(&p, "the file ends");
	if (ret < 0)
		goto out;
	if (p.cur)
		ret = problem(&p, DECK_P_NO_NEXT_CASE, DECK_WARNING, p.last, 0,
			      "the last case does not end with NEXT CASE");
out:
	if (p.loc)
		freelocale(p.loc);
	if (ret < 0) {
		deck_free(p.d);
		return ret;
	}
	*out = p.d;
	return 0;
}
