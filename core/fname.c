#include "fname.h"

#include <errno.h>
#include <string.h>

bool fname_valid_utf8(const char *str, size_t len)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0;

	while (i < len) {
		unsigned char c = s[i];
		size_t need;
		unsigned cp, min;

		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf) {
			need = 1; cp = c & 0x1f; min = 0x80;
		} else if (c >= 0xe0 && c <= 0xef) {
			need = 2; cp = c & 0x0f; min = 0x800;
		} else if (c >= 0xf0 && c <= 0xf4) {
			need = 3; cp = c & 0x07; min = 0x10000;
		} else {
			return false;
		}
		if (len - i <= need)
			return false;
		for (size_t k = 1; k <= need; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (s[i + k] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += need + 1;
	}
	return true;
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
