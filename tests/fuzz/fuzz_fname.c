/*
 * Fuzz target for fname: the bytes are a name (up to its first NUL, as the
 * kernel would send it) for fname_check_entry() and fname_check_session(),
 * and a whole buffer for fname_valid_utf8().  Every answer is compared with
 * an independent model written from the rules in fname.h and, for UTF-8,
 * from the table of well-formed byte sequences in the Unicode standard
 * (Table 3-7) rather than from code-point arithmetic.  Disagreement aborts.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/fname.h"

/* Unicode 15, Table 3-7: the well-formed UTF-8 byte sequences. */
static bool ref_utf8(const uint8_t *s, size_t len)
{
	static const struct {
		uint8_t lo0, hi0, lo1, hi1;
		int n;
	} rows[] = {
		{ 0x00, 0x7f, 0, 0, 1 },
		{ 0xc2, 0xdf, 0x80, 0xbf, 2 },
		{ 0xe0, 0xe0, 0xa0, 0xbf, 3 },
		{ 0xe1, 0xec, 0x80, 0xbf, 3 },
		{ 0xed, 0xed, 0x80, 0x9f, 3 },
		{ 0xee, 0xef, 0x80, 0xbf, 3 },
		{ 0xf0, 0xf0, 0x90, 0xbf, 4 },
		{ 0xf1, 0xf3, 0x80, 0xbf, 4 },
		{ 0xf4, 0xf4, 0x80, 0x8f, 4 },
	};
	size_t i = 0;

	while (i < len) {
		size_t r, n;

		for (r = 0; r < sizeof(rows) / sizeof(rows[0]); r++)
			if (s[i] >= rows[r].lo0 && s[i] <= rows[r].hi0)
				break;
		if (r == sizeof(rows) / sizeof(rows[0]))
			return false;
		n = (size_t)rows[r].n;
		if (len - i < n)
			return false;
		if (n > 1 && (s[i + 1] < rows[r].lo1 || s[i + 1] > rows[r].hi1))
			return false;
		for (size_t k = 2; k < n; k++)
			if (s[i + k] < 0x80 || s[i + k] > 0xbf)
				return false;
		i += n;
	}
	return true;
}

static int ref_entry(const char *name)
{
	size_t len = strlen(name);

	if (len == 0)
		return -EINVAL;
	if (len > 255)
		return -ENAMETOOLONG;
	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return -EINVAL;
	return 0;
}

static int ref_session(const char *name)
{
	size_t len = strlen(name);
	int ret = ref_entry(name);

	if (ret)
		return ret;
	if (name[0] == '.')
		return -EINVAL;
	/* control characters are allowed: JSON escapes them */
	if (!ref_utf8((const uint8_t *)name, len))
		return -EINVAL;
	return 0;
}

static void check(const char *what, int got, int want, const struct ferr *err)
{
	if (got != want) {
		fprintf(stderr, "fuzz_fname: %s: got %d, want %d\n", what, got,
			want);
		abort();
	}
	if (got < 0 && !err->message[0]) {
		fprintf(stderr, "fuzz_fname: %s: refused without a message\n",
			what);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ferr err;
	char *name;

	if (size > 4096)
		return 0;
	if (fname_valid_utf8((const char *)data, size) != ref_utf8(data, size)) {
		fprintf(stderr, "fuzz_fname: fname_valid_utf8 disagrees (%zu bytes)\n",
			size);
		abort();
	}
	/* every prefix too: truncated sequences at every position */
	for (size_t n = size > 16 ? size - 16 : 0; n < size; n++)
		if (fname_valid_utf8((const char *)data, n) != ref_utf8(data, n)) {
			fprintf(stderr, "fuzz_fname: fname_valid_utf8 disagrees"
				" on a %zu-byte prefix\n", n);
			abort();
		}
	name = malloc(size + 1);
	if (!name)
		return 0;
	memcpy(name, data, size);
	name[size] = '\0';
	ferr_clear(&err);
	check("fname_check_entry", fname_check_entry(name, &err),
	      ref_entry(name), &err);
	ferr_clear(&err);
	check("fname_check_session", fname_check_session(name, &err),
	      ref_session(name), &err);
	/* NULL ferr is allowed everywhere */
	check("fname_check_session(NULL)", fname_check_session(name, NULL),
	      ref_session(name), &(struct ferr){ .message = "x" });
	free(name);
	return 0;
}
