/*
 * deck_rules: an independent checker of the card rules of
 * ../shared/datcom/CARDS.md, for test_deck.c and fuzz_deck.c.  It shares no
 * code with core/deck.c: it reads the text line by line with POSIX regular
 * expressions written from CARDS.md, so a writer bug is not mirrored here.
 *
 * deck_rules_check(text, len, why, size) returns 0 when the text follows
 * every rule the flowfs writer promises, else -1 with "line N: reason" in
 * `why`.
 */
#ifndef FLOWFS_DECK_RULES_H
#define FLOWFS_DECK_RULES_H

#include <regex.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* A value: optional r*, then a REAL with `.` and upper-case E, a logical,
 * or quoted text without ' and $. */
#define DR_VALUE "(([0-9]+\\*)?[+-]?([0-9]+\\.[0-9]*|\\.[0-9]+)(E[+-]?[0-9]+)?" \
		 "|\\.TRUE\\.|\\.FALSE\\.|'[^'$]*')"
#define DR_ITEM "([A-Z][A-Z0-9]{0,5}(\\([1-9][0-9]{0,2}\\))?=)?" DR_VALUE

static int dr_fail(char *why, size_t size, unsigned line, const char *msg,
		   const char *s, size_t n)
{
	snprintf(why, size, "line %u: %s: `%.*s`", line, msg, (int)n, s);
	return -1;
}

static bool dr_match(const regex_t *re, const char *s, size_t n)
{
	char buf[128];

	if (n >= sizeof(buf))
		return false;
	memcpy(buf, s, n);
	buf[n] = '\0';
	return regexec(re, buf, 0, NULL, 0) == 0;
}

static bool dr_control_ok(const regex_t *re, const char *s, size_t n)
{
	return dr_match(re, s, n);
}

static int deck_rules_check(const char *text, size_t len, char *why,
			    size_t size)
{
	regex_t control, item, start;
	bool open = false, after_next = true, first_line = false;
	unsigned line = 0;
	size_t pos = 0;
	int ret = 0;

	regcomp(&control, "^(CASEID( [ -~]*)?|DIM (FT|IN|M|CM)|NEXT CASE|"
		"(DERIV|DAMP|BUILD|SAVE|TRIM|PART|PLOT|DUMP|WRITE|NAMELIST)"
		"( [ -~]*)?|NACA[- ][WHVF][- ][1456S][- ][!-~][ -~]*)$",
		REG_EXTENDED | REG_NOSUB);
	regcomp(&item, "^" DR_ITEM "$", REG_EXTENDED | REG_NOSUB);
	regcomp(&start, "^ \\$[A-Z][A-Z0-9]{0,5}$", REG_EXTENDED | REG_NOSUB);
	if (len && text[len - 1] != '\n') {
		ret = dr_fail(why, size, 0, "no newline at the end", "", 0);
		goto out;
	}
	while (pos < len) {
		const char *s = text + pos, *nl = memchr(s, '\n', len - pos);
		size_t n = (size_t)(nl - s), i, c;

		line++;
		pos += n + 1;
		if (n == 0) {
			ret = dr_fail(why, size, line, "blank line", s, n);
			goto out;
		}
		if (n > 80) {
			ret = dr_fail(why, size, line, "over 80 columns", s, n);
			goto out;
		}
		for (i = 0; i < n; i++)
			if (s[i] < 0x20 || s[i] > 0x7e) {
				ret = dr_fail(why, size, line,
					      "TAB, CR or non-ASCII byte", s, n);
				goto out;
			}
		if (s[n - 1] == ' ') {
			ret = dr_fail(why, size, line, "trailing blank", s, n);
			goto out;
		}
		if (s[0] != ' ') {
			if (open) {
				ret = dr_fail(why, size, line,
					      "control card inside a namelist",
					      s, n);
				goto out;
			}
			if (!dr_control_ok(&control, s, n)) {
				ret = dr_fail(why, size, line,
					      "not a legal control card", s, n);
				goto out;
			}
			after_next = n == 9 && !memcmp(s, "NEXT CASE", 9);
			continue;
		}
		after_next = false;
		if (n >= 2 && s[1] == '$') {
			/* ` $NAME` then a blank and items, or nothing. */
			for (c = 2; c < n && s[c] != ' '; c++)
				;
			if (open || !dr_match(&start, s, c)) {
				ret = dr_fail(why, size, line,
					      "bad namelist start", s, n);
				goto out;
			}
			open = true;
			first_line = true;
			if (c == n)
				continue;
			c++;
		} else {
			if (!open || n < 3 || s[1] != ' ' || s[2] == ' ' ||
			    s[2] == '$') {
				ret = dr_fail(why, size, line,
					      "continuation must start with two "
					      "blanks inside a namelist", s, n);
				goto out;
			}
			first_line = false;
			c = 2;
		}
		/* Items separated by commas; the line ends after a comma or
		 * with the closing `$` (an empty namelist is ` $NAME $`). */
		if (first_line && n - c == 1 && s[c] == '$') {
			open = false;
			continue;
		}
		while (c < n) {
			size_t e = c;
			bool in_text = false;

			while (e < n && (in_text || (s[e] != ',' && s[e] != '$'))) {
				if (s[e] == '\'')
					in_text = !in_text;
				e++;
			}
			if (e == n) {
				ret = dr_fail(why, size, line,
					      "card does not end after a comma "
					      "or with $ (a value split?)", s, n);
				goto out;
			}
			if (!dr_match(&item, s + c, e - c)) {
				ret = dr_fail(why, size, line, "bad item", s + c,
					      e - c);
				goto out;
			}
			if (s[e] == '$') {
				if (e + 1 != n) {
					ret = dr_fail(why, size, line,
						      "text after $", s, n);
					goto out;
				}
				open = false;
			}
			c = e + 1;
		}
	}
	if (open) {
		ret = dr_fail(why, size, line, "namelist not closed", "", 0);
		goto out;
	}
	if (line && !after_next)
		ret = dr_fail(why, size, line, "deck does not end with NEXT CASE",
			      "", 0);
out:
	regfree(&control);
	regfree(&item);
	regfree(&start);
	return ret;
}

#endif
