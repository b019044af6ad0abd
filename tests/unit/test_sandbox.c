/*
 * Unit tests for exec's sandbox parts: finding bwrap on PATH, the bwrap
 * command line (what it binds, what it keeps out), the seccomp filter's
 * shape (what it refuses: test_sandbox.py), the scratch folder's
 * links (only those resolving inside stay) and which files an
 * experiment made may be copied out.  The sandbox itself, run for real,
 * is tested through the mount in tests/integration/test_sandbox.py;
 * sandbox_fold and sandbox_observation in test_engine.c.
 */
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

#include "sandbox/sandbox.h"
#include "unit.h"

static void touch(const char *dir, const char *name, mode_t mode)
{
	char path[1024];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "x", 1), 1);
	close(fd);
}

/* A daemon's folders: made private, swept when their daemon is gone
 * (never through a link), left alone while it lives. */
static void test_scratch(void **state)
{
	char dir[64], path[512], base[256], outside[256], link[600];
	struct sandbox_scratch a, b, c;
	struct ferr err = FERR_INIT;
	struct stat st;
	size_t swept;

	(void)state;
	assert_int_equal(unit_tmpdir(dir, sizeof(dir), "scratch"), 0);
	snprintf(base, sizeof(base), "%s/flowfs-%u", dir, (unsigned)geteuid());
	assert_int_equal(sandbox_scratch_open(dir, &a, &swept, &err), 0);
	assert_int_equal(swept, 0);
	assert_int_equal(lstat(base, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 07777, geteuid() ? 0700 : 0711);
	assert_int_equal(strncmp(a.path, base, strlen(base)), 0);
	assert_int_equal(strncmp(a.path + strlen(base), "/daemon-", 8), 0);
	/* a killed daemon's folder: its experiment's folder with a link out
	 * and a folder it made mode 000 */
	snprintf(outside, sizeof(outside), "%s/outside", dir);
	assert_int_equal(mkdir(outside, 0755), 0);
	touch(outside, "keep", 0644);
	snprintf(path, sizeof(path), "%s/daemon-stale", base);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/daemon-stale/experiment-x", base);
	assert_int_equal(mkdir(path, 0700), 0);
	touch(path, "made", 0600);
	snprintf(link, sizeof(link), "%s/out", path);
	assert_int_equal(symlink(outside, link), 0);
	snprintf(path, sizeof(path), "%s/daemon-stale/experiment-x/shut", base);
	assert_int_equal(mkdir(path, 0700), 0);
	touch(path, "in", 0600);
	assert_int_equal(chmod(path, 0), 0);
	/* a live daemon's: b's lock is held */
	assert_int_equal(sandbox_scratch_open(dir, &b, &swept, &err), 0);
	assert_int_equal(swept, 1);
	snprintf(path, sizeof(path), "%s/daemon-stale", base);
	assert_int_equal(lstat(path, &st), -1);
	snprintf(path, sizeof(path), "%s/keep", outside);
	assert_int_equal(lstat(path, &st), 0);
	assert_int_equal(lstat(outside, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0755);
	assert_int_equal(lstat(a.path, &st), 0);
	/* a released one is swept by the next */
	snprintf(path, sizeof(path), "%s", b.path);
	touch(b.path, "left", 0600);
	assert_int_equal(close(b.fd), 0);
	b.fd = -1;
	assert_int_equal(sandbox_scratch_open(dir, &c, &swept, &err), 0);
	assert_int_equal(swept, 1);
	assert_int_equal(lstat(path, &st), -1);
	assert_int_equal(lstat(a.path, &st), 0);
	sandbox_scratch_close(&b);
	sandbox_scratch_close(&c);
	/* ended: its folder goes when empty, else it is left to a sweep */
	snprintf(path, sizeof(path), "%s", a.path);
	touch(a.path, "busy", 0600);
	sandbox_scratch_close(&a);
	assert_int_equal(lstat(path, &st), 0);
	assert_null(a.path);
	assert_int_equal(sandbox_scratch_open(dir, &a, &swept, &err), 0);
	assert_int_equal(swept, 1);
	assert_int_equal(lstat(path, &st), -1);
	snprintf(path, sizeof(path), "%s", a.path);
	sandbox_scratch_close(&a);
	assert_int_equal(lstat(path, &st), -1);
	/* a loose mode is made private again */
	assert_int_equal(chmod(base, 0777), 0);
	assert_int_equal(sandbox_scratch_open(dir, &a, &swept, &err), 0);
	assert_int_equal(lstat(base, &st), 0);
	assert_int_equal(st.st_mode & 07777, geteuid() ? 0700 : 0711);
	sandbox_scratch_close(&a);
	/* flowfs-<uid> made first by another user: refused */
	if (geteuid() == 0) {
		assert_int_equal(chown(base, 1234, 1234), 0);
		assert_int_equal(sandbox_scratch_open(dir, &a, &swept, &err), -EPERM);
		assert_non_null(strstr(err.message, "belongs to uid 1234, not to"
				       " flowfs's (0): remove it, or set TMPDIR"));
		assert_int_equal(a.fd, -1);
		assert_null(a.path);
	}
	/* flowfs-<uid> made a link to elsewhere first: refused */
	unit_rmtree(base);
	assert_int_equal(symlink(outside, base), 0);
	assert_int_equal(sandbox_scratch_open(dir, &a, &swept, &err), -ENOTDIR);
	assert_non_null(strstr(err.message, "not a folder (a symbolic link?)"));
	assert_int_equal(a.fd, -1);
	assert_null(a.path);
	snprintf(path, sizeof(path), "%s/keep", outside);
	assert_int_equal(lstat(path, &st), 0);
	unit_rmtree(dir);
}

static void test_sandbox_check(void **state)
{
	char dir[64], path[128], *old = getenv("PATH");
	struct ferr err = FERR_INIT;

	(void)state;
	old = old ? strdup(old) : NULL;
	assert_int_equal(unit_tmpdir(dir, sizeof(dir), "exec"), 0);
	snprintf(path, sizeof(path), "/nonexistent::%s", dir);
	setenv("PATH", path, 1);
	assert_int_equal(sandbox_check(&err), -ENOENT);
	assert_string_equal(err.message, "--allow-exec needs bubblewrap, and no"
			    " bwrap is on PATH: install it (Debian package"
			    " bubblewrap)");
	/* not executable: not it */
	touch(dir, "bwrap", 0644);
	assert_int_equal(sandbox_check(NULL), -ENOENT);
	snprintf(path, sizeof(path), "%s/bwrap", dir);
	assert_int_equal(chmod(path, 0755), 0);
	assert_int_equal(sandbox_check(NULL), 0);
	unsetenv("PATH");
	assert_int_equal(sandbox_check(NULL), -ENOENT);
	if (old)
		setenv("PATH", old, 1);
	free(old);
	unit_rmtree(dir);
}

/* The index of `arg` in a, from `from`; -1 when absent. */
static int find(const struct sandbox_args *a, size_t from, const char *arg)
{
	for (size_t i = from; i < a->n; i++)
		if (!strcmp(a->argv[i], arg))
			return (int)i;
	return -1;
}

static void test_sandbox_args(void **state)
{
	struct sandbox_limits lim = { .procs = 32 };
	struct sandbox_args a;
	int i;

	(void)state;
	assert_int_equal(sandbox_bwrap_args("/tmp/flowfs-experiment-x", "e.py",
					   &lim, &a), 0);
	assert_null(a.argv[a.n]);
	assert_string_equal(a.argv[0], "bwrap");
	for (const char *const *f = (const char *const[]){ "--unshare-all",
	     "--unshare-user", "--disable-userns", "--die-with-parent", "--new-session",
	     "--clearenv", NULL }; *f; f++)
		assert_true(find(&a, 0, *f) > 0);
	i = find(&a, 0, "--cap-drop");
	assert_string_equal(a.argv[i + 1], "ALL");
	i = find(&a, 0, "--uid");
	assert_string_equal(a.argv[i + 1], "65534");
	/* the scratch folder is the one writable bind */
	i = find(&a, 0, "--bind");
	assert_string_equal(a.argv[i + 1], "/tmp/flowfs-experiment-x");
	assert_string_equal(a.argv[i + 2], "/tmp/flowfs-experiment-x");
	assert_int_equal(find(&a, (size_t)i + 1, "--bind"), -1);
	/* memory in files is bounded: a sized /dev/shm and /tmp, /dev
	 * read-only after /dev/shm is made */
	i = find(&a, 0, "--tmpfs");
	assert_string_equal(a.argv[i - 2], "--size");
	assert_string_equal(a.argv[i - 1], "67108864");
	assert_string_equal(a.argv[i + 1], "/dev/shm");
	assert_true(find(&a, 0, "--remount-ro") > i);
	assert_string_equal(a.argv[find(&a, 0, "--remount-ro") + 1], "/dev");
	i = find(&a, (size_t)i + 1, "--tmpfs");
	assert_string_equal(a.argv[i - 2], "--size");
	assert_string_equal(a.argv[i - 1], "268435456");
	assert_string_equal(a.argv[i + 1], "/tmp");
	/* what is bound read-only: /usr and system paths, a few of /etc */
	for (i = find(&a, 0, "--ro-bind"); i > 0;
	     i = find(&a, (size_t)i + 1, "--ro-bind"))
		assert_true(!strcmp(a.argv[i + 1], "/usr") ||
			    !strncmp(a.argv[i + 1], "/lib", 4) ||
			    !strcmp(a.argv[i + 1], "/bin") ||
			    !strcmp(a.argv[i + 1], "/sbin"));
	for (i = find(&a, 0, "--ro-bind-try"); i > 0;
	     i = find(&a, (size_t)i + 1, "--ro-bind-try"))
		assert_true(!strcmp(a.argv[i + 1], "/etc/ld.so.cache") ||
			    !strcmp(a.argv[i + 1], "/etc/localtime") ||
			    !strcmp(a.argv[i + 1], "/etc/alternatives"));
	assert_int_equal(find(&a, 0, "/home"), -1);
	assert_int_equal(find(&a, 0, "/root"), -1);
	assert_int_equal(find(&a, 0, "/etc"), -1);
	assert_int_equal(find(&a, 0, "/etc/shadow"), -1);
	/* the environment is these three */
	for (i = find(&a, 0, "--setenv"); i > 0;
	     i = find(&a, (size_t)i + 1, "--setenv"))
		assert_true(!strcmp(a.argv[i + 1], "PATH") ||
			    !strcmp(a.argv[i + 1], "HOME") ||
			    !strcmp(a.argv[i + 1], "LANG"));
	/* and it ends with the program, under its process cap */
	assert_string_equal(a.argv[a.n - 6], "prlimit");
	assert_string_equal(a.argv[a.n - 5], "--nproc=32:32");
	assert_string_equal(a.argv[a.n - 3], "python3");
	assert_string_equal(a.argv[a.n - 2], "-I");
	assert_string_equal(a.argv[a.n - 1], "e.py");
	sandbox_args_release(&a);
	assert_null(a.argv);
}

/* The filter is BPF: whole instructions of 8 bytes, at offset 0. */
static void test_seccomp_filter(void **state)
{
	struct stat st;
	int fd;

	(void)state;
	assert_int_equal(sandbox_seccomp_filter(&fd), 0);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_true(st.st_size > 8 * 60);
	assert_int_equal(st.st_size % 8, 0);
	assert_int_equal(lseek(fd, 0, SEEK_CUR), 0);
	assert_int_equal(fcntl(fd, F_GETFD), FD_CLOEXEC);
	close(fd);
}

struct dropped {
	char names[8][64];
	int n;
};

static void note(void *ctx, const char *path)
{
	struct dropped *d = ctx;

	assert_true(d->n < 8);
	snprintf(d->names[d->n++], sizeof(d->names[0]), "%s", path);
}

static bool has(const struct dropped *d, const char *name)
{
	for (int i = 0; i < d->n; i++)
		if (!strcmp(d->names[i], name))
			return true;
	return false;
}

static bool lexists(const char *dir, const char *name)
{
	char path[256];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return lstat(path, &st) == 0;
}

static void link_in(const char *dir, const char *target, const char *name)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	assert_int_equal(symlink(target, path), 0);
}

static void test_prepare_dir(void **state)
{
	struct dropped d = { .n = 0 };
	char dir[64], sub[128], abs[192];

	(void)state;
	assert_int_equal(unit_tmpdir(dir, sizeof(dir), "exec"), 0);
	snprintf(sub, sizeof(sub), "%s/sub", dir);
	assert_int_equal(mkdir(sub, 0700), 0);
	touch(dir, "data.csv", 0600);
	touch(sub, "n.txt", 0600);
	link_in(dir, "data.csv", "ok");
	link_in(dir, "sub/n.txt", "ok-deep");
	link_in(sub, "../data.csv", "ok-up");
	link_in(dir, "ok", "ok-chain");
	link_in(dir, ".", "ok-self");
	snprintf(abs, sizeof(abs), "%s/data.csv", dir);
	link_in(dir, abs, "ok-absolute");
	link_in(dir, "/etc/passwd", "out-absolute");
	link_in(dir, "../../etc/passwd", "out-up");
	link_in(sub, "../..", "out-deep");
	link_in(dir, "missing", "dangling");
	link_in(dir, "out-absolute", "out-chain");
	/* as root: handed to --sandbox-user's ids */
	assert_int_equal(sandbox_prepare_dir(dir, &(struct sandbox_limits){ .uid = 4242,
					  .gid = 4243 }, note, &d), 0);
	for (const char *const *k = (const char *const[]){ "ok", "ok-deep",
	     "sub/ok-up", "ok-chain", "ok-self", "ok-absolute", "data.csv",
	     NULL }; *k; k++)
		assert_true(lexists(dir, *k));
	for (const char *const *k = (const char *const[]){ "out-absolute",
	     "out-up", "sub/out-deep", "dangling", "out-chain", NULL }; *k; k++) {
		assert_false(lexists(dir, *k));
		assert_true(has(&d, *k));
	}
	assert_int_equal(d.n, 5);
	if (geteuid() == 0) {
		struct stat st;

		assert_int_equal(stat(sub, &st), 0);
		assert_int_equal(st.st_uid, 4242);
		assert_int_equal(stat(abs, &st), 0);
		assert_int_equal(st.st_gid, 4243);
		/* none given: nobody */
		assert_int_equal(sandbox_prepare_dir(dir, &(struct sandbox_limits){ 0 },
						  NULL, NULL), 0);
		assert_int_equal(stat(sub, &st), 0);
		assert_int_equal(st.st_uid, SANDBOX_ID);
		assert_int_equal(st.st_gid, SANDBOX_ID);
	}
	assert_int_equal(sandbox_prepare_dir("/nonexistent/flowfs",
					  &(struct sandbox_limits){ 0 }, NULL, NULL),
			 -ENOENT);
	unit_rmtree(dir);
}

static void test_open_made(void **state)
{
	char dir[64], a[128], b[128];
	struct stat st;
	int dfd, fd;

	(void)state;
	assert_int_equal(unit_tmpdir(dir, sizeof(dir), "exec"), 0);
	dfd = open(dir, O_RDONLY | O_DIRECTORY);
	assert_true(dfd >= 0);
	touch(dir, "plain", 0600);
	touch(dir, "twice", 0600);
	snprintf(a, sizeof(a), "%s/twice", dir);
	snprintf(b, sizeof(b), "%s/twice2", dir);
	assert_int_equal(link(a, b), 0);
	link_in(dir, "plain", "sym");
	assert_int_equal(mkfifoat(dfd, "fifo", 0600), 0);
	assert_int_equal(mkdirat(dfd, "folder", 0700), 0);

	fd = sandbox_open_made(dfd, "plain", &st);
	assert_true(fd >= 0);
	assert_int_equal(st.st_size, 1);
	close(fd);
	assert_int_equal(sandbox_open_made(dfd, "twice", &st), -EMLINK);
	assert_int_equal(sandbox_open_made(dfd, "twice2", &st), -EMLINK);
	assert_int_equal(sandbox_open_made(dfd, "sym", &st), -ELOOP);
	/* no writer: a blocking open would wait for one forever */
	assert_int_equal(sandbox_open_made(dfd, "fifo", &st), -EINVAL);
	assert_int_equal(sandbox_open_made(dfd, "folder", &st), -EINVAL);
	assert_int_equal(sandbox_open_made(dfd, "missing", &st), -ENOENT);
	close(dfd);
	unit_rmtree(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sandbox_check),
		cmocka_unit_test(test_scratch),
		cmocka_unit_test(test_sandbox_args),
		cmocka_unit_test(test_seccomp_filter),
		cmocka_unit_test(test_prepare_dir),
		cmocka_unit_test(test_open_made),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
