/* sbuf: the growable, NUL-terminated byte buffer; see sbuf.h. */
#include "lib/sbuf.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char sbuf_empty[1];

void sbuf_init(struct sbuf *sb)
{
	sb->buf = sbuf_empty;
	sb->len = 0;
	sb->alloc = 0;
}

void sbuf_release(struct sbuf *sb)
{
	if (sb->alloc)
		free(sb->buf);
	sbuf_init(sb);
}

int sbuf_grow(struct sbuf *sb, size_t extra)
{
	size_t want, alloc;
	char *p;

	if (extra > SIZE_MAX / 2 - sb->len - 1)
		return -ENOMEM;
	want = sb->len + extra + 1;
	if (want <= sb->alloc)
		return 0;
	alloc = sb->alloc ? sb->alloc : 64;
	while (alloc < want)
		alloc = alloc / 2 * 3 + 16;
	p = realloc(sb->alloc ? sb->buf : NULL, alloc);
	if (!p)
		return -ENOMEM;
	if (!sb->alloc)
		p[0] = '\0';
	sb->buf = p;
	sb->alloc = alloc;
	return 0;
}

void sbuf_setlen(struct sbuf *sb, size_t len)
{
	if (!sb->alloc)
		return;
	sb->len = len;
	sb->buf[len] = '\0';
}

int sbuf_add(struct sbuf *sb, const void *data, size_t len)
{
	if (!len)
		return 0;
	if (sbuf_grow(sb, len) < 0)
		return -ENOMEM;
	memcpy(sb->buf + sb->len, data, len);
	sbuf_setlen(sb, sb->len + len);
	return 0;
}

int sbuf_addstr(struct sbuf *sb, const char *s)
{
	return sbuf_add(sb, s, strlen(s));
}

int sbuf_addch(struct sbuf *sb, char c)
{
	return sbuf_add(sb, &c, 1);
}

int sbuf_vaddf(struct sbuf *sb, const char *fmt, va_list ap)
{
	va_list cp;
	int n;

	va_copy(cp, ap);
	n = vsnprintf(NULL, 0, fmt, cp);
	va_end(cp);
	if (n < 0)
		return -EINVAL;
	if (sbuf_grow(sb, (size_t)n) < 0)
		return -ENOMEM;
	vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap);
	sbuf_setlen(sb, sb->len + (size_t)n);
	return 0;
}

int sbuf_addf(struct sbuf *sb, const char *fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = sbuf_vaddf(sb, fmt, ap);
	va_end(ap);
	return ret;
}

char *sbuf_detach(struct sbuf *sb, size_t *len)
{
	char *p;

	if (!sb->alloc && sbuf_grow(sb, 0) < 0)
		return NULL;
	p = sb->buf;
	if (len)
		*len = sb->len;
	sbuf_init(sb);
	return p;
}

int sbuf_read(struct sbuf *sb, FILE *f)
{
	size_t n;

	do {
		if (sbuf_grow(sb, 65536) < 0)
			return -ENOMEM;
		n = fread(sb->buf + sb->len, 1, sb->alloc - sb->len - 1, f);
		sbuf_setlen(sb, sb->len + n);
	} while (n);
	return ferror(f) ? -EIO : 0;
}
