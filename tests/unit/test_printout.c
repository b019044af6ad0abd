/* Unit tests for printout: DATCOM's printout read for its tables, the
 * CSV and the gnuplot script made from them. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/printout.h"

/* The PC-9's table as DATCOM printed it (README's walk-through), with
 * what stands above it; the rows' second value cells as printed. */
static const char pc9[] =
	"1          THE FOLLOWING IS A LIST OF ALL INPUT CARDS FOR THIS CASE.\n"
	"0\n"
	"1                               AUTOMATED STABILITY AND CONTROL METHODS PER APRIL 1976 VERSION OF DATCOM\n"
	"                                         CHARACTERISTICS AT ANGLE OF ATTACK AND IN SIDESLIP\n"
	"                                        WING-BODY-VERTICAL TAIL-HORIZONTAL TAIL CONFIGURATION\n"
	"                                                      PC-9 TURBOPROP TRAINER\n"
	" \n"
	" -----------------------  FLIGHT CONDITIONS  ------------------------           --------------  REFERENCE DIMENSIONS  ------------\n"
	"  MACH    ALTITUDE   VELOCITY    PRESSURE    TEMPERATURE     REYNOLDS             REF.      REFERENCE LENGTH   MOMENT REF. CENTER\n"
	" NUMBER                                                       NUMBER              AREA       LONG.     LAT.     HORIZ      VERT\n"
	"             FT       FT/SEC     LB/FT**2       DEG R         1/FT               FT**2        FT        FT        FT        FT\n"
	"0 0.549   10000.00     591.32   1.4556E+03     483.025     2.9241E+06           175.300      5.580    33.430    10.900     0.000\n"
	"0                                                               -------------------DERIVATIVE (PER DEGREE)-------------------\n"
	"0 ALPHA     CD       CL       CM       CN       CA       XCP        CLA          CMA          CYB          CNB          CLB\n"
	"0\n"
	"    1.0    0.018    0.297    0.0115   0.298    0.013    0.039    9.841E-02   -2.100E-02   -7.786E-03    1.579E-03   -1.885E-03\n"
	"    2.0    0.022      NDM   -0.0106   0.397    0.008   -0.027    9.917E-02   -2.212E-02                             -1.894E-03\n"
	"    3.0    0.027    0.496   ******    0.496    0.001   -0.066    9.991E-02   -2.230E-02                             -1.903E-03\n"
	"0                                    ALPHA     Q/QINF    EPSLON  D(EPSLON)/D(ALPHA)\n"
	"0\n"
	"                                      1.0      1.000      2.046        0.536\n";

static void test_parse_pc9(void **state)
{
	struct printout p;
	const struct printout_table *t;

	(void)state;
	assert_int_equal(printout_parse(pc9, sizeof(pc9) - 1, &p), 0);
	assert_int_equal(p.n, 1);
	assert_false(p.truncated);
	t = &p.tables[0];
	assert_int_equal(t->case_no, 1);
	assert_string_equal(t->case_id, "PC-9 TURBOPROP TRAINER");
	assert_string_equal(t->config, "WING-BODY-VERTICAL TAIL-HORIZONTAL"
			    " TAIL CONFIGURATION");
	assert_string_equal(t->mach, "0.549");
	assert_string_equal(t->alt, "10000.00");
	assert_string_equal(t->alt_unit, "FT");
	/* the downwash table below is no row of it */
	assert_int_equal(t->nrows, 3);
	assert_string_equal(t->rows[0].alpha, "1.0");
	assert_string_equal(t->rows[0].cell[PRINTOUT_CLA], "9.841E-02");
	assert_string_equal(t->rows[0].cell[PRINTOUT_CYB], "-7.786E-03");
	/* blank where DATCOM printed nothing: each value to its column */
	assert_string_equal(t->rows[1].cell[PRINTOUT_CYB], "");
	assert_string_equal(t->rows[1].cell[PRINTOUT_CNB], "");
	assert_string_equal(t->rows[1].cell[PRINTOUT_CLB], "-1.894E-03");
	assert_string_equal(t->rows[1].cell[PRINTOUT_CL], "NDM");
	assert_string_equal(t->rows[2].cell[PRINTOUT_CM], "******");
	printout_release(&p);
}

static void test_csv(void **state)
{
	struct printout p;
	struct sbuf csv = SBUF_INIT;

	(void)state;
	assert_int_equal(printout_parse(pc9, sizeof(pc9) - 1, &p), 0);
	assert_int_equal(printout_csv(&p, &csv), 0);
	assert_string_equal(csv.buf,
		"case,case_id,configuration,mach,altitude,alpha,CD,CL,CM,CN,CA,"
		"XCP,CLA,CMA,CYB,CNB,CLB,why_empty\n"
		"1,PC-9 TURBOPROP TRAINER,WING-BODY-VERTICAL TAIL-HORIZONTAL TAIL"
		" CONFIGURATION,0.549,10000.00,1.0,0.018,0.297,0.0115,0.298,"
		"0.013,0.039,9.841E-02,-2.100E-02,-7.786E-03,1.579E-03,"
		"-1.885E-03,\n"
		"1,PC-9 TURBOPROP TRAINER,WING-BODY-VERTICAL TAIL-HORIZONTAL TAIL"
		" CONFIGURATION,0.549,10000.00,2.0,0.022,,-0.0106,0.397,0.008,"
		"-0.027,9.917E-02,-2.212E-02,,,-1.894E-03,CL: NDM (no method)\n"
		"1,PC-9 TURBOPROP TRAINER,WING-BODY-VERTICAL TAIL-HORIZONTAL TAIL"
		" CONFIGURATION,0.549,10000.00,3.0,0.027,0.496,,0.496,0.001,"
		"-0.066,9.991E-02,-2.230E-02,,,-1.903E-03,"
		"CM: ****** (too large to print)\n");
	sbuf_release(&csv);
	printout_release(&p);
}

static void test_usable(void **state)
{
	(void)state;
	assert_true(printout_usable("0.018"));
	assert_true(printout_usable("-2.100E-02"));
	assert_true(printout_usable(".5"));
	assert_true(printout_usable("6."));
	assert_false(printout_usable("NDM"));
	assert_false(printout_usable("****"));
	assert_false(printout_usable("NaN"));
	assert_false(printout_usable("Infinity"));
	assert_false(printout_usable("1.0E"));
	assert_false(printout_usable("-"));
	assert_false(printout_usable(""));
	assert_false(printout_usable("0x10"));
}

/* Two Mach numbers, each with two configurations: one curve each, from
 * the last table printed for it; a title with quotes cannot end its
 * string. */
static void test_plot_script(void **state)
{
	struct sbuf text = SBUF_INIT, gp = SBUF_INIT;
	const char *head = strstr(pc9, "1                               AUTO");
	struct printout p;

	(void)state;
	for (int m = 0; m < 2; m++)
		for (int c = 0; c < 2; c++) {
			struct sbuf one = SBUF_INIT;
			char *at;

			assert_int_equal(sbuf_addstr(&one, head), 0);
			at = strstr(one.buf, "0 0.549");
			at[5] = m ? '8' : '4';
			if (!c) {
				at = strstr(one.buf, "WING-BODY-VERTICAL");
				memcpy(at, "WING-BODY-HORIZONTL", 19);
			}
			at = strstr(one.buf, "PC-9 TURBOPROP");
			memcpy(at, "PC'9", 4);
			assert_int_equal(sbuf_add(&text, one.buf, one.len), 0);
			sbuf_release(&one);
		}
	assert_int_equal(printout_parse(text.buf, text.len, &p), 0);
	assert_int_equal(p.n, 4);
	assert_int_equal(printout_plot_script(&p, "c.svg", &gp), 0);
	assert_non_null(strstr(gp.buf, "set output 'c.svg'"));
	assert_non_null(strstr(gp.buf, "title 'M 0.549, 10000.00 ft'"));
	assert_non_null(strstr(gp.buf, "title 'M 0.589, 10000.00 ft'"));
	assert_non_null(strstr(gp.buf, "'DATCOM: PC''9 TURBOPROP TRAINER"
			       " (WING-BODY-VERTICAL TAIL-HORIZONTAL TAIL"
			       " CONFIGURATION)' noenhanced"));
	/* two data blocks, NDM and **** as missing points */
	assert_non_null(strstr(gp.buf, "$c2 << EOD"));
	assert_null(strstr(gp.buf, "$c3 << EOD"));
	assert_non_null(strstr(gp.buf, "2.0 0.022 ? -0.0106\n"));
	assert_non_null(strstr(gp.buf, "3.0 0.027 0.496 ?\n"));
	sbuf_release(&gp);
	printout_release(&p);
	sbuf_release(&text);
}

static void test_nothing_to_plot(void **state)
{
	static const char text[] = "1 END OF JOB.\n";
	struct sbuf gp = SBUF_INIT, csv = SBUF_INIT;
	struct printout p;

	(void)state;
	assert_int_equal(printout_parse(text, sizeof(text) - 1, &p), 0);
	assert_int_equal(p.n, 0);
	assert_int_equal(printout_plot_script(&p, "c.svg", &gp), -ENOENT);
	assert_int_equal(printout_csv(&p, &csv), 0);
	assert_string_equal(strchr(csv.buf, '\n'), "\n");
	sbuf_release(&gp);
	sbuf_release(&csv);
	printout_release(&p);
}

static void test_input_errors(void **state)
{
	static const char text[] =
		"  $FLTCON NMACH=1.0,MACH(1)=0.5489$   ** ERROR ** F\n"
		" 0*** ERROR *** NALT IS NOT EQUAL TO NMACH\n"
		" ILLEGAL CONTROL CARD\n"
		"0 THIS CASE NOT RUN\n";
	struct sbuf out = SBUF_INIT;

	(void)state;
	/* check.f's *** ERROR *** is a correction, not an input error */
	assert_int_equal(printout_input_errors(text, sizeof(text) - 1, 2,
					       &out), 3);
	assert_string_equal(out.buf, "$FLTCON NMACH=1.0,MACH(1)=0.5489$   **"
			    " ERROR ** F\nILLEGAL CONTROL CARD\n");
	sbuf_release(&out);
}

/* A failure's picture: the title, then the text wrapped at a blank in
 * the second half of 90 columns, at most 12 lines, escaped for XML. */
static void test_message_svg(void **state)
{
	struct sbuf sb = SBUF_INIT;
	char text[2000], *p;
	size_t lines = 0;
	(void)state;

	/* words of 9 letters and a blank: each line ends at a blank */
	for (size_t i = 0; i + 1 < sizeof(text); i++)
		text[i] = i % 10 == 9 ? ' ' : 'w';
	text[sizeof(text) - 1] = '\0';
	memcpy(text, "a<b&c\"d>", 8);
	assert_int_equal(printout_message_svg("DATCOM failed", text, &sb), 0);
	assert_non_null(strstr(sb.buf, ">DATCOM failed</text>"));
	assert_non_null(strstr(sb.buf, ">a&lt;b&amp;c&quot;d&gt;w wwwwwwwww"));
	for (p = sb.buf; (p = strstr(p, "font-size=\"15\"")); p++)
		lines++;
	assert_int_equal(lines, 12);
	/* the height follows the lines: 80 + 24 a line */
	assert_non_null(strstr(sb.buf, "height=\"368\""));
	/* the first line ends at the blank in column 90: 89 bytes, and the
	 * escapes of <, &, " and > are 3, 4, 5 and 3 longer */
	p = strstr(sb.buf, "font-size=\"15\"");
	p = strchr(p, '>') + 1;
	assert_int_equal(strchr(p, '<') - p, 89 + 3 + 4 + 5 + 3);
	sbuf_release(&sb);

	/* a word longer than the line is cut at 90 */
	memset(text, 'x', 200);
	text[200] = '\0';
	assert_int_equal(printout_message_svg("t", text, &sb), 0);
	p = strchr(strstr(sb.buf, "font-size=\"15\""), '>') + 1;
	assert_int_equal(strchr(p, '<') - p, 90);
	sbuf_release(&sb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_pc9),
		cmocka_unit_test(test_csv),
		cmocka_unit_test(test_message_svg),
		cmocka_unit_test(test_usable),
		cmocka_unit_test(test_plot_script),
		cmocka_unit_test(test_nothing_to_plot),
		cmocka_unit_test(test_input_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
