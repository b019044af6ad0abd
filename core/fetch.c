/*
 * fetch: URL downloads over libcurl; see fetch.h.
 */
#include "fetch.h"

#include <curl/curl.h>
#include <errno.h>
#include <string.h>
#include <strings.h>

#define GIB ((int64_t)1 << 30)

struct sink {
	int (*put)(void *put_ctx, const char *data, size_t n);
	void *put_ctx;
	int64_t got, max;
	bool too_big;
	int put_error;		/* what put() returned, when it failed */
	bool (*progress)(void *ctx, int64_t got, int64_t total);
	void *ctx;
};

static size_t on_data(char *data, size_t size, size_t n, void *arg)
{
	struct sink *s = arg;
	size_t len = size * n;

	if (s->got + (int64_t)len > s->max) {
		s->too_big = true;
		return 0;
	}
	s->put_error = s->put(s->put_ctx, data, len);
	if (s->put_error < 0)
		return 0;
	s->got += (int64_t)len;
	return len;
}

static int on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow,
		       curl_off_t ultotal, curl_off_t ulnow)
{
	struct sink *s = arg;

	(void)dlnow;
	(void)ultotal;
	(void)ulnow;
	if (dltotal > s->max) {
		s->too_big = true;
		return 1;
	}
	return s->progress && s->progress(s->ctx, s->got, dltotal);
}

int fetch_url(const char *url, const struct fetch_limits *limits,
	      int (*put)(void *put_ctx, const char *data, size_t n),
	      void *put_ctx,
	      bool (*progress)(void *ctx, int64_t got, int64_t total),
	      void *ctx, int64_t *bytes, struct ferr *err)
{
	struct sink s = {
		.put = put, .put_ctx = put_ctx,
		.max = limits->max_bytes > 0 ? limits->max_bytes : GIB,
		.progress = progress, .ctx = ctx,
	};
	long status = 0;
	CURLcode rc;
	CURL *curl;
	int ret = 0;

	*bytes = 0;
	if (strncasecmp(url, "http://", 7) && strncasecmp(url, "https://", 8))
		return ferr_set(err, -EINVAL, "%s: only http:// and https://"
				" URLs are fetched", url);
	curl = curl_easy_init();
	if (!curl)
		return ferr_set(err, -ENOMEM, "out of memory");
	curl_easy_setopt(curl, CURLOPT_URL, url);
	curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(curl, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt(curl, CURLOPT_MAXREDIRS, 5L);
	curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT,
			 limits->connect_timeout_s > 0 ? limits->connect_timeout_s
						       : 30L);
	curl_easy_setopt(curl, CURLOPT_TIMEOUT,
			 limits->timeout_s > 0 ? limits->timeout_s : 3600L);
	curl_easy_setopt(curl, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)s.max);
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(curl, CURLOPT_WRITEDATA, &s);
	curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &s);
	curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(curl, CURLOPT_FAILONERROR, 1L);
	rc = curl_easy_perform(curl);
	curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
	if (rc == CURLE_OK) {
		*bytes = s.got;
	} else if (s.too_big || rc == CURLE_FILESIZE_EXCEEDED) {
		ret = ferr_set(err, -EFBIG, "larger than the limit of %lld"
			       " bytes (--max-fetch)", (long long)s.max);
	} else if (s.put_error == -ECANCELED) {
		ret = ferr_set(err, -ECANCELED, "cancelled");
	} else if (s.put_error < 0) {
		ret = ferr_set(err, s.put_error, "cannot store what came: %s",
			       strerror(-s.put_error));
	} else if (rc == CURLE_ABORTED_BY_CALLBACK) {
		ret = ferr_set(err, -ECANCELED, "cancelled");
	} else if (rc == CURLE_OPERATION_TIMEDOUT) {
		ret = ferr_set(err, -ETIMEDOUT, "%s", curl_easy_strerror(rc));
	} else if (rc == CURLE_HTTP_RETURNED_ERROR) {
		ret = ferr_set(err, -EPROTO, "HTTP %ld", status);
	} else if (rc == CURLE_TOO_MANY_REDIRECTS) {
		ret = ferr_set(err, -EPROTO, "more than 5 redirects");
	} else if (rc == CURLE_UNSUPPORTED_PROTOCOL) {
		ret = ferr_set(err, -EINVAL, "redirected to a URL that is not"
			       " http:// or https://");
	} else {
		ret = ferr_set(err, -EPROTO, "%s", curl_easy_strerror(rc));
	}
	curl_easy_cleanup(curl);
	return ret;
}
