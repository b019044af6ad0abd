/* fname: the rules for names a caller sends, and names escaped for one-
 * line messages; see fname.h. */
#include "lib/fname.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "lib/utf8.h"

bool fname_valid_utf8(const char *str, size_t len)
{
	return utf8_valid(str, len);
}

int fname_check_entry(const char *name, struct ferr *err)
{
	size_t len = strlen(name);

	if (!len)
		return ferr_set(err, -EINVAL, "empty name");
	if (len > FNAME_MAX)
		return ferr_set(err, -ENAMETOOLONG,
				"name is %zu bytes long (at most %d)", len,
				FNAME_MAX);
	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return ferr_set(err, -EINVAL, "'%s' cannot be used as a name",
				name);
	return 0;
}

int fname_check_session(const char *name, struct ferr *err)
{
	size_t len = strlen(name);
	int ret = fname_check_entry(name, err);

	if (ret < 0)
		return ret;
	if (name[0] == '.')
		return ferr_set(err, -EINVAL,
				"session names cannot start with '.'");
	if (!fname_valid_utf8(name, len))
		return ferr_set(err, -EINVAL,
				"session names must be valid UTF-8");
	return 0;
}

/*
 * The code points no line shows as they are: C1 controls and Unicode
 * 14.0's categories Cf (format), Zl and Zp (line, paragraph separators),
 * as Python 3.11's unicodedata has them (test_fname.c compares the two).
 */
static const struct { uint32_t first, last; } unshown[] = {
	{ 0x80, 0x9f }, { 0xad, 0xad }, { 0x600, 0x605 }, { 0x61c, 0x61c },
	{ 0x6dd, 0x6dd }, { 0x70f, 0x70f }, { 0x890, 0x891 }, { 0x8e2, 0x8e2 },
	{ 0x180e, 0x180e }, { 0x200b, 0x200f }, { 0x2028, 0x202e },
	{ 0x2060, 0x2064 }, { 0x2066, 0x206f }, { 0xfeff, 0xfeff },
	{ 0xfff9, 0xfffb }, { 0x110bd, 0x110bd }, { 0x110cd, 0x110cd },
	{ 0x13430, 0x13438 }, { 0x1bca0, 0x1bca3 }, { 0x1d173, 0x1d17a },
	{ 0xe0001, 0xe0001 }, { 0xe0020, 0xe007f },
};

bool fname_unshown(uint32_t cp)
{
	for (size_t i = 0; i < sizeof(unshown) / sizeof(unshown[0]); i++)
		if (cp >= unshown[i].first && cp <= unshown[i].last)
			return true;
	return false;
}

int fname_escape(struct sbuf *out, const char *s, size_t max)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t used = 0, left = strlen(s);

	while (left) {
		char esc[16];
		const char *piece = esc;
		uint32_t cp;
		size_t take = 1, plen;

		if (*p < 0x20 || *p == 0x7f) {
			const char *named = *p == '\n' ? "\\n" : *p == '\r' ? "\\r"
					    : *p == '\t' ? "\\t" : *p == '\b' ? "\\b"
					    : *p == '\f' ? "\\f" : NULL;

			if (named)
				strcpy(esc, named);
			else
				snprintf(esc, sizeof(esc), "\\u%04x", *p);
			plen = strlen(esc);
		} else if (!(take = utf8_decode(p, left, &cp))) {
			/* a byte that starts no character: the replacement
			 * character, so that what is shown is UTF-8 (and no
			 * lone 0x9b reads as CSI on a Latin-1 terminal) */
			take = 1;
			piece = "\xef\xbf\xbd";
			plen = 3;
		} else if (fname_unshown(cp)) {
			/* C1 controls, line and paragraph separators, and
			 * the format controls: marks that reorder a line's
			 * text ("Trojan Source") or break it in two for a
			 * reader (Python's splitlines() splits at U+2028) */
			snprintf(esc, sizeof(esc), cp > 0xffff ? "\\U%08x"
				 : "\\u%04x", (unsigned)cp);
			plen = strlen(esc);
		} else {
			piece = (const char *)p;
			plen = take;
		}
		if (plen > max - used)
			break;
		if (sbuf_add(out, piece, plen) < 0)
			return -ENOMEM;
		used += plen;
		p += take;
		left -= take;
	}
	return 0;
}

char *fname_shown(const char *s, size_t max)
{
	struct sbuf out = SBUF_INIT;

	if (fname_escape(&out, s, max) < 0) {
		sbuf_release(&out);
		return NULL;
	}
	return sbuf_detach(&out, NULL);
}

int fname_line(struct sbuf *out, const char *fmt, ...)
{
	struct sbuf raw = SBUF_INIT;
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = sbuf_vaddf(&raw, fmt, ap);
	va_end(ap);
	if (!ret)
		ret = fname_escape(out, raw.buf, SIZE_MAX);
	if (!ret)
		ret = sbuf_addch(out, '\n');
	sbuf_release(&raw);
	return ret;
}

int fname_make_dirs(const char *path, mode_t mode, bool parents_only)
{
	char buf[PATH_MAX];
	size_t len = strlen(path);

	if (len >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, len + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, mode) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (!parents_only && mkdir(buf, mode) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}
