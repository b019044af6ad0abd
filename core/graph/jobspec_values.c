/* jobspec_values: what a node's values may become in a job — an image
 * reference; see jobspec.h ("Images"). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/jobspec.h"
#include "lib/utf8.h"

#define NAME_MAX_BYTES 255
#define TAG_MAX 128
#define DIGEST_HEX_MIN 32
#define DIGEST_HEX_MAX 128

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool is_lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || is_digit(c);
}

static bool is_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_alnum(char c)
{
	return is_alpha(c) || is_digit(c);
}

static bool is_hex(char c)
{
	return utf8_hexval(c) >= 0;
}

/* ---- image references (jobspec.h, "Images") ----------------------------- */

/* path-component: [a-z0-9]+ *( ("." | "_" | "__" | 1*"-") [a-z0-9]+ ) */
static bool path_component(const char *s, size_t n)
{
	size_t i = 0;

	if (!n || !is_lower_alnum(s[0]))
		return false;
	while (i < n) {
		size_t sep = 0;

		if (is_lower_alnum(s[i])) {
			i++;
			continue;
		}
		if (s[i] == '.')
			sep = 1;
		else if (s[i] == '_')
			sep = i + 1 < n && s[i + 1] == '_' ? 2 : 1;
		else
			while (i + sep < n && s[i + sep] == '-')
				sep++;
		if (!sep)
			return false;
		i += sep;
		/* a separator stands between alphanumerics */
		if (i >= n || !is_lower_alnum(s[i]))
			return false;
	}
	return true;
}

/* path: path-component *( "/" path-component ) */
static bool image_path(const char *s, size_t n)
{
	if (!n)
		return false;
	while (n) {
		const char *slash = memchr(s, '/', n);
		size_t k = slash ? (size_t)(slash - s) : n;

		if (!path_component(s, k) || (slash && k + 1 == n))
			return false;
		s += k + (slash != NULL);
		n -= k + (slash != NULL);
	}
	return true;
}

/* domain: host [ ":" port ]; host: domain-components joined by ".", or
 * "[" IPv6 "]" */
static bool image_domain(const char *s, size_t n)
{
	size_t i = 0;

	if (n && s[0] == '[') {
		for (i = 1; i < n && (is_hex(s[i]) || s[i] == ':'); i++)
			;
		if (i == 1 || i >= n || s[i] != ']')
			return false;
		i++;
	} else {
		for (;;) {
			size_t start = i;

			while (i < n && (is_alnum(s[i]) || s[i] == '-'))
				i++;
			if (i == start || s[start] == '-' || s[i - 1] == '-')
				return false;
			if (i < n && s[i] == '.') {
				i++;
				continue;
			}
			break;
		}
	}
	if (i == n)
		return true;
	if (s[i] != ':' || i + 1 == n)
		return false;
	for (i++; i < n; i++)
		if (!is_digit(s[i]))
			return false;
	return true;
}

/* digest: algorithm ":" 32..128 hex digits; algorithm: components
 * [A-Za-z][A-Za-z0-9]* joined by one of "+._-" */
static bool image_digest(const char *s)
{
	const char *colon = strchr(s, ':');
	size_t i = 0, hex;

	if (!colon)
		return false;
	for (;;) {
		if (!is_alpha(s[i]))
			return false;
		while (is_alnum(s[i]))
			i++;
		if (s + i == colon)
			break;
		if (!strchr("+._-", s[i]) || !s[i])
			return false;
		i++;
	}
	hex = strlen(colon + 1);
	if (hex < DIGEST_HEX_MIN || hex > DIGEST_HEX_MAX)
		return false;
	for (i = 1; colon[i]; i++)
		if (!is_hex(colon[i]))
			return false;
	return true;
}

int jobspec_image_check(const char *ref, const char **why)
{
	size_t n = strlen(ref), name_len;
	const char *at, *slash, *colon;

	*why = NULL;
	if (!n)
		*why = "it is empty";
	else if (ref[0] == '-')
		*why = "it begins with \"-\"";
	for (size_t i = 0; !*why && i < n; i++) {
		unsigned char c = (unsigned char)ref[i];

		if (c <= ' ' || c == 0x7f)
			*why = "it holds a blank or a control character";
		else if (c >= 0x80)
			*why = "it holds a character outside ASCII";
	}
	if (*why)
		return -EINVAL;
	at = strchr(ref, '@');
	if (at && !image_digest(at + 1)) {
		*why = "its digest is not algorithm:hex (e.g. sha256: and 64 "
		       "hex digits; 32 to 128 of them)";
		return -EINVAL;
	}
	name_len = at ? (size_t)(at - ref) : n;
	/* the tag: after a ":" in the last part (a ":" before a "/" is
	 * the domain's port) */
	slash = NULL;
	for (size_t i = 0; i < name_len; i++)
		if (ref[i] == '/')
			slash = ref + i;
	colon = memchr(slash ? slash : ref, ':',
		       name_len - (size_t)((slash ? slash : ref) - ref));
	if (colon) {
		size_t tag = name_len - (size_t)(colon + 1 - ref);

		if (!tag || tag > TAG_MAX ||
		    !(is_alnum(colon[1]) || colon[1] == '_')) {
			*why = "its tag is not 1 to 128 of A-Z a-z 0-9 _ . - "
			       "beginning with a letter, digit or _";
			return -EINVAL;
		}
		for (size_t i = 1; i < tag; i++)
			if (!is_alnum(colon[1 + i]) &&
			    !strchr("_.-", colon[1 + i])) {
				*why = "its tag is not 1 to 128 of A-Z a-z 0-9 _ . "
				       "- beginning with a letter, digit or _";
				return -EINVAL;
			}
		name_len = (size_t)(colon - ref);
	}
	if (name_len > NAME_MAX_BYTES) {
		*why = "its name is longer than 255 bytes";
		return -EINVAL;
	}
	if (image_path(ref, name_len))
		return 0;
	slash = memchr(ref, '/', name_len);
	if (slash && image_domain(ref, (size_t)(slash - ref)) &&
	    image_path(slash + 1, name_len - (size_t)(slash + 1 - ref)))
		return 0;
	*why = "its name is not [domain/]path, a path being parts of lower-case "
	       "letters and digits joined by \".\", \"_\", \"__\" or \"-\", "
	       "between \"/\"";
	return -EINVAL;
}
