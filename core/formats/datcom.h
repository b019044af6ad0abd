/*
 * datcom: from the datcom skill's parameters (parameter.json: the
 * request's parameters with the schema's defaults) to a Digital DATCOM
 * input deck (for005.dat, DESIGN §6).  Parameters in, deck text out: no
 * store, no session, no file system.
 *
 *	struct sbuf deck = SBUF_INIT;
 *	struct ferr err = FERR_INIT;
 *	if (datcom_render(params, &deck, &err) < 0)
 *		... err.path "parameter.alschd", err.message "The number of
 *		    angles of attack (5) must match NALPHA (6)"
 *
 * ---- Parameters ----
 * The parameters are the 57 of core/skills/datcom/assets/
 * parameter.schema.json (case_id, dim, FLTCON nalpha..wt, OPTINS
 * sref/cbarr/blref, SYNTHS xcg..zv, BODY nx..method, wing_*, htail_*,
 * vtail_*) and the extras loop, rnnub, deriv, damp, build.  Keys outside
 * them are ignored here (the schema refuses them in a request).  Nothing
 * is assumed to have passed the schema: every value's type and range is
 * checked again, so any JSON value can be given.
 *
 * ---- Values ----
 * Values:
 *   - counts (nalpha, nmach, nalt, nx) and codes (itype, method, *_type,
 *     loop) are JSON numbers with a whole value (6 or 6.0);
 *   - lists (alschd, mach, alt, x_coords, r_coords, zu_coords, zl_coords,
 *     rnnub) are JSON arrays of numbers or one comma-separated string,
 *     parsed strictly: each item a decimal number ("1", "-2.5", "1e4",
 *     ".5"; blanks around it allowed), nothing else ("", "abc", "0x10",
 *     "inf", "1,,2", a trailing comma are refused, naming the parameter
 *     and the item), independent of the locale;
 *   - *_naca: a NACA designation, the series given or inferred:
 *     "0012", "2412", "0012-25" (4), "23012", "23012-33" (5), "63-415",
 *     "64A204", "631-012", "64A204 A=0.8" (6), "16-212" (1),
 *     "S-1-40.0-9.0" (supersonic; series required), "4-0012" (series
 *     first); an optional leading "NACA", "NACA " or "NACA-"; letters in
 *     any case (written upper case).  The card is NACA-<W|H|V>-<series>-
 *     <designation>.
 *
 * Every value is printed as it is (deck_format_number(): the shortest
 * decimal that reads back as the value), so what DATCOM reads is what
 * was checked.
 *
 * ---- Errors and threads ----
 * Functions return 0, -ENOMEM, or -EINVAL with err->message saying what
 * is wrong in words naming the parameter and err->path
 * "parameter.<name>".  No state is kept between calls; thread-safe.
 */
#ifndef FLOWFS_DATCOM_H
#define FLOWFS_DATCOM_H

#include <jansson.h>

#include "lib/ferr.h"
#include "lib/sbuf.h"

struct deck;

/* Most values any DATCOM array holds (ALSCHD(20), MACH(20), X(20), ...). */
#define DATCOM_MAX_LIST 20

/*
 * Check the parameters that are present (missing ones are not a problem
 * here: see datcom_missing()): types, ranges, formats, and the rules
 * between them that DATCOM does not check itself (CARDS.md):
 *
 *   types and ranges, the parameter named as "<VAR>[ of the <surface>]
 *   (<name>)":
 *	"NALPHA (nalpha) must be between 1 and 20, not 25"
 *	"NALT (nalt) must be a whole number, not 2.5"
 *	"CHSTAT of the wing (wing_chstat) must be between 0 and 1, not 1.5"
 *	"TYPE of the wing (wing_type) must be 1, 2 or 3, not 4" (also
 *	itype 1..3, method 1..2, loop 1..3)
 *	"MACH(1) (mach) must be greater than 0, not -0.5"
 *	"WT (wt) must be a number, not a string"
 *	"ALSCHD (alschd) is not a list of numbers: item 4 (\"abc\") is not
 *	a number"
 *	"NACA-W of the wing (wing_naca): \"12\" is not a NACA designation
 *	DATCOM reads (...)"
 *	"NACA-W of the wing (wing_naca) is too long: its card
 *	NACA-W-S-1-40.00000000000... would have 81 columns; a DATCOM card
 *	holds at most 80"
 *	"CASEID (case_id) has 74 characters; a CASEID card holds at most 73"
 *   values a card cannot hold:
 *	"XCG (xcg) is 1e+300, beyond what a DATCOM REAL holds (about 3.4E38)"
 *   every count equal to its list's length
 *	"The number of angles of attack (5) must match NALPHA (6)"
 *	(also Mach numbers/NMACH, altitudes/NALT, body stations in
 *	x_coords, body radii in r_coords, upper/lower body heights in
 *	zu_coords/zl_coords/NX, Reynolds numbers in rnnub/NMACH)
 *   alschd strictly ascending, x_coords ascending
 *	"The angles of attack (ALSCHD) must be strictly ascending: value 3
 *	(2.0) does not exceed value 2 (2.0)"
 *	"The body stations (X) must be ascending: value 6 (11.0) is less
 *	than value 5 (12.0)"
 *   *_sspne <= *_sspn
 *	"The wing's exposed semi-span SSPNE (wing_sspne = 20.0) must not
 *	exceed its semi-span SSPN (wing_sspn = 16.7)"
 *   mach ascending (DATCOM interpolates over the list in order: lists
 *   going down stopped it with a runtime error)
 *	"The Mach numbers (MACH) must be ascending: value 2 (0.3) is less
 *	than value 1 (0.5) (...)"
 *   what DATCOM takes but computes nothing for, found by running it:
 *   NX of 1; a Mach number below 0.01 (it may not finish) or above 25;
 *   an angle of attack at or beyond +-90; a section without thickness
 *   ("64-000") or a 4-digit one with camber but no camber position
 *   ("6015"); a TYPE 2 or 3 planform without its break point
 *	"MACH(1) (mach) is 0.005: DATCOM does not always finish below
 *	Mach 0.01 (...)"
 *
 * The first problem found is reported: each parameter in schema order,
 * then the rules between parameters.
 */
int datcom_check(const json_t *params, struct ferr *err);

/*
 * The rules about what a complete set leaves out (status and the deck
 * apply them; a request.json write, which may leave these to a deck, does
 * not), after datcom_check()'s, with `rest` what a deck carries through
 * (NULL: nothing).  Each is a case DATCOM computes nothing for (issue 28,
 * found by running it):
 *	"The body is given by its stations X alone: DATCOM needs its radii
 *	R (r_coords), or its areas S in a $BODY of a deck, ..." (also R
 *	and S without P: R alone, S alone, or R, S and P)
 *	"NALT (nalt) is needed with LOOP 2 (loop): ..." (alt given)
 *	"SREF (sref) is needed without a wing: ..."
 * Returns as datcom_check().
 */
int datcom_check_with(const json_t *params, const struct deck *rest,
		      struct ferr *err);

/*
 * Lines (each ended by '\n') about a set DATCOM takes but answers in part
 * only, for status without stopping the deck; `rest` as for
 * datcom_check_with().  Each says what DATCOM printed for such decks:
 *   - NALT other than NMACH while LOOP is 1 ("NALT (3) differs from
 *     NMACH (1) while LOOP is 1 (...): DATCOM says so and takes the first
 *     1 of each ...");
 *   - LOOP 2 or 3 with Reynolds numbers and no altitudes (DATCOM runs
 *     LOOP 1);
 *   - Mach numbers above STMACH (0.6 unless stmach) and below TSMACH
 *     (1.4 unless tsmach), compared as DATCOM does in single precision:
 *     "MACH 0.7, 0.8 are above STMACH 0.6 and below TSMACH 1.4
 *     (transonic), where DATCOM has few methods: its tables there print
 *     NDM (no method) for most coefficients, CD alone at best (...)";
 *   - Mach numbers at or above TSMACH without BLN and BLA in a $BODY
 *     carried through: CD and CL print NaN or NDM with the body;
 *   - a TYPE 2 or 3 wing with a tail: the configurations with a tail
 *     print NDM;
 *   - no wing, and cbarr or blref not given: the moments they scale
 *     print ****.
 * Nothing for a set datcom_check() refuses.  0 or -ENOMEM.
 */
int datcom_warnings_with(const json_t *params, const struct deck *rest,
			 struct sbuf *out);
/* datcom_warnings_with() of nothing carried through. */
int datcom_warnings(const json_t *params, struct sbuf *out);

/*
 * Append to `out` the names of the required parameters `params` lacks,
 * comma-and-blank separated in schema order ("wing_naca, htail_naca").
 * Required: the schema's list (the flight conditions, xcg, zcg, nx,
 * x_coords; alt unless rnnub is given), and each surface's section,
 * chrdtp, sspn, sspne, chrdr, savsi, type and place in SYNTHS once any of
 * its section and planform parameters is given (a configuration has the
 * surfaces it gives).  Returns the number of names, or -ENOMEM.  A
 * non-object `params` lacks the schema's list.
 */
int datcom_missing(const json_t *params, struct sbuf *out);
/* The same for parameters whose deck carries `rest` through (may be NULL):
 * a surface's section given as $WGSCHR, $HTSCHR or $VTSCHR stands for its
 * NACA designation. */
int datcom_missing_with(const json_t *params, const struct deck *rest,
			struct sbuf *out);

/*
 * The deck for `params` (checked as datcom_check_with() does; every
 * required parameter must be present: "missing required parameters: a,
 * b"):
 * CASEID, DIM, $FLTCON, $OPTINS (when sref, cbarr or blref is given),
 * $SYNTHS, $BODY, $WGPLNF + NACA-W, $HTPLNF + NACA-H, $VTPLNF + NACA-V,
 * DERIV/DAMP/BUILD when asked for, NEXT CASE.  Free with deck_free().
 */
int datcom_build(const json_t *params, struct deck **out, struct ferr *err);

/* datcom_build() then deck_write() appended to `out`. */
int datcom_render(const json_t *params, struct sbuf *out, struct ferr *err);

/*
 * Import an existing deck (DESIGN §6, the skill's file input `deck`):
 * from the FIRST case of `d`, the parameters the deck gives, under the
 * skill's names, into a new object *params, and everything else of that
 * case into a new deck *rest (exactly one case, possibly empty), so that
 * datcom_render_with(params, rest) writes the case again.
 *
 * Values are read as DATCOM reads them (deck_get_numbers(): start
 * indexes, `r*` repeats, several namelists of one name, later values
 * winning); control cards CASEID, DIM, NACA-W/H/V, DERIV, DAMP, BUILD:
 * the last of each kind wins.  Types:
 *   - counts and codes (nalpha, nmach, nalt, nx, itype, method, *_type,
 *     loop): JSON integers when whole, else reals;
 *   - other numbers: JSON reals; lists: arrays of reals;
 *   - a number beyond a double (`1.0E999`, which the parser reads as an
 *     infinity): the largest double of its sign, which datcom_check()
 *     refuses as beyond a DATCOM REAL;
 *   - *_naca: the designation as the schema takes it: "0012", "64A204
 *     A=0.8", with the series first ("S-1-40.0-9.0", "6-...") only when
 *     the designation alone would infer another series;
 *   - dim "FT"|"IN"|"M"|"CM", case_id the CASEID text, deriv the DERIV
 *     card's argument, damp/build true for a DAMP/BUILD card.
 * A variable of the 57 is always imported, never left in *rest, even
 * when DATCOM could not use it: a value that is not a number becomes
 * true/false or the quoted text "'ABC'", an element never given null, a
 * scalar given several values (or an index) a list, a non-whole count a
 * real, a malformed card's argument a string, so that datcom_check()
 * names the parameter and says what is wrong.  Counts are not compared
 * with their lists here (datcom_check() does).
 *
 * *rest holds, verbatim (spellings, repeats, indexes kept):
 *   1. the variables outside the 57 of the mapped namelists (FLTCON,
 *      OPTINS, SYNTHS, BODY, WGPLNF, HTPLNF, VTPLNF), one namelist per
 *      name in that order, variables in deck order (several namelists
 *      of one name are merged: DATCOM reads them as one);
 *   2. every other namelist ($WGSCHR, $SYMFLP, $PROPWR, ...), in order;
 *   3. every other control card (TRIM, PART, SAVE, DUMP, NACA-F, ...),
 *      in order.
 * That is the canonical order datcom_render_with() writes back, so that
 * importing its deck gives the same *rest again.
 *
 * `notes` (may be NULL) receives one line per remark, each ended by
 * '\n', WITHOUT a prefix (the caller prefixes the input's path, e.g.
 * "uploads/deck: "):
 *	"3 cases; the first is used"
 *	"FLTCON ALSCHD(3) is never given"
 *	"FLTCON WT holds .TRUE., not a number"
 *	"FLTCON NALPHA is given 2 values; it takes one"
 *	"FLTCON WT is given 2 times; the last value is used"
 *	"2 NACA-W cards; the last is used"
 *	"$WGSCHR (the wing section) is carried through; wing_naca is not
 *	set from it"
 *
 * Returns 0; -EINVAL with err (path "deck") for a deck that has no
 * case; -ENOMEM.  On failure *params and *rest are NULL.
 */
int datcom_from_deck(const struct deck *d, json_t **params,
		     struct deck **rest, struct sbuf *notes,
		     struct ferr *err);

/*
 * datcom_render() with the first case of `rest` (NULL or no case: the
 * same as datcom_render()) merged in.  The generated deck is
 *   CASEID, DIM, $FLTCON, [$OPTINS], $SYNTHS, $BODY, $WGPLNF, NACA-W,
 *   $HTPLNF, NACA-H, $VTPLNF, NACA-V,
 *   rest's other namelists (in their order),
 *   DERIV, DAMP, BUILD (when asked for),
 *   rest's control cards (in their order),
 *   NEXT CASE
 * where each mapped namelist also gets, after its own variables, the
 * variables of rest's namelists of that name ($OPTINS is written when
 * either gives something).  DATCOM reads a case's namelists by name
 * whatever their order, so the other namelists (flaps, WGSCHR, power,
 * ...) follow the configuration they refine, and control cards apply to
 * the whole case wherever they stand before NEXT CASE.  Nothing is
 * checked against `rest`: a rest that did not come from
 * datcom_from_deck() may repeat a parameter's variable or card (written
 * after it: DATCOM then uses the later one).  Returns as
 * datcom_render(); `out` is unchanged on failure.
 */
int datcom_render_with(const json_t *params, const struct deck *rest,
		       struct sbuf *out, struct ferr *err);

#endif
