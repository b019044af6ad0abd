/* Unit tests for lib/fcopy: the bytes arrive, on one file system and
 * across two (the read-and-write way), short or long of the source. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/fcopy.h"
#include "unit.h"

#define SOURCE_SIZE (3 * 1024 * 1024 + 17)

/* A source of SOURCE_SIZE bytes of a pattern in `dir`, open for reading. */
static int make_source(const char *dir, unsigned char **bytes)
{
	char path[512];
	unsigned char *b = malloc(SOURCE_SIZE);
	int fd;

	assert_non_null(b);
	for (size_t i = 0; i < SOURCE_SIZE; i++)
		b[i] = (unsigned char)(i * 7 + i / 4096);
	snprintf(path, sizeof(path), "%s/source", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, b, SOURCE_SIZE), SOURCE_SIZE);
	*bytes = b;
	return fd;
}

/* fcopy() of `len` bytes into a new file in `dir`; checks every byte. */
static void copy_into(const char *dir, int from, const unsigned char *b,
		      int64_t len)
{
	char path[512];
	unsigned char *got = malloc((size_t)len + 1);
	int to;

	assert_non_null(got);
	snprintf(path, sizeof(path), "%s/copy", dir);
	unlink(path);
	to = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	assert_true(to >= 0);
	assert_int_equal(fcopy(from, to, len), 0);
	assert_int_equal(pread(to, got, (size_t)len + 1, 0), len);
	for (int64_t i = 0; i < len; i++)
		if (got[i] != (i < SOURCE_SIZE ? b[i] : 0))
			fail_msg("byte %lld of %lld differs", (long long)i,
				 (long long)len);
	close(to);
	free(got);
}

static void copy_within(const char *src_dir, const char *dst_dir)
{
	unsigned char *b;
	int from = make_source(src_dir, &b);

	copy_into(dst_dir, from, b, SOURCE_SIZE);
	copy_into(dst_dir, from, b, SOURCE_SIZE - 4097);	/* shorter */
	copy_into(dst_dir, from, b, SOURCE_SIZE + 65536);	/* zeros after */
	copy_into(dst_dir, from, b, 0);
	close(from);
	free(b);
}

static void test_one_file_system(void **state)
{
	char dir[256];
	(void)state;

	assert_int_equal(unit_tmpdir(dir, sizeof(dir), "fcopy"), 0);
	copy_within(dir, dir);
	unit_rmtree(dir);
}

/* /tmp's disk to /dev/shm (tmpfs): copy_file_range() says EXDEV there */
static void test_another_file_system(void **state)
{
	char dir[256], shm[] = "/dev/shm/flowfs-unit-fcopy-XXXXXX";
	struct stat a, b;
	(void)state;

	assert_int_equal(unit_tmpdir(dir, sizeof(dir), "fcopy"), 0);
	if (!mkdtemp(shm) || stat(dir, &a) < 0 || stat(shm, &b) < 0 ||
	    a.st_dev == b.st_dev) {
		unit_rmtree(dir);
		if (shm[strlen(shm) - 1] != 'X')
			rmdir(shm);
		skip();
	}
	copy_within(dir, shm);
	unit_rmtree(dir);
	unit_rmtree(shm);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_file_system),
		cmocka_unit_test(test_another_file_system),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
