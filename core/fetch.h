/*
 * fetch: download an http(s) URL with libcurl, handing the body to a
 * hook as it comes, for the URL inputs of request.json (run.h
 * starts the downloads and stores them in uploads/).
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
#include <stddef.h>
#include <stdint.h>

#include "ferr.h"

struct fetch_limits {
	int64_t max_bytes;	/* 0: 1 GiB */
	long connect_timeout_s;	/* 0: 30 */
	long timeout_s;		/* 0: 3600 */
};

/*
 * Hand the body of `url` to put(put_ctx, data, n) piece by piece; a
 * negative errno from it stops the transfer and is the result.  0 and
 * *bytes, or a negative errno with err: -EINVAL (not http(s)), -EFBIG
 * (over the limit), -ECANCELED, -ETIMEDOUT, -EPROTO (HTTP status other
 * than 2xx, too many redirects), or what put() returned.
 */
int fetch_url(const char *url, const struct fetch_limits *limits,
	      int (*put)(void *put_ctx, const char *data, size_t n),
	      void *put_ctx,
	      bool (*progress)(void *ctx, int64_t got, int64_t total),
	      void *ctx, int64_t *bytes, struct ferr *err);

#endif
