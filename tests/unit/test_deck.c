/*
 * Tests for core/deck: the number format of seed 001, the writer against
 * the independent rule checker (tests/deck_rules.h) on random decks, the parser's
 * problems with their positions, write -> parse -> write fixed points, and
 * the public example decks of ../shared/datcom/examples (skipped when
 * absent).  Expected problem lines for the example decks are computed here
 * from the raw bytes, not taken from the parser.
 */
#include <errno.h>
#include <float.h>
#include <locale.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <regex.h>
#include <string.h>
#include <cmocka.h>

#include "formats/deck.h"
#include "flowfs-config.h"
#include "lib/sbuf.h"
#include "../deck_rules.h"
#include "unit.h"

/* A file of ../shared/datcom/examples/ (NULL when absent). */
static char *read_example(const char *name, size_t *len)
{
	char path[512];

	snprintf(path, sizeof(path), "datcom/examples/%s", name);
	return unit_read_shared(path, len);
}


/* ---- helpers ------------------------------------------------------------- */

static void assert_rules(const char *text, size_t len)
{
	char why[256];

	if (deck_rules_check(text, len, why, sizeof(why)) < 0)
		fail_msg("%s\n--- deck ---\n%.*s", why, (int)len, text);
}

static char *write_deck(const struct deck *d)
{
	struct sbuf sb = SBUF_INIT;

	assert_int_equal(deck_write(d, &sb), 0);
	return sbuf_detach(&sb, NULL);
}

static struct deck *parse_ok(const char *text, struct deck_problems *pr)
{
	struct deck *d = NULL;

	assert_int_equal(deck_parse(text, strlen(text), &d, pr), 0);
	assert_non_null(d);
	return d;
}

/* The problem of `kind` on `line`, or NULL. */
static const struct deck_problem *find_problem(const struct deck_problems *pr,
					       enum deck_problem_kind kind,
					       unsigned line)
{
	size_t i;

	for (i = 0; i < pr->nr; i++)
		if (pr->v[i].kind == kind && pr->v[i].line == line)
			return &pr->v[i];
	return NULL;
}

static size_t count_kind(const struct deck_problems *pr,
			 enum deck_problem_kind kind)
{
	size_t i, n = 0;

	for (i = 0; i < pr->nr; i++)
		n += pr->v[i].kind == kind;
	return n;
}

/* Parse `text` expecting exactly one problem, of `kind` at line:col. */
static void expect_one(const char *text, enum deck_problem_kind kind,
		       unsigned line, unsigned col)
{
	struct deck_problems pr = DECK_PROBLEMS_INIT;
	struct deck *d = parse_ok(text, &pr);

	if (pr.nr != 1 || pr.v[0].kind != kind || pr.v[0].line != line ||
	    pr.v[0].column != col)
		fail_msg("%s: want kind %d at %u:%u, got %zu problems, first "
			 "kind %d at %u:%u (%s)", text, kind, line, col, pr.nr,
			 pr.nr ? (int)pr.v[0].kind : -1,
			 pr.nr ? pr.v[0].line : 0, pr.nr ? pr.v[0].column : 0,
			 pr.nr ? pr.v[0].message : "");
	assert_int_equal(pr.v[0].severity, DECK_ERROR);
	deck_free(d);
	deck_problems_release(&pr);
}

static void expect_fatal(const char *text, unsigned line, unsigned col)
{
	struct deck_problems pr = DECK_PROBLEMS_INIT;
	struct deck *d = (struct deck *)1;

	assert_int_equal(deck_parse(text, strlen(text), &d, &pr), -EINVAL);
	assert_null(d);
	assert_true(pr.nr >= 1);
	if (pr.v[pr.nr - 1].severity != DECK_FATAL ||
	    pr.v[pr.nr - 1].line != line || pr.v[pr.nr - 1].column != col)
		fail_msg("%s: want fatal at %u:%u, got %u:%u (%s)", text, line,
			 col, pr.v[pr.nr - 1].line, pr.v[pr.nr - 1].column,
			 pr.v[pr.nr - 1].message);
	deck_problems_release(&pr);
}

/* write -> parse (no problems) -> write is byte-identical; returns text. */
static char *assert_fixed_point(const struct deck *d)
{
	struct deck_problems pr = DECK_PROBLEMS_INIT;
	char *w1 = write_deck(d), *w2;
	struct deck *d2 = NULL;

	assert_rules(w1, strlen(w1));
	assert_int_equal(deck_parse(w1, strlen(w1), &d2, &pr), 0);
	if (pr.nr)
		fail_msg("rewritten deck has problems: line %u: %s\n%s",
			 pr.v[0].line, pr.v[0].message, w1);
	w2 = write_deck(d2);
	assert_string_equal(w1, w2);
	free(w2);
	deck_free(d2);
	deck_problems_release(&pr);
	return w1;
}

/* ---- numbers ------------------------------------------------------------- */

static void fmt_is(double v, const char *want)
{
	char buf[DECK_NUMBER_SIZE];
	int n = deck_format_number(v, buf, sizeof(buf));

	if (n < 0)
		fail_msg("%.17g: error %d, want %s", v, n, want);
	assert_string_equal(buf, want);
	assert_int_equal((size_t)n, strlen(want));
}

static void fmt_err(double v, int want)
{
	char buf[DECK_NUMBER_SIZE];

	assert_int_equal(deck_format_number(v, buf, sizeof(buf)), want);
}

static void test_number_format(void **state)
{
	char small[4];

	(void)state;
	/* The seed's own examples. */
	fmt_is(6, "6.0");
	fmt_is(0.5489, "0.5489");
	fmt_is(10000.0, "10000.0");
	fmt_is(0.0001, "0.0001");
	fmt_is(-0.0001, "-0.0001");
	fmt_is(-6, "-6.0");
	fmt_is(-2.5, "-2.5");
	fmt_is(-0.1234, "-0.1234");
	fmt_is(0.0, "0.0");
	fmt_is(-0.0, "0.0");
	fmt_is(1301.2, "1301.2");
	fmt_is(20120887.0, "20120887.0");
	fmt_is(999999999.0, "999999999.0");
	/* what four decimals would change: the fewest digits that read
	 * back as the value (issue 15's cases), in plain form where DATCOM
	 * reads it so (issue 28: its input check marks `1.00001E0`) */
	fmt_is(0.0001753, "0.0001753");		/* SREF: was 0.0002 */
	fmt_is(0.00025, "0.00025");		/* R: was 0.0003 */
	fmt_is(0.2418852, "0.2418852");		/* Mach: was 0.2419 */
	fmt_is(1.00001, "1.00001");		/* was 1.00001E0 */
	fmt_is(1.00002, "1.00002");
	fmt_is(3.991737, "3.991737");		/* ALIH: was 3.991737E0 */
	fmt_is(0.00004, "0.00004");		/* was refused */
	fmt_is(-0.00004, "-0.00004");
	fmt_is(1e-5, "0.00001");
	fmt_is(0.00005, "0.00005");
	fmt_is(1.23456, "1.23456");
	fmt_is(2.00001, "2.00001");
	fmt_is(1.5e-7, "0.00000015");
	/* DATCOM's reader (todec.f) adds up the digits before the point,
	 * and those after it, in 32-bit integers: nine on each side are
	 * plain, one more is the exponent form */
	fmt_is(999999999.0, "999999999.0");
	fmt_is(1e9, "1.0E9");
	fmt_is(1234567891.0, "1.234567891E9");
	fmt_is(-1.5e10, "-1.5E10");
	fmt_is(2.3456789e12, "2.3456789E12");
	fmt_is(0.123456789, "0.123456789");
	fmt_is(0.1234567891, "1.234567891E-1");
	fmt_is(12.123456789, "12.123456789");
	fmt_is(12.1234567891, "121.234567891E-1");
	fmt_is(0.000000000123456789, "0.000000000123456789");
	fmt_is(5.0000000000123, "5.0000000000123");
	/* more digits than nine: as many before the point as leave nine
	 * after it */
	fmt_is(0.30000000000000004, "30000000.000000004E-8");
	fmt_is(0.8327717748460195, "8327717.748460195E-7");
	fmt_is(1e30, "1.0E30");
	/* the ends of a DATCOM REAL */
	fmt_is(3.4e38, "3.4E38");
	fmt_is(1.1754943508222875e-38, "11754943.508222875E-45");
	fmt_is(1e-38, "0.00000000000000000000000000000000000001");
	/* a card's 64 columns (DECK_VALUE_MAX): at them plain, one past
	 * them the exponent form */
	fmt_is(1e-62, "0.000000000000000000000000000000000000000000000000000000"
	       "00000001");
	fmt_is(1e-63, "1.0E-63");
	fmt_is(-1e-61, "-0.00000000000000000000000000000000000000000000000000000"
	       "00000001");
	fmt_is(-1e-62, "-1.0E-62");
	fmt_is(1.5e-63, "1.5E-63");
	fmt_is(5e-324, "5.0E-324");	/* the shortest: 5e-324 reads back */
	fmt_is(-1.7976931348623157e308, "-17976931.348623157E301");
	fmt_err(NAN, -EDOM);
	fmt_err(INFINITY, -EDOM);
	fmt_err(-INFINITY, -EDOM);
	assert_int_equal(deck_format_number(123.25, small, sizeof(small)),
			 -ENOSPC);
}

/* The decimal point stays `.` whatever LC_NUMERIC says (when a locale
 * with a decimal comma is installed; C.UTF-8 at least runs the code). */
static void test_number_locale(void **state)
{
	static const char *const locs[] = { "de_DE.UTF-8", "fr_FR.UTF-8",
					    "de_DE", "C.UTF-8" };
	struct deck_problems pr = DECK_PROBLEMS_INIT;
	struct deck *d;
	double v[1];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(locs) / sizeof(locs[0]); i++)
		if (setlocale(LC_NUMERIC, locs[i]))
			break;
	fmt_is(0.5489, "0.5489");
	fmt_is(-1.5e10, "-1.5E10");
	fmt_is(2.5e-70, "2.5E-70");
	d = parse_ok(" $FLTCON MACH(1)=0.5489$\nNEXT CASE\n", &pr);
	assert_int_equal(deck_get_numbers(d->cases[0], "FLTCON", "MACH", v, 1,
					  NULL), 0);
	assert_true(v[0] == 0.5489);
	deck_free(d);
	setlocale(LC_NUMERIC, "C");
}

/* Property: every writable number reparses within the format's precision
 * and formats to the same string again. */
static uint64_t rng_state;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* A number as a JSON document or a deck gives it: decimal text read. */
static double rnd_number(void)
{
	char text[64];

	switch (rnd() % 6) {
	case 0:
		snprintf(text, sizeof(text), "%lld",
			 (long long)(rnd() % 2001) - 1000);
		break;
	case 1:
		snprintf(text, sizeof(text), "%.4f",
			 ((double)(rnd() % 2000001) - 1000000.0) / 10000.0);
		break;
	case 2:
		snprintf(text, sizeof(text), "%.*e", (int)(rnd() % 9),
			 ((double)(rnd() % 1000000) / 1e6 - 0.5) *
			 pow(10.0, (double)(rnd() % 24) - 8.0));
		break;
	case 3:
		snprintf(text, sizeof(text), "%llu0000",
			 (unsigned long long)(rnd() % 100000));
		break;
	case 4:
		snprintf(text, sizeof(text), "%.1f",
			 (double)(rnd() % 1000) / 10.0);
		break;
	default:
		/* a double of all 53 bits, in a Fortran REAL's range */
		return (rnd() & 1 ? -1.0 : 1.0) *
		       ((double)(rnd() >> 11) / 9007199254740992.0 + 0.1) *
		       pow(10.0, (double)(rnd() % 75) - 37.0);
	}
	return strtod(text, NULL);
}

/* The significant digits of a printed number: from its first digit
 * other than 0 to its last ("0.0" has one). */
static int significant(const char *a)
{
	int first = -1, last = -1, k = 0;

	for (; *a && *a != 'E'; a++) {
		if (*a < '0' || *a > '9')
			continue;
		if (*a != '0') {
			if (first < 0)
				first = k;
			last = k;
		}
		k++;
	}
	return first < 0 ? 1 : last - first + 1;
}

/*
 * Whether the digits of a printed number, laid out plain, have at most 9
 * before the point and 9 after it from the first that is not 0 (what
 * DATCOM's reader adds up in 32-bit integers, todec.f) and 64
 * characters: from the text alone, whichever form it is in.
 */
static bool plain_would_fit(const char *a)
{
	char digits[DECK_NUMBER_SIZE];
	const char *e = strchr(a, 'E'), *t;
	int nd = 0, point = 0, x = e ? atoi(e + 1) : 0, first = -1;
	int before, after, len;

	for (t = a; *t && *t != 'E'; t++) {
		if (*t == '.')
			point = nd;
		else if (*t >= '0' && *t <= '9')
			digits[nd++] = *t;
	}
	/* the point moved by the exponent: digits[0..before) before it */
	before = point + x;
	while (nd > 0 && digits[nd - 1] == '0' && nd > before)
		nd--;
	for (int i = 0; i < nd; i++)
		if (digits[i] != '0') {
			first = i;
			break;
		}
	if (first < 0)
		return true;	/* 0.0 */
	/* integer digits from the first non-zero one; after: from the first
	 * non-zero one after the point */
	{
		int lead = first < before ? before - first : 0;
		int from = before > 0 ? before : 0;

		while (from < nd && digits[from] == '0')
			from++;
		after = nd > from ? nd - from : 0;
		len = (lead ? lead : 1) + 1 + (nd > before ? nd - before +
			(before < 0 ? -before : 0) : 1) + (a[0] == '-');
		return lead <= 9 && after <= 9 && len <= DECK_VALUE_MAX;
	}
}

/* Every number prints in a form DATCOM's input check passes (rvalue.f:
 * a `.`, an `E` only after it, an exponent other than 0), reads back as
 * itself, has the fewest significant digits that do, is plain when that
 * fits a card, and its printing is a fixed point. */
static void test_number_property(void **state)
{
	regex_t re;
	int i;

	(void)state;
	rng_state = 0x9e3779b97f4a7c15ULL;
	assert_int_equal(regcomp(&re, "^-?[0-9]+\\.[0-9]+(E-?[1-9][0-9]*)?$",
				 REG_EXTENDED | REG_NOSUB), 0);
	for (i = 0; i < 20000; i++) {
		/* beyond a REAL too, where the exponent form begins */
		double x = rnd_number() *
			   (i % 4 == 3 ? pow(10.0, (double)(rnd() % 61) - 30.0)
				       : 1.0), y;
		char a[DECK_NUMBER_SIZE], b[DECK_NUMBER_SIZE], fewer[64];
		int n = deck_format_number(x, a, sizeof(a)), d;

		assert_true(n > 0);
		if (regexec(&re, a, 0, NULL, 0))
			fail_msg("%.17g -> %s", x, a);
		y = strtod(a, NULL);
		if (y != x && !(x == 0 && y == 0))
			fail_msg("%.17g -> %s reads back as %.17g", x, a, y);
		/* one digit less does not read back (printf rounds right) */
		d = significant(a);
		if (x != 0 && d > 1) {
			snprintf(fewer, sizeof(fewer), "%.*e", d - 2, x);
			if (strtod(fewer, NULL) == x)
				fail_msg("%.17g -> %s, but %s is shorter", x, a,
					 fewer);
		}
		if (!strchr(a, 'E') && strchr(a, '.')[2] != '\0')
			assert_true(a[strlen(a) - 1] != '0');
		/* plain exactly when that is what DATCOM reads as it is */
		if (plain_would_fit(a) != !strchr(a, 'E'))
			fail_msg("%.17g -> %s", x, a);
		/* and an exponent form that it reads too: nine digits at
		 * most on either side of the point, one before it unless
		 * nine follow */
		if (strchr(a, 'E')) {
			const char *pt = strchr(a, '.'), *e = strchr(a, 'E');
			int lead = (int)(pt - a) - (a[0] == '-');

			if (lead > 9 || e - pt - 1 > 9 ||
			    (lead > 1 && e - pt - 1 != 9))
				fail_msg("%.17g -> %s", x, a);
		}
		assert_true(deck_format_number(y, b, sizeof(b)) > 0);
		assert_string_equal(a, b);
	}
	regfree(&re);
}

/* deck_number_check() is deck_format_number()'s verdict, and what the
 * format gives reads back as v. */
static void check_agrees(double v)
{
	char buf[DECK_NUMBER_SIZE];
	int want = isfinite(v) ? 0 : -EDOM;
	int f = deck_format_number(v, buf, sizeof(buf));

	if (deck_number_check(v) != want || (f < 0 ? f : 0) != want)
		fail_msg("%.17g: check %d, format %d, want %d", v,
			 deck_number_check(v), f, want);
	if (f > 0 && strtod(buf, NULL) != v && v != 0)
		fail_msg("%.17g: printed %s", v, buf);
}

static void test_number_check(void **state)
{
	static const double specials[] = { 0.0, -0.0, 1e-300, 5e-324, 1.0,
					   0.0001, 1e9, 1e300, NAN, INFINITY,
					   -INFINITY, DBL_MAX, -DBL_MAX };
	int i;

	(void)state;
	for (size_t k = 0; k < sizeof(specials) / sizeof(*specials); k++)
		check_agrees(specials[k]);
	for (int sign = -1; sign <= 1; sign += 2) {
		double up = sign * 5e-5, down = up;

		for (i = 0; i < 5000; i++) {
			check_agrees(up);
			check_agrees(down);
			up = nextafter(up, sign * 1.0);
			down = nextafter(down, 0.0);
		}
	}
	rng_state = 0x2545f4914f6cdd1dULL;
	for (i = 0; i < 100000; i++) {
		double x = (double)(rnd() >> 11) / 9007199254740992.0;

		check_agrees((rnd() & 1 ? -x : x) * 2e-4);
		check_agrees(rnd_number());
	}
}

/* ---- building and writing ------------------------------------------------ */

static void test_api(void **state)
{
	struct deck *d = deck_new();
	struct deck_case *c;
	struct deck_namelist *nl, *f;
	double a[3] = { 0.0, 2.0, 4.0 }, out[4];
	char long_id[80];
	size_t n, pos = 0;
	char *w;

	(void)state;
	assert_non_null(d);
	assert_int_equal(deck_add_case(d, &c), 0);
	assert_int_equal(deck_add_caseid(c, "PC-9 trainer"), 0);
	memset(long_id, 'X', 74);
	long_id[74] = '\0';
	assert_int_equal(deck_add_caseid(c, long_id), -EINVAL);
	long_id[73] = '\0';
	assert_int_equal(deck_add_caseid(c, long_id), 0);
	assert_int_equal(deck_add_control(c, "DIM FT"), 0);
	assert_int_equal(deck_add_control(c, "DIM  FT"), -EINVAL);
	assert_int_equal(deck_add_control(c, "DIM METRES"), -EINVAL);
	assert_int_equal(deck_add_control(c, "NEXT CASE"), -EINVAL);
	assert_int_equal(deck_add_control(c, "FOO"), -EINVAL);
	assert_int_equal(deck_add_control(c, "*comment"), -EINVAL);
	assert_int_equal(deck_add_control(c, " DAMP"), -EINVAL);
	assert_int_equal(deck_add_control(c, "DAMP\t"), -EINVAL);
	assert_int_equal(deck_add_control(c, "NACA-X-6-63-415"), -EINVAL);
	assert_int_equal(deck_add_control(c, "NACA-W-6-63-415"), 0);
	assert_int_equal(deck_add_control(c, "DERIV DEG"), 0);
	assert_int_equal(c->nr, 5);
	assert_int_equal(deck_add_namelist(c, "fltcon", &nl), -EINVAL);
	assert_int_equal(deck_add_namelist(c, "FLTCONX", &nl), -EINVAL);
	assert_int_equal(deck_add_namelist(c, "FLTCON", &nl), 0);
	assert_int_equal(deck_add_number(nl, "NALPHA", 3.0), 0);
	assert_int_equal(deck_add_array(nl, "ALSCHD", 1, a, 3), 0);
	assert_int_equal(deck_add_number(nl, "WT", 0.00004), 0);
	assert_int_equal(deck_add_number(nl, "WT", NAN), -EDOM);
	assert_int_equal(deck_add_array(nl, "ALSCHD", 1000, a, 3), -EINVAL);
	assert_int_equal(deck_add_array(nl, "ALSCHD", 1, a, 0), -EINVAL);
	assert_int_equal(deck_add_number(nl, "1X", 1.0), -EINVAL);
	assert_int_equal(deck_add_logical(nl, "HYPERS", true), 0);
	assert_int_equal(deck_add_text(nl, "NOTE", "it's"), -EINVAL);
	assert_int_equal(deck_add_text(nl, "NOTE", "A$B"), -EINVAL);
	assert_int_equal(nl->nr, 4);	/* failures added nothing */
	assert_int_equal(deck_add_namelist(c, "FLTCON", &f), 0);
	assert_int_equal(deck_add_array(f, "ALSCHD", 3, a + 2, 1), 0);
	f->vars[0]->values[0].number = 8.0;

	assert_ptr_equal(deck_find_namelist(c, "FLTCON", &pos), nl);
	assert_ptr_equal(deck_find_namelist(c, "FLTCON", &pos), f);
	assert_null(deck_find_namelist(c, "FLTCON", &pos));
	assert_null(deck_find_namelist(c, "BODY", NULL));
	assert_non_null(deck_find_var(nl, "ALSCHD"));
	assert_null(deck_find_var(nl, "MACH"));
	assert_int_equal(deck_get_numbers(c, "FLTCON", "ALSCHD", out, 4, &n), 0);
	assert_int_equal(n, 3);
	assert_true(out[0] == 0.0 && out[1] == 2.0 && out[2] == 8.0);
	assert_true(isnan(out[3]));
	assert_int_equal(deck_get_numbers(c, "FLTCON", "MACH", out, 4, &n),
			 -ENOENT);
	assert_int_equal(deck_get_numbers(c, "FLTCON", "HYPERS", out, 4, &n),
			 -EINVAL);
	assert_true(deck_find_var(nl, "HYPERS")->values[0].logical);

	w = assert_fixed_point(d);
	assert_true(!strncmp(w, "CASEID PC-9 trainer\nCASEID XXX", 30));
	assert_non_null(strstr(w, "XXX\nDIM FT\nNACA-W-6-63-415\n"));
	assert_non_null(strstr(w, " $FLTCON NALPHA=3.0,ALSCHD(1)=0.0,2.0,4.0,"
				  "WT=0.00004,HYPERS=.TRUE.$\n"
				  " $FLTCON ALSCHD(3)=8.0$\n"));
	free(w);

	/* copy and remove */
	{
		struct deck *e = deck_new();
		struct deck_case *ec;
		size_t i;
		char *w1, *w2;

		assert_int_equal(deck_add_case(e, &ec), 0);
		for (i = 0; i < c->nr; i++)
			assert_int_equal(deck_copy_card(ec, c->cards[i]), 0);
		w1 = write_deck(d);
		w2 = write_deck(e);
		assert_string_equal(w1, w2);
		free(w1);
		free(w2);
		nl = deck_find_namelist(ec, "FLTCON", NULL);
		deck_remove_var(nl, 1);
		deck_remove_var(nl, 9);
		assert_int_equal(nl->nr, 3);
		assert_string_equal(nl->vars[1]->name, "WT");
		assert_string_equal(nl->vars[2]->name, "HYPERS");
		deck_free(e);
	}
	deck_free(d);
}

/* A namelist's first item stays on the ` $NAME` line when the line comes
 * to exactly DECK_COLUMNS and wraps to its own line one column past. */
static void test_write_first_item_at_80(void **state)
{
	char text[DECK_VALUE_MAX - 1];
	(void)state;

	memset(text, 'A', sizeof(text) - 1);
	text[sizeof(text) - 1] = '\0';
	for (int past = 0; past <= 1; past++) {
		/* " $FLTCON " + "ABCDE=" + 'A...A' + "$" = 9 + 6 + 64 + 1 */
		const char *var = past ? "ABCDEF" : "ABCDE";
		struct deck *d = deck_new();
		struct deck_case *c;
		struct deck_namelist *nl;
		char *out, *nl1;

		assert_int_equal(deck_add_case(d, &c), 0);
		assert_int_equal(deck_add_namelist(c, "FLTCON", &nl), 0);
		assert_int_equal(deck_add_text(nl, var, text), 0);
		out = write_deck(d);
		nl1 = strchr(out, '\n');
		assert_non_null(nl1);
		if (!past) {
			assert_int_equal(nl1 - out, DECK_COLUMNS);
			assert_int_equal(strncmp(out, " $FLTCON ABCDE='", 16), 0);
		} else {
			assert_int_equal(nl1 - out, 8);
			assert_int_equal(strncmp(nl1 + 1, "  ABCDEF='", 10), 0);
			assert_int_equal(strchr(nl1 + 1, '\n') - (nl1 + 1),
					 DECK_COLUMNS - 6);
		}
		assert_rules(out, strlen(out));
		free(out);
		deck_free(d);
	}
}

/* Hand-damaged structs are refused by the writer, not written. */
static void test_write_refuses(void **state)
{
	struct deck *d = deck_new();
	struct deck_case *c;
	struct deck_namelist *nl;
	struct sbuf sb = SBUF_INIT;

	(void)state;
	assert_int_equal(deck_add_case(d, &c), 0);
	assert_int_equal(deck_add_namelist(c, "BODY", &nl), 0);
	assert_int_equal(deck_add_number(nl, "NX", 1.0), 0);
	nl->vars[0]->values[0].number = NAN;
	assert_int_equal(deck_write(d, &sb), -EDOM);
	nl->vars[0]->values[0].number = 1.0;
	nl->vars[0]->values[0].text = strdup("1.0e4");
	sbuf_reset(&sb);
	assert_int_equal(deck_write(d, &sb), -EINVAL);
	/* spellings DATCOM's input check marks: never written */
	for (size_t k = 0; k < 4; k++) {
		static const char *const bad[] = { "1.0E0", "1.0E-00", "1E4",
						   "0.8327717748460195" };

		free(nl->vars[0]->values[0].text);
		nl->vars[0]->values[0].text = strdup(bad[k]);
		sbuf_reset(&sb);
		assert_int_equal(deck_write(d, &sb), -EINVAL);
	}
	free(nl->vars[0]->values[0].text);
	nl->vars[0]->values[0].text = strdup("1.0E-01");
	sbuf_reset(&sb);
	assert_int_equal(deck_write(d, &sb), 0);
	deck_free(d);
	sbuf_release(&sb);
}

static const char *const controls[] = {
	"DIM FT", "DIM IN", "DIM M", "DIM CM", "DERIV DEG", "DERIV RAD",
	"DAMP", "BUILD", "SAVE", "TRIM", "PART", "PLOT", "DUMP CASE",
	"NACA-W-6-63-415", "NACA-H-4-0012", "NACA-W-6-64A204 A=0.8",
	"NACA-V-S-1-40.0-9.0",
};
static const char *const nlnames[] = {
	"FLTCON", "OPTINS", "SYNTHS", "BODY", "WGPLNF", "HTPLNF", "VTPLNF",
	"WGSCHR", "SYMFLP", "EXPR01",
};

static void rnd_name(char *s)
{
	size_t n = 1 + rnd() % 6, i;

	s[0] = (char)('A' + rnd() % 26);
	for (i = 1; i < n; i++)
		s[i] = rnd() % 3 ? (char)('A' + rnd() % 26) :
				   (char)('0' + rnd() % 10);
	s[n] = '\0';
}

static struct deck *random_deck(void)
{
	struct deck *d = deck_new();
	size_t ncases = 1 + rnd() % 3, i, j, k;

	assert_non_null(d);
	for (i = 0; i < ncases; i++) {
		struct deck_case *c;
		size_t ncards = rnd() % 12;

		assert_int_equal(deck_add_case(d, &c), 0);
		for (j = 0; j < ncards; j++) {
			unsigned r = (unsigned)(rnd() % 10);

			if (r == 0) {
				char id[80];
				size_t n = rnd() % 74;

				for (k = 0; k < n; k++)
					id[k] = (char)(' ' + rnd() % 95);
				id[n] = '\0';
				assert_int_equal(deck_add_caseid(c, id), 0);
			} else if (r < 3) {
				assert_int_equal(deck_add_control(c,
					controls[rnd() % (sizeof(controls) /
							  sizeof(*controls))]),
					0);
			} else {
				struct deck_namelist *nl;
				size_t nvars = rnd() % 14;

				assert_int_equal(deck_add_namelist(c,
					nlnames[rnd() % (sizeof(nlnames) /
							 sizeof(*nlnames))],
					&nl), 0);
				for (k = 0; k < nvars; k++) {
					char name[8];
					double v[25];
					size_t n = 1 + rnd() % 25, m;
					unsigned kind = (unsigned)(rnd() % 8);
					int ret;

					rnd_name(name);
					if (kind == 0) {
						assert_int_equal(deck_add_logical(
							nl, name, rnd() % 2), 0);
						continue;
					}
					if (kind == 1) {
						char t[40];

						snprintf(t, sizeof(t), "T%u E,x",
							 (unsigned)(rnd() % 999));
						assert_int_equal(deck_add_text(
							nl, name, t), 0);
						continue;
					}
					for (m = 0; m < n; m++)
						do
							v[m] = rnd_number();
						while (v[m] != 0 &&
						       fabs(v[m]) < 0.00005);
					ret = kind == 2 ?
					      deck_add_number(nl, name, v[0]) :
					      deck_add_array(nl, name,
						     (unsigned)(rnd() % 3 ?
						     1 + rnd() % 20 :
						     rnd() % 1000), v, n);
					assert_int_equal(ret, 0);
				}
			}
		}
	}
	return d;
}

/* Numbers of a rewritten deck read back as what was added. */
static void assert_same_values(const struct deck *a, const struct deck *b)
{
	size_t i, j, k, m;

	assert_int_equal(a->nr, b->nr);
	for (i = 0; i < a->nr; i++) {
		assert_int_equal(a->cases[i]->nr, b->cases[i]->nr);
		for (j = 0; j < a->cases[i]->nr; j++) {
			const struct deck_card *x = a->cases[i]->cards[j];
			const struct deck_card *y = b->cases[i]->cards[j];

			assert_int_equal(x->type, y->type);
			if (x->type == DECK_CONTROL) {
				assert_string_equal(x->control, y->control);
				continue;
			}
			assert_string_equal(x->namelist->name,
					    y->namelist->name);
			assert_int_equal(x->namelist->nr, y->namelist->nr);
			for (k = 0; k < x->namelist->nr; k++) {
				const struct deck_var *u = x->namelist->vars[k];
				const struct deck_var *v = y->namelist->vars[k];

				assert_string_equal(u->name, v->name);
				assert_int_equal(u->index, v->index);
				assert_int_equal(u->nr, v->nr);
				for (m = 0; m < u->nr; m++) {
					double p = u->values[m].number;
					double q = v->values[m].number;

					assert_int_equal(u->values[m].type,
							 v->values[m].type);
					if (u->values[m].type == DECK_LOGICAL)
						assert_int_equal(
							u->values[m].logical,
							v->values[m].logical);
					if (u->values[m].type == DECK_TEXT)
						assert_string_equal(
							u->values[m].text,
							v->values[m].text);
					if (u->values[m].type != DECK_NUMBER)
						continue;
					if (fabs(p) < 1e9)
						assert_true(fabs(p - q) <=
							    0.00005 +
							    fabs(p) * 1e-15);
					else
						assert_true(fabs(p - q) <=
							    fabs(p) * 5.1e-7);
				}
			}
		}
	}
}

static void test_random_decks(void **state)
{
	int i;

	(void)state;
	rng_state = 0x2545f4914f6cdd1dULL;
	for (i = 0; i < 400; i++) {
		struct deck_problems pr = DECK_PROBLEMS_INIT;
		struct deck *d = random_deck(), *e;
		char *w = assert_fixed_point(d);

		e = parse_ok(w, &pr);
		assert_int_equal(pr.nr, 0);
		assert_same_values(d, e);
		deck_free(e);
		deck_free(d);
		free(w);
	}
}

/* The checker itself must catch what it is meant to catch. */
static void test_checker_catches(void **state)
{
	static const char *const bad[] = {
		" $FLTCON NALPHA=6$\nNEXT CASE\n",		/* bare integer */
		" $FLTCON MACH=1.0e4$\nNEXT CASE\n",		/* lower e */
		" $FLTCON MACH=1.0\n  ,ALT=2.0$\nNEXT CASE\n",	/* wrap before , */
		" $FLTCON MACH=1.\n  0$\nNEXT CASE\n",		/* split number */
		"$FLTCON MACH=1.0$\nNEXT CASE\n",		/* $ in column 1 */
		" $FLTCON MACH=1.0,\n $ALT=1.0$\nNEXT CASE\n",
		" $FLTCON MACH=1.0$\n",				/* no NEXT CASE */
		" $FLTCON MACH=1.0,\nNEXT CASE\n",		/* not closed */
		"CASEID A\n\nNEXT CASE\n",			/* blank line */
		"* comment\nNEXT CASE\n",
		"DAMP\t\nNEXT CASE\n",
		"DIM  FT\nNEXT CASE\n",
		"FOO\nNEXT CASE\n",
		"CASEID x\r\nNEXT CASE\n",
		" $FLTCON MACH=0,5489$\nNEXT CASE\n",
		"CASEID 123456789012345678901234567890123456789012345678901234567890123456789012345\nNEXT CASE\n",
	};
	size_t i;
	char why[256];

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (deck_rules_check(bad[i], strlen(bad[i]), why,
				     sizeof(why)) == 0)
			fail_msg("checker accepted: %s", bad[i]);
	{
		static const char good[] = " $A X=1.0,\n  Y=2*0.5,.TRUE.$\n"
					   "NEXT CASE\n";

		assert_int_equal(deck_rules_check(good, strlen(good), why,
						  sizeof(why)), 0);
	}
}

/* ---- parsing ------------------------------------------------------------- */

static void test_parse_grammar(void **state)
{
	static const char text[] =
		"CASEID FIRST\r\n"
		" $FLTCON NMACH=1.0, MACH(1)=.5,\r\n"
		"   NALPHA = 3.0 , ALSCHD( 2 )=2*1.5E1,-4.,\r\n"
		"   HYPERS=.FALSE.,$\r\n"
		" $OPTINS NOTE='A B',SREF=+1.0E-3$ \r\n"
		"NEXT CASE\r\n"
		" $FLTCON MACH(1)=2.0$\r\n"
		"NACA W 5 65415\r\n"
		"NEXT CASE";
	struct deck_problems pr = DECK_PROBLEMS_INIT;
	struct deck *d = parse_ok(text, &pr);
	const struct deck_var *v;
	double a[4];
	size_t n;
	char *w;

	(void)state;
	assert_int_equal(pr.nr, 0);
	assert_int_equal(d->nr, 2);
	assert_int_equal(d->cases[0]->nr, 3);
	assert_int_equal(d->cases[1]->nr, 2);
	assert_int_equal(d->cases[0]->cards[1]->line, 2);
	v = deck_find_var(deck_find_namelist(d->cases[0], "FLTCON", NULL),
			  "ALSCHD");
	assert_non_null(v);
	assert_int_equal(v->index, 2);
	assert_int_equal(v->nr, 2);
	assert_int_equal(v->values[0].repeat, 2);
	assert_string_equal(v->values[0].text, "1.5E1");
	assert_int_equal(deck_get_numbers(d->cases[0], "FLTCON", "ALSCHD", a,
					  4, &n), 0);
	assert_int_equal(n, 4);
	assert_true(isnan(a[0]) && a[1] == 15.0 && a[2] == 15.0 &&
		    a[3] == -4.0);
	w = assert_fixed_point(d);
	/* Verbatim spellings survive; LF only. */
	assert_non_null(strstr(w, "MACH(1)=.5,"));
	assert_non_null(strstr(w, "ALSCHD(2)=2*1.5E1,-4.,"));
	assert_non_null(strstr(w, "NOTE='A B',SREF=+1.0E-3$\n"));
	assert_null(strchr(w, '\r'));
	free(w);
	deck_free(d);
}

static void test_parse_problems(void **state)
{
	(void)state;
	expect_one("* comment\nNEXT CASE\n", DECK_P_COMMENT, 1, 1);
	expect_one("DAMP\n! note\nNEXT CASE\n", DECK_P_COMMENT, 2, 1);
	expect_one("# note\nNEXT CASE\n", DECK_P_COMMENT, 1, 1);
	expect_one(" $A X=1.0 ! why\n  $\nNEXT CASE\n", DECK_P_COMMENT, 1, 11);
	expect_one(" $A X=1.0,\tY=2.0$\nNEXT CASE\n", DECK_P_TAB, 1, 11);
	expect_one("DAMP\n\nNEXT CASE\n", DECK_P_BLANK_LINE, 2, 0);
	expect_one("DAMP\n   \nNEXT CASE\n", DECK_P_BLANK_LINE, 2, 0);
	expect_one("$A X=1.0$\nNEXT CASE\n", DECK_P_DOLLAR_COLUMN1, 1, 1);
	expect_one("DAMP\nFOO BAR\nNEXT CASE\n", DECK_P_CONTROL_CARD, 2, 1);
	expect_one("DIM FEET\nNEXT CASE\n", DECK_P_CONTROL_CARD, 1, 1);
	expect_one("NACA-W-7-0012\nNEXT CASE\n", DECK_P_CONTROL_CARD, 1, 1);
	expect_one(" $A X=1.0,\n  Y=1.5e3$\nNEXT CASE\n",
		   DECK_P_LOWER_EXPONENT, 2, 5);
	expect_one(" $A X=0,5489$\nNEXT CASE\n", DECK_P_DECIMAL_COMMA, 1, 7);
	expect_one(" $A NALPHA=6$\nNEXT CASE\n", DECK_P_BARE_INTEGER, 1, 12);
	expect_one(" $A X=1.0,\n  Y=2.0,\nNEXT CASE\n",
		   DECK_P_UNCLOSED_NAMELIST, 1, 2);
	expect_one(" $A X=1.0,\n $B Y=2.0$\nNEXT CASE\n",
		   DECK_P_UNCLOSED_NAMELIST, 1, 2);
	expect_one("  X=1.0$\nNEXT CASE\n", DECK_P_CONTINUATION, 1, 0);
	expect_one(" $A X=1.0 Y=2.0$\nNEXT CASE\n", DECK_P_SEPARATOR, 1, 11);
	expect_one(" $A X=1.0$ junk\nNEXT CASE\n", DECK_P_AFTER_END, 1, 12);
	expect_one(" $A xcg=1.0$\nNEXT CASE\n", DECK_P_NAME, 1, 5);
	expect_one(" $A X=.T.$\nNEXT CASE\n", DECK_P_LOGICAL, 1, 7);
	expect_one(" $A X=1.0E99$\nNEXT CASE\n", DECK_P_RANGE, 1, 7);
	expect_one("CASEID \x01x\nNEXT CASE\n", DECK_P_CHARACTER, 1, 8);
	{
		char line[128];

		snprintf(line, sizeof(line), "CASEID %-73s%s\nNEXT CASE\n",
			 "X", "DROPPED");
		expect_one(line, DECK_P_LONG_LINE, 1, 81);
		/* blanks past 80 are harmless */
		snprintf(line, sizeof(line), "CASEID %-73s%s\nNEXT CASE\n",
			 "X", "    ");
		{
			struct deck_problems pr = DECK_PROBLEMS_INIT;
			struct deck *d = parse_ok(line, &pr);

			assert_int_equal(pr.nr, 0);
			deck_free(d);
		}
	}
	/* What DATCOM's input check (RVALUE) marks ** ERROR ** though it
	 * reads the value: an exponent of 0, an E without a point before
	 * it.  Each is one problem, and the deck written from it has a
	 * spelling the check passes (issue 28). */
	expect_one(" $A X=1.5E0$\nNEXT CASE\n", DECK_P_EXPONENT, 1, 7);
	expect_one(" $A X=2.0,\n  Y=15E-1$\nNEXT CASE\n", DECK_P_EXPONENT, 2,
		   5);
	{
		static const char *const in[][2] = {
			{ " $A X=1.5E0$\nNEXT CASE\n", " $A X=1.5$\n" },
			{ " $A X=-1.5E-00$\nNEXT CASE\n", " $A X=-1.5$\n" },
			{ " $A X=2*3.E+0$\nNEXT CASE\n", " $A X=2*3.$\n" },
			{ " $A X=15E-1$\nNEXT CASE\n", " $A X=15.0E-1$\n" },
			{ " $A X=7E0$\nNEXT CASE\n", " $A X=7.0$\n" },
			{ " $A X=1.5E10$\nNEXT CASE\n", " $A X=1.5E10$\n" },
			/* what DATCOM's reader overflows on (todec.f):
			 * the value, in a form it reads */
			{ " $A X=0.8327717748460195$\nNEXT CASE\n",
			  " $A X=8327717.748460195E-7$\n" },
			{ " $A X=15000000000.0$\nNEXT CASE\n",
			  " $A X=1.5E10$\n" },
			{ " $A X=2147483648.0$\nNEXT CASE\n",
			  " $A X=2.147483648E9$\n" },
			{ " $A X=0.2147483648E2$\nNEXT CASE\n",
			  " $A X=21.47483648$\n" },
			/* at the limit, and leading zeros after the point,
			 * add nothing: as they are */
			{ " $A X=2147483647.0$\nNEXT CASE\n",
			  " $A X=2147483647.0$\n" },
			{ " $A X=-1.2147483647$\nNEXT CASE\n",
			  " $A X=-1.2147483647$\n" },
			{ " $A X=0.000000000000123$\nNEXT CASE\n",
			  " $A X=0.000000000000123$\n" },
		};
		static const size_t problems[] = { 1, 1, 1, 1, 1, 0, 1, 1, 1,
						   1, 0, 0, 0 };

		for (size_t k = 0; k < sizeof(in) / sizeof(*in); k++) {
			struct deck_problems pr = DECK_PROBLEMS_INIT;
			struct deck *d = parse_ok(in[k][0], &pr);
			char *w = assert_fixed_point(d);

			if (strncmp(w, in[k][1], strlen(in[k][1])))
				fail_msg("%s: wrote %s", in[k][0], w);
			if (pr.nr != problems[k] ||
			    (pr.nr && k >= 6 && pr.v[0].kind != DECK_P_DIGITS))
				fail_msg("%s: %zu problems", in[k][0], pr.nr);
			free(w);
			deck_free(d);
			deck_problems_release(&pr);
		}
	}
	/* Missing NEXT CASE: a warning on the last card's line. */
	{
		struct deck_problems pr = DECK_PROBLEMS_INIT;
		struct deck *d = parse_ok("NEXT CASE\nDAMP\n* c\n", &pr);

		assert_int_equal(d->nr, 2);
		assert_non_null(find_problem(&pr, DECK_P_NO_NEXT_CASE, 2));
		assert_int_equal(find_problem(&pr, DECK_P_NO_NEXT_CASE, 2)
				 ->severity, DECK_WARNING);
		assert_int_equal(deck_problems_count(&pr, DECK_ERROR), 1);
		assert_int_equal(deck_problems_count(&pr, DECK_WARNING), 2);
		deck_free(d);
		deck_problems_release(&pr);
	}
	/* The recovered deck writes cleanly. */
	{
		struct deck_problems pr = DECK_PROBLEMS_INIT;
		struct deck *d = parse_ok("*c\n\n$A X=6,Y=1e5,\tZ=.t.\nFOO\n",
					  &pr);
		char *w = assert_fixed_point(d);

		assert_string_equal(w, " $A X=6.0,Y=1.0E5,Z=.TRUE.$\nNEXT CASE\n");
		assert_true(pr.nr >= 8);
		free(w);
		deck_free(d);
		deck_problems_release(&pr);
	}
}

static void test_parse_fatal(void **state)
{
	(void)state;
	expect_fatal(" $A 1.0$\n", 1, 5);
	expect_fatal(" $A X 1.0$\n", 1, 5);
	expect_fatal(" $A X=$\n", 1, 7);
	expect_fatal(" $A X=1.0,,2.0$\n", 1, 11);
	expect_fatal(" $A X='AB$\n", 1, 7);
	expect_fatal(" $A X=1.0.0$\n", 1, 10);
	expect_fatal(" $A X=1.0E$\n", 1, 7);
	expect_fatal(" $A X(0)=1.0$\n", 1, 7);
	expect_fatal(" $A X(1000)=1.0$\n", 1, 7);
	expect_fatal(" $A X=1000*1.0$\n", 1, 7);
	expect_fatal(" $A ABCDEFG=1.0$\n", 1, 5);
	expect_fatal(" $ABCDEFG X=1.0$\n", 1, 3);
	expect_fatal(" $ X=1.0$\n", 1, 3);
	expect_fatal(" $A X=@$\n", 1, 7);
	expect_fatal("DAMP\n $A X=1.0,\n  Y=1.0,Z=#\n", 3, 11);
	expect_fatal(" $A X=0.000000000000000000000000000000000000000000000"
		     "0000000000000000001$\n", 1, 7);
}

/* ---- the public example decks ---------------------------------------------- */

/* Parse, then check the rewrite is a clean fixed point. */
static struct deck *example_roundtrip(const char *buf, size_t len,
				      struct deck_problems *pr)
{
	struct deck *d = NULL;
	char *w;

	assert_int_equal(deck_parse(buf, len, &d, pr), 0);
	w = assert_fixed_point(d);
	free(w);
	return d;
}

static const char *const run_decks[] = {
	"aircraftdatcom_F16_for005.dat", "aircraftdatcom_sprob.in",
	"OpenDatcom_orbiter_for005.dat", "katiakms_DATCOM_for005.dat",
	"OpenPost_PUB_ROCKET_for005.dat",
};

static void test_examples_run(void **state)
{
	size_t i, seen = 0;

	(void)state;
	for (i = 0; i < sizeof(run_decks) / sizeof(run_decks[0]); i++) {
		struct deck_problems pr = DECK_PROBLEMS_INIT;
		size_t len, j;
		char *buf = read_example(run_decks[i], &len);
		struct deck *d;
		/* these two end with a case that has no NEXT CASE */
		bool open_end = strstr(run_decks[i], "orbiter") ||
				strstr(run_decks[i], "OpenPost");

		if (!buf)
			continue;
		seen++;
		d = example_roundtrip(buf, len, &pr);
		for (j = 0; j < pr.nr; j++)
			if (pr.v[j].kind != DECK_P_NO_NEXT_CASE || !open_end)
				fail_msg("%s line %u: %s", run_decks[i],
					 pr.v[j].line, pr.v[j].message);
		assert_int_equal(pr.nr, open_end ? 1 : 0);
		assert_int_equal(deck_problems_count(&pr, DECK_ERROR), 0);
		assert_true(d->nr >= 1);
		deck_free(d);
		deck_problems_release(&pr);
		free(buf);
	}
	if (!seen)
		skip();
}

/* sprob: cases, repeat counts and merged FLTCONs read as DATCOM reads. */
static void test_example_sprob(void **state)
{
	struct deck_problems pr = DECK_PROBLEMS_INIT;
	size_t len, n, i, nc = 0;
	char *buf = read_example("aircraftdatcom_sprob.in", &len);
	struct deck *d;
	double v[20];
	const char *p;

	(void)state;
	if (!buf)
		skip();
	for (p = buf; (p = strstr(p, "NEXT CASE")); p++)
		nc++;
	d = parse_ok(buf, &pr);
	assert_int_equal(d->nr, nc);
	assert_int_equal(deck_get_numbers(d->cases[0], "FLTCON", "ALSCHD", v,
					  20, &n), 0);
	assert_int_equal(n, 11);
	assert_true(v[0] == -6.0 && v[10] == 24.0);
	/* `CLALPA(1)=2*0.141` in the case with BUILD */
	for (i = 0; i < d->nr; i++)
		if (deck_get_numbers(d->cases[i], "VTSCHR", "CLALPA", v, 20,
				     &n) == 0)
			break;
	assert_true(i < d->nr);
	assert_int_equal(n, 2);
	assert_true(v[0] == 0.141 && v[1] == 0.141);
	deck_free(d);
	deck_problems_release(&pr);
	free(buf);
}

/* DATCOM+ decks: every comment, TAB and blank line reported at its line,
 * and nothing else but the missing NEXT CASE. */
static void test_examples_pydatcom(void **state)
{
	static const char *const names[] = {
		"pydatcom_Navion.dcm", "pydatcom_SenecaII.dcm",
		"pydatcom_B-737.dcm",
	};
	size_t i, seen = 0;

	(void)state;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		struct deck_problems pr = DECK_PROBLEMS_INIT;
		size_t len, pos = 0, want = 0, comments = 0, blanks = 0, j;
		unsigned line = 0;
		char *buf = read_example(names[i], &len);
		struct deck *d;

		if (!buf)
			continue;
		seen++;
		d = example_roundtrip(buf, len, &pr);
		while (pos < len) {
			char *e = memchr(buf + pos, '\n', len - pos);
			size_t n = e ? (size_t)(e - buf) - pos : len - pos, k;
			bool blank = true;

			line++;
			for (k = 0; k < n; k++)
				if (!strchr(" \t\r", buf[pos + k]))
					blank = false;
			if (memchr(buf + pos, '\t', n)) {
				assert_non_null(find_problem(&pr, DECK_P_TAB,
							     line));
				want++;
			}
			if (blank) {
				assert_non_null(find_problem(
					&pr, DECK_P_BLANK_LINE, line));
				want++;
				blanks++;
			} else if (strchr("*!#", buf[pos])) {
				assert_non_null(find_problem(
					&pr, DECK_P_COMMENT, line));
				want++;
				comments++;
			}
			pos += n + 1;
		}
		assert_true(comments > 0 && blanks > 0);
		for (j = 0; j < pr.nr; j++)
			if (pr.v[j].kind != DECK_P_TAB &&
			    pr.v[j].kind != DECK_P_BLANK_LINE &&
			    pr.v[j].kind != DECK_P_COMMENT &&
			    pr.v[j].kind != DECK_P_NO_NEXT_CASE)
				fail_msg("%s line %u: %s", names[i],
					 pr.v[j].line, pr.v[j].message);
		assert_int_equal(pr.nr, want + 1);
		assert_int_equal(count_kind(&pr, DECK_P_NO_NEXT_CASE), 1);
		if (strstr(names[i], "Seneca"))
			assert_int_equal(count_kind(&pr, DECK_P_TAB), 1);
		deck_free(d);
		deck_problems_release(&pr);
		free(buf);
	}
	if (!seen)
		skip();
}

static void test_example_danalex(void **state)
{
	struct deck_problems pr = DECK_PROBLEMS_INIT;
	size_t len;
	char *buf = read_example("DanAlex03_SysID_for005.dat", &len);
	unsigned line = 1, symflp = 0, lines = 0;
	struct deck *d;
	const char *p;

	(void)state;
	if (!buf)
		skip();
	for (p = buf; *p; p++) {
		if (p == buf || p[-1] == '\n') {
			if (!strncmp(p, " $SYMFLP", 8))
				symflp = line;
			lines = line;
		}
		if (*p == '\n')
			line++;
	}
	assert_true(symflp > 0);
	d = example_roundtrip(buf, len, &pr);
	assert_int_equal(pr.nr, 2);
	assert_non_null(find_problem(&pr, DECK_P_UNCLOSED_NAMELIST, symflp));
	assert_int_equal(find_problem(&pr, DECK_P_UNCLOSED_NAMELIST, symflp)
			 ->column, 2);
	/* the last line (DAMP) ends the deck without NEXT CASE */
	assert_non_null(find_problem(&pr, DECK_P_NO_NEXT_CASE, lines));
	assert_int_equal(d->nr, 2);
	deck_free(d);
	deck_problems_release(&pr);
	free(buf);
}

/* Repeat `unit` `n` times, then `tail`. */
static char *repeat(const char *unit, size_t n, const char *tail)
{
	struct sbuf sb = SBUF_INIT;

	for (size_t i = 0; i < n; i++)
		assert_int_equal(sbuf_addstr(&sb, unit), 0);
	assert_int_equal(sbuf_addstr(&sb, tail), 0);
	return sbuf_detach(&sb, NULL);
}

/* The limits: size, cases, namelists; at the limits a deck parses. */
static void test_parse_limits(void **state)
{
	struct deck_problems pr = DECK_PROBLEMS_INIT;
	struct deck *d = NULL;
	char *text;

	(void)state;
	text = repeat(" $FLTCON WT=1.0$\nNEXT CASE\n", DECK_MAX_CASES, "");
	assert_int_equal(deck_parse(text, strlen(text), &d, NULL), 0);
	assert_int_equal(d->nr, DECK_MAX_CASES);
	deck_free(d);
	free(text);
	text = repeat(" $FLTCON WT=1.0$\nNEXT CASE\n", DECK_MAX_CASES,
		      " $FLTCON WT=2.0$\n");
	expect_fatal(text, 2 * DECK_MAX_CASES + 1, 1);
	free(text);
	text = repeat(" $FLTCON WT=1.0$\n", DECK_MAX_NAMELISTS, "");
	assert_int_equal(deck_parse(text, strlen(text), &d, NULL), 0);
	deck_free(d);
	free(text);
	text = repeat(" $FLTCON WT=1.0$\n", DECK_MAX_NAMELISTS + 1, "");
	expect_fatal(text, DECK_MAX_NAMELISTS + 1, 3);
	free(text);
	text = repeat(" ", DECK_MAX_SIZE + 1, "");
	assert_int_equal(deck_parse(text, strlen(text), &d, &pr), -EINVAL);
	assert_int_equal(pr.nr, 1);
	assert_string_equal(pr.v[0].message,
			    "the deck is 1048577 bytes: at most 1048576 are read");
	deck_problems_release(&pr);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_number_format),
		cmocka_unit_test(test_number_locale),
		cmocka_unit_test(test_number_property),
		cmocka_unit_test(test_number_check),
		cmocka_unit_test(test_api),
		cmocka_unit_test(test_write_refuses),
		cmocka_unit_test(test_checker_catches),
		cmocka_unit_test(test_random_decks),
		cmocka_unit_test(test_parse_grammar),
		cmocka_unit_test(test_parse_problems),
		cmocka_unit_test(test_parse_fatal),
		cmocka_unit_test(test_write_first_item_at_80),
		cmocka_unit_test(test_parse_limits),
		cmocka_unit_test(test_examples_run),
		cmocka_unit_test(test_example_sprob),
		cmocka_unit_test(test_examples_pydatcom),
		cmocka_unit_test(test_example_danalex),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
