/*
 * Fuzz target for core/datcom: the bytes are a JSON text used as the
 * parameters, twice: as they are, and merged over a complete valid set
 * (a PC-9), so that small inputs reach the deck builder too.
 * datcom_check/datcom_check_with/datcom_missing/datcom_warnings/
 * datcom_render must never crash or leak; a render that succeeds must
 * have passed datcom_check and datcom_check_with, and the deck it
 * produces must obey every card rule of CARDS.md as the independent
 * checker tests/deck_rules.h sees them (abort otherwise).  The bytes are
 * also read as a deck (as_deck()): import, render with the rest over the
 * PC-9, re-import must be a fixed point.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/datcom.h"
#include "formats/deck.h"
#include "lib/fjson.h"

#include "../deck_rules.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char base_text[] =
	"{\"case_id\": \"PC-9\", \"dim\": \"FT\", \"nalpha\": 6,"
	" \"alschd\": [1, 2, 3, 4, 5, 6], \"nmach\": 1, \"mach\": [0.5489],"
	" \"nalt\": 1, \"alt\": [10000], \"wt\": 4960, \"xcg\": 10.9,"
	" \"zcg\": 0, \"xw\": 8.7, \"zw\": -1.2, \"aliw\": 1, \"xh\": 28.5,"
	" \"zh\": 0.6, \"alih\": 0, \"xv\": 27.9, \"zv\": 0.9, \"nx\": 3,"
	" \"x_coords\": [0, 10, 33.27], \"r_coords\": [0, 1.9, 0.25],"
	" \"zu_coords\": [0, 2.5, 0.5], \"zl_coords\": [0, -1.8, -0.1],"
	" \"itype\": 2, \"method\": 1, \"wing_naca\": \"64A415\","
	" \"wing_chrdtp\": 3.6, \"wing_sspn\": 16.7, \"wing_sspne\": 14.9,"
	" \"wing_chrdr\": 7.2, \"wing_savsi\": 2, \"wing_chstat\": 0.25,"
	" \"wing_twista\": -2, \"wing_dhdadi\": 7, \"wing_type\": 1,"
	" \"htail_naca\": \"0012\", \"htail_chrdtp\": 2, \"htail_sspn\": 6.6,"
	" \"htail_sspne\": 5.9, \"htail_chrdr\": 3.7, \"htail_savsi\": 8,"
	" \"htail_chstat\": 0.25, \"htail_twista\": 0, \"htail_dhdadi\": 0,"
	" \"htail_type\": 1, \"vtail_naca\": \"0010\", \"vtail_chrdtp\": 2.1,"
	" \"vtail_sspn\": 5.6, \"vtail_sspne\": 5.2, \"vtail_chrdr\": 5,"
	" \"vtail_savsi\": 35, \"vtail_chstat\": 0.25, \"vtail_type\": 1}";

static void one(const json_t *params)
{
	struct sbuf out = SBUF_INIT, missing = SBUF_INIT;
	struct ferr err = FERR_INIT;
	struct rules_deck *rd;
	int checked = datcom_check(params, &err);
	int complete = datcom_check_with(params, NULL, &err);
	int nmissing = datcom_missing(params, &missing);
	int r = datcom_render(params, &out, &err);

	if (datcom_warnings(params, &missing) < 0)
		abort();
	if (r == 0) {
		const char *why;
		int line;

		if (checked < 0 || complete < 0 || nmissing != 0) {
			fprintf(stderr, "rendered what check refused\n");
			abort();
		}
		rd = malloc(sizeof(*rd));
		if (!rd)
			abort();
		why = rules_check(out.buf, out.len, rd, &line);
		if (why) {
			fprintf(stderr, "line %d: %s\n%s", line, why, out.buf);
			abort();
		}
		free(rd);
	} else if (out.len) {
		fprintf(stderr, "a refused render left output\n");
		abort();
	}
	sbuf_release(&out);
	sbuf_release(&missing);
}

/*
 * The bytes as a deck: whatever parses is imported; when its parameters
 * merged over the PC-9 pass datcom_check, the deck rendered with its rest
 * must obey every card rule, and importing that deck must give the same
 * rest and a render byte-identical to it.
 */
static void as_deck(const uint8_t *data, size_t size)
{
	struct sbuf d1 = SBUF_INIT, d2 = SBUF_INIT, notes = SBUF_INIT;
	struct sbuf r1 = SBUF_INIT, r2 = SBUF_INIT;
	struct ferr err = FERR_INIT;
	struct deck *d = NULL, *rest = NULL, *dd = NULL, *rest2 = NULL;
	json_t *params = NULL, *base = NULL, *p2 = NULL;
	struct rules_deck *rd = NULL;
	const char *why;
	int line;

	if (deck_parse((const char *)data, size, &d, NULL) < 0)
		goto out;
	if (datcom_from_deck(d, &params, &rest, &notes, &err) < 0) {
		if (d->nr)
			abort();	/* only a deck without a case is refused */
		goto out;
	}
	if (fjson_parse(&base, base_text, strlen(base_text), &err) < 0)
		abort();
	json_object_update(base, params);
	if (datcom_check(base, &err) < 0)
		goto out;
	if (datcom_render_with(base, rest, &d1, &err) < 0)
		goto out;	/* e.g. a NACA card too long with the base */
	if (datcom_check_with(base, rest, &err) < 0 ||
	    datcom_warnings_with(base, rest, &notes) < 0) {
		fprintf(stderr, "rendered what check_with refused\n");
		abort();
	}
	rd = malloc(sizeof(*rd));
	if (!rd)
		abort();
	why = rules_check_any(d1.buf, d1.len, rd, &line);
	if (why) {
		fprintf(stderr, "line %d: %s\n%s", line, why, d1.buf);
		abort();
	}
	if (deck_parse(d1.buf, d1.len, &dd, NULL) < 0 ||
	    datcom_from_deck(dd, &p2, &rest2, NULL, &err) < 0 ||
	    deck_write(rest, &r1) < 0 || deck_write(rest2, &r2) < 0 ||
	    strcmp(r1.buf, r2.buf) ||
	    datcom_render_with(p2, rest2, &d2, &err) < 0 ||
	    strcmp(d1.buf, d2.buf)) {
		fprintf(stderr, "not a fixed point:\n%s---\n%s", d1.buf,
			d2.buf ? d2.buf : "");
		abort();
	}
out:
	free(rd);
	json_decref(params);
	json_decref(base);
	json_decref(p2);
	deck_free(d);
	deck_free(rest);
	deck_free(dd);
	deck_free(rest2);
	sbuf_release(&d1);
	sbuf_release(&d2);
	sbuf_release(&r1);
	sbuf_release(&r2);
	sbuf_release(&notes);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ferr err = FERR_INIT;
	json_t *doc = NULL, *base = NULL;

	as_deck(data, size);

	if (fjson_parse(&doc, (const char *)data, size, &err) < 0)
		return 0;
	one(doc);
	if (json_is_object(doc) &&
	    fjson_parse(&base, base_text, strlen(base_text), &err) == 0) {
		json_object_update(base, doc);
		one(base);
	}
	json_decref(base);
	json_decref(doc);
	return 0;
}
