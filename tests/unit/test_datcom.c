/*
 * Unit tests for datcom: the built-in skill package loads and its schemas
 * are usable; the PC-9 example of seed 001 gives a deck that obeys every
 * card rule with the values expected; every refusal with its message;
 * comma-separated lists; the missing list; random valid parameter sets
 * drawn from the schema's own ranges always give a deck that obeys the
 * rules and holds the values given.
 *
 * The card rules are checked by tests/deck_rules.h, written apart
 * from core/deck.c.  Expected messages are DESIGN §6's wording as
 * core/datcom.h documents it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/datcom.h"
#include "formats/deck.h"
#include "flowfs-config.h"
#include "lib/fjson.h"
#include "session/inputs.h"
#include "lib/schema.h"
#include "session/skill.h"

#include "../deck_rules.h"
#include "unit.h"

static const char *const the57[] = {
	"case_id", "dim", "nalpha", "alschd", "nmach", "mach", "nalt", "alt",
	"wt", "sref", "cbarr", "blref", "xcg", "zcg", "xw", "zw", "aliw",
	"xh", "zh", "alih", "xv", "zv", "nx", "x_coords", "r_coords",
	"zu_coords", "zl_coords", "itype", "method",
	"wing_naca", "wing_chrdtp", "wing_sspn", "wing_sspne", "wing_chrdr",
	"wing_savsi", "wing_chstat", "wing_twista", "wing_dhdadi", "wing_type",
	"htail_naca", "htail_chrdtp", "htail_sspn", "htail_sspne",
	"htail_chrdr", "htail_savsi", "htail_chstat", "htail_twista",
	"htail_dhdadi", "htail_type",
	"vtail_naca", "vtail_chrdtp", "vtail_sspn", "vtail_sspne",
	"vtail_chrdr", "vtail_savsi", "vtail_chstat", "vtail_type",
};

/* A plausible Pilatus PC-9 in feet: seed 001's example flight condition. */
static const char pc9_text[] =
	"{\"case_id\": \"PC-9 TURBOPROP TRAINER\", \"dim\": \"FT\","
	" \"nalpha\": 6, \"alschd\": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],"
	" \"nmach\": 1, \"mach\": [0.5489], \"nalt\": 1, \"alt\": [10000.0],"
	" \"wt\": 4960.0, \"sref\": 175.3, \"cbarr\": 5.58, \"blref\": 33.43,"
	" \"xcg\": 10.9, \"zcg\": 0.0, \"xw\": 8.7, \"zw\": -1.2, \"aliw\": 1.0,"
	" \"xh\": 28.5, \"zh\": 0.6, \"alih\": 0.0, \"xv\": 27.9, \"zv\": 0.9,"
	" \"nx\": 8, \"x_coords\": [0.0, 1.5, 3.5, 7.0, 12.0, 18.0, 25.0, 33.27],"
	" \"r_coords\": [0.0, 1.1, 1.6, 1.9, 1.9, 1.5, 0.9, 0.25],"
	" \"zu_coords\": [0.0, 1.0, 1.7, 2.5, 2.6, 2.0, 1.2, 0.5],"
	" \"zl_coords\": [0.0, -1.0, -1.5, -1.8, -1.8, -1.3, -0.6, -0.1],"
	" \"itype\": 2, \"method\": 1,"
	" \"wing_naca\": \"64A415\", \"wing_chrdtp\": 3.6, \"wing_sspn\": 16.7,"
	" \"wing_sspne\": 14.9, \"wing_chrdr\": 7.2, \"wing_savsi\": 2.0,"
	" \"wing_chstat\": 0.25, \"wing_twista\": -2.0, \"wing_dhdadi\": 7.0,"
	" \"wing_type\": 1,"
	" \"htail_naca\": \"0012\", \"htail_chrdtp\": 2.0, \"htail_sspn\": 6.6,"
	" \"htail_sspne\": 5.9, \"htail_chrdr\": 3.7, \"htail_savsi\": 8.0,"
	" \"htail_chstat\": 0.25, \"htail_twista\": 0.0, \"htail_dhdadi\": 0.0,"
	" \"htail_type\": 1,"
	" \"vtail_naca\": \"0010\", \"vtail_chrdtp\": 2.1, \"vtail_sspn\": 5.6,"
	" \"vtail_sspne\": 5.2, \"vtail_chrdr\": 5.0, \"vtail_savsi\": 35.0,"
	" \"vtail_chstat\": 0.25, \"vtail_type\": 1}";

static json_t *parse(const char *text)
{
	struct ferr err = FERR_INIT;
	json_t *j = NULL;

	if (fjson_parse(&j, text, strlen(text), &err) < 0)
		fail_msg("bad test JSON: %s", err.message);
	return j;
}

static json_t *pc9(void)
{
	return parse(pc9_text);
}

static struct skill *load_skill(void)
{
	struct skill *s = skill_load(FLOWFS_SOURCE_SKILLS "/datcom", "datcom");

	assert_non_null(s);
	if (s->error)
		fail_msg("the datcom skill did not load: %s", s->error);
	return s;
}

/* Keep a deck generated here for the real DATCOM (unit_keep_deck()),
 * with the notes status would show beside it. */
static void keep(const char *what, const json_t *p, const struct deck *rest,
		 const struct sbuf *deck)
{
	struct sbuf notes = SBUF_INIT;

	assert_int_equal(datcom_warnings_with(p, rest, &notes), 0);
	unit_keep_deck(what, deck->buf, deck->len, notes.len ? notes.buf : "");
	sbuf_release(&notes);
}

/* Render, check every card rule; the deck text stays in *out. */
static void render_ok(const json_t *params, struct sbuf *out,
		      struct rules_deck *rd)
{
	struct ferr err = FERR_INIT;
	const char *why;
	int line;

	if (datcom_render(params, out, &err) < 0)
		fail_msg("refused: %s: %s", err.path, err.message);
	keep("datcom", params, NULL, out);
	why = rules_check(out->buf, out->len, rd, &line);
	if (why)
		fail_msg("line %d: %s in\n%s", line, why, out->buf);
}

static void test_skill_package(void **state)
{
	struct skill *s = load_skill();
	const json_t *props, *req, *p;
	struct ferr err = FERR_INIT;
	json_t *manifest;
	const char *key;
	size_t i = 0, n = sizeof(the57) / sizeof(*the57);
	void *it;

	(void)state;
	assert_string_equal(s->id, "datcom");
	assert_true(skill_has_engine(s, "gemini"));
	assert_non_null(skill_prompt(s, skill_default_engine(s)));
	assert_int_equal(schema_check(s->input_schema, &err), 0);
	assert_int_equal(schema_check(s->parameter_schema, &err), 0);
	assert_int_equal(schema_check(s->output_schema, &err), 0);

	/* the 57 first, in DESIGN's order, then the extras */
	assert_int_equal(n, 57);
	props = json_object_get(s->parameter_schema, "properties");
	json_object_foreach((json_t *)props, key, p) {
		(void)p;
		if (i < n)
			assert_string_equal(key, the57[i]);
		i++;
	}
	assert_int_equal(i, 57 + 7 + 11);
	for (const char *const *x = (const char *const[]){ "loop", "rnnub",
	     "stmach", "tsmach", "deriv", "damp", "build", NULL }; *x; x++)
		assert_non_null(json_object_get(props, *x));
	assert_string_equal(json_string_value(json_object_get(
		json_object_get(props, "dim"), "default")), "FT");
	/* required whatever the configuration: the flight conditions, the
	 * centre of gravity, the body's stations (each surface's are
	 * required with it: datcom_missing()) */
	req = json_object_get(s->parameter_schema, "required");
	assert_int_equal(json_array_size(req), 8);	/* and alt, unless rnnub */

	/* inputs: file `deck` with extensions, inline `description` */
	p = json_object_get(json_object_get(s->input_schema, "properties"),
			    "deck");
	assert_non_null(p);
	assert_int_equal(json_array_size(json_object_get(p, "extensions")), 3);
	p = json_object_get(json_object_get(s->input_schema, "properties"),
			    "description");
	assert_string_equal(json_string_value(json_object_get(
		p, "x-input-source")), "inline");

	/* output/.manifest.json names for005.dat, and DATCOM's results
	 * (--datcom) as optional */
	manifest = inputs_manifest(s);
	assert_non_null(manifest);
	assert_int_equal(json_array_size(manifest), 4);
	assert_string_equal(json_string_value(json_object_get(
		json_array_get(manifest, 0), "pattern")), "for005.dat");
	assert_string_equal(json_string_value(json_object_get(
		json_array_get(manifest, 1), "pattern")), "for006.dat");
	assert_false(json_is_true(json_object_get(
		json_array_get(manifest, 3), "required")));
	json_decref(manifest);
	(void)it;
	skill_free(s);
}

static void test_pc9_schema_and_prompt(void **state)
{
	struct skill *s = load_skill();
	json_t *p = pc9();
	json_t *req = json_pack("{s:{s:s}, s:O}", "input", "description",
				"PC-9 at Mach 0.5489", "parameter", p);
	struct ferr err = FERR_INIT;
	struct inputs in;
	struct sbuf prompt = SBUF_INIT;

	(void)state;
	if (schema_validate(s->parameter_schema, NULL, p, "parameter", 0,
			    &err) < 0)
		fail_msg("%s: %s", err.path, err.message);
	assert_int_equal(inputs_check_request(s, req, &err), 0);
	assert_int_equal(inputs_resolve(s, req, NULL, 0, "/m/s/uploads", &in),
			 0);
	assert_string_equal(in.problems.buf, "");
	/* parameter.json has the default dim; it still renders */
	assert_string_equal(json_string_value(json_object_get(in.parameter,
							      "dim")), "FT");
	assert_int_equal(datcom_check(in.parameter, &err), 0);
	assert_int_equal(inputs_prompt(s, "gemini", &in, "/m/s",
				       "/m/s/skill", &prompt, &err), 0);
	assert_non_null(strstr(prompt.buf, "PC-9 at Mach 0.5489"));
	assert_non_null(strstr(prompt.buf, "- nalpha: 6\n"));
	sbuf_release(&prompt);
	inputs_release(&in);
	json_decref(req);
	json_decref(p);
	skill_free(s);
}

static void expect_values(const struct rules_deck *rd, const char *nl,
			  const char *name, int index, const char *values)
{
	const struct rules_var *v = rules_find(rd, nl, name);
	char joined[1024] = "";

	if (!v)
		fail_msg("%s %s missing", nl, name);
	assert_int_equal(v->index, index);
	for (int i = 0; i < v->nvalues; i++) {
		if (i)
			strcat(joined, ",");
		strcat(joined, v->values[i]);
	}
	if (strcmp(joined, values))
		fail_msg("%s %s: %s, expected %s", nl, name, joined, values);
}

static void test_pc9_deck(void **state)
{
	json_t *p = pc9();
	struct sbuf out = SBUF_INIT;
	struct rules_deck rd;
	static const char *const order[] = {
		"CASEID PC-9 TURBOPROP TRAINER", "DIM FT", "$FLTCON",
		"$OPTINS", "$SYNTHS", "$BODY", "$WGPLNF", "NACA-W-6-64A415",
		"$HTPLNF", "NACA-H-4-0012", "$VTPLNF", "NACA-V-4-0010",
		"NEXT CASE",
	};
	static const char head[] = "CASEID PC-9 TURBOPROP TRAINER\n"
		"DIM FT\n $FLTCON NMACH=1.0,MACH(1)=0.5489,NALT=1.0,"
		"ALT(1)=10000.0,";

	(void)state;
	render_ok(p, &out, &rd);
	assert_int_equal(strncmp(out.buf, head, strlen(head)), 0);
	assert_int_equal(rd.ncards, 13);
	for (int i = 0; i < 13; i++)
		assert_string_equal(rd.cards[i], order[i]);
	expect_values(&rd, "FLTCON", "NALPHA", 0, "6.0");
	expect_values(&rd, "FLTCON", "ALSCHD", 1, "1.0,2.0,3.0,4.0,5.0,6.0");
	expect_values(&rd, "FLTCON", "WT", 0, "4960.0");
	expect_values(&rd, "OPTINS", "SREF", 0, "175.3");
	expect_values(&rd, "SYNTHS", "ZW", 0, "-1.2");
	expect_values(&rd, "SYNTHS", "ZV", 0, "0.9");
	expect_values(&rd, "BODY", "NX", 0, "8.0");
	expect_values(&rd, "BODY", "X", 1,
		      "0.0,1.5,3.5,7.0,12.0,18.0,25.0,33.27");
	expect_values(&rd, "BODY", "ZL", 1,
		      "0.0,-1.0,-1.5,-1.8,-1.8,-1.3,-0.6,-0.1");
	expect_values(&rd, "BODY", "ITYPE", 0, "2.0");
	expect_values(&rd, "BODY", "METHOD", 0, "1.0");
	expect_values(&rd, "WGPLNF", "TWISTA", 0, "-2.0");
	expect_values(&rd, "WGPLNF", "TYPE", 0, "1.0");
	expect_values(&rd, "HTPLNF", "CHSTAT", 0, "0.25");
	expect_values(&rd, "VTPLNF", "SAVSI", 0, "35.0");
	assert_null(rules_find(&rd, "VTPLNF", "TWISTA"));
	assert_null(rules_find(&rd, "FLTCON", "LOOP"));
	/* 7 + 3 + 10 + 7 + 9 + 9 + 7 variables */
	assert_int_equal(rd.nvars, 52);
	sbuf_release(&out);

	/* the extras, and no OPTINS without reference dimensions */
	json_object_del(p, "sref");
	json_object_del(p, "cbarr");
	json_object_del(p, "blref");
	json_object_set_new(p, "loop", json_integer(2));
	json_object_set_new(p, "nalt", json_integer(2));
	json_object_set_new(p, "alt", json_string("0, 10000"));
	json_object_set_new(p, "rnnub", json_pack("[f]", 2.8e6));
	json_object_set_new(p, "deriv", json_string("RAD"));
	json_object_set_new(p, "damp", json_true());
	json_object_set_new(p, "build", json_false());
	json_object_set_new(p, "dim", json_string("M"));
	render_ok(p, &out, &rd);
	assert_null(rules_find(&rd, "OPTINS", "SREF"));
	expect_values(&rd, "FLTCON", "LOOP", 0, "2.0");
	expect_values(&rd, "FLTCON", "ALT", 1, "0.0,10000.0");
	expect_values(&rd, "FLTCON", "RNNUB", 1, "2800000.0");
	assert_string_equal(rd.cards[1], "DIM M");
	assert_string_equal(rd.cards[rd.ncards - 3], "DERIV RAD");
	assert_string_equal(rd.cards[rd.ncards - 2], "DAMP");
	assert_null(strstr(out.buf, "BUILD"));
	assert_null(strstr(out.buf, "OPTINS"));
	json_object_set_new(p, "build", json_true());
	sbuf_reset(&out);
	render_ok(p, &out, &rd);
	assert_string_equal(rd.cards[rd.ncards - 2], "BUILD");
	sbuf_release(&out);
	json_decref(p);
}

struct refusal {
	const char *set;	/* JSON object merged into the PC-9 set */
	const char *path;
	const char *message;
};

static const struct refusal refusals[] = {
	/* what DATCOM takes but cannot compute (issue 15's runs) */
	{ "{\"nx\": 1, \"x_coords\": [0], \"r_coords\": [0], "
	  "\"zu_coords\": [0], \"zl_coords\": [0]}", "parameter.nx",
	  "NX (nx) is 1: DATCOM needs at least 2 body stations (with one, "
	  "every coefficient is NaN)" },
	{ "{\"mach\": [0.001]}", "parameter.mach",
	  "MACH(1) (mach) is 0.001: DATCOM does not always finish below Mach "
	  "0.01 (its section method ran without end at 0.001, and on some "
	  "sections at 0.005 to 0.009)" },
	/* issue 28: one past the floor (0.01 is accepted: test_limits) */
	{ "{\"mach\": [0.0099]}", "parameter.mach",
	  "MACH(1) (mach) is 0.0099: DATCOM does not always finish below "
	  "Mach 0.01 (its section method ran without end at 0.001, and on "
	  "some sections at 0.005 to 0.009)" },
	{ "{\"nmach\": 2, \"mach\": [2, 25.001], \"nalt\": 2, "
	  "\"alt\": [0, 0]}", "parameter.mach",
	  "MACH(2) (mach) is 25.001: above Mach 25, faster than anything "
	  "flies in the atmosphere, DATCOM's methods have nothing to say" },
	{ "{\"nmach\": 3, \"mach\": [0.3, 0.5, 0.4], \"nalt\": 3, "
	  "\"alt\": [0, 0, 0]}", "parameter.mach",
	  "The Mach numbers (MACH) must be ascending: value 3 (0.4) is less "
	  "than value 2 (0.5) (DATCOM interpolates over them in order: a list "
	  "that goes down stops it with a runtime error; with LOOP 1, reorder "
	  "ALT with them)" },
	/* sections DATCOM computes nothing for */
	{ "{\"wing_naca\": \"64-000\"}", "parameter.wing_naca",
	  "NACA-W of the wing (wing_naca): \"64-000\" has no thickness (its "
	  "last two digits are 00): DATCOM's section method fails on it "
	  "(COMPUTATIONS IN SUBROUTINE SLOPE HAVE FAILED) and the run stops" },
	{ "{\"htail_naca\": \"64A200 A=0.8\"}", "parameter.htail_naca",
	  "NACA-H of the horizontal tail (htail_naca): \"64A200 A=0.8\" has no "
	  "thickness (its last two digits are 00): DATCOM's section method "
	  "fails on it (COMPUTATIONS IN SUBROUTINE SLOPE HAVE FAILED) and the "
	  "run stops" },
	{ "{\"vtail_naca\": \"16-000\"}", "parameter.vtail_naca", NULL },
	{ "{\"vtail_naca\": \"2400\"}", "parameter.vtail_naca", NULL },
	{ "{\"vtail_naca\": \"0000-25\"}", "parameter.vtail_naca", NULL },
	{ "{\"wing_naca\": \"6015\"}", "parameter.wing_naca",
	  "NACA-W of the wing (wing_naca): \"6015\" has camber but no camber "
	  "position (its second digit is 0): the mean line divides by it, and "
	  "DATCOM's coefficients come out NaN" },
	{ "{\"alschd\": [1, 2, 3, 4, 5, 90]}", "parameter.alschd",
	  "ALSCHD(6) (alschd) is 90.0: DATCOM gives no coefficients at 90 "
	  "degrees or beyond (rows of NaN); angles of attack must be between "
	  "-90 and 90" },
	{ "{\"htail_type\": 2}", "parameter.htail_type",
	  "TYPE of the horizontal tail (htail_type) is 2 (double delta): "
	  "DATCOM needs its break point, htail_chrdbp, htail_sspnop, "
	  "htail_savso (without, DATCOM says WING NOT STRAIGHT TAPERED and "
	  "gives no coefficients)" },
	{ "{\"wing_type\": 3, \"wing_chrdbp\": 5.0, \"wing_sspnop\": 16.7, "
	  "\"wing_savso\": 10.0}", "parameter.wing_sspnop",
	  "The wing's outboard panel SSPNOP (16.7) must be shorter than its "
	  "semi-span SSPN (16.7)" },
	{ "{\"wing_naca\": \"00120\"}", "parameter.wing_naca", NULL },
	{ "{\"wing_naca\": \"23000\"}", "parameter.wing_naca", NULL },
	{ "{\"alschd\": [1, 2, 3, 4, 5]}", "parameter.alschd",
	  "The number of angles of attack (5) must match NALPHA (6)" },
	{ "{\"mach\": [0.5, 0.6]}", "parameter.mach",
	  "The number of Mach numbers (2) must match NMACH (1)" },
	{ "{\"alt\": \"0,1000\"}", "parameter.alt",
	  "The number of altitudes (2) must match NALT (1)" },
	{ "{\"nx\": 7}", "parameter.x_coords",
	  "The number of body stations in x_coords (8) must match NX (7)" },
	{ "{\"r_coords\": [0, 1, 1, 1, 1, 1, 1]}", "parameter.r_coords",
	  "The number of body radii in r_coords (7) must match NX (8)" },
	{ "{\"zu_coords\": [0, 1, 1, 1, 1, 1, 1, 1, 1]}", "parameter.zu_coords",
	  "The number of upper body heights in zu_coords (9) must match NX (8)" },
	{ "{\"zl_coords\": [0]}", "parameter.zl_coords",
	  "The number of lower body heights in zl_coords (1) must match NX (8)" },
	{ "{\"rnnub\": [1e6, 2e6]}", "parameter.rnnub",
	  "The number of Reynolds numbers in rnnub (2) must match NMACH (1)" },
	{ "{\"nalpha\": 25}", "parameter.nalpha",
	  "NALPHA (nalpha) must be between 1 and 20, not 25" },
	{ "{\"nmach\": 0}", "parameter.nmach",
	  "NMACH (nmach) must be between 1 and 20, not 0" },
	{ "{\"nalt\": 2.5}", "parameter.nalt",
	  "NALT (nalt) must be a whole number, not 2.5" },
	{ "{\"alschd\": [1, 2, 2, 4, 5, 6]}", "parameter.alschd",
	  "The angles of attack (ALSCHD) must be strictly ascending: value 3 "
	  "(2.0) does not exceed value 2 (2.0)" },
	{ "{\"alschd\": \"6,5,4,3,2,1\"}", "parameter.alschd",
	  "The angles of attack (ALSCHD) must be strictly ascending: value 2 "
	  "(5.0) does not exceed value 1 (6.0)" },
	{ "{\"x_coords\": [0, 1.5, 3.5, 7, 12, 11, 25, 33]}",
	  "parameter.x_coords",
	  "The body stations (X) must be ascending: value 6 (11.0) is less "
	  "than value 5 (12.0)" },
	{ "{\"wing_sspne\": 20}", "parameter.wing_sspne",
	  "The wing's exposed semi-span SSPNE (wing_sspne = 20.0) must not "
	  "exceed its semi-span SSPN (wing_sspn = 16.7)" },
	{ "{\"htail_sspne\": 6.7}", "parameter.htail_sspne",
	  "The horizontal tail's exposed semi-span SSPNE (htail_sspne = 6.7) "
	  "must not exceed its semi-span SSPN (htail_sspn = 6.6)" },
	{ "{\"vtail_sspn\": 5}", "parameter.vtail_sspne",
	  "The vertical tail's exposed semi-span SSPNE (vtail_sspne = 5.2) "
	  "must not exceed its semi-span SSPN (vtail_sspn = 5.0)" },
	{ "{\"wing_chstat\": 1.5}", "parameter.wing_chstat",
	  "CHSTAT of the wing (wing_chstat) must be between 0 and 1, not 1.5" },
	{ "{\"vtail_chstat\": -0.25}", "parameter.vtail_chstat",
	  "CHSTAT of the vertical tail (vtail_chstat) must be between 0 and 1, "
	  "not -0.25" },
	{ "{\"wing_type\": 4}", "parameter.wing_type",
	  "TYPE of the wing (wing_type) must be 1, 2 or 3, not 4" },
	{ "{\"htail_type\": 0}", "parameter.htail_type",
	  "TYPE of the horizontal tail (htail_type) must be 1, 2 or 3, not 0" },
	{ "{\"itype\": 4}", "parameter.itype",
	  "ITYPE (itype) must be 1, 2 or 3, not 4" },
	{ "{\"method\": 3}", "parameter.method",
	  "METHOD (method) must be 1 or 2, not 3" },
	{ "{\"loop\": 4}", "parameter.loop",
	  "LOOP (loop) must be 1, 2 or 3, not 4" },
	{ "{\"wing_naca\": \"12\"}", "parameter.wing_naca",
	  "NACA-W of the wing (wing_naca): \"12\" is not a NACA designation "
	  "DATCOM reads (4-digit 2412 or 0012-25, 5-digit 23012, 6-series "
	  "63-415, 64A204 or 64A204 A=0.8, 1-series 16-212, supersonic "
	  "S-1-40.0-9.0)" },
	{ "{\"htail_naca\": \"0012 A=0.5\"}", "parameter.htail_naca", NULL },
	{ "{\"htail_naca\": \"64A204 A=1.5\"}", "parameter.htail_naca", NULL },
	{ "{\"vtail_naca\": \"S-1-40.0\"}", "parameter.vtail_naca", NULL },
	{ "{\"vtail_naca\": \"5-0012\"}", "parameter.vtail_naca", NULL },
	{ "{\"vtail_naca\": \"6-63415\"}", "parameter.vtail_naca", NULL },
	{ "{\"vtail_naca\": \"2412e\"}", "parameter.vtail_naca", NULL },
	{ "{\"vtail_naca\": \"\"}", "parameter.vtail_naca", NULL },
	/* designation 72 characters: its card would have 81 columns */
	{ "{\"wing_naca\": \"S-1-40.0000000000000000000000000000000000000000"
	  "00000000000000000000000-9.0\"}", "parameter.wing_naca",
	  "NACA-W of the wing (wing_naca) is too long: its card "
	  "NACA-W-S-1-40.00000000000... would have 81 columns; a DATCOM card "
	  "holds at most 80" },
	{ "{\"wing_naca\": 2412}", "parameter.wing_naca",
	  "NACA-W of the wing (wing_naca) must be a NACA designation (a "
	  "string), not an integer" },
	{ "{\"alschd\": \"1,2,3,abc,5,6\"}", "parameter.alschd",
	  "ALSCHD (alschd) is not a list of numbers: item 4 (\"abc\") is not a "
	  "number" },
	{ "{\"alschd\": \"1,2,,4,5,6\"}", "parameter.alschd",
	  "ALSCHD (alschd) is not a list of numbers: item 3 is empty" },
	{ "{\"alschd\": \"1,2,3,4,5,6,\"}", "parameter.alschd",
	  "ALSCHD (alschd) is not a list of numbers: item 7 is empty" },
	{ "{\"mach\": \"0x1p-1\"}", "parameter.mach",
	  "MACH (mach) is not a list of numbers: item 1 (\"0x1p-1\") is not a "
	  "number" },
	{ "{\"mach\": \"inf\"}", "parameter.mach",
	  "MACH (mach) is not a list of numbers: item 1 (\"inf\") is not a "
	  "number" },
	{ "{\"mach\": \"0,5489\"}", "parameter.mach",
	  "MACH(1) (mach) must be greater than 0, not 0.0" },
	{ "{\"mach\": \"1e999\"}", "parameter.mach",
	  "MACH (mach): item 1 (\"1e999\") is out of range" },
	{ "{\"mach\": \"\"}", "parameter.mach",
	  "MACH (mach) is not a list of numbers: item 1 is empty" },
	{ "{\"mach\": []}", "parameter.mach",
	  "MACH (mach) must hold at least one value" },
	{ "{\"mach\": [-0.5]}", "parameter.mach",
	  "MACH(1) (mach) must be greater than 0, not -0.5" },
	{ "{\"mach\": [\"0.5\"]}", "parameter.mach",
	  "MACH(1) (mach) must be a number, not a string" },
	{ "{\"mach\": 0.5}", "parameter.mach",
	  "MACH (mach) must be a list of numbers (a JSON array or a "
	  "comma-separated string), not a number" },
	{ "{\"wt\": -5}", "parameter.wt",
	  "WT (wt) must be greater than 0, not -5.0" },
	{ "{\"wt\": \"5\"}", "parameter.wt",
	  "WT (wt) must be a number, not a string" },
	{ "{\"wing_savsi\": 90}", "parameter.wing_savsi",
	  "SAVSI of the wing (wing_savsi) must be strictly between -90 and 90, "
	  "not 90.0" },
	{ "{\"xcg\": 1e300}", "parameter.xcg",
	  "XCG (xcg) is 1e+300, beyond what a DATCOM REAL holds (about 3.4E38)" },
	{ "{\"alt\": \"-4e38\"}", "parameter.alt",
	  "ALT(1) (alt) is -4e+38, beyond what a DATCOM REAL holds (about 3.4E38)" },
	{ "{\"dim\": \"ft\"}", "parameter.dim",
	  "DIM (dim) must be one of FT, IN, M, CM, not \"ft\"" },
	{ "{\"deriv\": 1}", "parameter.deriv",
	  "DERIV (deriv) must be DEG or RAD, not an integer" },
	{ "{\"damp\": \"yes\"}", "parameter.damp",
	  "DAMP (damp) must be true or false, not a string" },
	{ "{\"case_id\": \"  \"}", "parameter.case_id",
	  "CASEID (case_id) must not be empty" },
	{ "{\"case_id\": \"PC-9\\tTRAINER\"}", "parameter.case_id",
	  "CASEID (case_id) may hold only printable ASCII characters (a DATCOM "
	  "card is plain ASCII)" },
	{ "{\"case_id\": \"PC-9 \u00e9\"}", "parameter.case_id", NULL },
	{ "{\"case_id\": \"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\"}",
	  "parameter.case_id",
	  "CASEID (case_id) has 74 characters; a CASEID card holds at most 73" },
};

/* A cranked wing with its break point: the planform namelist carries
 * it (issue 15: all 32 TYPE 2/3 decks without one gave nothing). */
static void test_cranked_planform(void **state)
{
	json_t *p = pc9();
	struct sbuf deck = SBUF_INIT;
	struct ferr err = FERR_INIT;

	(void)state;
	json_object_update_new(p, json_pack("{s:i, s:f, s:f, s:f, s:f}",
					    "wing_type", 3, "wing_chrdbp",
					    5.2, "wing_sspnop", 9.5,
					    "wing_savso", 12.5, "wing_dhdado",
					    3.0));
	assert_int_equal(datcom_check(p, &err), 0);
	assert_int_equal(datcom_render(p, &deck, &err), 0);
	keep("datcom-cranked", p, NULL, &deck);
	assert_non_null(strstr(deck.buf, "TYPE=3.0,CHRDBP=5.2,SSPNOP=9.5,"
				       "SAVSO=12.5,DHDADO=3.0$"));
	/* and reads back as it was */
	{
		struct deck *d = NULL, *rest = NULL;
		struct deck_problems pr = DECK_PROBLEMS_INIT;
		json_t *back = NULL;

		assert_int_equal(deck_parse(deck.buf, deck.len, &d, &pr), 0);
		assert_int_equal(datcom_from_deck(d, &back, &rest, NULL, &err),
				 0);
		assert_true(json_real_value(json_object_get(back,
				"wing_sspnop")) == 9.5);
		assert_int_equal(json_integer_value(json_object_get(back,
				 "wing_type")), 3);
		json_decref(back);
		deck_free(rest);
		deck_free(d);
		deck_problems_release(&pr);
	}
	sbuf_release(&deck);
	json_decref(p);
}

/* What DATCOM answers in part only: lines for status, each what DATCOM
 * printed for such decks (issue 28's runs). */
static void warn_is(const json_t *p, const struct deck *rest,
		    const char *want)
{
	struct sbuf out = SBUF_INIT;

	assert_int_equal(datcom_check(p, &(struct ferr)FERR_INIT), 0);
	assert_int_equal(datcom_warnings_with(p, rest, &out), 0);
	if (strcmp(out.len ? out.buf : "", want))
		fail_msg("notes:\n%s\nwanted:\n%s", out.len ? out.buf : "",
			 want);
	sbuf_release(&out);
}

/* A deck of one case carrying `text` through. */
static struct deck *carried(const char *text)
{
	struct deck *d = NULL;

	assert_int_equal(deck_parse(text, strlen(text), &d, NULL), 0);
	return d;
}

static void test_warnings(void **state)
{
	json_t *p = pc9();
	struct sbuf out = SBUF_INIT;
	struct deck *nose;

	(void)state;
	warn_is(p, NULL, "");
	json_object_update_new(p, json_pack("{s:i, s:[f, f, f, f, f, f], "
					    "s:i, s:[f, f, f, f, f, f]}",
					    "nmach", 6, "mach", 0.5, 0.6,
					    0.60000001, 0.6000001, 1.39, 1.4,
					    "nalt", 6, "alt", 0.0, 1000.0,
					    2000.0, 3000.0, 4000.0, 5000.0));
	/* above STMACH and below TSMACH, and from TSMACH on, in single
	 * precision as DATCOM compares (main00.f): 0.6 and 0.60000001 are
	 * one REAL there, subsonic; 0.6000001 is a REAL above it */
	warn_is(p, NULL, "MACH 0.6000001, 1.39 are above STMACH 0.6 and below TSMACH "
		"1.4 (transonic), where DATCOM has few methods: its tables "
		"there print NDM (no method) for most coefficients, CD alone "
		"at best (stmach, up to 0.99, and tsmach, 1.01 to 1.4, move "
		"the limits)\n"
		"MACH 1.4 is at or above TSMACH 1.4 (supersonic): there "
		"DATCOM's body method needs the nose and afterbody lengths BLN "
		"and BLA, which only a deck's $BODY carries through, and "
		"without them CD and CL print NaN or NDM wherever the body "
		"is\n");
	/* STMACH and TSMACH given move them; BLN and BLA carried through
	 * answer the second */
	json_object_set_new(p, "stmach", json_real(0.61));
	json_object_set_new(p, "tsmach", json_real(1.39));
	nose = carried(" $BODY BLN=7.0,BLA=11.0$\nNEXT CASE\n");
	warn_is(p, nose, "");
	json_object_set_new(p, "tsmach", json_real(1.4));
	warn_is(p, nose, "MACH 1.39 is above STMACH 0.61 and below TSMACH 1.4 "
		"(transonic), where DATCOM has few methods: its tables there "
		"print NDM (no method) for most coefficients, CD alone at best "
		"(stmach, up to 0.99, and tsmach, 1.01 to 1.4, move the "
		"limits)\n");
	deck_free(nose);
	nose = carried(" $BODY BLN=7.0$\nNEXT CASE\n");
	json_object_set_new(p, "stmach", json_real(0.99));
	json_object_set_new(p, "tsmach", json_real(1.01));
	warn_is(p, nose, "MACH 1.39, 1.4 are at or above TSMACH 1.01 "
		"(supersonic): there DATCOM's body method needs the nose and "
		"afterbody lengths BLN and BLA, which only a deck's $BODY "
		"carries through, and without them CD and CL print NaN or NDM "
		"wherever the body is\n");
	deck_free(nose);
	json_object_del(p, "stmach");
	json_object_del(p, "tsmach");
	/* NALT other than NMACH with LOOP 1 is said, not refused */
	json_object_set_new(p, "nmach", json_integer(1));
	json_object_set_new(p, "mach", json_pack("[f]", 0.5));
	warn_is(p, NULL, "NALT (6) differs from NMACH (1) while LOOP is 1 "
		"(Mach number and altitude vary together, in pairs): DATCOM "
		"says so and takes the first 1 of each (loop 2 or 3 computes "
		"every combination)\n");
	json_object_set_new(p, "loop", json_integer(2));
	warn_is(p, NULL, "");
	/* LOOP 3 with Reynolds numbers, no altitudes: DATCOM runs LOOP 1 */
	json_object_set_new(p, "loop", json_integer(3));
	json_object_del(p, "alt");
	json_object_del(p, "nalt");
	json_object_set_new(p, "rnnub", json_pack("[f]", 2.9e6));
	warn_is(p, NULL, "LOOP 3 (loop) varies the altitude, but only Reynolds "
		"numbers (rnnub) are given: DATCOM says ATMOSPHERIC DATA ARE "
		"NOT DEFINED and runs LOOP 1 instead\n");
	json_object_del(p, "loop");
	warn_is(p, NULL, "");
	/* a cranked or double-delta wing with a tail: NDM with the tail */
	json_object_update_new(p, json_pack("{s:i, s:f, s:f, s:f}",
					    "wing_type", 2, "wing_chrdbp",
					    5.2, "wing_sspnop", 9.5,
					    "wing_savso", 12.5));
	warn_is(p, NULL, "The wing's planform is TYPE 2 (double delta): with "
		"a tail, DATCOM computes the configurations up to wing-body, "
		"and those with a tail print NDM (no method)\n");
	json_object_set_new(p, "htail_type", json_integer(3));
	json_object_set_new(p, "htail_chrdbp", json_real(3.0));
	json_object_set_new(p, "htail_sspnop", json_real(3.0));
	json_object_set_new(p, "htail_savso", json_real(8.0));
	json_object_set_new(p, "wing_type", json_integer(1));
	warn_is(p, NULL, "");
	/* no wing: the reference lengths DATCOM lacks */
	{
		const char *k;
		json_t *v;
		void *tmp;

		json_object_foreach_safe(p, tmp, k, v)
			if (!strncmp(k, "wing_", 5) || !strcmp(k, "xw") ||
			    !strcmp(k, "zw") || !strcmp(k, "aliw"))
				json_object_del(p, k);
	}
	warn_is(p, NULL, "");
	json_object_del(p, "blref");
	warn_is(p, NULL, "Without a wing DATCOM has no reference lengths of "
		"its own: without blref its CNB and CLB print ****, Inf or "
		"values near 1E28\n");
	json_object_del(p, "cbarr");
	warn_is(p, NULL, "Without a wing DATCOM has no reference lengths of "
		"its own: without cbarr and blref its CM, XCP and CMA and CNB "
		"and CLB print ****, Inf or values near 1E28\n");
	/* nothing for what datcom_check refuses (a count unlike its list),
	 * though Mach 0.95 is above STMACH */
	json_object_set_new(p, "nmach", json_integer(2));
	json_object_set_new(p, "mach", json_pack("[f, f, f]", 0.5, 0.6,
						 0.95));
	assert_int_not_equal(datcom_check(p, &(struct ferr)FERR_INIT), 0);
	assert_int_equal(datcom_warnings(p, &out), 0);
	assert_int_equal(out.len, 0);
	sbuf_release(&out);
	json_decref(p);
}

/* What a complete set leaves out that DATCOM computes nothing without:
 * refused by datcom_check_with() and the deck, not by datcom_check() (a
 * request may leave it to a deck). */
static void complete_refuses(const json_t *p, const struct deck *rest,
			     const char *path, const char *want)
{
	struct ferr err = FERR_INIT;
	struct sbuf out = SBUF_INIT;

	assert_int_equal(datcom_check(p, &err), 0);
	assert_int_equal(datcom_check_with(p, rest, &err), -EINVAL);
	assert_string_equal(err.path, path);
	if (strncmp(err.message, want, strlen(want)))
		fail_msg("got %s\nwanted %s...", err.message, want);
	err = (struct ferr)FERR_INIT;
	assert_int_equal(datcom_render_with(p, rest, &out, &err), -EINVAL);
	assert_string_equal(err.path, path);
	assert_int_equal(out.len, 0);
}

static void complete_accepts(const json_t *p, const struct deck *rest)
{
	struct ferr err = FERR_INIT;
	struct sbuf out = SBUF_INIT;

	if (datcom_check_with(p, rest, &err))
		fail_msg("refused: %s: %s", err.path, err.message);
	assert_int_equal(datcom_render_with(p, rest, &out, &err), 0);
	keep("datcom-complete", p, rest, &out);
	sbuf_release(&out);
}

static void test_complete(void **state)
{
	json_t *p = pc9();
	struct deck *s = carried(" $BODY S(1)=0.0,3.8,8.0,11.3,11.3,7.1,2.5,"
				 "0.2$\nNEXT CASE\n");
	struct deck *sp = carried(" $BODY S(1)=0.0,3.8,8.0,11.3,11.3,7.1,2.5,"
				  "0.2,P(1)=0.0,6.9,10.0,11.9,11.9,9.4,5.7,"
				  "1.6$\nNEXT CASE\n");

	(void)state;
	complete_accepts(p, NULL);
	/* the body: R alone, S alone, or R, S and P (inputb.f) */
	json_object_del(p, "r_coords");
	complete_refuses(p, NULL, "parameter.r_coords", "The body is given by "
			 "its stations X alone: DATCOM needs its radii R "
			 "(r_coords), or its areas S in a $BODY of a deck, and "
			 "without either prints THE BODY IS NOT ADEQUATELY "
			 "DEFINED and computes nothing");
	json_object_del(p, "zu_coords");
	json_object_del(p, "zl_coords");
	complete_refuses(p, NULL, "parameter.r_coords", "The body is given");
	complete_accepts(p, s);
	complete_refuses(p, sp, "parameter.r_coords", "The body gives S and "
			 "P: DATCOM takes R (r_coords) alone, S alone, or R, S "
			 "and P together");
	json_object_set_new(p, "r_coords", json_pack("[f,f,f,f,f,f,f,f]", 0.0,
		1.1, 1.6, 1.9, 1.9, 1.5, 0.9, 0.25));
	complete_refuses(p, s, "parameter.r_coords", "The body gives R and S:");
	complete_accepts(p, sp);
	/* LOOP 2 or 3 loops over NALT altitudes */
	json_object_del(p, "nalt");
	complete_accepts(p, NULL);
	json_object_set_new(p, "loop", json_integer(2));
	complete_refuses(p, NULL, "parameter.nalt", "NALT (nalt) is needed "
			 "with LOOP 2 (loop): DATCOM loops over NALT altitudes, "
			 "and without it over none (no flight condition, "
			 "nothing computed)");
	json_object_set_new(p, "loop", json_integer(3));
	complete_refuses(p, NULL, "parameter.nalt", "NALT (nalt) is needed "
			 "with LOOP 3");
	json_object_set_new(p, "nalt", json_integer(1));
	complete_accepts(p, NULL);
	json_object_del(p, "loop");
	/* no wing: SREF */
	{
		const char *k;
		json_t *v;
		void *tmp;

		json_object_foreach_safe(p, tmp, k, v)
			if (!strncmp(k, "wing_", 5) || !strcmp(k, "xw") ||
			    !strcmp(k, "zw") || !strcmp(k, "aliw"))
				json_object_del(p, k);
	}
	complete_accepts(p, NULL);
	json_object_del(p, "sref");
	complete_refuses(p, NULL, "parameter.sref", "SREF (sref) is needed "
			 "without a wing: DATCOM takes the reference area from "
			 "the wing, and without one its coefficients print "
			 "NDM, **** or NaN");
	deck_free(s);
	deck_free(sp);
	json_decref(p);
}

static void test_refusals(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(refusals) / sizeof(*refusals); i++) {
		const struct refusal *t = &refusals[i];
		json_t *p = pc9(), *set = parse(t->set);
		struct ferr err = FERR_INIT, err2 = FERR_INIT;
		struct sbuf out = SBUF_INIT;
		struct deck *d = (struct deck *)&out;

		json_object_update(p, set);
		if (datcom_check(p, &err) != -EINVAL)
			fail_msg("%s: accepted", t->set);
		if (strcmp(err.path, t->path))
			fail_msg("%s: path %s", t->set, err.path);
		if (t->message && strcmp(err.message, t->message))
			fail_msg("%s:\n got      %s\n expected %s", t->set,
				 err.message, t->message);
		if (!t->message && !strstr(err.message, "(") )
			fail_msg("%s: %s does not name the parameter", t->set,
				 err.message);
		/* render and build refuse with the same words, no output */
		assert_int_equal(datcom_render(p, &out, &err2), -EINVAL);
		assert_string_equal(err2.message, err.message);
		assert_int_equal(out.len, 0);
		assert_int_equal(datcom_build(p, &d, NULL), -EINVAL);
		assert_null(d);
		json_decref(set);
		json_decref(p);
	}
}

static void test_accepted_forms(void **state)
{
	static const char *const nacas[][2] = {
		{ "0012", "4-0012" }, { "2412", "4-2412" },
		{ "naca 2412", "4-2412" }, { "NACA-0012-25", "4-0012-25" },
		{ "23012", "5-23012" }, { "23012-33", "5-23012-33" },
		{ "63-415", "6-63-415" }, { "64a204", "6-64A204" },
		{ "631-012", "6-631-012" }, { "64A204  A=0.8", "6-64A204 A=0.8" },
		{ "65A004 A=1", "6-65A004 A=1" }, { "16-212", "1-16-212" },
		{ "S-1-40.0-9.0", "S-1-40.0-9.0" },
		{ "s-3-30.0-2.5-20.0", "S-3-30.0-2.5-20.0" },
		{ "6-65A004", "6-65A004" }, { "4-6412", "4-6412" },
		{ " 0009 ", "4-0009" },
		/* the longest designation a card holds: 80 columns */
		{ "S-1-40.0000000000000000000000000000000000000000"
		  "0000000000000000000000-9.0",
		  "S-1-40.0000000000000000000000000000000000000000"
		  "0000000000000000000000-9.0" },
	};
	struct sbuf out = SBUF_INIT;
	struct rules_deck rd;

	(void)state;
	for (size_t i = 0; i < sizeof(nacas) / sizeof(*nacas); i++) {
		json_t *p = pc9();
		char card[DECK_COLUMNS + 1];

		json_object_set_new(p, "wing_naca", json_string(nacas[i][0]));
		assert_int_equal(datcom_check(p, NULL), 0);
		sbuf_reset(&out);
		render_ok(p, &out, &rd);
		snprintf(card, sizeof(card), "NACA-W-%s", nacas[i][1]);
		assert_string_equal(rd.cards[7], card);
		json_decref(p);
	}
	sbuf_release(&out);
}

/* Lists as comma-separated strings give the same deck as arrays. */
static void test_comma_strings(void **state)
{
	json_t *a = pc9(), *b = pc9();
	struct sbuf da = SBUF_INIT, db = SBUF_INIT;
	struct rules_deck rd;

	(void)state;
	json_object_set_new(b, "alschd", json_string("1.0, 2.0,3,4 ,+5,6e0"));
	json_object_set_new(b, "mach", json_string(" .5489 "));
	json_object_set_new(b, "alt", json_string("1E4"));
	json_object_set_new(b, "x_coords",
			    json_string("0,1.5,3.5,7,12,18,25,33.27"));
	json_object_set_new(b, "r_coords",
			    json_string("0.0,1.1,1.6,1.9,1.9,1.5,0.9,0.25"));
	json_object_set_new(b, "zu_coords",
			    json_string("0,1,1.7,2.5,2.6,2,1.2,.5"));
	json_object_set_new(b, "zl_coords",
			    json_string("-0,-1,-1.5,-1.8,-1.8,-1.3,-0.6,-0.1"));
	json_object_set_new(b, "nalpha", json_real(6.0));
	render_ok(a, &da, &rd);
	render_ok(b, &db, &rd);
	assert_string_equal(da.buf, db.buf);
	sbuf_release(&da);
	sbuf_release(&db);
	json_decref(a);
	json_decref(b);
}

static void test_missing(void **state)
{
	json_t *p = pc9(), *empty = json_object();
	struct sbuf out = SBUF_INIT;
	struct ferr err = FERR_INIT;
	struct deck *d;

	(void)state;
	assert_int_equal(datcom_missing(p, &out), 0);
	assert_string_equal(out.buf, "");
	assert_int_equal(datcom_missing(empty, &out), 9);
	assert_string_equal(out.buf, "nalpha, alschd, nmach, mach, alt, xcg, "
			    "zcg, nx, x_coords");
	assert_null(strstr(out.buf, "dim"));
	assert_null(strstr(out.buf, "sref"));
	sbuf_reset(&out);
	json_object_del(p, "wing_naca");
	json_object_del(p, "vtail_type");
	json_object_del(p, "dim");
	assert_int_equal(datcom_missing(p, &out), 2);
	assert_string_equal(out.buf, "wing_naca, vtail_type");
	/* what is present is still checked; build wants everything */
	assert_int_equal(datcom_check(p, &err), 0);
	assert_int_equal(datcom_build(p, &d, &err), -EINVAL);
	assert_string_equal(err.message,
			    "missing required parameters: wing_naca, vtail_type");
	json_object_set_new(p, "nalpha", json_integer(5));
	assert_int_equal(datcom_check(p, &err), -EINVAL);
	assert_string_equal(err.message,
			    "The number of angles of attack (6) must match NALPHA (5)");
	/* not an object */
	sbuf_reset(&out);
	assert_int_equal(datcom_missing(NULL, &out), 9);
	/* a configuration without horizontal tail: nothing of it missing,
	 * and no HTPLNF or NACA-H in the deck; a tail begun is a tail */
	{
		static const char *const htail[] = {
			"xh", "zh", "alih", "htail_naca", "htail_chrdtp",
			"htail_sspn", "htail_sspne", "htail_chrdr",
			"htail_savsi", "htail_chstat", "htail_twista",
			"htail_dhdadi", "htail_type",
		};
		json_t *q = pc9();
		struct sbuf deck = SBUF_INIT;

		for (size_t i = 0; i < sizeof(htail) / sizeof(*htail); i++)
			json_object_del(q, htail[i]);
		sbuf_reset(&out);
		assert_int_equal(datcom_missing(q, &out), 0);
		assert_int_equal(datcom_render(q, &deck, &err), 0);
		keep("datcom-no-htail", q, NULL, &deck);
		assert_null(strstr(deck.buf, "HTPLNF"));
		assert_null(strstr(deck.buf, "NACA-H"));
		assert_non_null(strstr(deck.buf, " $WGPLNF "));
		assert_non_null(strstr(deck.buf, "NACA-V-"));
		json_object_set_new(q, "htail_sspn", json_real(6.6));
		assert_int_equal(datcom_missing(q, &out), 8);
		assert_string_equal(out.buf, "xh, zh, htail_naca, htail_chrdtp, "
				    "htail_sspne, htail_chrdr, htail_savsi, "
				    "htail_type");
		sbuf_release(&deck);
		json_decref(q);
	}
	assert_int_equal(datcom_check(json_array_get(NULL, 0), &err), -EINVAL);
	sbuf_release(&out);
	json_decref(empty);
	json_decref(p);
}

/* A small deterministic PRNG (xorshift64*), seeded per test. */
static uint64_t rng_state;

static uint64_t rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ULL;
}

/* A number in [lo, hi] with 0..4 decimals, or an integer. */
static double pick(double lo, double hi)
{
	static const double scales[] = { 1, 10, 100, 1000, 10000 };
	double scale = scales[rng() % 5];
	double v;

	for (int tries = 0; tries < 100; tries++) {
		v = lo + (hi - lo) * ((double)(rng() >> 11) / 9007199254740992.0);
		v = round(v * scale) / scale;
		if (v >= lo && v <= hi)
			return v;
	}
	return lo;
}

/* The schema's bounds for a number schema, narrowed to [-1e5, 1e5]. */
static void bounds(const json_t *s, double *lo, double *hi)
{
	const json_t *j;

	*lo = -1e5;
	*hi = 1e5;
	if ((j = json_object_get(s, "minimum")))
		*lo = json_number_value(j);
	if ((j = json_object_get(s, "exclusiveMinimum")))
		*lo = json_number_value(j) + 0.0001;
	if ((j = json_object_get(s, "maximum")))
		*hi = json_number_value(j);
	if ((j = json_object_get(s, "exclusiveMaximum")))
		*hi = json_number_value(j) - 0.0001;
	if (*lo == -1e5 && *hi == 1e5 && rng() % 8 == 0) {
		*lo = -5e10;	/* sometimes numbers written with E */
		*hi = 5e10;
	}
}

/* n numbers for a list property, as an array or a string. */
static json_t *list(const json_t *prop, size_t n, bool ascending,
		    bool strict)
{
	const json_t *items = json_object_get(prop, "items");
	double lo, hi, v[20];
	json_t *a;
	struct sbuf s = SBUF_INIT;

	bounds(items, &lo, &hi);
	/* angles strictly within +-90: DATCOM computes nothing at 90
	 * (check_computable); the schema's Mach range is DATCOM's */
	if (lo == -90 && hi == 90) {
		lo = -89.9;
		hi = 89.9;
	}
	for (size_t i = 0; i < n; i++)
		v[i] = pick(lo, hi);
	if (ascending) {
		for (size_t i = 1; i < n; i++)
			for (size_t k = i; k > 0 && v[k] < v[k - 1]; k--) {
				double t = v[k];
				v[k] = v[k - 1];
				v[k - 1] = t;
			}
		if (strict) {
			/* evenly spaced instead, so no duplicates */
			double step = round(pick(0.1, (hi - lo) / (double)n) *
					    10) / 10;
			v[0] = pick(lo, hi - step * (double)(n - 1));
			for (size_t i = 1; i < n; i++)
				v[i] = v[0] + step * (double)i;
			for (size_t i = 0; i < n; i++)
				v[i] = round(v[i] * 10000) / 10000;
		}
	}
	if (rng() % 3) {
		a = json_array();
		for (size_t i = 0; i < n; i++)
			json_array_append_new(a, rng() % 2 && v[i] == floor(v[i]) ?
					      json_integer((json_int_t)v[i]) :
					      json_real(v[i]));
		return a;
	}
	for (size_t i = 0; i < n; i++)
		sbuf_addf(&s, "%s%.4f", i ? (rng() % 2 ? ", " : ",") : "",
			  v[i]);
	a = json_string(s.buf);
	sbuf_release(&s);
	return a;
}

/* Is `key` in the schema's required list? */
static int is_required(const json_t *schema, const char *key)
{
	size_t i;
	json_t *v;

	json_array_foreach(json_object_get(schema, "required"), i, v)
		if (!strcmp(json_string_value(v), key))
			return 1;
	return 0;
}

/* Required once its surface is there (the schema's description): the
 * generator gives every surface whole. */
static bool surface_required(const char *key)
{
	static const char *const places[] = { "xw", "zw", "xh", "zh", "xv",
					      "zv" };

	for (size_t i = 0; i < sizeof(places) / sizeof(*places); i++)
		if (!strcmp(key, places[i]))
			return true;
	return (!strncmp(key, "wing_", 5) || !strncmp(key, "htail_", 6) ||
		!strncmp(key, "vtail_", 6)) &&
	       !strstr(key, "chstat") && !strstr(key, "twista") &&
	       !strstr(key, "dhdadi");
}

/* A random valid parameter set drawn from the schema's ranges. */
static json_t *random_params(const json_t *schema)
{
	const json_t *props = json_object_get(schema, "properties");
	static const char *const nacas[] = {
		"0012", "2412", "4415-63", "23012", "63-415", "64A204",
		"643-618", "65A004 A=0.8", "16-212", "S-1-40.0-9.0",
		"S-3-30.0-2.5-20.0", "NACA 0009", "6-63A210",
	};
	json_t *p = json_object();
	size_t nalpha = 1 + rng() % 20, nmach = 1 + rng() % 20,
	       nx = 2 + rng() % 19, nalt = nmach;
	const char *key;
	json_t *prop;
	int loop = 1;

	if (rng() % 3 == 0) {
		loop = 2 + (int)(rng() % 2);
		nalt = 1 + rng() % 20;
		json_object_set_new(p, "loop", json_integer(loop));
	}
	json_object_foreach((json_t *)props, key, prop) {
		const json_t *type = json_object_get(prop, "type");
		const json_t *en = json_object_get(prop, "enum");
		double lo, hi;

		if (!strcmp(key, "loop"))
			continue;
		/* alt too: required unless rnnub is given; the body's radii,
		 * nalt with LOOP 2 or 3 (check_complete): without them
		 * DATCOM computes nothing */
		if (!is_required(schema, key) && !surface_required(key) &&
		    strcmp(key, "alt") && strcmp(key, "r_coords") &&
		    (strcmp(key, "nalt") || loop == 1) && rng() % 2)
			continue;
		if (!strcmp(key, "case_id")) {
			json_object_set_new(p, key,
					    json_string("RANDOM CASE 1.0e4 $ 'X'"));
		} else if (strstr(key, "_type")) {
			/* 2 and 3 need break-point data (check_computable) */
			json_object_set_new(p, key, json_integer(1));
		} else if (en) {
			json_object_set(p, key, json_array_get(
				en, rng() % json_array_size(en)));
		} else if (strstr(key, "naca")) {
			json_object_set_new(p, key, json_string(
				nacas[rng() % (sizeof(nacas) / sizeof(*nacas))]));
		} else if (json_is_string(type) &&
			   !strcmp(json_string_value(type), "boolean")) {
			json_object_set_new(p, key, json_boolean(rng() % 2));
		} else if (json_is_string(type) &&
			   !strcmp(json_string_value(type), "integer")) {
			size_t n = !strcmp(key, "nalpha") ? nalpha :
				   !strcmp(key, "nmach") ? nmach :
				   !strcmp(key, "nalt") ? nalt :
				   !strcmp(key, "nx") ? nx : 0;
			json_int_t lo_i = json_integer_value(
				json_object_get(prop, "minimum"));
			json_int_t hi_i = json_integer_value(
				json_object_get(prop, "maximum"));

			if (!n)
				n = (size_t)(lo_i + (json_int_t)(rng() %
						(uint64_t)(hi_i - lo_i + 1)));
			json_object_set_new(p, key, rng() % 2 ?
					    json_integer((json_int_t)n) :
					    json_real((double)n));
		} else if (json_is_array(type)) {
			size_t n = !strcmp(key, "alschd") ? nalpha :
				   !strcmp(key, "mach") || !strcmp(key, "rnnub") ?
				   nmach : !strcmp(key, "alt") ? nalt : nx;

			json_object_set_new(p, key, list(prop, n,
				!strcmp(key, "alschd") || !strcmp(key, "x_coords") ||
				!strcmp(key, "mach"), !strcmp(key, "alschd")));
		} else {
			bounds(prop, &lo, &hi);
			json_object_set_new(p, key, json_real(pick(lo, hi)));
		}
	}
	/* exposed semi-span within the semi-span */
	for (const char *const *s = (const char *const[]){ "wing_", "htail_",
	     "vtail_", NULL }; *s; s++) {
		char a[32], b[32];
		double sspn, sspne;

		snprintf(a, sizeof(a), "%ssspn", *s);
		snprintf(b, sizeof(b), "%ssspne", *s);
		sspn = json_number_value(json_object_get(p, a));
		sspne = json_number_value(json_object_get(p, b));
		if (json_object_get(p, a) && json_object_get(p, b) &&
		    sspne > sspn) {
			json_object_set_new(p, a, json_real(sspne));
			json_object_set_new(p, b, json_real(sspn));
		}
	}
	return p;
}

/* The value written for `v` must be v to 4 decimals (or 7 digits with E). */
static void same_number(const char *written, double v, const char *what)
{
	double w = strtod(written, NULL);
	double tol = fabs(v) >= 1e9 ? fabs(v) * 1e-6 : 0.00005 + 1e-9;

	if (fabs(w - v) > tol)
		fail_msg("%s: %.17g written as %s", what, v, written);
}

static void test_random_valid(void **state)
{
	struct skill *s = load_skill();
	struct sbuf out = SBUF_INIT;
	struct rules_deck rd;

	(void)state;
	rng_state = 0x9E3779B97F4A7C15ULL;
	for (int round = 0; round < 500; round++) {
		json_t *p = random_params(s->parameter_schema);
		struct ferr err = FERR_INIT;
		const struct rules_var *v;
		char *dump;

		if (schema_validate(s->parameter_schema, NULL, p, "parameter",
				    0, &err) < 0) {
			dump = fjson_dumps(p);
			fail_msg("generator broke the schema: %s: %s\n%s",
				 err.path, err.message, dump);
		}
		sbuf_reset(&out);
		if (datcom_render(p, &out, &err) < 0) {
			dump = fjson_dumps(p);
			fail_msg("refused %s: %s\n%s", err.path, err.message,
				 dump);
		}
		/* one in ten for DATCOM: a quarter second a deck, which
		 * tools/test's time allows no more of */
		if (round % 10 == 0)
			keep("datcom-random", p, NULL, &out);
		{
			int line;
			const char *why = rules_check(out.buf, out.len, &rd,
						      &line);
			if (why)
				fail_msg("line %d: %s\n%s", line, why, out.buf);
		}
		/* the values given are the values written */
		v = rules_find(&rd, "FLTCON", "ALSCHD");
		assert_non_null(v);
		assert_int_equal(v->nvalues, (int)json_number_value(
			json_object_get(p, "nalpha")));
		v = rules_find(&rd, "WGPLNF", "SSPN");
		assert_non_null(v);
		same_number(v->values[0], json_number_value(
			json_object_get(p, "wing_sspn")), "wing_sspn");
		v = rules_find(&rd, "SYNTHS", "XCG");
		same_number(v->values[0], json_number_value(
			json_object_get(p, "xcg")), "xcg");
		v = rules_find(&rd, "BODY", "X");
		assert_int_equal(v->nvalues, (int)json_number_value(
			json_object_get(p, "nx")));
		if (json_is_array(json_object_get(p, "x_coords")))
			for (int i = 0; i < v->nvalues; i++)
				same_number(v->values[i], json_number_value(
					json_array_get(json_object_get(
						p, "x_coords"), (size_t)i)),
					"x_coords");
		json_decref(p);
	}
	sbuf_release(&out);
	skill_free(s);
}

/* s with the first `from` replaced by `to` (which must be there). */
static char *replaced(const char *s, const char *from, const char *to)
{
	const char *at = strstr(s, from);
	struct sbuf sb = SBUF_INIT;

	assert_non_null(at);
	assert_int_equal(sbuf_add(&sb, s, (size_t)(at - s)), 0);
	assert_int_equal(sbuf_addstr(&sb, to), 0);
	assert_int_equal(sbuf_addstr(&sb, at + strlen(from)), 0);
	return sbuf_detach(&sb, NULL);
}

/*
 * A deck number beyond a double (1.0E999 reads as an infinity, which JSON
 * cannot hold) imports as the largest double of its sign, so that the
 * parameters still serialise and datcom_check() names the parameter.
 */
static void test_import_beyond_double(void **state)
{
	static const struct {
		const char *key, *message;
	} expect[] = {
		{ "nalpha", "NALPHA (nalpha) must be between 1 and 20, not "
			    "1.7976931348623157e+308" },
		{ "alt", "ALT(1) (alt) is -1.7976931348623157e+308, beyond what "
			 "a DATCOM REAL holds (about 3.4E38)" },
		{ "wt", "WT (wt) is 1.7976931348623157e+308, beyond what a "
			"DATCOM REAL holds (about 3.4E38)" },
	};
	struct deck_problems pr = DECK_PROBLEMS_INIT;
	struct sbuf out = SBUF_INIT;
	struct ferr err = FERR_INIT;
	struct deck *d, *rest;
	json_t *p = pc9(), *params, *merged;
	char *t1, *t2, *text, *dump;

	(void)state;
	assert_int_equal(datcom_render(p, &out, &err), 0);
	t1 = replaced(out.buf, "WT=4960.0$", "WT=1.0E999$");
	t2 = replaced(t1, "ALT(1)=10000.0,", "ALT(1)=-1.0E999,");
	text = replaced(t2, "NALPHA=6.0,", "NALPHA=1.0E999,");
	assert_int_equal(deck_parse(text, strlen(text), &d, &pr), 0);
	assert_int_equal(pr.nr, 3);
	assert_int_equal(pr.v[0].kind, DECK_P_RANGE);
	assert_int_equal(datcom_from_deck(d, &params, &rest, NULL, &err), 0);
	assert_true(json_real_value(json_object_get(params, "wt")) == DBL_MAX);
	assert_true(json_real_value(json_array_get(json_object_get(params,
							"alt"), 0)) ==
		    -DBL_MAX);
	dump = fjson_dumps(params);
	assert_non_null(dump);
	/* each refused in turn, naming the parameter */
	merged = json_deep_copy(params);
	for (size_t i = 0; i < sizeof(expect) / sizeof(*expect); i++) {
		char path[64];

		assert_int_equal(datcom_check(merged, &err), -EINVAL);
		snprintf(path, sizeof(path), "parameter.%s", expect[i].key);
		assert_string_equal(err.path, path);
		assert_string_equal(err.message, expect[i].message);
		json_object_set(merged, expect[i].key,
				json_object_get(p, expect[i].key));
	}
	assert_int_equal(datcom_check(merged, &err), 0);
	json_decref(merged);
	free(dump);
	json_decref(params);
	deck_free(rest);
	deck_free(d);
	deck_problems_release(&pr);
	free(text);
	free(t2);
	free(t1);
	sbuf_release(&out);
	json_decref(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_skill_package),
		cmocka_unit_test(test_pc9_schema_and_prompt),
		cmocka_unit_test(test_pc9_deck),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_warnings),
		cmocka_unit_test(test_complete),
		cmocka_unit_test(test_cranked_planform),
		cmocka_unit_test(test_accepted_forms),
		cmocka_unit_test(test_comma_strings),
		cmocka_unit_test(test_missing),
		cmocka_unit_test(test_random_valid),
		cmocka_unit_test(test_import_beyond_double),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
