/*
 * Fuzz target for deck: parse arbitrary bytes; when they parse, the deck
 * is written, parsed again and written again.  The two writes must be
 * byte-identical, the second parse must find nothing to report (numbers
 * beyond a Fortran REAL excepted: their spelling is carried through), and
 * the text must pass the independent card-rule checker of
 * tests/deck_rules.h (an input without a card writes nothing, and
 * nothing is checked).  Any disagreement aborts.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/deck.h"
#include "lib/sbuf.h"
#include "../deck_rules.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct deck_problems p1 = DECK_PROBLEMS_INIT, p2 = DECK_PROBLEMS_INIT;
	struct sbuf w1 = SBUF_INIT, w2 = SBUF_INIT;
	struct deck *d1 = NULL, *d2 = NULL;
	char why[256];
	size_t i;
	int ret;

	ret = deck_parse((const char *)data, size, &d1, &p1);
	if (ret < 0) {
		if (d1 || p1.nr == 0 || p1.v[p1.nr - 1].severity != DECK_FATAL)
			abort();
		goto out;
	}
	for (i = 0; i < p1.nr; i++)
		if (p1.v[i].severity == DECK_FATAL || !p1.v[i].message ||
		    p1.v[i].line == 0)
			abort();
	if (deck_write(d1, &w1) < 0)
		abort();
	/* no case at all (the empty input libFuzzer starts with, blanks):
	 * an empty text, which the card rules rightly call no deck; a deck
	 * with a case (even an empty one: NEXT CASE) is never written as
	 * nothing */
	if (d1->nr == 0) {
		if (w1.len)
			abort();
		goto out;
	}
	if (w1.len == 0)
		abort();
	if (deck_rules_check(w1.buf, w1.len, why, sizeof(why)) < 0) {
		fprintf(stderr, "%s\n%s", why, w1.buf);
		abort();
	}
	if (deck_parse(w1.buf, w1.len, &d2, &p2) < 0)
		abort();
	for (i = 0; i < p2.nr; i++)
		if (p2.v[i].kind != DECK_P_RANGE) {
			fprintf(stderr, "line %u: %s\n%s", p2.v[i].line,
				p2.v[i].message, w1.buf);
			abort();
		}
	if (deck_write(d2, &w2) < 0 || w1.len != w2.len ||
	    memcmp(w1.buf, w2.buf, w1.len))
		abort();
out:
	deck_free(d1);
	deck_free(d2);
	deck_problems_release(&p1);
	deck_problems_release(&p2);
	sbuf_release(&w1);
	sbuf_release(&w2);
	return 0;
}
