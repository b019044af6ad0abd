/* printout: DATCOM's printout read for its coefficient tables, written
 * again as CSV and as a gnuplot script; see printout.h. */
#include "formats/printout.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const char *const printout_column_names[PRINTOUT_COLUMNS] = {
	"CD", "CL", "CM", "CN", "CA", "XCP", "CLA", "CMA", "CYB", "CNB", "CLB",
};

/* A line of the text: not NUL-terminated, its '\r' and '\n' left out. */
struct line {
	const char *s;
	size_t len;
};

/* The tokens of a table's head after its "0": ALPHA, then the columns. */
#define HEADS (1 + PRINTOUT_COLUMNS)

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Copy columns [from, to) of `l`, trimmed, as printable ASCII ('?' for
 * any other byte), into buf (size > 0). */
static void field(const struct line *l, size_t from, size_t to, char *buf,
		  size_t size)
{
	size_t n = 0;

	if (to > l->len)
		to = l->len;
	while (from < to && is_blank(l->s[from]))
		from++;
	while (to > from && is_blank(l->s[to - 1]))
		to--;
	for (size_t i = from; i < to && n + 1 < size; i++) {
		unsigned char c = (unsigned char)l->s[i];

		buf[n++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
	}
	buf[n] = '\0';
}

/* The whole line, trimmed (as field()). */
static void trimmed(const struct line *l, char *buf, size_t size)
{
	field(l, 0, l->len, buf, size);
}

/* The next token of `l` from *at: its start and end, or false. */
static bool next_token(const struct line *l, size_t *at, size_t *start,
		       size_t *end)
{
	size_t i = *at;

	while (i < l->len && is_blank(l->s[i]))
		i++;
	if (i >= l->len)
		return false;
	*start = i;
	while (i < l->len && !is_blank(l->s[i]))
		i++;
	*end = i;
	*at = i;
	return true;
}

static bool token_is(const struct line *l, size_t start, size_t end,
		     const char *word)
{
	size_t n = strlen(word);

	return end - start == n && !memcmp(l->s + start, word, n);
}

/* Whether `l` is a table's head; its heads' centers (twice the column,
 * to stay whole) into centers[]. */
static bool table_head(const struct line *l, size_t centers[HEADS])
{
	size_t at = 0, start, end;

	if (!l->len || l->s[0] != '0' ||
	    !next_token(l, &at, &start, &end) || !token_is(l, start, end, "0"))
		return false;
	for (size_t k = 0; k < HEADS; k++) {
		const char *want = k ? printout_column_names[k - 1] : "ALPHA";

		if (!next_token(l, &at, &start, &end) ||
		    !token_is(l, start, end, want))
			return false;
		centers[k] = start + end;
	}
	return !next_token(l, &at, &start, &end);
}

/* A row of a table: a blank first, then a number's start. */
static bool table_row(const struct line *l)
{
	size_t i = 0;

	if (!l->len || l->s[0] != ' ')
		return false;
	while (i < l->len && l->s[i] == ' ')
		i++;
	if (i < l->len && l->s[i] == '-')
		i++;
	if (i < l->len && l->s[i] == '.')
		i++;
	return i < l->len && is_digit(l->s[i]);
}

/* A flight condition's row: "0 0.549   10000.00 ..." (the oracle's
 * ^0 ?(\d*\.\d+)\s). */
static bool flight_row(const struct line *l)
{
	size_t i = 1, digits = 0;

	if (l->len < 2 || l->s[0] != '0')
		return false;
	if (l->s[i] == ' ')
		i++;
	while (i < l->len && is_digit(l->s[i]))
		i++;
	if (i >= l->len || l->s[i] != '.')
		return false;
	for (i++; i < l->len && is_digit(l->s[i]); i++)
		digits++;
	return digits && i < l->len && is_blank(l->s[i]);
}

static bool ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), m = strlen(tail);

	return n >= m && !strcmp(s + n - m, tail);
}

/* What lies above a table's head: back[0] is the line just above it. */
static void context(struct printout_table *t, const struct line *back,
		    size_t nback)
{
	size_t flight = nback, config = nback;
	char text[sizeof(t->config)];

	for (size_t k = 0; k < nback && flight == nback; k++)
		if (flight_row(&back[k]))
			flight = k;
	if (flight == nback)
		return;
	/* FORMAT (1H0, F6.3, F11.2, ...) */
	field(&back[flight], 1, 7, t->mach, sizeof(t->mach));
	field(&back[flight], 7, 18, t->alt, sizeof(t->alt));
	if (flight + 1 < nback)
		field(&back[flight + 1], 7, 18, t->alt_unit,
		      sizeof(t->alt_unit));
	for (size_t k = flight + 1; k < nback && config == nback; k++) {
		trimmed(&back[k], text, sizeof(text));
		if (ends_with(text, "CONFIGURATION"))
			config = k;
	}
	if (config == nback)
		return;
	trimmed(&back[config], t->config, sizeof(t->config));
	/* the case's title, between the configuration and the flight
	 * conditions' frame, when it has one */
	if (config >= 1) {
		trimmed(&back[config - 1], text, sizeof(text));
		if (text[0] && !strstr(text, "FLIGHT CONDITIONS"))
			trimmed(&back[config - 1], t->case_id,
				sizeof(t->case_id));
	}
}

/* The values of row `l` into `r`, each to the nearest head. */
static void read_row(const struct line *l, const size_t centers[HEADS],
		     struct printout_row *r)
{
	size_t at = 0, start, end;

	memset(r, 0, sizeof(*r));
	while (next_token(l, &at, &start, &end)) {
		size_t mid = start + end, best = 0, dist = SIZE_MAX;
		char *cell;

		for (size_t k = 0; k < HEADS; k++) {
			size_t d = mid > centers[k] ? mid - centers[k]
						    : centers[k] - mid;

			if (d < dist) {
				dist = d;
				best = k;
			}
		}
		cell = best ? r->cell[best - 1] : r->alpha;
		if (!cell[0])
			field(l, start, end, cell, PRINTOUT_CELL);
	}
}

static bool case_marker(const struct line *l)
{
	static const char mark[] = "THE FOLLOWING IS A LIST OF ALL INPUT CARDS"
				   " FOR THIS CASE";

	return l->len >= sizeof(mark) - 1 &&
	       memmem(l->s, l->len, mark, sizeof(mark) - 1);
}

void printout_release(struct printout *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->tables[i].rows);
	free(p->tables);
	memset(p, 0, sizeof(*p));
}

int printout_parse(const char *text, size_t len, struct printout *out)
{
	struct line back[PRINTOUT_LOOK_BACK], l;
	size_t nback = 0, centers[HEADS];
	struct printout_table *t = NULL;
	const char *end;
	unsigned cases = 0;
	bool after_head = false;
	size_t alloc = 0;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	if (len > PRINTOUT_MAX_SIZE) {
		len = PRINTOUT_MAX_SIZE;
		out->truncated = true;
	}
	end = text + len;
	for (const char *p = text; !ret && p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));

		l.s = p;
		l.len = (size_t)((nl ? nl : end) - p);
		if (l.len && l.s[l.len - 1] == '\r')
			l.len--;
		p = nl ? nl + 1 : end;
		if (t) {
			struct printout_row *rows;

			/* the "0" line under the head */
			if (after_head && l.len && l.s[0] == '0' &&
			    !flight_row(&l)) {
				char z[4];

				after_head = false;
				trimmed(&l, z, sizeof(z));
				if (!strcmp(z, "0"))
					continue;
			}
			after_head = false;
			if (table_row(&l)) {
				if (t->nrows >= PRINTOUT_MAX_ROWS) {
					out->truncated = true;
					continue;
				}
				rows = realloc(t->rows, (t->nrows + 1) *
					       sizeof(*rows));
				if (!rows) {
					ret = -ENOMEM;
					break;
				}
				t->rows = rows;
				read_row(&l, centers, &t->rows[t->nrows++]);
				continue;
			}
			t = NULL;
		}
		if (case_marker(&l))
			cases++;
		if (table_head(&l, centers)) {
			if (out->n >= PRINTOUT_MAX_TABLES) {
				out->truncated = true;
				break;
			}
			if (out->n == alloc) {
				size_t grown = alloc ? 2 * alloc : 8;
				struct printout_table *tables =
					realloc(out->tables,
						grown * sizeof(*tables));

				if (!tables) {
					ret = -ENOMEM;
					break;
				}
				out->tables = tables;
				alloc = grown;
			}
			t = &out->tables[out->n++];
			memset(t, 0, sizeof(*t));
			t->case_no = cases ? cases : 1;
			context(t, back, nback);
			after_head = true;
		}
		/* newest first */
		memmove(back + 1, back, (PRINTOUT_LOOK_BACK - 1) * sizeof(*back));
		back[0] = l;
		if (nback < PRINTOUT_LOOK_BACK)
			nback++;
	}
	if (ret < 0)
		printout_release(out);
	return ret;
}

/* [+-]digits[.digits] or [+-].digits, then [eE][+-]digits */
bool printout_usable(const char *c)
{
	size_t before = 0, after = 0;

	if (*c == '-' || *c == '+')
		c++;
	while (is_digit(*c)) {
		c++;
		before++;
	}
	if (*c == '.')
		for (c++; is_digit(*c); c++)
			after++;
	if (!before && !after)
		return false;
	if (*c == 'E' || *c == 'e') {
		size_t exp = 0;

		c++;
		if (*c == '-' || *c == '+')
			c++;
		for (; is_digit(*c); c++)
			exp++;
		if (!exp)
			return false;
	}
	return !*c;
}

/* Why a printed value is no number, in a few words. */
static const char *why_not(const char *cell)
{
	if (!strcmp(cell, "NDM"))
		return "no method";
	if (cell[0] == '*')
		return "too large to print";
	if (!strcasecmp(cell, "NaN") || !strcasecmp(cell, "-NaN"))
		return "not a number";
	if (strstr(cell, "Inf") || strstr(cell, "INF"))
		return "infinite";
	return "not a number";
}

/* One CSV field: quoted when it holds a comma, a quote or a blank at
 * either end. */
static int csv_field(struct sbuf *out, const char *v, bool last)
{
	size_t n = strlen(v);
	int ret;

	if (strpbrk(v, ",\"\r\n") || (n && (v[0] == ' ' || v[n - 1] == ' '))) {
		ret = sbuf_addch(out, '"');
		for (const char *c = v; !ret && *c; c++)
			ret = *c == '"' ? sbuf_addstr(out, "\"\"")
					: sbuf_addch(out, *c);
		if (!ret)
			ret = sbuf_addch(out, '"');
	} else {
		ret = sbuf_addstr(out, v);
	}
	return ret ? ret : sbuf_addch(out, last ? '\n' : ',');
}

int printout_csv(const struct printout *p, struct sbuf *out)
{
	struct sbuf why = SBUF_INIT;
	char num[16];
	int ret = sbuf_addstr(out, "case,case_id,configuration,mach,altitude,"
			      "alpha");

	for (size_t k = 0; !ret && k < PRINTOUT_COLUMNS; k++)
		ret = sbuf_addf(out, ",%s", printout_column_names[k]);
	if (!ret)
		ret = sbuf_addstr(out, ",why_empty\n");
	for (size_t i = 0; !ret && i < p->n; i++) {
		const struct printout_table *t = &p->tables[i];

		for (size_t r = 0; !ret && r < t->nrows; r++) {
			const struct printout_row *row = &t->rows[r];

			sbuf_reset(&why);
			snprintf(num, sizeof(num), "%u", t->case_no);
			ret = csv_field(out, num, false);
			if (!ret)
				ret = csv_field(out, t->case_id, false);
			if (!ret)
				ret = csv_field(out, t->config, false);
			if (!ret)
				ret = csv_field(out, t->mach, false);
			if (!ret)
				ret = csv_field(out, t->alt, false);
			if (!ret)
				ret = csv_field(out, printout_usable(row->alpha)
						? row->alpha : "", false);
			for (size_t k = 0; !ret && k < PRINTOUT_COLUMNS; k++) {
				const char *c = row->cell[k];
				bool ok = !c[0] || printout_usable(c);

				if (!ok)
					ret = sbuf_addf(&why, "%s%s: %s (%s)",
							why.len ? "; " : "",
							printout_column_names[k],
							c, why_not(c));
				if (!ret)
					ret = csv_field(out, ok ? c : "", false);
			}
			if (!ret)
				ret = csv_field(out, why.len ? why.buf : "",
						true);
		}
	}
	sbuf_release(&why);
	return ret;
}

/* ---- the plot ------------------------------------------------------------- */

/* `text` in a gnuplot single-quoted string: printable ASCII (field()
 * made it so), ' doubled. */
static int quoted(struct sbuf *out, const char *text)
{
	int ret = sbuf_addch(out, '\'');

	for (const char *c = text; !ret && *c; c++)
		ret = *c == '\'' ? sbuf_addstr(out, "''") : sbuf_addch(out, *c);
	return ret ? ret : sbuf_addch(out, '\'');
}

/* Whether a row has a point for the plot: an angle, and CL, CD or CM. */
static bool plottable(const struct printout_row *r)
{
	return printout_usable(r->alpha) &&
	       (printout_usable(r->cell[PRINTOUT_CL]) ||
		printout_usable(r->cell[PRINTOUT_CD]) ||
		printout_usable(r->cell[PRINTOUT_CM]));
}

static bool same_condition(const struct printout_table *a,
			   const struct printout_table *b)
{
	return a->case_no == b->case_no && !strcmp(a->mach, b->mach) &&
	       !strcmp(a->alt, b->alt);
}

/* A curve's name in the key: "M 0.549, 10000.00 ft" (and its case's
 * number when there are several). */
static int curve_title(struct sbuf *out, const struct printout_table *t,
		       bool cases)
{
	struct sbuf s = SBUF_INIT;
	int ret = 0;

	if (cases)
		ret = sbuf_addf(&s, "case %u, ", t->case_no);
	if (!ret)
		ret = sbuf_addf(&s, "M %s", t->mach[0] ? t->mach : "?");
	if (!ret && t->alt[0])
		ret = sbuf_addf(&s, ", %s %s", t->alt,
				!strcmp(t->alt_unit, "M") ? "m"
				: !strcmp(t->alt_unit, "FT") ? "ft" : "");
	if (!ret)
		ret = quoted(out, s.buf ? s.buf : "");
	sbuf_release(&s);
	return ret;
}

/* One panel: columns `x` and `y` of every curve's data block. */
static int panel(struct sbuf *out, const struct printout_table *const *curve,
		 size_t n, bool cases, int x, int y, const char *xlabel,
		 const char *ylabel, bool key)
{
	int ret = sbuf_addf(out, "set xlabel '%s'\nset ylabel '%s'\n%s\nplot",
			    xlabel, ylabel, key ? "set key top left box opaque"
			    " noenhanced" : "unset key");

	for (size_t i = 0; !ret && i < n; i++) {
		ret = sbuf_addf(out, "%s $c%zu using %d:%d with linespoints"
				" lw 2 pt 7 ps 0.7 title ", i ? ", \\\n    " :
				"", i + 1, x, y);
		if (!ret)
			ret = curve_title(out, curve[i], cases);
	}
	return ret ? ret : sbuf_addch(out, '\n');
}

int printout_plot_script(const struct printout *p, const char *svg_name,
			 struct sbuf *out)
{
	const struct printout_table *curve[PRINTOUT_MAX_CURVES];
	size_t n = 0, left_out = 0;
	bool cases = false;
	struct sbuf title = SBUF_INIT;
	int ret = 0;

	/* the last table of each flight condition: the whole aircraft */
	for (size_t i = 0; i < p->n; i++) {
		const struct printout_table *t = &p->tables[i];
		bool any = false, placed = false;

		for (size_t r = 0; r < t->nrows && !any; r++)
			any = plottable(&t->rows[r]);
		if (!any)
			continue;
		for (size_t k = 0; k < n && !placed; k++)
			if (same_condition(curve[k], t)) {
				curve[k] = t;
				placed = true;
			}
		if (placed)
			continue;
		if (n < PRINTOUT_MAX_CURVES)
			curve[n++] = t;
		else
			left_out++;
	}
	if (!n)
		return -ENOENT;
	for (size_t k = 1; k < n; k++)
		cases |= curve[k]->case_no != curve[0]->case_no;
	ret = sbuf_addf(&title, "DATCOM: %s", curve[0]->case_id[0]
			? curve[0]->case_id : "the first case of the deck");
	if (!ret && cases)
		ret = sbuf_addstr(&title, " and the cases after it");
	if (!ret && curve[0]->config[0])
		ret = sbuf_addf(&title, " (%s)", curve[0]->config);
	if (!ret && left_out)
		ret = sbuf_addf(&title, ", the first %zu flight conditions of"
				" %zu", n, n + left_out);
	if (!ret)
		ret = sbuf_addstr(out, "# flowfs: the coefficients DATCOM printed"
				  " (core/formats/printout.c)\n");
	/* values that are no number come as '?', and make no point */
	for (size_t k = 0; !ret && k < n; k++) {
		const struct printout_table *t = curve[k];

		ret = sbuf_addf(out, "$c%zu << EOD\n", k + 1);
		for (size_t r = 0; !ret && r < t->nrows; r++) {
			const struct printout_row *row = &t->rows[r];

			if (!plottable(row))
				continue;
			ret = sbuf_addstr(out, row->alpha);
			for (int c = PRINTOUT_CD; !ret && c <= PRINTOUT_CM; c++)
				ret = sbuf_addf(out, " %s", printout_usable(
						row->cell[c]) ? row->cell[c]
							      : "?");
			if (!ret)
				ret = sbuf_addch(out, '\n');
		}
		if (!ret)
			ret = sbuf_addstr(out, "EOD\n");
	}
	if (!ret)
		ret = sbuf_addstr(out, "set encoding utf8\n"
			"set terminal svg size 1200,900 dynamic enhanced"
			" font 'Helvetica,14' background rgb 'white'\n"
			"set output ");
	if (!ret)
		ret = quoted(out, svg_name);
	if (!ret)
		ret = sbuf_addstr(out, "\nset datafile missing '?'\n"
			"set grid lc rgb '#d8d8d8' lw 1\n"
			"set border lw 1.2\n"
			"set mxtics 2\nset mytics 2\n"
			/* no point on the frame */
			"set offsets graph 0.04, graph 0.04, graph 0.06,"
			" graph 0.06\n"
			"set multiplot layout 2,2 title ");
	if (!ret)
		ret = quoted(out, title.buf);
	if (!ret)
		ret = sbuf_addstr(out, " noenhanced font ',16'\n");
	/* data columns: 1 alpha, 2 CD, 3 CL, 4 CM */
	if (!ret)
		ret = panel(out, curve, n, cases, 1, 3,
			    "angle of attack α (deg)", "lift coefficient C_L",
			    true);
	if (!ret)
		ret = panel(out, curve, n, cases, 1, 2,
			    "angle of attack α (deg)", "drag coefficient C_D",
			    false);
	if (!ret)
		ret = panel(out, curve, n, cases, 1, 4,
			    "angle of attack α (deg)",
			    "pitching-moment coefficient C_m", false);
	if (!ret)
		ret = panel(out, curve, n, cases, 2, 3,
			    "drag coefficient C_D   (the drag polar)",
			    "lift coefficient C_L", false);
	if (!ret)
		ret = sbuf_addstr(out, "unset multiplot\n");
	sbuf_release(&title);
	return ret;
}

/* ---- input errors ----------------------------------------------------------- */

/* "** ERROR **" that is not part of check.f's "*** ERROR ***" (a value
 * DATCOM corrected and went on), or another input-error mark. */
static bool input_error(const struct line *l)
{
	static const char *const marks[] = {
		"ILLEGAL CONTROL CARD", "NAMELIST INPUT ERROR",
		"THIS CASE NOT RUN", "MISSING NAMELIST TERMINATION", "-ERROR--",
	};
	static const char err[] = "** ERROR **";
	const char *at = l->s, *end = l->s + l->len;

	for (size_t k = 0; k < sizeof(marks) / sizeof(*marks); k++)
		if (memmem(l->s, l->len, marks[k], strlen(marks[k])))
			return true;
	while ((at = memmem(at, (size_t)(end - at), err, sizeof(err) - 1))) {
		bool star_before = at > l->s && at[-1] == '*';
		bool star_after = at + sizeof(err) - 1 < end &&
				  at[sizeof(err) - 1] == '*';

		if (!star_before && !star_after)
			return true;
		at++;
	}
	return false;
}

size_t printout_input_errors(const char *text, size_t len, size_t max,
			     struct sbuf *out)
{
	const char *end = text + (len > PRINTOUT_MAX_SIZE ? PRINTOUT_MAX_SIZE
							  : len);
	char buf[136];
	size_t found = 0;

	for (const char *p = text; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		struct line l = { p, (size_t)((nl ? nl : end) - p) };

		p = nl ? nl + 1 : end;
		if (!input_error(&l))
			continue;
		if (found++ < max) {
			trimmed(&l, buf, sizeof(buf));
			if (sbuf_addf(out, "%s\n", buf) < 0)
				break;
		}
	}
	return found;
}

/* ---- a message as a picture --------------------------------------------- */

#define MESSAGE_COLUMNS 90
#define MESSAGE_LINES 12

/* `n` bytes of `s` as printable ASCII, XML-escaped. */
static int xml_text(struct sbuf *out, const char *s, size_t n)
{
	int ret = 0;

	for (size_t i = 0; !ret && i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		ret = c == '<' ? sbuf_addstr(out, "&lt;")
		      : c == '>' ? sbuf_addstr(out, "&gt;")
		      : c == '&' ? sbuf_addstr(out, "&amp;")
		      : c == '"' ? sbuf_addstr(out, "&quot;")
		      : sbuf_addch(out, c >= 0x20 && c < 0x7f ? (char)c : '?');
	}
	return ret;
}

static int message_line(struct sbuf *out, unsigned y, unsigned size,
			const char *weight, const char *s, size_t n)
{
	int ret = sbuf_addf(out, "<text x=\"24\" y=\"%u\" font-family="
			    "\"Helvetica,Arial,sans-serif\" font-size=\"%u\""
			    " font-weight=\"%s\" fill=\"black\">", y, size,
			    weight);

	if (!ret)
		ret = xml_text(out, s, n);
	return ret ? ret : sbuf_addstr(out, "</text>\n");
}

/* The length of the line that starts at `at`: up to MESSAGE_COLUMNS, cut
 * at a blank in its second half when there is one. */
static size_t message_wrap(const char *text, size_t len, size_t at)
{
	size_t n = len - at;

	if (n > MESSAGE_COLUMNS) {
		n = MESSAGE_COLUMNS;
		while (n > MESSAGE_COLUMNS / 2 && text[at + n] != ' ')
			n--;
		if (text[at + n] != ' ')
			n = MESSAGE_COLUMNS;
	}
	return n;
}

/* Past the line of n bytes at `at` and the blanks after it. */
static size_t message_next(const char *text, size_t len, size_t at, size_t n)
{
	at += n;
	while (at < len && text[at] == ' ')
		at++;
	return at;
}

int printout_message_svg(const char *title, const char *text,
			 struct sbuf *out)
{
	size_t len = strlen(text), at = 0, lines = 0;
	unsigned y = 44;
	int ret;

	/* the lines first: the picture's height follows from them */
	while (at < len && lines < MESSAGE_LINES) {
		lines++;
		at = message_next(text, len, at, message_wrap(text, len, at));
	}
	ret = sbuf_addf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
			"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"820\""
			" height=\"%zu\" viewBox=\"0 0 820 %zu\">\n"
			"<rect width=\"820\" height=\"%zu\" fill=\"white\""
			" stroke=\"#b0b0b0\"/>\n", 80 + 24 * lines,
			80 + 24 * lines, 80 + 24 * lines);
	if (!ret)
		ret = message_line(out, y, 20, "bold", title, strlen(title));
	at = 0;
	for (size_t k = 0; !ret && k < lines; k++) {
		size_t n = message_wrap(text, len, at);

		y += 24;
		ret = message_line(out, y + 8, 15, "normal", text + at, n);
		at = message_next(text, len, at, n);
	}
	return ret ? ret : sbuf_addstr(out, "</svg>\n");
}
