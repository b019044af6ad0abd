/*
 * Unit tests for fname: entry names, session names (valid UTF-8, no
 * leading '.', control characters allowed), the UTF-8 check.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/fname.h"

static void fill(char *buf, size_t n, char c)
{
	memset(buf, c, n);
	buf[n] = '\0';
}

static void test_entry_names(void **state)
{
	struct ferr err = FERR_INIT;
	char name[300];

	(void)state;
	assert_int_equal(fname_check_entry("a", NULL), 0);
	assert_int_equal(fname_check_entry("notes.txt", NULL), 0);
	assert_int_equal(fname_check_entry("...", NULL), 0);
	assert_int_equal(fname_check_entry(".hidden", NULL), 0);
	assert_int_equal(fname_check_entry("..x", NULL), 0);
	/* any bytes, as on ext4: invalid UTF-8 and control chars are fine */
	assert_int_equal(fname_check_entry("\xff\xfe\x01\x7f", NULL), 0);

	assert_int_equal(fname_check_entry("", &err), -EINVAL);
	assert_true(err.message[0] != '\0');
	ferr_clear(&err);
	assert_int_equal(fname_check_entry(".", &err), -EINVAL);
	assert_true(err.message[0] != '\0');
	ferr_clear(&err);
	assert_int_equal(fname_check_entry("..", &err), -EINVAL);
	assert_true(err.message[0] != '\0');

	fill(name, 255, 'n');
	assert_int_equal(fname_check_entry(name, NULL), 0);
	fill(name, 256, 'n');
	ferr_clear(&err);
	assert_int_equal(fname_check_entry(name, &err), -ENAMETOOLONG);
	assert_non_null(strstr(err.message, "256"));
	fill(name, 299, 'n');
	assert_int_equal(fname_check_entry(name, NULL), -ENAMETOOLONG);
	/* 255 bytes of multibyte characters are 255 bytes */
	name[0] = '\0';
	for (int i = 0; i < 85; i++)
		strcat(name, "\xe2\x82\xac");	/* 85 * 3 = 255 */
	assert_int_equal(strlen(name), 255);
	assert_int_equal(fname_check_entry(name, NULL), 0);
	assert_int_equal(fname_check_session(name, NULL), 0);
	strcat(name, "a");
	assert_int_equal(fname_check_entry(name, NULL), -ENAMETOOLONG);
	assert_int_equal(fname_check_session(name, NULL), -ENAMETOOLONG);
}

static void test_session_names(void **state)
{
	static const char *const good[] = {
		"s", "run-1", "my session", "a.b", "x.", "Ünïcödé",
		"\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xf4\x8f\xbf\xbf",
		"\xc2\x80", "\xef\xbf\xbd", "\xed\x9f\xbf", "\xee\x80\x80",
		"~", "4913",
		/* control characters are allowed (JSON escapes them) */
		"a\x01", "\x1f", "tab\there", "new\nline", "del\x7f",
	};
	static const char *const bad[] = {
		/* leading '.' */
		".", "..", ".x", ".flowfs", "...",
		/* empty */
		"",
		/* overlongs */
		"\xc0\xaf", "\xc1\xbf", "\xe0\x80\xaf", "\xe0\x9f\xbf",
		"\xf0\x80\x80\xaf", "\xf0\x8f\xbf\xbf",
		/* surrogates */
		"\xed\xa0\x80", "\xed\xbf\xbf", "a\xed\xb0\x80z",
		/* above U+10FFFF */
		"\xf4\x90\x80\x80", "\xf5\x80\x80\x80", "\xf7\xbf\xbf\xbf",
		"\xf8\x88\x80\x80\x80", "\xfc\x84\x80\x80\x80\x80",
		/* truncated sequences */
		"\xc3", "a\xe2\x82", "\xf0\x9f\x98", "\xe2", "x\xf0",
		/* stray continuation bytes, invalid bytes */
		"\x80", "a\xbfz", "\xfe", "\xff",
		/* a lead byte followed by a non-continuation */
		"\xc3(", "\xe2\x28\xa1", "\xf0\x9f(\x80",
	};
	struct ferr err;

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		ferr_clear(&err);
		if (fname_check_session(good[i], &err) != 0)
			fail_msg("good[%zu] refused: %s", i, err.message);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ferr_clear(&err);
		if (fname_check_session(bad[i], &err) != -EINVAL)
			fail_msg("bad[%zu] not refused with EINVAL", i);
		if (!err.message[0])
			fail_msg("bad[%zu] refused without a message", i);
	}
}

static void test_session_name_long(void **state)
{
	char name[300];

	(void)state;
	fill(name, 255, 's');
	assert_int_equal(fname_check_session(name, NULL), 0);
	fill(name, 256, 's');
	assert_int_equal(fname_check_session(name, NULL), -ENAMETOOLONG);
	/* too long and starting with '.': the length is reported */
	fill(name, 256, '.');
	assert_int_equal(fname_check_session(name, NULL), -ENAMETOOLONG);
}

static void test_valid_utf8_table(void **state)
{
	static const struct {
		const char *s;
		size_t len;
		bool ok;
	} cases[] = {
		{ "", 0, true },
		{ "abc", 3, true },
		{ "a\0b", 3, true },		/* NUL is valid UTF-8 */
		{ "\x7f", 1, true },
		{ "\xc2\x80", 2, true },	/* U+0080, smallest 2-byte */
		{ "\xdf\xbf", 2, true },	/* U+07FF */
		{ "\xe0\xa0\x80", 3, true },	/* U+0800 */
		{ "\xed\x9f\xbf", 3, true },	/* U+D7FF */
		{ "\xee\x80\x80", 3, true },	/* U+E000 */
		{ "\xef\xbf\xbf", 3, true },	/* U+FFFF */
		{ "\xf0\x90\x80\x80", 4, true },	/* U+10000 */
		{ "\xf4\x8f\xbf\xbf", 4, true },	/* U+10FFFF */
		{ "\xc0\x80", 2, false },	/* overlong NUL */
		{ "\xc1\xbf", 2, false },
		{ "\xe0\x9f\xbf", 3, false },	/* overlong U+07FF */
		{ "\xf0\x8f\xbf\xbf", 4, false },	/* overlong U+FFFF */
		{ "\xed\xa0\x80", 3, false },	/* U+D800 */
		{ "\xed\xbf\xbf", 3, false },	/* U+DFFF */
		{ "\xf4\x90\x80\x80", 4, false },	/* U+110000 */
		{ "\xf5\x80\x80\x80", 4, false },
		{ "\xf8\x88\x80\x80\x80", 5, false },
		{ "\x80", 1, false },
		{ "\xbf", 1, false },
		{ "\xc2", 1, false },
		{ "\xe0\xa0", 2, false },
		{ "\xf0\x90\x80", 3, false },
		{ "\xc2\x41", 2, false },
		{ "\xe0\xa0\x41", 3, false },
		{ "\xf0\x90\x80\x41", 4, false },
		{ "\xfe\xff", 2, false },
		/* the length given counts, not the NUL */
		{ "\xc3\xa9", 1, false },
		{ "\xc3\xa9zz", 2, true },
		{ "ab\xe2\x82\xac", 4, false },
		{ "ab\xe2\x82\xac", 5, true },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (fname_valid_utf8(cases[i].s, cases[i].len) != cases[i].ok)
			fail_msg("case %zu: expected %s", i,
				 cases[i].ok ? "valid" : "invalid");
}

/* Every 2- and 3-byte sequence against the arithmetic definition. */
static void test_valid_utf8_exhaustive(void **state)
{
	(void)state;
	for (unsigned a = 0x80; a < 0x100; a++)
		for (unsigned b = 0; b < 0x100; b++) {
			char s[2] = { (char)a, (char)b };
			bool ok = a >= 0xc2 && a <= 0xdf && (b & 0xc0) == 0x80;

			if (fname_valid_utf8(s, 2) != ok)
				fail_msg("%02x %02x", a, b);
		}
	for (unsigned a = 0xe0; a < 0xf0; a++)
		for (unsigned b = 0x80; b < 0xc0; b++)
			for (unsigned c = 0; c < 0x100; c += 0x3f) {
				char s[3] = { (char)a, (char)b, (char)c };
				unsigned cp = (a & 0xf) << 12 | (b & 0x3f) << 6 |
					      (c & 0x3f);
				bool ok = (c & 0xc0) == 0x80 && cp >= 0x800 &&
					  !(cp >= 0xd800 && cp <= 0xdfff);

				if (fname_valid_utf8(s, 3) != ok)
					fail_msg("%02x %02x %02x", a, b, c);
			}
}

/* Issue 12: a name with a line break forged a status line; one with a
 * terminal's escapes reached the terminal. */
static void test_escape(void **state)
{
	/* a limit cuts before an escape or a character, never inside */
	static const struct { const char *in; size_t max; const char *want; }
	cases[] = {
		{ "a\nready\r\t\b\f\x1b[2J\x01\x7f \\ \xc3\xa9 \xff", SIZE_MAX,
		  "a\\nready\\r\\t\\b\\f\\u001b[2J\\u0001\\u007f \\ \xc3\xa9 \xef\xbf\xbd" },
		/* C1 controls (U+009B is CSI), the bidi marks that reorder a
		 * line; a lone 0x9b byte is no character */
		{ "a\xc2\x9b[2Jb\xe2\x80\xae" "c\xe2\x81\xa6" "d\xe2\x80\x8f" "e\x9b",
		  SIZE_MAX,
		  "a\\u009b[2Jb\\u202ec\\u2066d\\u200fe\xef\xbf\xbd" },
		/* issue 25: line and paragraph separators, the Arabic letter
		 * mark, a zero-width space, a tag character past U+FFFF */
		{ "a\xe2\x80\xa8ready\xe2\x80\xa9" "b\xd8\x9c" "c\xe2\x80\x8b"
		  "d\xf3\xa0\x80\x81" "e",
		  SIZE_MAX,
		  "a\\u2028ready\\u2029b\\u061cc\\u200bd\\U000e0001e" },
		{ "", SIZE_MAX, "" },
		{ "ab\ncd", 3, "ab" },
		{ "a\xc3\xa9", 2, "a" },
		{ "a\x1b", 6, "a" },
		{ "a\x1b", 7, "a\\u001b" },
		/* issue 26: the last control below a space, and a space */
		{ "\x1f \x1e", SIZE_MAX, "\\u001f \\u001e" },
	};
	struct sbuf out = SBUF_INIT;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		char *p = fname_shown(cases[i].in, cases[i].max);

		assert_non_null(p);
		assert_string_equal(p, cases[i].want);
		free(p);
	}
	/* a status line stays one line, whatever a name holds */
	assert_int_equal(fname_line(&out, "uploads/%s: %d", "x\nready", 3), 0);
	assert_string_equal(out.buf, "uploads/x\\nready: 3\n");
	sbuf_release(&out);
}

/* Every code point Python 3.11 calls a format control or a line or
 * paragraph separator (and every C1 control) is escaped, and no other. */
static void test_unshown_is_pythons(void **state)
{
	FILE *p = popen("/usr/bin/python3 -c 'import unicodedata as u\n"
			"for c in range(0x80, 0x110000):\n"
			"  k = u.category(chr(c))\n"
			"  print(1 if k in (\"Cf\", \"Zl\", \"Zp\", \"Cc\") else 0,"
			" end=\"\")'", "r");
	uint32_t cp = 0x80, bad = 0, first_bad = 0;
	int c;

	(void)state;
	if (!p)
		skip();
	while ((c = fgetc(p)) != EOF) {
		if ((c == '1') != fname_unshown(cp) && !bad++)
			first_bad = cp;
		cp++;
	}
	if (pclose(p) != 0 || cp == 0x80)
		skip();	/* no /usr/bin/python3 */
	assert_int_equal(cp, 0x110000);
	if (bad)
		fail_msg("%u code points differ, the first U+%04X", bad,
			 first_bad);
}

/* mkdir -p: the parents only, or the path too; a file in the way. */
static void test_make_dirs(void **state)
{
	char top[] = "/tmp/flowfs-fname-XXXXXX", path[200], file[200];
	struct stat st;

	(void)state;
	assert_non_null(mkdtemp(top));
	snprintf(path, sizeof(path), "%s/a/b/c", top);
	assert_int_equal(fname_make_dirs(path, 0700, true), 0);
	snprintf(file, sizeof(file), "%s/a/b", top);
	assert_int_equal(stat(file, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0700);
	assert_int_equal(stat(path, &st), -1);
	assert_int_equal(fname_make_dirs(path, 0755, false), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	/* again: nothing to do */
	assert_int_equal(fname_make_dirs(path, 0755, false), 0);
	/* a file where a folder must go */
	snprintf(file, sizeof(file), "%s/f", top);
	fclose(fopen(file, "w"));
	snprintf(path, sizeof(path), "%s/f/x", top);
	assert_int_equal(fname_make_dirs(path, 0755, false), -ENOTDIR);
	unlink(file);
	snprintf(path, sizeof(path), "rm -r %s", top);
	assert_int_equal(system(path), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_entry_names),
		cmocka_unit_test(test_session_names),
		cmocka_unit_test(test_session_name_long),
		cmocka_unit_test(test_valid_utf8_table),
		cmocka_unit_test(test_valid_utf8_exhaustive),
		cmocka_unit_test(test_escape),
		cmocka_unit_test(test_unshown_is_pythons),
		cmocka_unit_test(test_make_dirs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
