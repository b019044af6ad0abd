/*
 * fetch: URL downloads over libcurl; see fetch.h.
 */
#include "run/fetch.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define GIB ((int64_t)1 << 30)

static const char *ipv4_kind(uint32_t a)
{
	if (a >> 24 == 0)
		return "unspecified";
	if (a >> 24 == 127)
		return "loopback";
	if (a >> 24 == 10 || a >> 20 == 0xac1 || a >> 16 == 0xc0a8 ||
	    a >> 22 == (100 << 2 | 1))
		return "private";
	if (a >> 16 == 0xa9fe)
		return "link-local";
	if (a >> 28 == 0xe)
		return "multicast";
	/* 240/4 and the broadcast address; 192.0.0/24 (the IETF's
	 * protocol assignments) and 198.18/15 (benchmarking, which clouds
	 * and VPNs use inside) */
	if (a >> 28 == 0xf || a >> 8 == 0xc00000 || a >> 17 == (198 << 7 | 9))
		return "reserved";
	return NULL;
}

const char *fetch_private_kind(const struct sockaddr *sa)
{
	static const uint8_t mapped[12] = { [10] = 0xff, [11] = 0xff };
	static const uint8_t nat64[12] = { 0, 0x64, 0xff, 0x9b };
	/* 64:ff9b:1::/48, the local-use NAT64 prefix */
	static const uint8_t nat64_local[6] = { 0, 0x64, 0xff, 0x9b, 0, 1 };
	static const uint8_t zero[12];
	const uint8_t *b;

	if (sa->sa_family == AF_INET)
		return ipv4_kind(ntohl(((const struct sockaddr_in *)
					(const void *)sa)->sin_addr.s_addr));
	if (sa->sa_family != AF_INET6)
		return "non-IP";
	b = ((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr.s6_addr;
	if (!memcmp(b, mapped, 12) || !memcmp(b, nat64, 12) ||
	    !memcmp(b, nat64_local, 6))
		return ipv4_kind((uint32_t)b[12] << 24 | (uint32_t)b[13] << 16 |
				 (uint32_t)b[14] << 8 | b[15]);
	/* 6to4: the IPv4 address is in bytes 2 to 5 */
	if (b[0] == 0x20 && b[1] == 0x02)
		return ipv4_kind((uint32_t)b[2] << 24 | (uint32_t)b[3] << 16 |
				 (uint32_t)b[4] << 8 | b[5]);
	if (!memcmp(b, zero, 12)) {
		uint32_t low = (uint32_t)b[12] << 24 | (uint32_t)b[13] << 16 |
			       (uint32_t)b[14] << 8 | b[15];

		/* the rest are the deprecated IPv4-compatible addresses */
		return low == 0 ? "unspecified" : low == 1 ? "loopback"
				: "reserved";
	}
	if (b[0] == 0xff)
		return "multicast";
	if ((b[0] & 0xfe) == 0xfc || (b[0] == 0xfe && (b[1] & 0xc0) == 0xc0))
		return "private";
	if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80)
		return "link-local";
	return NULL;
}

/* The address bytes of `sa` and their family, an IPv4-mapped IPv6
 * address as the IPv4 address it carries; 0 for another family. */
static int addr_bytes(const struct sockaddr *sa, const uint8_t **bytes)
{
	static const uint8_t mapped[12] = { [10] = 0xff, [11] = 0xff };

	if (sa->sa_family == AF_INET) {
		*bytes = (const uint8_t *)&((const struct sockaddr_in *)
					    (const void *)sa)->sin_addr;
		return AF_INET;
	}
	if (sa->sa_family != AF_INET6)
		return 0;
	*bytes = ((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr.s6_addr;
	if (!memcmp(*bytes, mapped, 12)) {
		*bytes += 12;
		return AF_INET;
	}
	return AF_INET6;
}

static bool in_net(const struct fetch_net *n, int family, const uint8_t *b)
{
	unsigned whole = n->prefix / 8, rest = n->prefix % 8;

	return n->family == family && !memcmp(n->addr, b, whole) &&
	       (!rest || ((n->addr[whole] ^ b[whole]) & (0xff00 >> rest)) == 0);
}

static bool allowed(const struct fetch_limits *l, const struct sockaddr *sa)
{
	const uint8_t *b;
	int family = addr_bytes(sa, &b);

	for (size_t i = 0; family && i < l->nallow; i++)
		if (in_net(&l->allow[i], family, b))
			return true;
	return false;
}

/* Whether `sa` is an address of one of this machine's interfaces: a
 * service listening on all of them answers there, as on loopback. */
static bool is_local(const struct sockaddr *sa)
{
	struct ifaddrs *all, *i;
	const uint8_t *b, *ib;
	int family = addr_bytes(sa, &b);
	bool local = false;

	if (!family || getifaddrs(&all) < 0)
		return false;
	for (i = all; i && !local; i = i->ifa_next)
		local = i->ifa_addr && addr_bytes(i->ifa_addr, &ib) == family &&
			!memcmp(b, ib, family == AF_INET ? 4 : 16);
	freeifaddrs(all);
	return local;
}

int fetch_parse_allow(const char *text, struct fetch_limits *limits,
		      struct ferr *err)
{
	const char *at = text;

	limits->nallow = 0;
	for (;;) {
		const char *end = strchrnul(at, ',');
		char part[64], *slash, *stop;
		struct fetch_net n = { 0 };
		unsigned long bits;

		if ((size_t)(end - at) >= sizeof(part) ||
		    limits->nallow == FETCH_ALLOW_MAX)
			goto bad;
		memcpy(part, at, (size_t)(end - at));
		part[end - at] = 0;
		slash = strchr(part, '/');
		if (slash)
			*slash = 0;
		if (inet_pton(AF_INET, part, n.addr) == 1)
			n.family = AF_INET;
		else if (inet_pton(AF_INET6, part, n.addr) == 1)
			n.family = AF_INET6;
		else
			goto bad;
		bits = n.family == AF_INET ? 32 : 128;
		if (slash) {
			unsigned long max = bits;

			errno = 0;
			bits = strtoul(slash + 1, &stop, 10);
			if (errno || stop == slash + 1 || *stop || bits > max)
				goto bad;
		}
		n.prefix = (unsigned)bits;
		limits->allow[limits->nallow++] = n;
		if (!*end)
			return 0;
		at = end + 1;
		continue;
bad:
		return ferr_set(err, -EINVAL, "--fetch-allow takes addresses"
				" or ranges such as 192.168.1.10 or 10.1.0.0/16,"
				" comma-separated (at most %d), not \"%.*s\"",
				FETCH_ALLOW_MAX, (int)(end - at), at);
	}
}

struct sink {
	int (*put)(void *put_ctx, const char *data, size_t n);
	void *put_ctx;
	int64_t got, max;
	bool too_big;
	int put_error;		/* what put() returned, when it failed */
	bool (*progress)(void *ctx, int64_t got, int64_t total);
	void *ctx;
	bool allow_private;
	const struct fetch_limits *limits;
	/* the last address refused, and what kind it is */
	char refused[64];
	const char *refused_kind;
};

/* The numeric form of an IPv4 or IPv6 address, for a message. */
static void addr_text(const struct sockaddr *sa, char *buf, size_t size)
{
	const void *in = NULL;

	if (sa->sa_family == AF_INET)
		in = &((const struct sockaddr_in *)(const void *)sa)->sin_addr;
	else if (sa->sa_family == AF_INET6)
		in = &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
	if (!in || !inet_ntop(sa->sa_family, in, buf, (socklen_t)size))
		snprintf(buf, size, "an address of family %d", sa->sa_family);
}

/*
 * libcurl's open-socket hook: every connection, redirects included,
 * comes here with the address it is for, already resolved.
 */
static curl_socket_t open_socket(void *arg, curlsocktype purpose,
				 struct curl_sockaddr *address)
{
	struct sink *s = arg;
	const char *kind = NULL;

	(void)purpose;
	if (!s->allow_private && !allowed(s->limits, &address->addr)) {
		kind = fetch_private_kind(&address->addr);
		if (!kind && is_local(&address->addr))
			kind = "local";
	}
	if (kind) {
		s->refused_kind = kind;
		addr_text(&address->addr, s->refused, sizeof(s->refused));
		return CURL_SOCKET_BAD;
	}
	/* not inherited by an experiment started meanwhile */
	return socket(address->family, address->socktype | SOCK_CLOEXEC,
		      address->protocol);
}

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
		.allow_private = limits->allow_private, .limits = limits,
	};
	long slow_bytes = limits->low_speed_bytes > 0 ? limits->low_speed_bytes
						      : FETCH_LOW_SPEED_BYTES;
	long slow_s = limits->low_speed_s > 0 ? limits->low_speed_s
					      : FETCH_LOW_SPEED_S;
	char why[CURL_ERROR_SIZE] = "";
	long status = 0, redirects = 0;
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
	if (limits->low_speed_bytes >= 0) {
		curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, slow_bytes);
		curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, slow_s);
	}
	curl_easy_setopt(curl, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)s.max);
	/* a proxy would hide where the connection really goes */
	curl_easy_setopt(curl, CURLOPT_PROXY, "");
	curl_easy_setopt(curl, CURLOPT_OPENSOCKETFUNCTION, open_socket);
	curl_easy_setopt(curl, CURLOPT_OPENSOCKETDATA, &s);
	curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, why);
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(curl, CURLOPT_WRITEDATA, &s);
	curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &s);
	curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(curl, CURLOPT_FAILONERROR, 1L);
	rc = curl_easy_perform(curl);
	curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_getinfo(curl, CURLINFO_REDIRECT_COUNT, &redirects);
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
	} else if (s.refused_kind && rc == CURLE_COULDNT_CONNECT) {
		const char *a = s.refused_kind[0] == 'u' ? "an" : "a";

		ret = ferr_set(err, -EACCES, redirects
			       ? "redirected to %s, %s %s address: refused"
				 " without --fetch-allow-private"
			       : "%s is %s %s address: refused without"
				 " --fetch-allow-private",
			       s.refused, a, s.refused_kind);
	} else if (rc == CURLE_OPERATION_TIMEDOUT && strstr(why, "too slow")) {
		ret = ferr_set(err, -ETIMEDOUT, "slower than %ld bytes/s for"
			       " %ld s (--fetch-low-speed)", slow_bytes, slow_s);
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
