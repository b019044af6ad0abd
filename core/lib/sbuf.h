/*
 * sbuf: a growable byte buffer, always NUL-terminated (modelled on git's
 * strbuf).  Nothing of flowfs here.
 *
 *	struct sbuf sb = SBUF_INIT;
 *	if (sbuf_addf(&sb, "%d", n) < 0) ...
 *	use(sb.buf, sb.len);
 *	sbuf_release(&sb);
 *
 * `buf` is never NULL after SBUF_INIT (it points at a static "" until the
 * first growth), so it can always be printed.  `len` excludes the NUL.
 * Every function that can allocate returns 0 or -ENOMEM; after -ENOMEM the
 * buffer still holds what it held before the call.  The buffer may hold NUL
 * bytes in its content.
 */
#ifndef FLOWFS_SBUF_H
#define FLOWFS_SBUF_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

struct sbuf {
	char *buf;
	size_t len;
	size_t alloc;	/* 0 while buf is the static empty string */
};

extern char sbuf_empty[];
#define SBUF_INIT { sbuf_empty, 0, 0 }

void sbuf_init(struct sbuf *sb);
/* Free the memory; the buffer is empty and usable again afterwards. */
void sbuf_release(struct sbuf *sb);
/* Make room for `extra` more bytes (plus the NUL). */
int sbuf_grow(struct sbuf *sb, size_t extra);
/* Set the length to `len` (<= len + available room); keeps the NUL. */
void sbuf_setlen(struct sbuf *sb, size_t len);
static inline void sbuf_reset(struct sbuf *sb) { sbuf_setlen(sb, 0); }

int sbuf_add(struct sbuf *sb, const void *data, size_t len);
int sbuf_addstr(struct sbuf *sb, const char *s);
int sbuf_addch(struct sbuf *sb, char c);
int sbuf_addf(struct sbuf *sb, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int sbuf_vaddf(struct sbuf *sb, const char *fmt, va_list ap);
/* Append all that is left to read from f: 0, -ENOMEM or -EIO (what was
 * read before the error stays). */
int sbuf_read(struct sbuf *sb, FILE *f);

/*
 * Hand the buffer over to the caller (free() it); the sbuf is left empty.
 * Returns NULL only on -ENOMEM when the buffer was never allocated.
 */
char *sbuf_detach(struct sbuf *sb, size_t *len);

#endif
