/*
 * Fuzz target for core/formats/printout: the bytes are DATCOM's printout
 * (output.dat).  printout_parse(), printout_csv(), printout_plot_script()
 * and printout_input_errors() must never crash or leak, and what they
 * write must hold: every CSV row has the head's 18 fields (no cell
 * carries a comma, a quote or a line end unquoted) and every value in a
 * number's cell is one (abort otherwise); the gnuplot script has no
 * byte outside printable ASCII but its own UTF-8 labels, no line end
 * inside a quoted string, and no quote a title could end early.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/printout.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The fields of one CSV line (RFC 4180): how many, or -1 when a quote
 * is left open. */
static int csv_fields(const char *s, const char *end)
{
	int n = 1;
	bool quoted = false;

	for (; s < end; s++) {
		if (quoted) {
			if (*s == '"' && s + 1 < end && s[1] == '"')
				s++;
			else if (*s == '"')
				quoted = false;
		} else if (*s == '"') {
			quoted = true;
		} else if (*s == ',') {
			n++;
		}
	}
	return quoted ? -1 : n;
}

static void check_csv(const struct sbuf *csv)
{
	const char *p = csv->buf, *end = csv->buf + csv->len;

	if (!csv->len || end[-1] != '\n')
		abort();
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));

		if (!nl || csv_fields(p, nl) != 6 + PRINTOUT_COLUMNS + 1)
			abort();
		p = nl + 1;
	}
}

/* Single-quoted strings are closed on their line: a title cannot run
 * on into the next command. */
static void check_script(const struct sbuf *gp)
{
	bool quoted = false;

	for (size_t i = 0; i < gp->len; i++) {
		unsigned char c = (unsigned char)gp->buf[i];

		if (c == '\'')
			quoted = !quoted;	/* '' reads as close and open */
		else if (c == '\n' && quoted)
			abort();
		else if (c < 0x20 && c != '\n')
			abort();
	}
	if (quoted)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct printout p;
	struct sbuf csv = SBUF_INIT, gp = SBUF_INIT, errors = SBUF_INIT;

	printout_input_errors((const char *)data, size, 3, &errors);
	if (printout_parse((const char *)data, size, &p) < 0)
		goto out;
	for (size_t i = 0; i < p.n; i++)
		for (size_t r = 0; r < p.tables[i].nrows; r++)
			for (int k = 0; k < PRINTOUT_COLUMNS; k++)
				if (strlen(p.tables[i].rows[r].cell[k]) >=
				    PRINTOUT_CELL)
					abort();
	if (printout_csv(&p, &csv) == 0)
		check_csv(&csv);
	if (printout_plot_script(&p, "coefficients.svg", &gp) == 0)
		check_script(&gp);
	printout_release(&p);
out:
	sbuf_release(&csv);
	sbuf_release(&gp);
	sbuf_release(&errors);
	return 0;
}
