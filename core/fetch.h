/*
 * fetch: download an http(s) URL into an open file with libcurl, for the
 * URL inputs of request.json (run.h starts the downloads and stores the
 * result in uploads/).
 *
 * At most 5 redirects, http and https only (also after a redirect), a
 * size limit (checked against Content-Length before the body and
 * against the bytes as they come), a connect timeout and a total one.
 * progress(ctx, got, total) is called now and then (total 0: unknown)
 * and stops the transfer when it returns true (a cancel).
 */
#ifndef FLOWFS_FETCH_H
#define FLOWFS_FETCH_H

#include <stdbool.h>
#include <stdint.h>

#include "ferr.h"

struct fetch_limits {
	int64_t max_bytes;	/* 0: 1 GiB */
	long connect_timeout_s;	/* 0: 30 */
	long timeout_s;		/* 0: 3600 */
};

/*
 * Write the body of `url` to `fd` (from its current offset).  0 and
 * *bytes, or a negative errno with err: -EINVAL (not http(s)), -EFBIG
 * (over the limit), -ECANCELED, -ETIMEDOUT, -EPROTO (HTTP status other
 * than 2xx, too many redirects), -EIO (cannot write the file).
 */
int fetch_url(const char *url, int fd, const struct fetch_limits *limits,
	      bool (*progress)(void *ctx, int64_t got, int64_t total),
	      void *ctx, int64_t *bytes, struct ferr *err);

#endif
