/*
 * fetch: download an http(s) URL with libcurl, handing the body to a
 * hook as it comes, for the URL inputs of request.json (run.h
 * starts the downloads and stores them in uploads/).
 *
 * At most 5 redirects, http and https only (also after a redirect), a
 * size limit (checked against Content-Length before the body and
 * against the bytes as they come), a connect timeout, a total one and a
 * low-speed one (a server that trickles a byte now and then fails the
 * fetch long before the total timeout).  No proxy from the environment
 * is used: through one, flowfs could not see where a connection goes.
 *
 * Unless limits->allow_private, every connection, the first and each
 * redirect's, is checked against fetch_private_kind() and this
 * machine's own addresses (a service listening on all interfaces is
 * this machine's too) on the address it is about to connect to, unless
 * the address is in limits->allow (libcurl's open-socket hook, after DNS
 * resolution: a name that resolves to a private address is refused
 * whatever it is called, and no re-resolution can slip in between the
 * check and the connection).  A refused address is never connected to.
 *
 * progress(ctx, got, total) is called now and then (total 0: unknown)
 * and stops the transfer when it returns true (a cancel).
 */
#ifndef FLOWFS_FETCH_H
#define FLOWFS_FETCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "lib/ferr.h"

/* The low-speed limit when none is given: under 1 KiB/s for 30 s. */
#define FETCH_LOW_SPEED_BYTES 1024
#define FETCH_LOW_SPEED_S 30

/* One range of --fetch-allow: `prefix` leading bits of `addr` (4 bytes
 * for AF_INET, 16 for AF_INET6). */
struct fetch_net {
	int family;
	uint8_t addr[16];
	unsigned prefix;
};

#define FETCH_ALLOW_MAX 32

struct fetch_limits {
	int64_t max_bytes;	/* 0: 1 GiB */
	long connect_timeout_s;	/* 0: 30 */
	long timeout_s;		/* 0: 3600 */
	/* slower than low_speed_bytes a second for low_speed_s seconds in
	 * a row: failed.  0: the defaults above; low_speed_bytes < 0: no
	 * such limit */
	long low_speed_bytes;
	long low_speed_s;
	bool allow_private;	/* connect to the addresses below too */
	/* connect to these, whatever kind they are (--fetch-allow) */
	struct fetch_net allow[FETCH_ALLOW_MAX];
	size_t nallow;
};

/*
 * --fetch-allow's text, "ADDRESS[/BITS][,ADDRESS[/BITS]...]" (IPv4 or
 * IPv6; no BITS: that address alone), into limits->allow.  0, or
 * -EINVAL with err naming the part it cannot take.
 */
int fetch_parse_allow(const char *text, struct fetch_limits *limits,
		      struct ferr *err);

/*
 * What kind of address not to fetch from `sa` is, or NULL for a public
 * one: "loopback" (127/8, ::1), "private" (10/8, 172.16/12, 192.168/16,
 * 100.64/10, fc00::/7, fec0::/10), "link-local" (169.254/16, fe80::/10),
 * "unspecified" (0/8, ::), "multicast" (224/4, ff00::/8), "reserved"
 * (240/4 with the broadcast address, 192.0.0/24, 198.18/15, the rest of
 * ::/96), and for an address that is neither IPv4 nor IPv6, "non-IP".
 * An IPv4-mapped (::ffff:a.b.c.d), NAT64 (64:ff9b::a.b.c.d, 64:ff9b:1::/48)
 * or 6to4 (2002:AABB:CCDD::) address is judged by its IPv4 address.
 */
const char *fetch_private_kind(const struct sockaddr *sa);

/*
 * Hand the body of `url` to put(put_ctx, data, n) piece by piece; a
 * negative errno from it stops the transfer and is the result.  0 and
 * *bytes, or a negative errno with err: -EINVAL (not http(s)), -EFBIG
 * (over the limit), -ECANCELED, -ETIMEDOUT (the total or the low-speed
 * limit), -EACCES (a private address, above), -EPROTO (HTTP status
 * other than 2xx, too many redirects), or what put() returned.
 */
int fetch_url(const char *url, const struct fetch_limits *limits,
	      int (*put)(void *put_ctx, const char *data, size_t n),
	      void *put_ctx,
	      bool (*progress)(void *ctx, int64_t got, int64_t total),
	      void *ctx, int64_t *bytes, struct ferr *err);

#endif
