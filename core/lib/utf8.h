/*
 * utf8: the one UTF-8 decoder of flowfs (names, schemas' string lengths,
 * context.txt's columns, an experiment's output).  Strict: no overlong
 * forms, no surrogates, nothing above U+10FFFF.  Nothing of flowfs here.
 */
#ifndef FLOWFS_UTF8_H
#define FLOWFS_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/sbuf.h"

/* The length (1-4) of the valid sequence at s (n bytes left, n > 0) and
 * its code point in *cp; 0 when the bytes there are not one. */
size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *cp);

/* Whether all n bytes are valid UTF-8. */
bool utf8_valid(const char *s, size_t n);

/* Code points in valid UTF-8 (the bytes that start one). */
size_t utf8_count(const char *s, size_t n);

/* The byte offset where code point number `cp` (0-based) of valid UTF-8
 * starts; n when there are not that many. */
size_t utf8_offset(const char *s, size_t n, size_t cp);

/* Where to cut `n` bytes of text to at most `max` (n when it fits): at
 * the start of the character byte `max` falls in, so a cut keeps whole
 * characters; bytes that are not UTF-8 there are cut at `max`. */
size_t utf8_cut(const char *s, size_t n, size_t max);

/* The columns code point `c` takes in a terminal: 2 for East Asian Wide
 * and Fullwidth characters (as Python's unicodedata has them), else 1. */
int utf8_width(uint32_t c);

/*
 * Append the n bytes of `s` to `out` as valid UTF-8: each byte that
 * starts no character (of a cut or foreign sequence) becomes U+FFFD, one
 * for each such byte.  For text from outside
 * (a server's reply, a command's complaint) before it is stored or shown.
 * 0, or -ENOMEM.
 */
int utf8_repair(struct sbuf *out, const char *s, size_t n);

/* The value of hex digit `c` (either case), or -1: for \u escapes and
 * %XX in the texts that carry them. */
int utf8_hexval(char c);

#endif
