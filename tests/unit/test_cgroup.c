/*
 * Unit tests for cgroup: reading /proc/self/cgroup's lines (v1 and v2,
 * a hybrid machine's, malformed ones).  Making cgroups for real is
 * tested through the mount as root in tests/integration/test_sandbox.py.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "sandbox/cgroup.h"

static void test_parse_v2(void **state)
{
	char path[128] = "";

	(void)state;
	assert_int_equal(cgroup_parse_line("0::/user.slice/user-1000.slice/"
					   "user@1000.service/app.slice/x.service\n",
					   "", path, sizeof(path)), 1);
	assert_string_equal(path, "/user.slice/user-1000.slice/user@1000.service/"
			    "app.slice/x.service");
	assert_int_equal(cgroup_parse_line("0::/", "", path, sizeof(path)), 1);
	assert_string_equal(path, "/");
	/* a v1 line is not the v2 one, nor the reverse */
	assert_int_equal(cgroup_parse_line("4:memory:/a\n", "", path, sizeof(path)), 0);
	assert_int_equal(cgroup_parse_line("0::/a\n", "memory", path, sizeof(path)), 0);
}

static void test_parse_v1(void **state)
{
	char path[64] = "";

	(void)state;
	assert_int_equal(cgroup_parse_line("4:memory:/process_api/53d1\n",
					   "memory", path, sizeof(path)), 1);
	assert_string_equal(path, "/process_api/53d1");
	/* controllers mounted together */
	assert_int_equal(cgroup_parse_line("3:cpu,cpuacct:/x\n", "cpuacct", path,
					   sizeof(path)), 1);
	assert_string_equal(path, "/x");
	assert_int_equal(cgroup_parse_line("3:cpu,cpuacct:/x\n", "cpu", path,
					   sizeof(path)), 1);
	/* a name that starts another's is not it */
	assert_int_equal(cgroup_parse_line("3:cpu,cpuacct:/x\n", "cpuac", path,
					   sizeof(path)), 0);
	assert_int_equal(cgroup_parse_line("8:pids:/\n", "memory", path,
					   sizeof(path)), 0);
	assert_int_equal(cgroup_parse_line("9:name=systemd:/\n", "systemd", path,
					   sizeof(path)), 0);
	/* a path with ':' in it is kept whole */
	assert_int_equal(cgroup_parse_line("8:pids:/a:b\n", "pids", path,
					   sizeof(path)), 1);
	assert_string_equal(path, "/a:b");
}

static void test_parse_bad(void **state)
{
	char path[8] = "";

	(void)state;
	assert_int_equal(cgroup_parse_line("", "", path, sizeof(path)), -EINVAL);
	assert_int_equal(cgroup_parse_line("memory", "memory", path, sizeof(path)),
			 -EINVAL);
	assert_int_equal(cgroup_parse_line(":memory:/a", "memory", path,
					   sizeof(path)), -EINVAL);
	assert_int_equal(cgroup_parse_line("4:memory", "memory", path,
					   sizeof(path)), -EINVAL);
	assert_int_equal(cgroup_parse_line("4:memory:relative", "memory", path,
					   sizeof(path)), -EINVAL);
	assert_int_equal(cgroup_parse_line("0::/far/too/long/a/path", "", path,
					   sizeof(path)), -ENAMETOOLONG);
	assert_int_equal(cgroup_parse_line("0::/seven\n", "", path, sizeof(path)), 1);
	assert_string_equal(path, "/seven");
	/* exactly what the buffer holds (7 and its NUL), then one more */
	assert_int_equal(cgroup_parse_line("0::/sevens\n", "", path, sizeof(path)), 1);
	assert_string_equal(path, "/sevens");
	assert_int_equal(cgroup_parse_line("0::/eighths\n", "", path, sizeof(path)),
			 -ENAMETOOLONG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_v2),
		cmocka_unit_test(test_parse_v1),
		cmocka_unit_test(test_parse_bad),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
