/*
 * printout: DATCOM's printout (for006, the file USAF Digital DATCOM writes
 * as output.dat) read for its coefficient tables, and those tables written
 * again as CSV rows and as a gnuplot script that plots them.  Text in,
 * text out: nothing here runs anything.
 *
 * ---- The tables ----
 * A coefficient table is what DATCOM prints under "CHARACTERISTICS AT
 * ANGLE OF ATTACK AND IN SIDESLIP": a head of 12 columns
 *
 *   0 ALPHA     CD       CL       CM       CN       CA       XCP  ...  CLB
 *
 * then one row per angle of attack.  DATCOM leaves a cell blank where it
 * prints no value (the sideslip derivatives after the first row), so each
 * value of a row goes to the column whose head is nearest to it, as
 * tests/integration/datcom_oracle.py reads it.  Above the head, within
 * PRINTOUT_LOOK_BACK lines, are the configuration ("WING-BODY
 * CONFIGURATION"), the case's title (its CASEID card, when it has one)
 * and the flight condition: Mach number and altitude in columns 1-6 and
 * 7-17 of the row after the units line (FORMAT F6.3, F11.2; the altitude
 * is blank when the deck gives Reynolds numbers instead), whose units
 * (FT or M) that line gives.  `case_no` counts DATCOM's "THE FOLLOWING IS
 * A LIST OF ALL INPUT CARDS FOR THIS CASE" lines before the table.
 *
 * Every value is kept as DATCOM printed it ("9.841E-02", "-0.0106"),
 * never converted: the CSV holds exactly the printed numbers.  A value
 * that is no number ("NDM": DATCOM has no method; "****": too large for
 * its format; "NaN", "Inf") is kept too, and printout_usable() says so.
 *
 * ---- Bounds ----
 * PRINTOUT_MAX_SIZE bytes of text are read (the rest is not, and
 * `truncated` says so), at most PRINTOUT_MAX_TABLES tables of
 * PRINTOUT_MAX_ROWS rows; a token longer than PRINTOUT_CELL - 1 bytes is
 * cut (and is no number).  Any bytes may come in: what is not printable
 * ASCII in a title becomes '?'.
 */
#ifndef FLOWFS_PRINTOUT_H
#define FLOWFS_PRINTOUT_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/sbuf.h"

#define PRINTOUT_MAX_SIZE ((size_t)16 << 20)
#define PRINTOUT_MAX_TABLES 4096
#define PRINTOUT_MAX_ROWS 64
#define PRINTOUT_LOOK_BACK 16
#define PRINTOUT_CELL 24
/* curves in a plot: more cannot be told apart */
#define PRINTOUT_MAX_CURVES 20

enum printout_column {
	PRINTOUT_CD, PRINTOUT_CL, PRINTOUT_CM, PRINTOUT_CN, PRINTOUT_CA,
	PRINTOUT_XCP, PRINTOUT_CLA, PRINTOUT_CMA, PRINTOUT_CYB, PRINTOUT_CNB,
	PRINTOUT_CLB, PRINTOUT_COLUMNS
};

/* "CD", "CL", ... as DATCOM heads them */
extern const char *const printout_column_names[PRINTOUT_COLUMNS];

struct printout_row {
	char alpha[PRINTOUT_CELL];
	char cell[PRINTOUT_COLUMNS][PRINTOUT_CELL];	/* "": blank */
};

struct printout_table {
	unsigned case_no;		/* 1, 2, ... */
	char case_id[96];		/* "" when the case has no title */
	char config[136];		/* "WING-BODY CONFIGURATION" */
	char mach[PRINTOUT_CELL];
	char alt[PRINTOUT_CELL];	/* "" when not printed */
	char alt_unit[8];		/* "FT", "M", or "" */
	struct printout_row *rows;
	size_t nrows;
};

struct printout {
	struct printout_table *tables;
	size_t n;
	bool truncated;		/* a bound above was reached */
};

/* Read the tables of `text` into *out (zero-filled first): 0 or -ENOMEM
 * (then *out holds nothing).  Text without a table is no error: n == 0. */
int printout_parse(const char *text, size_t len, struct printout *out);
void printout_release(struct printout *p);

/* Whether a printed value is a number (and a finite one). */
bool printout_usable(const char *cell);

/*
 * The tables as CSV (RFC 4180, "\n" line ends): a head
 *
 *   case,case_id,configuration,mach,altitude,alpha,CD,CL,...,CLB,why_empty
 *
 * then one row per row of every table, the values as printed, a value
 * that is no number as an empty cell named in why_empty
 * ("CL: NDM (no method); CM: **** (too large to print)").  Blank cells
 * stay empty and unnamed: DATCOM printed nothing there.
 */
int printout_csv(const struct printout *p, struct sbuf *out);

/*
 * A gnuplot script (gnuplot 5) drawing CL, CD and CM against alpha and
 * the drag polar (CL against CD) in four panels of one SVG written to
 * `svg_name`: one curve per flight condition (case, Mach and altitude),
 * from the last table printed for it (DATCOM prints the whole
 * configuration last), at most PRINTOUT_MAX_CURVES (the title says when
 * more were left out); values that are no number are left out of the
 * curve.  Text from the printout (titles) goes in single-quoted and
 * noenhanced, as printable ASCII: it can neither end the string nor be
 * read as markup.  -ENOENT when no table has a number to plot.
 */
int printout_plot_script(const struct printout *p, const char *svg_name,
			 struct sbuf *out);

/*
 * A picture that is a message, for where there is no plot: an SVG of
 * `title` and `text` (as printable ASCII, XML-escaped, `text` wrapped at
 * blanks to 90 columns, at most 12 lines), black on white.
 */
int printout_message_svg(const char *title, const char *text,
			 struct sbuf *out);

/* The lines where DATCOM says the deck's input is wrong (a card marked
 * "** ERROR **", ILLEGAL CONTROL CARD, namelist errors, THIS CASE NOT
 * RUN), at most `max` of them, trimmed, one per line; how many in all. */
size_t printout_input_errors(const char *text, size_t len, size_t max,
			     struct sbuf *out);

#endif
