/*
 * deck: a Digital DATCOM input deck (for005.dat) as data, its writer and its
 * parser.  The rules are those of ../shared/datcom/CARDS.md (what the real
 * Fortran program accepts); DESIGN.md §6 adds the number format.  Text
 * in, text out: no store, no session, no file system.
 *
 * ---- Model ----
 * A deck is a list of cases.  A case is an ordered list of cards; `NEXT CASE`
 * is not a card: the writer ends every case with it and the parser uses it
 * to split cases.  A card is either
 *
 *  - a control card: one line of text starting in column 1 (`CASEID ...`,
 *    `DIM FT`, `DERIV DEG`, `DAMP`, `BUILD`, `SAVE`, `TRIM`, `PART`, `PLOT`,
 *    `DUMP ...`, `WRITE ...`, `NAMELIST ...`, `NACA-W-6-63-415 ...`), or
 *  - a namelist (` $FLTCON NALPHA=6.0,... $`): a name and ordered variables.
 *
 * A variable has an upper-case name, an optional 1-based start index
 * (`ALSCHD(1)=...`; 0 = written without index) and one or more values.  A
 * value is a number, a logical (.TRUE./.FALSE.) or, rarely, a quoted text
 * (`'ABC'`, no apostrophe or `$` inside).  A number may carry a repeat count
 * (`2*0.141`, as in the USAF sample problems) and the exact spelling it was
 * read with, so decks from elsewhere are written back verbatim (`.1`,
 * `4.28E6`, `0.00`) instead of being reformatted.  A variable may occur more
 * than once, and a namelist name in several namelists of one case (DATCOM
 * reads them in order; later assignments win): the model keeps them all.
 *
 * ---- Use ----
 *
 *	struct deck *d = deck_new();
 *	struct deck_case *c;
 *	struct deck_namelist *nl;
 *	double alpha[] = { 0.0, 2.0, 4.0 };
 *
 *	if (!d || deck_add_case(d, &c) < 0 ||
 *	    deck_add_caseid(c, "PC-9") < 0 ||
 *	    deck_add_control(c, "DIM FT") < 0 ||
 *	    deck_add_namelist(c, "FLTCON", &nl) < 0 ||
 *	    deck_add_number(nl, "NALPHA", 3.0) < 0 ||
 *	    deck_add_array(nl, "ALSCHD", 1, alpha, 3) < 0 ||
 *	    deck_write(d, &sb) < 0)
 *		...
 *	deck_free(d);
 *
 * All structs are public for reading (loops over cases/cards/vars/values);
 * change them only through the functions below, which keep every invariant
 * the writer relies on (names are 1-6 characters [A-Z][A-Z0-9]*, numbers are
 * writable, control cards are legal).  Pointers returned by the add
 * functions stay valid until deck_free() (the lists hold pointers).
 *
 * ---- Errors ----
 * Errors: functions return 0 or a negative errno: -ENOMEM; -EINVAL for a
 * bad name, control card, text or index; -ERANGE / -EDOM for numbers (see
 * deck_format_number).  Nothing is added when a function fails.
 */
#ifndef FLOWFS_DECK_H
#define FLOWFS_DECK_H

#include <stdbool.h>
#include <stddef.h>

struct sbuf;

/* Columns of a card; DATCOM ignores everything past column 80. */
#define DECK_COLUMNS 80
/* Longest namelist or variable name (Fortran 77). */
#define DECK_NAME_MAX 6
/* Largest start index accepted (DATCOM's arrays hold at most 50). */
#define DECK_INDEX_MAX 999
/* Largest repeat count accepted in `r*value`. */
#define DECK_REPEAT_MAX 999
/*
 * Longest spelling of one value (number with its repeat prefix, or quoted
 * text).  With a 6-letter name and a 3-digit index, `NAME(999)=value,`
 * still fits one continuation line, so the writer can always place it.
 */
#define DECK_VALUE_MAX 64
/* Longest CASEID text: columns 8-80 after `CASEID `. */
#define DECK_CASEID_MAX (DECK_COLUMNS - 7)
/*
 * The largest deck read, and the most cases and namelists (over all its
 * cases) in it.  Real decks are a few KiB with tens of namelists; the
 * limits keep one upload from making every read of status parse megabytes
 * (the daemon serves all sessions meanwhile).
 */
#define DECK_MAX_SIZE (1024 * 1024)
#define DECK_MAX_CASES 300
#define DECK_MAX_NAMELISTS 3000

enum deck_value_type {
	DECK_NUMBER,
	DECK_LOGICAL,
	DECK_TEXT,
};

struct deck_value {
	enum deck_value_type type;
	double number;		/* DECK_NUMBER */
	bool logical;		/* DECK_LOGICAL */
	unsigned repeat;	/* r of `r*value`; 1 when written without */
	/*
	 * DECK_NUMBER: the spelling to write (always a legal DATCOM REAL:
	 * sign, digits with a `.`, optional upper-case exponent other than
	 * 0, at most 2147483647 in the digits on either side of the point),
	 * or NULL to write deck_format_number(number).  The parser sets it
	 * but where DATCOM would misread the spelling (DECK_P_DIGITS);
	 * numbers added through the API have NULL.
	 * DECK_TEXT: the characters between the apostrophes.
	 */
	char *text;
};

struct deck_var {
	char name[DECK_NAME_MAX + 1];
	unsigned index;		/* start index; 0 = `NAME=` without one */
	struct deck_value *values;
	size_t nr, alloc;	/* nr >= 1 once built */
};

struct deck_namelist {
	char name[DECK_NAME_MAX + 1];
	struct deck_var **vars;
	size_t nr, alloc;
};

enum deck_card_type {
	DECK_CONTROL,
	DECK_NAMELIST_CARD,
};

struct deck_card {
	enum deck_card_type type;
	char *control;			/* DECK_CONTROL: the line, no newline */
	struct deck_namelist *namelist;	/* DECK_NAMELIST_CARD */
	unsigned line;			/* 1-based line it was parsed from; 0 */
};

struct deck_case {
	struct deck_card **cards;
	size_t nr, alloc;
};

struct deck {
	struct deck_case **cases;
	size_t nr, alloc;
};

/* An empty deck, or NULL when out of memory.  Free with deck_free(). */
struct deck *deck_new(void);
void deck_free(struct deck *d);

/* Append an empty case. */
int deck_add_case(struct deck *d, struct deck_case **out);

/*
 * Append a control card, given as its whole line without newline.  It must
 * be a legal DATCOM control card (deck_control_check() == 0).
 */
int deck_add_control(struct deck_case *c, const char *line);

/* Append `CASEID text`; text is printable ASCII, at most 73 characters. */
int deck_add_caseid(struct deck_case *c, const char *text);

/*
 * Is `line` (len bytes, no newline) a legal control card?  0, or -EINVAL
 * with a reason in *why (a static string) when why is not NULL.  Legal:
 * printable ASCII, at most 80 columns, no trailing blank, and one of
 *   CASEID[ text]          text in columns 8-80
 *   DIM FT|DIM IN|DIM M|DIM CM   exactly
 *   DERIV|DAMP|BUILD|SAVE|TRIM|PART|PLOT|DUMP|WRITE|NAMELIST[ arguments]
 *   NEXT CASE              (accepted here; the writer adds it itself, so
 *                           deck_add_control() refuses it)
 *   NACA-s-t-...           `NACA` in 1-4, surface W/H/V/F in column 6,
 *                          series 1/4/5/6/S in column 8, `-` or blank in
 *                          columns 5, 7 and 9, a designation after.
 */
int deck_control_check(const char *line, size_t len, const char **why);

/*
 * Append a namelist `name` (1-6 characters, [A-Z][A-Z0-9]*), empty.
 */
int deck_add_namelist(struct deck_case *c, const char *name,
		      struct deck_namelist **out);

/*
 * Append a variable.  `name` as for namelists; `index` 0 (no index) or
 * 1..DECK_INDEX_MAX.  The value functions check each number with
 * deck_number_check() first: -EDOM refuses the whole variable.
 */
int deck_add_number(struct deck_namelist *nl, const char *name, double v);
int deck_add_array(struct deck_namelist *nl, const char *name,
		   unsigned index, const double *v, size_t n);
int deck_add_logical(struct deck_namelist *nl, const char *name, bool v);
/* Printable ASCII without `'` and `$`, at most DECK_VALUE_MAX - 2. */
int deck_add_text(struct deck_namelist *nl, const char *name,
		  const char *text);

/* Append a deep copy of a variable / a card (carrying decks through). */
int deck_copy_var(struct deck_namelist *dst, const struct deck_var *src);
int deck_copy_card(struct deck_case *dst, const struct deck_card *src);

/*
 * Remove and free nl->vars[i] (later variables move up); nothing when i
 * is out of range.
 */
void deck_remove_var(struct deck_namelist *nl, size_t i);

/*
 * The first namelist called `name` in the case at or after card `*pos`
 * (start with *pos = 0; *pos is left just past the one found, so a loop
 * visits every FLTCON of a case), or NULL.  pos may be NULL (from the
 * start).
 */
struct deck_namelist *deck_find_namelist(const struct deck_case *c,
					 const char *name, size_t *pos);

/* The first variable called `name` in the namelist, or NULL. */
struct deck_var *deck_find_var(const struct deck_namelist *nl,
			       const char *name);

/*
 * The effective numeric contents of variable `var` over every namelist
 * `nl` of the case, as DATCOM reads them: in card order, each occurrence
 * stores its values from its start index (1 when it has none), repeat
 * counts expanded, later writes winning.  out[0..max-1] receives elements
 * 1..max; elements never written are NaN.  *n (may be NULL) is the highest
 * element written (can exceed max; only max are stored).  Returns 0,
 * -ENOENT when the variable never occurs, -EINVAL when a value of it is not
 * a number.
 */
int deck_get_numbers(const struct deck_case *c, const char *nl,
		     const char *var, double *out, size_t max, size_t *n);

/*
 * Format a number the flowfs way, independent of the locale, so that it
 * reads back as the same value, DATCOM's input check (CONERR: RVALUE in
 * rvalue.f) passes it and DATCOM's reader (TODEC in todec.f) reads it:
 *  - the fewest significant digits that read back as v (the shortest
 *    decimal: `0.5489`, `1.00001`, `0.2418852`, `0.0001753`), with a `.`
 *    and at least one digit after it (`6.0`, `10000.0`, `-3.0`; -0.0 is
 *    `0.0`);
 *  - in plain form when that has at most 9 digits before the point and
 *    9 after it from the first that is not 0 (TODEC adds each part up
 *    in a 32-bit INTEGER, which more can overflow), and at most
 *    DECK_VALUE_MAX characters: `999999999.0`, `0.00001`,
 *    `0.000000000123`;
 *  - else in exponent form: one digit before the point, or as many as
 *    leave 9 after it, the others (or `0`) after it, an upper-case `E`
 *    and the exponent without zeros it does not need (`1.0E9`,
 *    `-1.5E10`, `8327717.748460195E-7`, `4.9E-324`).  CONERR marks an
 *    exponent of 0 (`1.5E0`) and an `E` without a `.` before it (`15E-1`)
 *    as errors; neither is ever written;
 *  - -EDOM for NaN and infinities.
 * Writes a NUL-terminated string into buf (DECK_NUMBER_SIZE bytes always
 * suffice) and returns its length, or -ENOSPC when size is too small.
 */
#define DECK_NUMBER_SIZE (DECK_VALUE_MAX + 1)
int deck_format_number(double v, char *buf, size_t size);

/*
 * What deck_format_number(v, ...) returns with room enough, without
 * formatting: 0, or -EDOM (NaN, infinities).
 */
int deck_number_check(double v);

/*
 * Append the deck as DATCOM cards to `out`: LF line ends, at most 80
 * columns, control cards from column 1, each namelist as ` $NAME ` followed
 * by `NAME=value,...` items and `$`, wrapped only after a comma onto
 * continuation lines that start with two blanks (an item `NAME(i)=v,` is
 * never split), each case ended by `NEXT CASE`.  No tabs, blank lines or
 * comments.  An empty namelist is ` $NAME $`.  Returns 0, -ENOMEM, or
 * -EINVAL / -ERANGE when the structs were changed behind the API into
 * something unwritable (out then holds a partial deck).
 */
int deck_write(const struct deck *d, struct sbuf *out);

/* What the parser found. */
enum deck_severity {
	DECK_WARNING,	/* DATCOM accepts it; flowfs never writes it so */
	DECK_ERROR,	/* DATCOM rejects, misreads, or crashes on it */
	DECK_FATAL,	/* the parser cannot go on; always the last problem */
};

enum deck_problem_kind {
	DECK_P_SYNTAX,		/* fatal: cannot continue */
	DECK_P_COMMENT,		/* `*`, `!` or `#` comment line, or `!` inline */
	DECK_P_TAB,		/* a TAB character */
	DECK_P_BLANK_LINE,	/* an empty or all-blank line */
	DECK_P_DOLLAR_COLUMN1,	/* `$` in column 1 */
	DECK_P_CONTROL_CARD,	/* unknown or malformed control card */
	DECK_P_LOWER_EXPONENT,	/* `1.0e4`, or a `D` exponent */
	DECK_P_DECIMAL_COMMA,	/* `0,5489`: read as 0 and 5489 */
	DECK_P_BARE_INTEGER,	/* `6` instead of `6.0` (read as 6.0) */
	DECK_P_UNCLOSED_NAMELIST, /* namelist never ended with `$` */
	DECK_P_NO_NEXT_CASE,	/* last case not ended by NEXT CASE */
	DECK_P_LONG_LINE,	/* non-blank text past column 80 (dropped) */
	DECK_P_CHARACTER,	/* a byte that is not printable ASCII */
	DECK_P_CONTINUATION,	/* continuation line with no open namelist */
	DECK_P_SEPARATOR,	/* values not separated by commas */
	DECK_P_AFTER_END,	/* text after a namelist's closing `$` */
	DECK_P_NAME,		/* lower-case letters in a name */
	DECK_P_LOGICAL,		/* `.T.`, `T`, `.true.`...: not .TRUE./.FALSE. */
	DECK_P_RANGE,		/* number beyond a Fortran REAL */
	DECK_P_EXPONENT,	/* `15E-1` (no `.` before the E) or an
				 * exponent of 0 (`1.5E0`): DATCOM reads the
				 * value but marks the card ** ERROR ** */
	DECK_P_DIGITS,		/* more digits before or after the point
				 * than DATCOM's reader adds up (a part
				 * above 2147483647): it reads another
				 * number */
};

struct deck_problem {
	enum deck_problem_kind kind;
	enum deck_severity severity;
	unsigned line;		/* 1-based */
	unsigned column;	/* 1-based; 0 = the whole line */
	char *message;		/* for a person: "TAB character (...)" */
};

struct deck_problems {
	struct deck_problem *v;
	size_t nr, alloc;
};

#define DECK_PROBLEMS_INIT { NULL, 0, 0 }
void deck_problems_release(struct deck_problems *p);
/* How many problems of at least `severity`. */
size_t deck_problems_count(const struct deck_problems *p,
			   enum deck_severity severity);

/*
 * Parse a deck (bytes, LF or CRLF line ends, last newline optional).
 * Only columns 1-80 of each line are read, as DATCOM does.  Grammar of a
 * namelist: ` $NAME` then items `NAME[(i)]=value{,value}` separated by
 * commas, blanks allowed between tokens, continued over lines whose column
 * 1 is blank, ended by `$` (a trailing comma before it is fine); values are
 * REAL numbers (optional `r*` repeat), `.TRUE.`/`.FALSE.` or 'text'.
 *
 * Everything DATCOM would reject or misread is appended to `problems`
 * (NULL allowed: they are dropped) with its line and column, and the
 * parser recovers the way a person fixing the deck would: comment, blank
 * and TAB-only lines are skipped, TABs read as blanks, unknown control
 * cards dropped, `$NAME` in column 1 read as a namelist, a namelist
 * interrupted by a control card, a new namelist or the end of the file is
 * closed there, bare integers, lower-case exponents, exponents of 0 and
 * numbers with more digits than DATCOM's reader adds up read as the REAL
 * they mean (and re-spelt legally, so deck_write() of the result follows
 * every rule and DATCOM reads it as that REAL).  Then 0 with *out set.
 *
 * Fatal syntax (a value without a variable, `=` missing, an unclosed
 * quote, an empty value between commas, a malformed number, a name longer
 * than 6 characters, an index or repeat count out of range, a value longer
 * than DECK_VALUE_MAX, more than DECK_MAX_CASES cases or DECK_MAX_NAMELISTS
 * namelists, a text longer than DECK_MAX_SIZE) returns -EINVAL, *out NULL,
 * and the last problem is DECK_FATAL with the position.  -ENOMEM likewise leaves *out NULL.
 */
int deck_parse(const char *text, size_t len, struct deck **out,
	       struct deck_problems *problems);

#endif
