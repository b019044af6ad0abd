/* fcopy: a file's bytes into another (see fcopy.h). */
#include "lib/fcopy.h"

#include <errno.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>

/* what one read and write move at a time when the kernel cannot copy */
#define FCOPY_CHUNK (1024 * 1024)

static int copy_by_reading(int from, int to, int64_t len)
{
	char *buf = malloc(FCOPY_CHUNK);
	int64_t at = 0;
	int ret = 0;

	if (!buf)
		return -ENOMEM;
	while (!ret && at < len) {
		size_t want = len - at < FCOPY_CHUNK ? (size_t)(len - at)
						     : FCOPY_CHUNK;
		ssize_t n = pread(from, buf, want, at);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = -errno;
			break;
		}
		if (n == 0)	/* the source is short: the rest reads zeros */
			break;
		for (ssize_t done = 0; done < n;) {
			ssize_t w = pwrite(to, buf + done, (size_t)(n - done),
					   at + done);

			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0) {
				ret = -errno;
				break;
			}
			done += w;
		}
		at += n;
	}
	free(buf);
	return ret;
}

int fcopy(int from, int to, int64_t len)
{
	loff_t in = 0, out = 0;
	int ret = 0;

	/* a reflink shares the blocks until either side writes; it takes
	 * the whole file, so the length is set after */
	if (ioctl(to, FICLONE, from) == 0)
		goto length;
	while (in < len) {
		ssize_t n = copy_file_range(from, &in, to, &out,
					    (size_t)(len - in), 0);

		if (n < 0 && in == 0 &&
		    (errno == EXDEV || errno == EOPNOTSUPP || errno == ENOSYS ||
		     errno == EINVAL)) {
			ret = copy_by_reading(from, to, len);
			break;
		}
		if (n < 0)
			return -errno;
		if (n == 0)	/* the source is short: the rest reads zeros */
			break;
	}
	if (ret < 0)
		return ret;
length:
	return ftruncate(to, len) < 0 ? -errno : 0;
}
