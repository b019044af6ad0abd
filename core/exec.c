/*
 * exec: experiments and observations; see exec.h.
 */
#include "exec.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "utf8.h"

#define CAPTURE_MAX (64u << 20)
#define FOLD_AT 3
#define CUT_OVER 16000
#define CUT_KEEP 8000

void exec_result_release(struct exec_result *r)
{
	sbuf_release(&r->out);
	sbuf_release(&r->err);
}

static long or_default(long v, long def)
{
	return v > 0 ? v : def;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void limit(int what, rlim_t value)
{
	struct rlimit rl = { value, value };

	setrlimit(what, &rl);
}

/* In the child: never returns.  `report` is close-on-exec: it closes
 * without a byte when python3 starts, or carries "E<errno>" when the
 * child cannot get that far. */
static void child(const char *dir, const char *file,
		  const struct exec_limits *lim, int out, int err, int report)
{
	int null;

	setpgid(0, 0);
	/* no network where the kernel allows it; else the one it has */
	(void)unshare(CLONE_NEWNET);
	limit(RLIMIT_CPU, (rlim_t)or_default(lim->cpu_s, 60));
	limit(RLIMIT_AS, (rlim_t)or_default(lim->memory_mib, 2048) << 20);
	limit(RLIMIT_FSIZE, (rlim_t)or_default(lim->file_mib, 256) << 20);
	limit(RLIMIT_CORE, 0);
	null = open("/dev/null", O_RDONLY);
	if (null < 0 || dup2(null, 0) < 0 || dup2(out, 1) < 0 ||
	    dup2(err, 2) < 0 || chdir(dir) < 0) {
		dprintf(report, "E%d", errno);
		_exit(127);
	}
	/* nothing of the daemon's (the database, /dev/fuse) goes along;
	 * `report` closes itself at exec */
	if (report > 3)
		close_range(3, (unsigned)report - 1, 0);
	close_range((unsigned)report + 1, ~0u, 0);
	execlp("python3", "python3", "-I", file, (char *)NULL);
	dprintf(report, "E%d", errno);
	_exit(127);
}

/* Read what is there on `fd` into `into` (kept to CAPTURE_MAX); false at
 * end of file. */
static bool drain(int fd, struct sbuf *into)
{
	char buf[65536];
	ssize_t n = read(fd, buf, sizeof(buf));

	if (n < 0)
		return errno == EINTR || errno == EAGAIN;
	if (n == 0)
		return false;
	if (into->len + (size_t)n <= CAPTURE_MAX)
		sbuf_add(into, buf, (size_t)n);
	return true;
}

int exec_python(const char *dir, const char *file,
		const struct exec_limits *limits, bool (*cancelled)(void *ctx),
		void *ctx, struct exec_result *res, struct ferr *err)
{
	int outp[2] = { -1, -1 }, errp[2] = { -1, -1 }, rep[2] = { -1, -1 };
	int64_t deadline = now_ms() + 1000 * or_default(limits->wall_s, 120);
	bool open_out = true, open_err = true, cancel = false;
	char report[32] = "";
	ssize_t got;
	pid_t pid;
	int ret = 0;

	memset(res, 0, sizeof(*res));
	sbuf_init(&res->out);
	sbuf_init(&res->err);
	if (pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0 ||
	    pipe2(rep, O_CLOEXEC) < 0) {
		ret = ferr_set(err, -errno, "cannot run the experiment: %s",
			       strerror(errno));
		goto out;
	}
	pid = fork();
	if (pid < 0) {
		ret = ferr_set(err, -errno, "cannot run the experiment: %s",
			       strerror(errno));
		goto out;
	}
	if (pid == 0)
		child(dir, file, limits, outp[1], errp[1], rep[1]);
	close(outp[1]);
	close(errp[1]);
	close(rep[1]);
	outp[1] = errp[1] = rep[1] = -1;
	/* until the exec closes it, or the child reports why it could not */
	for (size_t n = 0; n < sizeof(report) - 1;) {
		got = read(rep[0], report + n, sizeof(report) - 1 - n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		n += (size_t)got;
	}
	if (report[0] == 'E') {
		waitpid(pid, NULL, 0);
		ret = ferr_set(err, -EIO, "cannot run the experiment: %s",
			       strerror(atoi(report + 1)));
		goto out;
	}
	while (open_out || open_err) {
		/* a closed pipe is left out (poll skips negative fds) */
		struct pollfd p[2] = { { open_out ? outp[0] : -1, POLLIN, 0 },
				       { open_err ? errp[0] : -1, POLLIN, 0 } };

		if (poll(p, 2, 100) < 0 && errno != EINTR)
			break;
		if (open_out && p[0].revents)
			open_out = drain(outp[0], &res->out);
		if (open_err && p[1].revents)
			open_err = drain(errp[0], &res->err);
		if (cancelled && cancelled(ctx)) {
			cancel = true;
			break;
		}
		if (now_ms() > deadline) {
			res->timed_out = true;
			break;
		}
	}
	/* stragglers the program left behind go with it */
	kill(-pid, SIGKILL);
	waitpid(pid, &res->status, 0);
	if (cancel)
		ret = ferr_set(err, -ECANCELED, "cancelled");
out:
	for (int i = 0; i < 2; i++) {
		if (outp[i] >= 0)
			close(outp[i]);
		if (errp[i] >= 0)
			close(errp[i]);
		if (rep[i] >= 0)
			close(rep[i]);
	}
	if (ret < 0)
		exec_result_release(res);
	return ret;
}

/* `text` as valid UTF-8 (bad bytes become U+FFFD), with no NUL. */
static int clean_utf8(const char *text, size_t len, struct sbuf *out)
{
	const unsigned char *s = (const unsigned char *)text;
	int ret = 0;

	for (size_t i = 0; !ret && i < len;) {
		uint32_t cp;
		size_t n = utf8_decode(s + i, len - i, &cp);

		if (n && s[i])
			ret = sbuf_add(out, s + i, n);
		else
			ret = sbuf_addstr(out, "\xef\xbf\xbd");
		i += n ? n : 1;
	}
	return ret;
}

int exec_fold(const char *text, size_t len, struct sbuf *out)
{
	struct sbuf clean = SBUF_INIT, folded = SBUF_INIT;
	size_t total, head, tail;
	const char *p, *end;
	int ret;

	ret = clean_utf8(text, len, &clean);
	p = clean.buf;
	end = clean.buf + clean.len;
	while (!ret && p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t line = nl ? (size_t)(nl - p) : (size_t)(end - p);
		const char *next = nl ? nl + 1 : end, *q = next;
		bool newline = nl != NULL;
		size_t repeats = 1;

		/* the same line again (the last one may lack its newline) */
		while (newline && q < end) {
			const char *nl2 = memchr(q, '\n', (size_t)(end - q));
			size_t len2 = nl2 ? (size_t)(nl2 - q) : (size_t)(end - q);

			if (len2 != line || memcmp(q, p, line))
				break;
			repeats++;
			newline = nl2 != NULL;
			q = nl2 ? nl2 + 1 : end;
		}
		if (repeats >= FOLD_AT) {
			ret = sbuf_addf(&folded, "%.*s (repeated %zu times)%s",
					(int)line, p, repeats,
					newline ? "\n" : "");
			p = q;
		} else {
			ret = sbuf_add(&folded, p, (size_t)(next - p));
			p = next;
		}
	}
	total = ret ? 0 : utf8_count(folded.buf, folded.len);
	if (!ret && total > CUT_OVER) {
		head = utf8_offset(folded.buf, folded.len, CUT_KEEP);
		tail = utf8_offset(folded.buf, folded.len, total - CUT_KEEP);
		ret = sbuf_add(out, folded.buf, head);
		if (!ret)
			ret = sbuf_addf(out, "\n... (%zu characters cut) ...\n",
					total - 2 * CUT_KEEP);
		if (!ret)
			ret = sbuf_add(out, folded.buf + tail, folded.len - tail);
	} else if (!ret) {
		ret = sbuf_add(out, folded.buf, folded.len);
	}
	sbuf_release(&clean);
	sbuf_release(&folded);
	return ret;
}

int exec_observation(const struct exec_result *res,
		     const struct exec_limits *limits, struct sbuf *out)
{
	bool ok = !res->timed_out && WIFEXITED(res->status) &&
		  WEXITSTATUS(res->status) == 0;
	const struct sbuf *text = ok || !res->err.len ? &res->out : &res->err;
	int ret = exec_fold(text->buf, text->len, out);

	if (ret || ok)
		return ret;
	if (res->timed_out)
		return sbuf_addf(out, "%s(stopped after %ld s)", out->len &&
				 out->buf[out->len - 1] != '\n' ? "\n" : "",
				 or_default(limits->wall_s, 120));
	if (!res->err.len && WIFEXITED(res->status))
		return sbuf_addf(out, "%sexit status %d", out->len &&
				 out->buf[out->len - 1] != '\n' ? "\n" : "",
				 WEXITSTATUS(res->status));
	if (WIFSIGNALED(res->status))
		return sbuf_addf(out, "%skilled by signal %d", out->len &&
				 out->buf[out->len - 1] != '\n' ? "\n" : "",
				 WTERMSIG(res->status));
	return 0;
}
