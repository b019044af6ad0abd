/*
 * Unit tests for core/lib/spawn: a program flowfs starts gets none of the
 * caller's descriptors, an empty signal mask and default signals; its
 * output is captured to a bound and cut off at a deadline; a detached
 * program is nobody's child and leads a session of its own; as root, a
 * program run as another user has that user's ids and groups alone,
 * no capability, and the environment it is given.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <setjmp.h>
#include <cmocka.h>

#include "lib/spawn.h"
#include "unit.h"

/* spawn_capture() of a shell line: its status; out/err the caller's. */
static int sh(const char *line, int64_t timeout_ms, size_t max,
	      struct sbuf *out, struct sbuf *err)
{
	char *argv[] = { "/bin/sh", "-c", (char *)line, NULL };

	return spawn_capture(argv, timeout_ms, max, out, err);
}

static void test_capture_out_err_status(void **state)
{
	struct sbuf out = SBUF_INIT, err = SBUF_INIT;

	(void)state;
	assert_int_equal(sh("echo out; echo err >&2; exit 3", 10000, 1024,
			    &out, &err), 3);
	assert_string_equal(out.buf, "out\n");
	assert_string_equal(err.buf, "err\n");
	sbuf_reset(&out);
	sbuf_reset(&err);
	/* ended by a signal: 128 + its number, as a shell says it */
	assert_int_equal(sh("kill -TERM $$", 10000, 1024, &out, &err),
			 128 + SIGTERM);
	sbuf_release(&out);
	sbuf_release(&err);
}

static void test_capture_is_bounded(void **state)
{
	struct sbuf out = SBUF_INIT, err = SBUF_INIT;

	(void)state;
	/* the rest is read and dropped: the program is not stopped by a
	 * full pipe, and ends well */
	assert_int_equal(sh("head -c 300000 /dev/zero; echo done >&2", 10000,
			    1000, &out, &err), 0);
	assert_int_equal(out.len, 1000);
	assert_string_equal(err.buf, "done\n");
	sbuf_release(&out);
	sbuf_release(&err);
}

static void test_capture_deadline(void **state)
{
	struct sbuf out = SBUF_INIT, err = SBUF_INIT;
	char *argv[] = { "sleep", "30", NULL };

	(void)state;
	assert_int_equal(spawn_capture(argv, 1000, 1024, &out, &err),
			 128 + SIGKILL);
	assert_non_null(strstr(err.buf, "sleep did not answer in 1 s"));
	sbuf_release(&out);
	sbuf_release(&err);
}

static void test_capture_not_found(void **state)
{
	struct sbuf out = SBUF_INIT, err = SBUF_INIT;
	char *argv[] = { "/nonexistent/flowfs-no-such-program", NULL };
	char *bare[] = { "flowfs-no-such-program-on-path", NULL };

	(void)state;
	assert_int_equal(spawn_capture(argv, 1000, 1024, &out, &err), 127);
	assert_non_null(strstr(err.buf, "cannot run /nonexistent/flowfs-no-"
			       "such-program: No such file or directory"));
	sbuf_reset(&err);
	/* looked up in $PATH */
	assert_int_equal(spawn_capture(bare, 1000, 1024, &out, &err), 127);
	assert_non_null(strstr(err.buf, "cannot run flowfs-no-such-program-"
			       "on-path"));
	sbuf_release(&out);
	sbuf_release(&err);
}

/* Descriptors and signals of the caller's that must not go along. */
static int leak_a_descriptor(void)
{
	int fd = open("/dev/null", O_RDONLY);	/* no O_CLOEXEC */

	assert_true(fd >= 0);
	return dup2(fd, 17) == 17 ? fd : -1;
}

static void test_nothing_of_the_caller_goes_along(void **state)
{
	struct sbuf out = SBUF_INIT, err = SBUF_INIT;
	char *ls[] = { "/bin/ls", "-1", "/proc/self/fd", NULL };
	char *grep[] = { "grep", "-E", "^(SigBlk|SigIgn)", "/proc/self/status",
			 NULL };
	sigset_t block, old;
	int fd = leak_a_descriptor();

	(void)state;
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	sigaddset(&block, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	signal(SIGUSR2, SIG_IGN);
	/* ls's own listing of the folder is its descriptor 3 */
	assert_int_equal(spawn_capture(ls, 10000, 4096, &out, &err), 0);
	assert_string_equal(out.buf, "0\n1\n2\n3\n");
	sbuf_reset(&out);
	/* read by the program itself (a shell between would fork it with
	 * its own mask for a moment) */
	assert_int_equal(spawn_capture(grep, 10000, 4096, &out, &err), 0);
	/* glibc's posix_spawn() ignores its own two signals (32, 33:
	 * thread cancellation and setxid, which no program may use) */
	assert_string_equal(out.buf, "SigBlk:\t0000000000000000\n"
			    "SigIgn:\t0000000180000000\n");
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	signal(SIGUSR2, SIG_DFL);
	close(fd);
	close(17);
	sbuf_release(&out);
	sbuf_release(&err);
}

/* The text of `path`, waited for (a detached program writes it on its
 * own time); fails the test after 10 s. */
static char *wait_for_file(const char *path, const char *ending)
{
	for (int i = 0; i < 1000; i++) {
		FILE *f = fopen(path, "r");
		char buf[4096];
		size_t n = 0;

		if (f) {
			n = fread(buf, 1, sizeof(buf) - 1, f);
			fclose(f);
			buf[n] = '\0';
			if (strstr(buf, ending))
				return strdup(buf);
		}
		usleep(10000);
	}
	fail_msg("%s never held %s", path, ending);
	return NULL;
}

static void test_detached(void **state)
{
	char dir[64], out[128], script[512], expect[256], *got;
	char *argv[] = { "/bin/sh", "-c", script, NULL };
	struct spawn sp = {
		.argv = argv, .dir = dir, .new_session = true,
		.io = { [1] = { .how = SPAWN_FILE, .path = out } },
	};
	pid_t pid = 0;

	(void)state;
	assert_int_equal(unit_tmpdir(dir, sizeof(dir), "spawn"), 0);
	snprintf(out, sizeof(out), "%s/out", dir);
	/* its session, its folder; then it waits to be looked at */
	snprintf(script, sizeof(script),
		 "echo sid $(cut -d' ' -f6 /proc/$$/stat); echo dir $(pwd);"
		 " echo end; sleep 1");
	assert_int_equal(spawn_detached(&sp, &pid), 0);
	assert_true(pid > 0);
	/* nobody's child: not this process's to wait for */
	assert_int_equal(waitpid(pid, NULL, WNOHANG), -1);
	assert_int_equal(errno, ECHILD);
	got = wait_for_file(out, "end\n");
	snprintf(expect, sizeof(expect), "sid %d\ndir %s\nend\n", (int)pid, dir);
	assert_string_equal(got, expect);
	free(got);
	unit_rmtree(dir);
}

static void test_detached_not_found(void **state)
{
	char *argv[] = { "/nonexistent/flowfs-no-such-program", NULL };
	struct spawn sp = { .argv = argv };
	pid_t pid = 0;

	(void)state;
	assert_int_equal(spawn_detached(&sp, &pid), -ENOENT);
	assert_int_equal(pid, 0);
}

static void test_reset_child(void **state)
{
	int p[2], fd = leak_a_descriptor(), status;
	char buf[256] = "";
	ssize_t n;
	pid_t pid;

	(void)state;
	assert_int_equal(pipe(p), 0);
	pid = fork();
	if (pid == 0) {
		int keep[] = { 17, p[1] };
		char *ls[] = { "/bin/ls", "-1", "/proc/self/fd", NULL };

		signal(SIGTERM, SIG_IGN);
		dup2(p[1], 1);
		spawn_reset_child(keep, 2);
		execv(ls[0], ls);
		_exit(127);
	}
	close(p[1]);
	n = read(p[0], buf, sizeof(buf) - 1);
	assert_true(n > 0);
	buf[n] = '\0';
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* 17 and the pipe kept, the rest of the caller's gone; ls's own
	 * listing takes the lowest free number, 3 (the leaked one is gone) */
	{
		char names[6][16], expect[128] = "";
		int kept = p[1];

		snprintf(names[0], 16, "0");
		snprintf(names[1], 16, "1");
		snprintf(names[2], 16, "2");
		snprintf(names[3], 16, "3");
		snprintf(names[4], 16, "17");
		snprintf(names[5], 16, "%d", kept);
		/* ls sorts by name */
		for (int i = 1; i < 6; i++)
			for (int j = i; j > 0 && strcmp(names[j - 1],
							names[j]) > 0; j--) {
				char t[16];

				memcpy(t, names[j], 16);
				memcpy(names[j], names[j - 1], 16);
				memcpy(names[j - 1], t, 16);
			}
		for (int i = 0; i < 6; i++)
			strcat(strcat(expect, names[i]), "\n");
		assert_string_equal(buf, expect);
	}
	close(p[0]);
	close(fd);
	close(17);
}

/* Feed `text` through a pipe into `o`, in pieces of `piece` bytes. */
static void feed(struct spawn_output *o, const char *text, size_t piece)
{
	size_t len = strlen(text);

	for (size_t at = 0; at < len; at += piece) {
		int p[2];
		size_t n = len - at < piece ? len - at : piece;

		assert_int_equal(pipe(p), 0);
		assert_int_equal(write(p[1], text + at, n), (ssize_t)n);
		close(p[1]);
		assert_true(spawn_drain_ends(p[0], o));
		assert_false(spawn_drain_ends(p[0], o));
		close(p[0]);
	}
}

static char *ends_of(const char *text, size_t keep, size_t piece)
{
	struct spawn_output o = { .keep = keep };
	struct sbuf out = SBUF_INIT;

	feed(&o, text, piece);
	assert_int_equal(spawn_output_text(&o, &out), 0);
	spawn_output_release(&o);
	return sbuf_detach(&out, NULL);
}

/* A flood keeps its first and last `keep` bytes, the middle counted. */
static void test_output_ends(void **state)
{
	static const size_t pieces[] = { 1, 3, 7, 100 };
	char *got;

	(void)state;
	for (size_t i = 0; i < sizeof(pieces) / sizeof(*pieces); i++) {
		got = ends_of("short", 8, pieces[i]);
		assert_string_equal(got, "short");
		free(got);
		got = ends_of("0123456789abcdef", 8, pieces[i]);
		assert_string_equal(got, "0123456789abcdef");
		free(got);
		got = ends_of("0123456789abcdefXYZ", 8, pieces[i]);
		assert_string_equal(got, "01234567\n[... 3 bytes not kept ...]\n"
				    "bcdefXYZ");
		free(got);
		got = ends_of("head\nmiddle middle middle\ntail end\n", 5,
			      pieces[i]);
		assert_string_equal(got, "head\n[... 25 bytes not kept ...]\n"
				    " end\n");
		free(got);
	}
}

/* As root: a `cred` is who the program is, and nothing of root's stays
 * (issue 25: a root daemon's sbatch for a user's job). */
static void test_capture_as_another_user(void **state)
{
	struct sbuf out = SBUF_INIT, err = SBUF_INIT;
	static const gid_t groups[] = { 4242, 4244 };
	struct spawn_cred cred = { 4242, 4242, groups, 2 };
	char *argv[] = { "/bin/sh", "-c", "id -u; id -G; echo $WHO;"
			 " grep -E '^Cap(Eff|Prm):' /proc/self/status", NULL };
	char *env[] = { "WHO=given", "PATH=/usr/bin:/bin", NULL };
	struct spawn sp = { .argv = argv, .cred = &cred };
	pid_t pid;

	(void)state;
	if (geteuid() != 0) {
		/* a user cannot become another */
		assert_int_equal(spawn_capture_as(argv, env, &cred, 10000, 4096,
						  &out, &err), 127);
		sbuf_release(&out);
		sbuf_release(&err);
		skip();
	}
	assert_int_equal(spawn_capture_as(argv, env, &cred, 10000, 4096, &out,
					  &err), 0);
	assert_string_equal(out.buf, "4242\n4242 4244\ngiven\n"
			    "CapPrm:\t0000000000000000\n"
			    "CapEff:\t0000000000000000\n");
	assert_string_equal(err.buf, "");
	/* a detached program cannot search $PATH after its fork */
	assert_int_equal(spawn_detached(&sp, &pid), -EINVAL);
	sbuf_release(&out);
	sbuf_release(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_capture_out_err_status),
		cmocka_unit_test(test_capture_is_bounded),
		cmocka_unit_test(test_capture_deadline),
		cmocka_unit_test(test_capture_not_found),
		cmocka_unit_test(test_nothing_of_the_caller_goes_along),
		cmocka_unit_test(test_detached),
		cmocka_unit_test(test_detached_not_found),
		cmocka_unit_test(test_reset_child),
		cmocka_unit_test(test_output_ends),
		cmocka_unit_test(test_capture_as_another_user),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
