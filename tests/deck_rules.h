/*
 * deck_rules: ONE independent checker of the card rules of
 * ../shared/datcom/CARDS.md, for every test of core/deck and core/datcom
 * (tests/unit/test_deck.c, test_datcom.c, tests/fuzz/fuzz_deck.c,
 * fuzz_datcom.c).  It shares no code with core/deck.c: it reads the text
 * line by line, written from CARDS.md, so a writer bug is not mirrored
 * here.  It keeps the stricter rule wherever the two checkers it replaces
 * (tests/unit/deck_rules.h, tests/fuzz/datcom_rules.h) differed.
 *
 * Rules of every deck flowfs writes (RULES_ANY):
 *   LF line ends, the last line ended too; no CR, TAB, byte outside
 *   printable ASCII, blank line, trailing blank, line over 80 columns;
 *   column 1 non-blank only for a legal control card (CASEID[ text],
 *   DIM FT|IN|M|CM, NEXT CASE, DERIV/DAMP/BUILD/SAVE/TRIM/PART/PLOT/
 *   DUMP/WRITE/NAMELIST[ arguments], NACA-s-t-designation with `-` or a
 *   blank in columns 5, 7, 9), never inside an open namelist;
 *   a namelist starts ` $NAME` (upper case, [A-Z][A-Z0-9]{0,5}) followed
 *   by a blank and items, or by the end of the line, and continues on
 *   lines starting with exactly two blanks then neither a blank nor `$`;
 *   items NAME[(i)]=v{,v} (i 1..999), commas between them, no blank
 *   outside a quoted text, the first item named; a line ends after a comma
 *   or with the closing `$` (so no value is split across cards), nothing
 *   after it; a value is a REAL (optional r* repeat, optional sign, digits
 *   with a `.`, optional upper-case exponent other than 0: no bare
 *   integer, no lower `e`, no `E0` (rvalue.f), no decimal comma),
 *   .TRUE./.FALSE., or 'text' without ' and $;
 *   every namelist closed; the deck ends with NEXT CASE.
 *
 * RULES_DATCOM adds what datcom_render() alone writes: one case (nothing
 * after NEXT CASE), only the control cards CASEID text, DIM, DERIV
 * DEG|RAD, DAMP, BUILD, NACA-W|H|V-series-designation, NEXT CASE, and
 * every value a plain REAL (`-`? digits `.` digits, no repeat, no `+`).
 *
 *   rules_check_flags(text, len, flags, rd, &line): NULL when the text
 *	obeys them all, else a static description of the first broken rule
 *	and its line in *line.  `rd` (may be NULL) receives the namelists'
 *	variables (values as written; at most RULES_MAX_VARS variables and
 *	RULES_MAX_VALUES values each are kept, nvalues counts them all) and
 *	the cards (control cards and `$NAME` namelist starts), for
 *	assertions.
 *   rules_check(text, len, rd, &line): RULES_DATCOM.
 *   rules_check_any(text, len, rd, &line): RULES_ANY.
 *   deck_rules_check(text, len, why, size): RULES_ANY; 0, or -1 with
 *	"line N: reason" in why.
 *   rules_find(rd, namelist, name): the first such variable, or NULL.
 */
#ifndef FLOWFS_TESTS_DECK_RULES_H
#define FLOWFS_TESTS_DECK_RULES_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RULES_ANY 0u
#define RULES_DATCOM 1u

#define RULES_MAX_VARS 256
#define RULES_MAX_VALUES 32
#define RULES_MAX_CARDS 64

struct rules_var {
	char namelist[8];
	char name[8];
	int index;		/* 0: none */
	int nvalues;		/* all of them; the first RULES_MAX_VALUES kept */
	char values[RULES_MAX_VALUES][40];
};

struct rules_deck {
	int nvars;
	struct rules_var vars[RULES_MAX_VARS];
	int ncards;		/* control cards and namelist starts, in order */
	char cards[RULES_MAX_CARDS][84];
};

static inline bool rules_digit(char c)
{
	return c >= '0' && c <= '9';
}

static inline bool rules_upper(char c)
{
	return c >= 'A' && c <= 'Z';
}

/*
 * A REAL: [sign] (d+.d* | .d+) [E [+-] d+]; datcom: no `+`.  The
 * exponent is not 0: DATCOM's input check (RVALUE in rvalue.f: "IF(EXP
 * .AND. POWR .EQ. 0) NF = NF+1") marks `1.5E0` a syntax error.
 */
static inline bool rules_real(const char *s, size_t n, bool datcom)
{
	size_t i = 0, d = 0, e = 0, nonzero = 0;

	if (i < n && (s[i] == '-' || (!datcom && s[i] == '+')))
		i++;
	while (i < n && rules_digit(s[i]))
		i++, d++;
	if (i == n || s[i] != '.')
		return false;
	i++;
	while (i < n && rules_digit(s[i]))
		i++, d++;
	if (!d)
		return false;
	if (i < n && s[i] == 'E') {
		i++;
		if (i < n && (s[i] == '-' || s[i] == '+'))
			i++;
		while (i < n && rules_digit(s[i]))
			nonzero += s[i] != '0', i++, e++;
		if (!e || !nonzero)
			return false;
	}
	return i == n;
}

static inline bool rules_value(const char *s, size_t n, bool datcom)
{
	size_t i = 0;

	if (datcom)
		return rules_real(s, n, true);
	if (n >= 2 && s[0] == '\'' && s[n - 1] == '\'') {
		for (i = 1; i + 1 < n; i++)
			if (s[i] == '\'' || s[i] == '$')
				return false;
		return true;
	}
	while (i < n && rules_digit(s[i]))
		i++;
	if (i && i < n && s[i] == '*') {
		if (s[0] == '0')
			return false;
		s += i + 1;
		n -= i + 1;
	}
	if ((n == 6 && !memcmp(s, ".TRUE.", 6)) ||
	    (n == 7 && !memcmp(s, ".FALSE.", 7)))
		return true;
	return rules_real(s, n, false);
}

static inline bool rules_word(const char *l, size_t n, const char *w)
{
	size_t wl = strlen(w);

	return n >= wl && !memcmp(l, w, wl) &&
	       (n == wl || (l[wl] == ' ' && n > wl + 1));
}

static inline bool rules_control(const char *l, size_t n, bool datcom)
{
	static const char *const exact[] = {
		"DIM FT", "DIM IN", "DIM M", "DIM CM", "NEXT CASE",
	};
	static const char *const words[] = {
		"DERIV", "DAMP", "BUILD", "SAVE", "TRIM", "PART", "PLOT",
		"DUMP", "WRITE", "NAMELIST",
	};

	for (size_t i = 0; i < sizeof(exact) / sizeof(*exact); i++)
		if (n == strlen(exact[i]) && !memcmp(l, exact[i], n))
			return true;
	if (n >= 6 && !memcmp(l, "CASEID", 6))
		return n == 6 ? !datcom : l[6] == ' ' && n > 7;
	if (n > 9 && !memcmp(l, "NACA", 4)) {
		const char *surf = datcom ? "WHV" : "WHVF";
		char sep = datcom ? '-' : ' ';

		if (!strchr(surf, l[5]) || !strchr("1456S", l[7]))
			return false;
		if ((l[4] != '-' && l[4] != sep) ||
		    (l[6] != '-' && l[6] != sep) ||
		    (l[8] != '-' && l[8] != sep) || l[9] == ' ')
			return false;
		if (datcom)
			for (size_t i = 9; i < n; i++)
				if (!(rules_digit(l[i]) || rules_upper(l[i]) ||
				      l[i] == '-' || l[i] == '.' ||
				      l[i] == '=' || l[i] == ' '))
					return false;
		return true;
	}
	if (datcom)
		return (n == 9 && !memcmp(l, "DERIV DEG", 9)) ||
		       (n == 9 && !memcmp(l, "DERIV RAD", 9)) ||
		       (n == 4 && !memcmp(l, "DAMP", 4)) ||
		       (n == 5 && !memcmp(l, "BUILD", 5));
	for (size_t i = 0; i < sizeof(words) / sizeof(*words); i++)
		if (rules_word(l, n, words[i]))
			return true;
	return false;
}

/*
 * One item s[0..n) of namelist `nl`: NAME[(i)]=value or a value of the
 * current variable (*v).
 */
static inline const char *rules_item(struct rules_deck *rd, const char *nl,
				     const char *s, size_t n, bool datcom,
				     struct rules_var **v, bool *named)
{
	const char *eq = NULL;
	bool quoted = n && s[0] == '\'';

	if (!n)
		return "an empty value between commas";
	if (!quoted)
		eq = memchr(s, '=', n);
	if (eq) {
		size_t a = 0, b = (size_t)(eq - s);
		int index = 0;

		if (!rules_upper(s[0]))
			return "a bad variable name";
		while (a < b && (rules_upper(s[a]) || rules_digit(s[a])))
			a++;
		if (a > 6)
			return "a variable name longer than 6 characters";
		if (a < b) {
			size_t i = a + 1, d = 0;

			if (s[a] != '(' || s[b - 1] != ')' || s[i] == '0')
				return "a bad variable index";
			for (; i < b - 1; i++, d++) {
				if (!rules_digit(s[i]))
					return "a bad variable index";
				index = index * 10 + (s[i] - '0');
			}
			if (!d || d > 3)
				return "a bad variable index";
		}
		*named = true;
		*v = NULL;
		if (rd && rd->nvars < RULES_MAX_VARS) {
			*v = &rd->vars[rd->nvars++];
			memset(*v, 0, sizeof(**v));
			snprintf((*v)->namelist, sizeof((*v)->namelist), "%s",
				 nl);
			memcpy((*v)->name, s, a);
			(*v)->index = index;
		}
		n -= b + 1;
		s = eq + 1;
	} else if (!*named) {
		return "a value before any variable";
	}
	if (!rules_value(s, n, datcom))
		return datcom ? "a value that is not a plain DATCOM REAL" :
				"a value that is not a DATCOM REAL, logical or "
				"text";
	if (*v) {
		if ((*v)->nvalues < RULES_MAX_VALUES && n < 40)
			memcpy((*v)->values[(*v)->nvalues], s, n);
		(*v)->nvalues++;
	}
	return NULL;
}

static inline const char *rules_check_flags(const char *text, size_t len,
					    unsigned flags,
					    struct rules_deck *rd, int *line)
{
	bool datcom = flags & RULES_DATCOM;
	bool open = false, ended = false, named = false;
	struct rules_var *v = NULL;
	char name[8] = "";
	size_t pos = 0;

	if (rd)
		memset(rd, 0, sizeof(*rd));
	*line = 0;
	if (!len)
		return "an empty deck";
	if (text[len - 1] != '\n')
		return "the deck does not end with a newline";
	while (pos < len) {
		const char *l = text + pos;
		const char *nlp = memchr(l, '\n', len - pos);
		size_t n = (size_t)(nlp - l), c;

		pos += n + 1;
		++*line;
		if (ended && datcom)
			return "text after NEXT CASE";
		ended = false;
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
		if (l[n - 1] == ' ')
			return "a trailing blank";
		if (l[0] != ' ') {
			if (open)
				return "a control card inside an open namelist";
			if (!rules_control(l, n, datcom))
				return "an illegal control card";
			if (rd && rd->ncards < RULES_MAX_CARDS)
				snprintf(rd->cards[rd->ncards++], 84, "%.*s",
					 (int)n, l);
			ended = n == 9 && !memcmp(l, "NEXT CASE", 9);
			continue;
		}
		if (n >= 2 && l[1] == '$') {
			if (open)
				return "a namelist starts before the last one "
				       "closed";
			for (c = 2; c < n && l[c] != ' '; c++)
				if (!rules_upper(l[c]) &&
				    !(c > 2 && rules_digit(l[c])))
					return "a bad namelist name";
			if (c == 2 || c - 2 > 6)
				return "a bad namelist name";
			memcpy(name, l + 2, c - 2);
			name[c - 2] = 0;
			if (rd && rd->ncards < RULES_MAX_CARDS)
				snprintf(rd->cards[rd->ncards++], 84, "$%s",
					 name);
			open = true;
			named = false;
			v = NULL;
			if (c == n)
				continue;
			c++;
			if (n - c == 1 && l[c] == '$') {
				open = false;	/* ` $NAME $`: empty */
				continue;
			}
		} else {
			if (!open)
				return "a continuation line outside a namelist";
			if (n < 3 || l[1] != ' ' || l[2] == ' ' || l[2] == '$')
				return "a continuation line not starting with "
				       "exactly two blanks";
			c = 2;
		}
		/* items separated by commas outside quotes */
		while (c < n) {
			size_t e = c;
			bool in_text = false;
			const char *why;

			while (e < n && (in_text || (l[e] != ',' && l[e] != '$'))) {
				if (l[e] == '\'')
					in_text = !in_text;
				else if (l[e] == ' ' && !in_text)
					return "a blank inside a namelist's "
					       "items";
				e++;
			}
			if (e == n)
				return "a line break that is not after a comma "
				       "(a value split across cards?)";
			if (l[e] == '$' && e == c && named && c > 0 &&
			    l[c - 1] == ',') {
				/* a trailing comma before $ */
			} else {
				why = rules_item(rd, name, l + c, e - c, datcom,
						 &v, &named);
				if (why)
					return why;
			}
			if (l[e] == '$') {
				if (e + 1 != n)
					return "text after a namelist's closing $";
				open = false;
			}
			c = e + 1;
		}
	}
	if (open)
		return "a namelist left open at the end";
	if (!ended)
		return "the deck does not end with NEXT CASE";
	return NULL;
}

static inline const char *rules_check(const char *text, size_t len,
				      struct rules_deck *rd, int *line)
{
	return rules_check_flags(text, len, RULES_DATCOM, rd, line);
}

static inline const char *rules_check_any(const char *text, size_t len,
					  struct rules_deck *rd, int *line)
{
	return rules_check_flags(text, len, RULES_ANY, rd, line);
}

static inline int deck_rules_check(const char *text, size_t len, char *why,
				   size_t size)
{
	int line;
	const char *w = rules_check_flags(text, len, RULES_ANY, NULL, &line);

	if (!w)
		return 0;
	snprintf(why, size, "line %d: %s", line, w);
	return -1;
}

/* The variable `name` of namelist `nl`, or NULL. */
static inline const struct rules_var *rules_find(const struct rules_deck *rd,
						 const char *nl,
						 const char *name)
{
	for (int i = 0; i < rd->nvars; i++)
		if (!strcmp(rd->vars[i].namelist, nl) &&
		    !strcmp(rd->vars[i].name, name))
			return &rd->vars[i];
	return NULL;
}

#endif
