/*
 * Unit tests for core/fetch: which addresses count as private
 * (fetch_private_kind), and fetch_url against tiny servers of its own on
 * this machine — a private address refused before any connection, also
 * when a redirect leads there, and the low-speed limit.  The mount's side
 * (status lines, the queue) is tests/integration/test_fetch_limits.py.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "run/fetch.h"

static const char *kind_of(const char *text)
{
	struct sockaddr_in in = { .sin_family = AF_INET };
	struct sockaddr_in6 in6 = { .sin6_family = AF_INET6 };

	if (inet_pton(AF_INET, text, &in.sin_addr) == 1)
		return fetch_private_kind((struct sockaddr *)&in);
	assert_int_equal(inet_pton(AF_INET6, text, &in6.sin6_addr), 1);
	return fetch_private_kind((struct sockaddr *)&in6);
}

static void kind(const char *address, const char *want)
{
	const char *got = kind_of(address);

	if (!want && got)
		fail_msg("%s: %s, not public", address, got);
	if (want && (!got || strcmp(got, want)))
		fail_msg("%s: %s, not %s", address, got ? got : "public", want);
}

static void test_private_kinds(void **state)
{
	struct sockaddr_un_like { sa_family_t family; char path[8]; } un = {
		AF_UNIX, "x" };

	(void)state;
	kind("127.0.0.1", "loopback");
	kind("127.255.255.254", "loopback");
	kind("::1", "loopback");
	kind("::ffff:127.0.0.1", "loopback");
	kind("64:ff9b::7f00:1", "loopback");
	kind("10.0.0.1", "private");
	kind("10.255.255.255", "private");
	kind("172.16.0.1", "private");
	kind("172.31.255.255", "private");
	kind("192.168.0.1", "private");
	kind("100.64.0.1", "private");
	kind("100.127.255.255", "private");
	kind("fc00::1", "private");
	kind("fdff:ffff::1", "private");
	kind("fec0::1", "private");
	kind("::ffff:192.168.1.1", "private");
	kind("169.254.169.254", "link-local");
	kind("fe80::1", "link-local");
	kind("febf::1", "link-local");
	kind("0.0.0.0", "unspecified");
	kind("0.1.2.3", "unspecified");
	kind("::", "unspecified");
	kind("224.0.0.1", "multicast");
	kind("239.255.255.250", "multicast");
	kind("ff02::1", "multicast");
	kind("240.0.0.1", "reserved");
	kind("255.255.255.255", "reserved");
	kind("::7f00:1", "reserved");
	kind("192.0.0.8", "reserved");
	kind("198.18.0.1", "reserved");
	kind("198.19.255.255", "reserved");
	/* 6to4 and the local-use NAT64 prefix carry an IPv4 address */
	kind("2002:a00:1::", "private");
	kind("2002:7f00:1::1", "loopback");
	kind("64:ff9b:1::a9fe:a9fe", "link-local");
	kind("2002:808:808::", NULL);
	/* the edges just outside */
	kind("192.0.1.0", NULL);
	kind("198.17.255.255", NULL);
	kind("198.20.0.0", NULL);
	kind("9.255.255.255", NULL);
	kind("11.0.0.0", NULL);
	kind("172.15.255.255", NULL);
	kind("172.32.0.0", NULL);
	kind("192.167.255.255", NULL);
	kind("192.169.0.0", NULL);
	kind("100.63.255.255", NULL);
	kind("100.128.0.0", NULL);
	kind("169.253.255.255", NULL);
	kind("126.255.255.255", NULL);
	kind("128.0.0.0", NULL);
	kind("223.255.255.255", NULL);
	kind("1.1.1.1", NULL);
	kind("192.0.2.2", NULL);
	kind("2001:db8::1", NULL);
	kind("2606:4700::1111", NULL);
	kind("fbff::1", NULL);
	kind("fe00::1", NULL);
	kind("::ffff:8.8.8.8", NULL);
	kind("64:ff9b::808:808", NULL);
	assert_string_equal(fetch_private_kind((struct sockaddr *)(void *)&un),
			    "non-IP");
}

/* ---- tiny servers ----------------------------------------------------- */

struct server {
	int fd;
	char base[64];		/* http://ADDRESS:PORT */
	const char *reply;	/* what it answers one connection */
	bool hold;		/* then waits for the client to hang up */
	pthread_t thread;
};

/* Listen on `address` (IPv4) at a port of the kernel's choice. */
static int listen_on(struct server *s, const char *address)
{
	struct sockaddr_in in = { .sin_family = AF_INET };
	socklen_t len = sizeof(in);

	memset(s, 0, sizeof(*s));
	s->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s->fd < 0 || inet_pton(AF_INET, address, &in.sin_addr) != 1 ||
	    bind(s->fd, (struct sockaddr *)&in, sizeof(in)) < 0 ||
	    listen(s->fd, 4) < 0 ||
	    getsockname(s->fd, (struct sockaddr *)&in, &len) < 0)
		return -1;
	snprintf(s->base, sizeof(s->base), "http://%s:%u", address,
		 ntohs(in.sin_port));
	return 0;
}

/* Whether a connection came (without waiting for one). */
static bool connected(const struct server *s)
{
	struct pollfd p = { .fd = s->fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1;
}

static void *serve_one(void *arg)
{
	struct server *s = arg;
	struct pollfd p = { .fd = s->fd, .events = POLLIN };
	char buf[4096];
	size_t got = 0;
	int c;

	/* never hang the test: 10 s at most for the client to come */
	if (poll(&p, 1, 10000) != 1)
		return NULL;
	c = accept(s->fd, NULL, NULL);
	if (c < 0)
		return NULL;
	while (got < sizeof(buf) - 1) {
		ssize_t n = read(c, buf + got, sizeof(buf) - 1 - got);

		if (n <= 0)
			break;
		got += (size_t)n;
		buf[got] = '\0';
		if (strstr(buf, "\r\n\r\n"))
			break;
	}
	if (write(c, s->reply, strlen(s->reply)) < 0)
		goto out;
	if (s->hold) {
		p.fd = c;
		poll(&p, 1, 10000);
	}
out:
	close(c);
	return NULL;
}

static void start(struct server *s, const char *reply, bool hold)
{
	s->reply = reply;
	s->hold = hold;
	assert_int_equal(pthread_create(&s->thread, NULL, serve_one, s), 0);
}

static void stop(struct server *s, bool started)
{
	if (started)
		pthread_join(s->thread, NULL);
	close(s->fd);
}

static int put_nothing(void *ctx, const char *data, size_t n)
{
	(void)data;
	*(size_t *)ctx += n;
	return 0;
}

static int fetch(const char *url, const struct fetch_limits *limits,
		 struct ferr *err)
{
	size_t n = 0;
	int64_t bytes;

	return fetch_url(url, limits, put_nothing, &n, NULL, NULL, &bytes,
			 err);
}

static void test_loopback_refused_before_connecting(void **state)
{
	struct fetch_limits limits = { .timeout_s = 10 };
	struct ferr err = FERR_INIT;
	struct server s;
	char url[96];

	(void)state;
	assert_int_equal(listen_on(&s, "127.0.0.1"), 0);
	snprintf(url, sizeof(url), "%s/a.csv", s.base);
	assert_int_equal(fetch(url, &limits, &err), -EACCES);
	assert_string_equal(err.message, "127.0.0.1 is a loopback address:"
			    " refused without --fetch-allow-private");
	assert_false(connected(&s));
	/* allowed, the same URL is fetched */
	limits.allow_private = true;
	start(&s, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi", false);
	assert_int_equal(fetch(url, &limits, &err), 0);
	stop(&s, true);
}

/* This machine's first IPv4 address that is not private, or false. */
static bool public_address(char *buf, size_t size)
{
	struct ifaddrs *all, *i;
	bool found = false;

	if (getifaddrs(&all) < 0)
		return false;
	for (i = all; i && !found; i = i->ifa_next)
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
		    !fetch_private_kind(i->ifa_addr))
			found = inet_ntop(AF_INET, &((struct sockaddr_in *)
				(void *)i->ifa_addr)->sin_addr, buf,
				(socklen_t)size) != NULL;
	freeifaddrs(all);
	return found;
}

/* A server allowed by --fetch-allow (127.0.0.2, loopback as any) that
 * redirects to another loopback address: the redirect is checked as
 * the first URL is, and never connected to. */
static void test_redirect_to_loopback_refused(void **state)
{
	struct fetch_limits limits = { .timeout_s = 10 };
	struct ferr err = FERR_INIT;
	struct server pub, lo;
	char reply[256], url[96];

	(void)state;
	/* a range whose last byte is cut (127.0.0.2 and .3, not .1) */
	assert_int_equal(fetch_parse_allow("127.0.0.2/31", &limits, &err), 0);
	assert_int_equal(listen_on(&pub, "127.0.0.2"), 0);
	assert_int_equal(listen_on(&lo, "127.0.0.1"), 0);
	snprintf(reply, sizeof(reply), "HTTP/1.1 302 Found\r\nLocation:"
		 " %s/secret\r\nContent-Length: 0\r\n\r\n", lo.base);
	start(&pub, reply, false);
	snprintf(url, sizeof(url), "%s/a.csv", pub.base);
	assert_int_equal(fetch(url, &limits, &err), -EACCES);
	assert_string_equal(err.message, "redirected to 127.0.0.1, a loopback"
			    " address: refused without --fetch-allow-private");
	stop(&pub, true);
	assert_false(connected(&lo));
	stop(&lo, false);
}

static void test_low_speed_limit(void **state)
{
	struct fetch_limits limits = { .timeout_s = 20, .allow_private = true,
				       .low_speed_bytes = 100,
				       .low_speed_s = 1 };
	struct ferr err = FERR_INIT;
	struct server s;
	char url[96];

	(void)state;
	assert_int_equal(listen_on(&s, "127.0.0.1"), 0);
	/* one byte of a hundred, then nothing until the client goes */
	start(&s, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nx", true);
	snprintf(url, sizeof(url), "%s/a.csv", s.base);
	assert_int_equal(fetch(url, &limits, &err), -ETIMEDOUT);
	assert_string_equal(err.message, "slower than 100 bytes/s for 1 s"
			    " (--fetch-low-speed)");
	stop(&s, true);
}

/* This machine's own address, outside the private ranges (a service
 * listening on all interfaces answers there): refused, unless allowed. */
static void test_own_address_refused(void **state)
{
	struct fetch_limits limits = { .timeout_s = 10 };
	struct ferr err = FERR_INIT;
	struct server own;
	char address[64], url[96], want[160];

	(void)state;
	if (!public_address(address, sizeof(address)))
		skip();
	assert_int_equal(listen_on(&own, address), 0);
	snprintf(url, sizeof(url), "%s/a.csv", own.base);
	assert_int_equal(fetch(url, &limits, &err), -EACCES);
	snprintf(want, sizeof(want), "%s is a local address: refused without"
		 " --fetch-allow-private", address);
	assert_string_equal(err.message, want);
	assert_false(connected(&own));
	stop(&own, false);
}

static void test_parse_allow(void **state)
{
	static const char *const bad[] = { "", "x", "1.2.3.4,", ",1.2.3.4",
		"10.0.0.0/33", "::1/129", "10.0.0.0/", "10.0.0.0/x",
		"1.2.3.4/-1" };
	struct fetch_limits l = { 0 };
	struct ferr err = FERR_INIT;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		err = (struct ferr)FERR_INIT;
		assert_int_equal(fetch_parse_allow(bad[i], &l, &err), -EINVAL);
		assert_non_null(strstr(err.message, "--fetch-allow takes"));
	}
	assert_int_equal(fetch_parse_allow("192.168.1.10,10.1.0.0/16,fd00::/8",
					   &l, &err), 0);
	assert_int_equal(l.nallow, 3);
	assert_int_equal(l.allow[0].prefix, 32);
	assert_int_equal(l.allow[1].prefix, 16);
	assert_int_equal(l.allow[2].family, AF_INET6);
	assert_int_equal(l.allow[2].prefix, 8);
}

/* --fetch-allow takes 32 addresses or ranges, a /32 and a /128 ... */
static void test_allow_at_its_limits(void **state)
{
	struct fetch_limits l = { 0 };
	struct ferr err = FERR_INIT;
	char list[32 * 16] = "";

	(void)state;
	for (int i = 1; i <= 32; i++)
		snprintf(list + strlen(list), sizeof(list) - strlen(list),
			 "%s10.0.0.%d", i > 1 ? "," : "", i);
	assert_int_equal(fetch_parse_allow(list, &l, &err), 0);
	assert_int_equal(l.nallow, 32);
	assert_int_equal(fetch_parse_allow("10.0.0.0/32,::1/128,0.0.0.0/0",
					   &l, &err), 0);
	assert_int_equal(l.allow[0].prefix, 32);
	assert_int_equal(l.allow[1].prefix, 128);
	assert_int_equal(l.allow[2].prefix, 0);
}

/* ... not 33, nor /33 and /129. */
static void test_allow_past_its_limits(void **state)
{
	struct fetch_limits l = { 0 };
	struct ferr err = FERR_INIT;
	char list[33 * 16] = "";

	(void)state;
	for (int i = 1; i <= 33; i++)
		snprintf(list + strlen(list), sizeof(list) - strlen(list),
			 "%s10.0.0.%d", i > 1 ? "," : "", i);
	assert_int_equal(fetch_parse_allow(list, &l, &err), -EINVAL);
	assert_string_equal(err.message, "--fetch-allow takes addresses or"
			    " ranges such as 192.168.1.10 or 10.1.0.0/16,"
			    " comma-separated (at most 32), not \"10.0.0.33\"");
	assert_int_equal(fetch_parse_allow("10.0.0.0/33", &l, &err), -EINVAL);
	assert_int_equal(fetch_parse_allow("::/129", &l, &err), -EINVAL);
}

/* A range lets through the addresses inside it, to the last bit of its
 * prefix, and no other: 127.0.0.1 is in 127.0.0.0/31 and /25, not in
 * 127.0.0.2/31, 127.0.0.128/25 or 127.0.1.0/24. */
static void test_allow_ranges(void **state)
{
	static const struct { const char *allow; bool in; } cases[] = {
		{ "127.0.0.1", true }, { "127.0.0.0/31", true },
		{ "127.0.0.0/25", true }, { "126.0.0.0/7", true },
		{ "127.0.0.2/31", false }, { "127.0.0.128/25", false },
		{ "127.0.1.0/24", false }, { "127.0.0.0/32", false },
		{ "128.0.0.0/7", false }, { "::1", false },
	};
	struct ferr err = FERR_INIT;
	struct server s;
	char url[96];

	(void)state;
	assert_int_equal(listen_on(&s, "127.0.0.1"), 0);
	snprintf(url, sizeof(url), "%s/a.csv", s.base);
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		struct fetch_limits limits = { .timeout_s = 10 };

		assert_int_equal(fetch_parse_allow(cases[i].allow, &limits,
						   &err), 0);
		if (cases[i].in) {
			start(&s, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"
			      "\r\nhi", false);
			if (fetch(url, &limits, &err) != 0)
				fail_msg("%s: %s", cases[i].allow, err.message);
			pthread_join(s.thread, NULL);
		} else {
			assert_int_equal(fetch(url, &limits, &err), -EACCES);
			assert_false(connected(&s));
		}
	}
	stop(&s, false);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_private_kinds),
		cmocka_unit_test(test_loopback_refused_before_connecting),
		cmocka_unit_test(test_redirect_to_loopback_refused),
		cmocka_unit_test(test_own_address_refused),
		cmocka_unit_test(test_parse_allow),
		cmocka_unit_test(test_allow_at_its_limits),
		cmocka_unit_test(test_allow_past_its_limits),
		cmocka_unit_test(test_allow_ranges),
		cmocka_unit_test(test_low_speed_limit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
