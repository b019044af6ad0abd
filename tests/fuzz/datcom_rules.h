/*
 * An independent checker of the card rules of ../shared/datcom/CARDS.md,
 * written apart from core/deck.c so that the tests of core/datcom (unit
 * and fuzz) do not trust the writer they test:
 *
 *   LF line ends, no CR, no TAB, no blank line, every line <= 80 columns,
 *   printable ASCII;
 *   column 1 non-blank only for the control cards datcom writes (CASEID,
 *   DIM FT|IN|M|CM, DERIV DEG|RAD, DAMP, BUILD, NACA-s-t-..., NEXT CASE),
 *   never inside an open namelist;
 *   a namelist starts " $NAME " (upper case), continues on lines starting
 *   with two blanks, breaks a line only after a comma (no value split
 *   across cards), is closed by '$';
 *   items NAME[(i)]=v{,v} with every value a REAL: digits with a '.',
 *   optional upper-case exponent (so no lower-case 'e', no bare integer);
 *   the deck ends with NEXT CASE and no namelist is left open.
 *
 * rules_check() returns NULL when the deck obeys them all, else a static
 * description of the first broken rule (with the line number in *line).
 * The parsed namelists are kept in `struct rules_deck` for assertions:
 * each variable's values as the text written.
 */
#ifndef FLOWFS_DATCOM_RULES_H
#define FLOWFS_DATCOM_RULES_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RULES_MAX_VARS 256
#define RULES_MAX_VALUES 32
#define RULES_MAX_CARDS 64

struct rules_var {
	char namelist[8];
	char name[8];
	int index;		/* 0: none */
	int nvalues;
	char values[RULES_MAX_VALUES][40];
};

struct rules_deck {
	int nvars;
	struct rules_var vars[RULES_MAX_VARS];
	int ncards;		/* control cards and namelist starts, in order */
	char cards[RULES_MAX_CARDS][84];
};

static inline bool rules_real(const char *s, size_t n)
{
	size_t i = 0, d = 0;
	bool dot = false;

	if (i < n && s[i] == '-')
		i++;
	while (i < n && ((s[i] >= '0' && s[i] <= '9') || s[i] == '.')) {
		if (s[i] == '.') {
			if (dot)
				return false;
			dot = true;
		} else {
			d++;
		}
		i++;
	}
	if (!dot || !d)
		return false;
	if (i < n && s[i] == 'E') {
		size_t e = 0;

		i++;
		if (i < n && (s[i] == '-' || s[i] == '+'))
			i++;
		while (i < n && s[i] >= '0' && s[i] <= '9')
			i++, e++;
		if (!e)
			return false;
	}
	return i == n;
}

static inline bool rules_control(const char *l, size_t n)
{
	static const char *const exact[] = {
		"DIM FT", "DIM IN", "DIM M", "DIM CM", "DERIV DEG",
		"DERIV RAD", "DAMP", "BUILD", "NEXT CASE",
	};

	for (size_t i = 0; i < sizeof(exact) / sizeof(*exact); i++)
		if (n == strlen(exact[i]) && !memcmp(l, exact[i], n))
			return true;
	if (n >= 6 && !memcmp(l, "CASEID", 6))
		return n == 6 || (l[6] == ' ' && n > 7 && l[n - 1] != ' ');
	if (n > 9 && !memcmp(l, "NACA-", 5) && strchr("WHVF", l[5]) &&
	    l[6] == '-' && strchr("1456S", l[7]) && l[8] == '-' &&
	    l[n - 1] != ' ') {
		for (size_t i = 9; i < n; i++)
			if (!((l[i] >= '0' && l[i] <= '9') ||
			      (l[i] >= 'A' && l[i] <= 'Z') || l[i] == '-' ||
			      l[i] == '.' || l[i] == '=' || l[i] == ' '))
				return false;
		return true;
	}
	return false;
}

/*
 * Parse the items of one namelist's text (its lines joined, continuation
 * blanks removed), the part after " $NAME " up to the closing '$'.
 */
static inline const char *rules_items(struct rules_deck *rd, const char *nl,
			       const char *s, size_t n)
{
	size_t i = 0;
	struct rules_var *v = NULL;

	while (i < n) {
		size_t a = i;

		while (i < n && s[i] != ',' && s[i] != '=')
			i++;
		if (i < n && s[i] == '=') {
			/* a new variable: NAME or NAME(i) */
			size_t b = a;

			if (rd->nvars == RULES_MAX_VARS)
				return "too many variables for the checker";
			v = &rd->vars[rd->nvars++];
			memset(v, 0, sizeof(*v));
			snprintf(v->namelist, sizeof(v->namelist), "%s", nl);
			while (b < i && s[b] >= 'A' && s[b] <= 'Z')
				b++;
			while (b < i && s[b] >= '0' && s[b] <= '9' && b > a)
				b++;
			if (b == a || b - a > 6)
				return "bad variable name";
			memcpy(v->name, s + a, b - a);
			if (b < i) {
				if (s[b] != '(' || s[i - 1] != ')')
					return "bad variable index";
				v->index = atoi(s + b + 1);
				if (v->index < 1)
					return "bad variable index";
			}
			i++;
			continue;
		}
		/* a value s[a..i) */
		if (!v)
			return "a value before any variable";
		if (i == a)
			return "an empty value";
		if (!rules_real(s + a, i - a))
			return "a value that is not a DATCOM REAL";
		if (v->nvalues == RULES_MAX_VALUES || i - a >= 40)
			return "too many or too long values";
		memcpy(v->values[v->nvalues++], s + a, i - a);
		if (i < n)
			i++;	/* the comma */
	}
	return NULL;
}

static inline const char *rules_check(const char *text, size_t len,
			       struct rules_deck *rd, int *line)
{
	char joined[8192], name[8] = "";
	size_t jn = 0, pos = 0;
	bool open = false, ended = false;
	const char *why;

	memset(rd, 0, sizeof(*rd));
	*line = 0;
	if (!len || text[len - 1] != '\n')
		return "the deck does not end with a newline";
	while (pos < len) {
		const char *l = text + pos;
		const char *nlp = memchr(l, '\n', len - pos);
		size_t n = (size_t)(nlp - l);

		pos += n + 1;
		++*line;
		if (ended)
			return "text after NEXT CASE";
		if (!n)
			return "a blank line";
		if (n > 80)
			return "a line longer than 80 columns";
		for (size_t i = 0; i < n; i++) {
			if (l[i] == '\t')
				return "a TAB";
			if (l[i] == '\r')
				return "a CR";
			if (l[i] < 0x20 || l[i] >= 0x7f)
				return "a byte that is not printable ASCII";
		}
		if (l[n - 1] == ' ' && !open)
			return "a trailing blank";
		if (l[0] != ' ') {
			if (open)
				return "a control card inside an open namelist";
			if (!rules_control(l, n))
				return "an illegal control card";
			if (rd->ncards < RULES_MAX_CARDS)
				snprintf(rd->cards[rd->ncards++], 84, "%.*s",
					 (int)n, l);
			if (n == 9 && !memcmp(l, "NEXT CASE", 9))
				ended = true;
			continue;
		}
		if (n >= 2 && l[1] == '$') {
			size_t i = 2;

			if (open)
				return "a namelist starts before the last one closed";
			while (i < n && l[i] >= 'A' && l[i] <= 'Z')
				i++;
			if (i == 2 || i - 2 > 6 || i >= n || l[i] != ' ')
				return "a namelist name not followed by a blank";
			memcpy(name, l + 2, i - 2);
			name[i - 2] = 0;
			if (rd->ncards < RULES_MAX_CARDS)
				snprintf(rd->cards[rd->ncards++], 84, "$%s",
					 name);
			open = true;
			jn = 0;
			l += i + 1;
			n -= i + 1;
		} else {
			if (!open)
				return "a continuation line outside a namelist";
			if (n < 3 || l[1] != ' ')
				return "a continuation line not starting with two blanks";
			while (n && *l == ' ')
				l++, n--;
		}
		while (n && l[n - 1] == ' ')
			n--;
		if (!n)
			return "an empty namelist line";
		if (memchr(l, ' ', n))
			return "a blank inside a namelist's items";
		if (l[n - 1] == '$') {
			if (memchr(l, '$', n - 1))
				return "text after a namelist's closing $";
			n--;
			open = false;
		} else if (memchr(l, '$', n)) {
			return "text after a namelist's closing $";
		} else if (l[n - 1] != ',') {
			return "a line break that is not after a comma";
		}
		if (jn + n >= sizeof(joined))
			return "a namelist too long for the checker";
		memcpy(joined + jn, l, n);
		jn += n;
		if (!open) {
			/* a trailing comma before $ is allowed */
			if (jn && joined[jn - 1] == ',')
				jn--;
			why = rules_items(rd, name, joined, jn);
			if (why)
				return why;
		}
	}
	if (open)
		return "a namelist left open at the end";
	if (!ended)
		return "the deck does not end with NEXT CASE";
	return NULL;
}

/* The variable `name` of namelist `nl`, or NULL. */
static inline const struct rules_var *rules_find(const struct rules_deck *rd,
					  const char *nl, const char *name)
{
	for (int i = 0; i < rd->nvars; i++)
		if (!strcmp(rd->vars[i].namelist, nl) &&
		    !strcmp(rd->vars[i].name, name))
			return &rd->vars[i];
	return NULL;
}

#endif
