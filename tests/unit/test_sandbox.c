/*
 * Unit tests for exec's sandbox parts: finding bwrap on PATH, the bwrap
 * command line (what it binds, what it keeps out), the seccomp filter's
 * shape (what it refuses: test_sandbox.py), the scratch folder's
 * links (only those resolving inside stay) and which files an
 * experiment made may be copied out, how its folder is measured (its
 * limits exactly at and one past), what is kept of what it prints and
 * how that becomes an observation.  The sandbox itself, run for real, is
 * tested through the mount in tests/integration/test_sandbox.py (and
 * here once, when bwrap can make one, for what is kept of its output).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
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

/* ---- the scratch folder's limits ---------------------------------------- */

/* `dir`/`sub` made, with `n` empty files in it. */
static void files_in(const char *dir, const char *sub, int n)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", dir, sub);
	assert_int_equal(mkdir(path, 0700), 0);
	for (int i = 0; i < n; i++) {
		char name[16];

		snprintf(name, sizeof(name), "f%d", i);
		touch(path, name, 0600);
	}
}

/* Folders d/d/... `depth` deep in `dir`. */
static void nest(const char *dir, int depth)
{
	char path[4096];
	size_t len = (size_t)snprintf(path, sizeof(path), "%s", dir);

	for (int i = 0; i < depth; i++) {
		len += (size_t)snprintf(path + len, sizeof(path) - len, "/d");
		assert_int_equal(mkdir(path, 0700), 0);
	}
}

static enum sandbox_over over(const char *dir, int64_t bytes, long entries,
			      struct sandbox_use *use)
{
	struct sandbox_use max = { bytes, entries };

	return sandbox_scratch_over(dir, &max, use);
}

/* What a run may add: what the folder holds when it starts, plus the
 * limits (1024 MiB and 10,000 entries when none are given). */
static void test_scratch_max(void **state)
{
	struct sandbox_use use, max;
	char dir[64];

	(void)state;
	assert_int_equal(unit_tmpdir(dir, sizeof(dir), "measure"), 0);
	files_in(dir, "held", 3);
	assert_int_equal(over(dir, INT64_MAX, LONG_MAX, &use), SANDBOX_OVER_NONE);
	assert_int_equal(use.entries, 4);
	assert_true(use.bytes > 0);
	sandbox_scratch_max(dir, &(struct sandbox_limits){ 0 }, &max);
	assert_int_equal(max.entries, 4 + 10000);
	assert_int_equal(max.bytes, use.bytes + ((int64_t)1024 << 20));
	sandbox_scratch_max(dir, &(struct sandbox_limits){ .disk_mib = 1,
			    .files = 5 }, &max);
	assert_int_equal(max.entries, 4 + 5);
	assert_int_equal(max.bytes, use.bytes + (1 << 20));
	unit_rmtree(dir);
}

/* Exactly `files` entries more than it held: within; one more: past. */
static void test_scratch_entries_at_limit(void **state)
{
	struct sandbox_use use, max;
	char dir[64];

	(void)state;
	assert_int_equal(unit_tmpdir(dir, sizeof(dir), "measure"), 0);
	touch(dir, "upload", 0600);
	sandbox_scratch_max(dir, &(struct sandbox_limits){ .files = 6 }, &max);
	files_in(dir, "made", 5);		/* 1 + 5 */
	assert_int_equal(sandbox_scratch_over(dir, &max, &use),
			 SANDBOX_OVER_NONE);
	assert_int_equal(use.entries, 7);
	unit_rmtree(dir);
}

static void test_scratch_entries_past_limit(void **state)
{
	struct sandbox_use use, max;
	char dir[64];

	(void)state;
	assert_int_equal(unit_tmpdir(dir, sizeof(dir), "measure"), 0);
	touch(dir, "upload", 0600);
	sandbox_scratch_max(dir, &(struct sandbox_limits){ .files = 6 }, &max);
	files_in(dir, "made", 6);
	assert_int_equal(sandbox_scratch_over(dir, &max, &use),
			 SANDBOX_OVER_FILES);
	/* counted up to the one past */
	assert_int_equal(use.entries, 8);
	unit_rmtree(dir);
}

/* Allocated bytes: exactly the limit is within, a byte less past. */
static void test_scratch_bytes(void **state)
{
	struct sandbox_use use, max;
	char dir[64], path[128];
	FILE *f;

	(void)state;
	assert_int_equal(unit_tmpdir(dir, sizeof(dir), "measure"), 0);
	snprintf(path, sizeof(path), "%s/data", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	for (int i = 0; i < 100000; i++)
		fputs("0123456789", f);
	assert_int_equal(fclose(f), 0);
	sync();
	assert_int_equal(over(dir, INT64_MAX, LONG_MAX, &use), SANDBOX_OVER_NONE);
	assert_true(use.bytes >= 1000000);
	assert_int_equal(over(dir, use.bytes, LONG_MAX, &max), SANDBOX_OVER_NONE);
	assert_int_equal(max.bytes, use.bytes);
	assert_int_equal(over(dir, use.bytes - 1, LONG_MAX, &max),
			 SANDBOX_OVER_DISK);
	/* and the entries' limit the same way */
	assert_int_equal(over(dir, INT64_MAX, 1, &max), SANDBOX_OVER_NONE);
	assert_int_equal(over(dir, INT64_MAX, 0, &max), SANDBOX_OVER_FILES);
	unit_rmtree(dir);
}

/* Folders nested SANDBOX_SCRATCH_DEPTH deep are walked; one more is
 * past (what it holds would not be measured). */
static void test_scratch_depth_at_limit(void **state)
{
	struct sandbox_use use;
	char dir[64];

	(void)state;
	assert_int_equal(unit_tmpdir(dir, sizeof(dir), "measure"), 0);
	nest(dir, SANDBOX_SCRATCH_DEPTH);
	assert_int_equal(over(dir, INT64_MAX, LONG_MAX, &use), SANDBOX_OVER_NONE);
	assert_int_equal(use.entries, SANDBOX_SCRATCH_DEPTH);
	unit_rmtree(dir);
}

static void test_scratch_depth_past_limit(void **state)
{
	struct sandbox_use use;
	char dir[64];

	(void)state;
	assert_int_equal(unit_tmpdir(dir, sizeof(dir), "measure"), 0);
	nest(dir, SANDBOX_SCRATCH_DEPTH + 1);
	assert_int_equal(over(dir, INT64_MAX, LONG_MAX, &use), SANDBOX_OVER_DEPTH);
	/* nothing there: nothing held, nothing past */
	assert_int_equal(over("/nonexistent/flowfs", 0, 0, &use),
			 SANDBOX_OVER_NONE);
	assert_int_equal(use.entries, 0);
	unit_rmtree(dir);
}

/* A folder the program shut (mode 000) is measured all the same, and
 * left as it was.  The daemon measures as the folder's owner (root would
 * need no opening): as root, the measure runs in a child as nobody. */
static int shut_measure(const char *dir)
{
	char path[128];
	struct sandbox_use use;
	struct stat st;

	snprintf(path, sizeof(path), "%s/shut", dir);
	if (over(dir, INT64_MAX, 4, &use) != SANDBOX_OVER_FILES)
		return 1;
	if (over(dir, INT64_MAX, 5, &use) != SANDBOX_OVER_NONE ||
	    use.entries != 5)
		return 2;
	if (stat(dir, &st) < 0 || lstat(path, &st) < 0 ||
	    (st.st_mode & 07777) != 0)
		return 3;
	return 0;
}

static void test_scratch_shut_folder(void **state)
{
	char dir[64], path[128];
	int status;
	pid_t pid;

	(void)state;
	assert_int_equal(unit_tmpdir(dir, sizeof(dir), "measure"), 0);
	files_in(dir, "shut", 4);
	snprintf(path, sizeof(path), "%s/shut", dir);
	if (geteuid() == 0) {
		/* the folder and what it holds are nobody's, as a sandbox's */
		assert_int_equal(sandbox_prepare_dir(dir, &(struct sandbox_limits){
			.uid = SANDBOX_ID, .gid = SANDBOX_ID }, NULL, NULL), 0);
	}
	assert_int_equal(chmod(path, 0), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (geteuid() == 0 && (setgroups(0, NULL) < 0 ||
				       setresgid(SANDBOX_ID, SANDBOX_ID, SANDBOX_ID) < 0 ||
				       setresuid(SANDBOX_ID, SANDBOX_ID, SANDBOX_ID) < 0))
			_exit(9);
		_exit(shut_measure(dir));
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(chmod(path, 0700), 0);
	unit_rmtree(dir);
}

/* sandbox_prepare_dir() walks SANDBOX_SCRATCH_DEPTH folders deep, and
 * refuses a folder nested deeper (ELOOP). */
static void test_prepare_depth(void **state)
{
	char dir[64];

	(void)state;
	assert_int_equal(unit_tmpdir(dir, sizeof(dir), "exec"), 0);
	nest(dir, SANDBOX_SCRATCH_DEPTH);
	assert_int_equal(sandbox_prepare_dir(dir, &(struct sandbox_limits){ 0 },
					     NULL, NULL), 0);
	unit_rmtree(dir);
	assert_int_equal(unit_tmpdir(dir, sizeof(dir), "exec"), 0);
	nest(dir, SANDBOX_SCRATCH_DEPTH + 1);
	assert_int_equal(sandbox_prepare_dir(dir, &(struct sandbox_limits){ 0 },
					     NULL, NULL), -ELOOP);
	unit_rmtree(dir);
}

/* ---- what it printed, as an observation ---------------------------------- */

static void fold_is(const char *in, size_t len, const char *want)
{
	struct sbuf out = SBUF_INIT;

	assert_int_equal(sandbox_fold(in, len, &out), 0);
	assert_string_equal(out.buf, want);
	sbuf_release(&out);
}

/* Three identical lines fold; two stay; bytes that are no UTF-8 and NULs
 * become U+FFFD. */
static void test_fold_lines(void **state)
{
	(void)state;
	fold_is("a\na\nb\n", 6, "a\na\nb\n");
	fold_is("a\na\na\nb\n", 8, "a (repeated 3 times)\nb\n");
	fold_is("a\na\na", 5, "a (repeated 3 times)");
	fold_is("x\xff\0y", 4, "x\xef\xbf\xbd\xef\xbf\xbdy");
}

/* `n` characters of two bytes each, one line. */
static void chars(struct sbuf *sb, size_t n)
{
	for (size_t i = 0; i < n; i++)
		assert_int_equal(sbuf_addstr(sb, i % 2 ? "\xc3\xa9" : "\xc3\xa8"),
				 0);
}

/* 16,000 characters are kept whole (counted in characters, not bytes). */
static void test_fold_at_16000_characters(void **state)
{
	struct sbuf in = SBUF_INIT, out = SBUF_INIT;

	(void)state;
	chars(&in, 16000);
	assert_int_equal(sandbox_fold(in.buf, in.len, &out), 0);
	assert_int_equal(out.len, in.len);
	assert_memory_equal(out.buf, in.buf, in.len);
	sbuf_release(&in);
	sbuf_release(&out);
}

/* One more: the first and the last 8,000 kept, a line says how many
 * were cut. */
static void test_fold_past_16000_characters(void **state)
{
	struct sbuf in = SBUF_INIT, out = SBUF_INIT, want = SBUF_INIT;
	size_t head;

	(void)state;
	chars(&in, 16001);
	head = 8000 * 2;
	assert_int_equal(sbuf_add(&want, in.buf, head), 0);
	assert_int_equal(sbuf_addstr(&want, "\n... (1 characters cut) ...\n"), 0);
	assert_int_equal(sbuf_add(&want, in.buf + head + 2, in.len - head - 2), 0);
	assert_int_equal(sandbox_fold(in.buf, in.len, &out), 0);
	assert_string_equal(out.buf, want.buf);
	sbuf_release(&in);
	sbuf_release(&out);
	sbuf_release(&want);
}

/* An exit status 128 + N is signal N up to 64, a status past it. */
static void test_observation_signals(void **state)
{
	struct sandbox_limits lim = { 0 };
	struct sandbox_result res = { 0 };
	struct sbuf out = SBUF_INIT;

	(void)state;
	sbuf_init(&res.out);
	sbuf_init(&res.err);
	res.status = (128 + 64) << 8;
	assert_int_equal(sandbox_observation(&res, &lim, &out), 0);
	assert_string_equal(out.buf, "killed by signal 64");
	sbuf_reset(&out);
	res.status = (128 + 65) << 8;
	assert_int_equal(sandbox_observation(&res, &lim, &out), 0);
	assert_string_equal(out.buf, "exit status 193");
	sbuf_reset(&out);
	res.status = (128 + 1) << 8;
	assert_int_equal(sandbox_observation(&res, &lim, &out), 0);
	assert_string_equal(out.buf, "killed by signal 1 (SIGHUP)");
	sbuf_reset(&out);
	res.status = 0;
	res.over = SANDBOX_OVER_DEPTH;
	assert_int_equal(sandbox_observation(&res, &lim, &out), 0);
	assert_string_equal(out.buf, "(stopped: it nested folders more than 64"
			    " deep)");
	sbuf_reset(&out);
	/* what it printed is the observation of a run that went well, its
	 * stderr that of one that did not */
	res.over = SANDBOX_OVER_NONE;
	assert_int_equal(sbuf_addstr(&res.out, "out\n"), 0);
	assert_int_equal(sbuf_addstr(&res.err, "err\n"), 0);
	assert_int_equal(sandbox_observation(&res, &lim, &out), 0);
	assert_string_equal(out.buf, "out\n");
	sbuf_reset(&out);
	res.status = 1 << 8;
	assert_int_equal(sandbox_observation(&res, &lim, &out), 0);
	assert_string_equal(out.buf, "err\n");
	sandbox_result_release(&res);
	sbuf_release(&out);
}

/* ---- a real run (skipped where bwrap cannot make a sandbox) ------------- */

#define OUTPUT_KEEP ((size_t)256 << 10)

/* What is kept of a program's stdout that prints `n` bytes. */
static int run_printing(size_t n, struct sbuf *out)
{
	struct sandbox_limits lim = { .wall_s = 60 };
	struct sandbox_result res;
	struct ferr err = FERR_INIT;
	char dir[64], code[128];
	int ret;

	assert_int_equal(unit_tmpdir(dir, sizeof(dir), "run"), 0);
	/* as root, the sandbox's uid passes through to its folder */
	assert_int_equal(chmod(dir, 0711), 0);
	if (sandbox_check(NULL) < 0 || sandbox_trial(dir, &lim, &err) < 0) {
		print_message("no sandbox here: %s\n", err.message);
		unit_rmtree(dir);
		return -1;
	}
	snprintf(code, sizeof(code), "import sys\nsys.stdout.write('x' * %zu)\n",
		 n);
	unit_put(dir, "e.py", code);
	assert_int_equal(sandbox_prepare_dir(dir, &lim, NULL, NULL), 0);
	ret = sandbox_run_python(dir, "e.py", &lim, NULL, NULL, &res, &err);
	if (ret < 0)
		fail_msg("the run failed: %s", err.message);
	assert_int_equal(res.status, 0);
	assert_int_equal(sbuf_add(out, res.out.buf, res.out.len), 0);
	sandbox_result_release(&res);
	unit_rmtree(dir);
	return 0;
}

/* The first and the last 256 KiB: 512 KiB come whole. */
static void test_run_output_at_512_kib(void **state)
{
	struct sbuf out = SBUF_INIT;

	(void)state;
	if (run_printing(2 * OUTPUT_KEEP, &out) < 0)
		skip();
	assert_int_equal(out.len, 2 * OUTPUT_KEEP);
	assert_null(strstr(out.buf, "not kept"));
	sbuf_release(&out);
}

static void test_run_output_past_512_kib(void **state)
{
	struct sbuf out = SBUF_INIT;

	(void)state;
	if (run_printing(2 * OUTPUT_KEEP + 1, &out) < 0)
		skip();
	assert_int_equal(out.len, 2 * OUTPUT_KEEP +
			 strlen("\n[... 1 bytes not kept ...]\n"));
	assert_memory_equal(out.buf + OUTPUT_KEEP,
			    "\n[... 1 bytes not kept ...]\n", 28);
	sbuf_release(&out);
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
		cmocka_unit_test(test_scratch_max),
		cmocka_unit_test(test_scratch_entries_at_limit),
		cmocka_unit_test(test_scratch_entries_past_limit),
		cmocka_unit_test(test_scratch_bytes),
		cmocka_unit_test(test_scratch_depth_at_limit),
		cmocka_unit_test(test_scratch_depth_past_limit),
		cmocka_unit_test(test_scratch_shut_folder),
		cmocka_unit_test(test_prepare_depth),
		cmocka_unit_test(test_fold_lines),
		cmocka_unit_test(test_fold_at_16000_characters),
		cmocka_unit_test(test_fold_past_16000_characters),
		cmocka_unit_test(test_observation_signals),
		cmocka_unit_test(test_run_output_at_512_kib),
		cmocka_unit_test(test_run_output_past_512_kib),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
