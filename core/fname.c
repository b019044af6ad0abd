#include "fname.h"

#include <errno.h>
#include <string.h>

#include "utf8.h"

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
