/*
 * utf8: decoding; see utf8.h.
 */
#include "lib/utf8.h"

#include "lib/width_table.h"

size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
	size_t need;
	uint32_t v, min;

	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		need = 1; v = s[0] & 0x1f; min = 0x80;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		need = 2; v = s[0] & 0x0f; min = 0x800;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		need = 3; v = s[0] & 0x07; min = 0x10000;
	} else {
		return 0;
	}
	if (n <= need)
		return 0;
	for (size_t k = 1; k <= need; k++) {
		if ((s[k] & 0xc0) != 0x80)
			return 0;
		v = v << 6 | (s[k] & 0x3f);
	}
	if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
		return 0;
	*cp = v;
	return need + 1;
}

bool utf8_valid(const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;
	uint32_t cp;

	for (size_t i = 0, k; i < n; i += k) {
		k = utf8_decode(s + i, n - i, &cp);
		if (!k)
			return false;
	}
	return true;
}

size_t utf8_count(const char *s, size_t n)
{
	size_t count = 0;

	for (size_t i = 0; i < n; i++)
		count += ((unsigned char)s[i] & 0xc0) != 0x80;
	return count;
}

size_t utf8_offset(const char *s, size_t n, size_t cp)
{
	size_t seen = 0;

	for (size_t i = 0; i < n; i++)
		if (((unsigned char)s[i] & 0xc0) != 0x80 && seen++ == cp)
			return i;
	return n;
}

size_t utf8_cut(const char *s, size_t n, size_t max)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t start = max;
	uint32_t cp;

	if (n <= max)
		return n;
	/* a character is at most 4 bytes: back to its first one */
	while (start > 0 && max - start < 3 && (u[start] & 0xc0) == 0x80)
		start--;
	if (start < max &&
	    utf8_decode(u + start, n - start, &cp) > max - start)
		return start;
	return max;
}

int utf8_width(uint32_t c)
{
	size_t lo = 0, hi = sizeof(wide_ranges) / sizeof(wide_ranges[0]);

	if (c < wide_ranges[0][0])
		return 1;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (c < wide_ranges[mid][0])
			hi = mid;
		else if (c > wide_ranges[mid][1])
			lo = mid + 1;
		else
			return 2;
	}
	return 1;
}

int utf8_hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int utf8_repair(struct sbuf *out, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t start = 0, i = 0;
	int ret = 0;

	while (!ret && i < n) {
		uint32_t cp;
		size_t k = utf8_decode(p + i, n - i, &cp);

		if (k) {
			i += k;
			continue;
		}
		ret = sbuf_add(out, s + start, i - start);
		if (!ret)
			ret = sbuf_add(out, "\xef\xbf\xbd", 3);
		start = ++i;
	}
	if (!ret)
		ret = sbuf_add(out, s + start, n - start);
	return ret;
}
