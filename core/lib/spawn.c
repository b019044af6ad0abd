/* spawn: programs started with nothing of the daemon's; see spawn.h. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/fclock.h"
#include "lib/spawn.h"

extern char **environ;

#define KEEP_MAX 8

/* The attributes and file actions of `sp`, made in the caller (they
 * allocate: never in a child of a threaded process). */
static int prepare(const struct spawn *sp, posix_spawnattr_t *attr,
		   posix_spawn_file_actions_t *fa)
{
	sigset_t none, all;
	short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
	int rc;

	sigemptyset(&none);
	sigfillset(&all);
	rc = posix_spawnattr_init(attr);
	if (rc)
		return -rc;
	rc = posix_spawn_file_actions_init(fa);
	if (rc) {
		posix_spawnattr_destroy(attr);
		return -rc;
	}
	if (sp->new_session)
		flags |= POSIX_SPAWN_SETSID;
	rc = posix_spawnattr_setflags(attr, flags);
	if (!rc)
		rc = posix_spawnattr_setsigmask(attr, &none);
	if (!rc)
		rc = posix_spawnattr_setsigdefault(attr, &all);
	for (int i = 0; !rc && i < 3; i++) {
		const struct spawn_io *io = &sp->io[i];

		switch (io->how) {
		case SPAWN_FD:
			rc = posix_spawn_file_actions_adddup2(fa, io->fd, i);
			break;
		case SPAWN_FILE:
			rc = posix_spawn_file_actions_addopen(fa, i, io->path,
				O_WRONLY | O_CREAT | O_TRUNC, 0644);
			break;
		default:
			rc = posix_spawn_file_actions_addopen(fa, i, "/dev/null",
				i ? O_WRONLY : O_RDONLY, 0);
		}
	}
	/* relative SPAWN_FILE paths are the daemon's, opened above first */
	if (!rc && sp->dir)
		rc = posix_spawn_file_actions_addchdir_np(fa, sp->dir);
	if (!rc)
		rc = posix_spawn_file_actions_addclosefrom_np(fa, 3);
	if (rc) {
		posix_spawn_file_actions_destroy(fa);
		posix_spawnattr_destroy(attr);
	}
	return -rc;
}

static int start(const struct spawn *sp, const posix_spawnattr_t *attr,
		 const posix_spawn_file_actions_t *fa, pid_t *pid)
{
	char *const *env = sp->envp ? sp->envp : environ;

	return -posix_spawnp(pid, sp->argv[0], fa, attr, sp->argv, env);
}

int spawn_become(const struct spawn_cred *c)
{
	uid_t r, e, s;

	if (setgroups(c->ngroups, c->groups) < 0 ||
	    setresgid(c->gid, c->gid, c->gid) < 0 ||
	    setresuid(c->uid, c->uid, c->uid) < 0)
		return -errno;
	/* a uid that could still go back would keep root's power */
	if (getresuid(&r, &e, &s) < 0 || r != c->uid || e != c->uid ||
	    s != c->uid)
		return -EPERM;
	return 0;
}

/* argv[0] as posix_spawnp() finds it (the caller's $PATH), into `out`:
 * done before a fork, since the search allocates. */
static int find_program(const char *name, char *out, size_t size)
{
	const char *path = getenv("PATH");
	int ret = -ENOENT;

	if (strchr(name, '/'))
		return snprintf(out, size, "%s", name) < (int)size ? 0
							       : -ENAMETOOLONG;
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (const char *p = path, *end; *p; p = *end ? end + 1 : end) {
		int len;

		end = strchrnul(p, ':');
		len = snprintf(out, size, "%.*s%s%s", (int)(end - p), p,
			       end > p ? "/" : "", name);
		if (len < 0 || (size_t)len >= size)
			continue;
		if (access(out, X_OK) == 0)
			return 0;
		if (errno == EACCES)
			ret = -EACCES;
	}
	return ret;
}

/* In the child of start_as(): what posix_spawn() would do, then become
 * the user and exec; the errno on `report` when it cannot.  Only
 * async-signal-safe calls. */
static void __attribute__((noreturn))
child_as(const struct spawn *sp, const char *prog, char *const *env,
	 int report)
{
	int keep[4] = { report }, n = 1, fd, ret = 0;

	for (int i = 0; i < 3; i++)
		if (sp->io[i].how == SPAWN_FD && n < 4)
			keep[n++] = sp->io[i].fd;
	spawn_reset_child(keep, (size_t)n);
	if (sp->new_session && setsid() < 0)
		goto fail;
	/* the user's now: a file it writes is opened as that user */
	ret = spawn_become(sp->cred);
	if (ret < 0)
		goto fail_ret;
	for (int i = 0; i < 3; i++) {
		const struct spawn_io *io = &sp->io[i];

		if (io->how == SPAWN_FD) {
			fd = io->fd;
		} else if (io->how == SPAWN_FILE) {
			fd = open(io->path, O_WRONLY | O_CREAT | O_TRUNC |
				  O_CLOEXEC, 0644);
		} else {
			fd = open("/dev/null", (i ? O_WRONLY : O_RDONLY) |
				  O_CLOEXEC);
		}
		if (fd < 0 || dup2(fd, i) < 0)
			goto fail;
	}
	if (sp->dir && chdir(sp->dir) < 0)
		goto fail;
	execve(prog, sp->argv, env);
fail:
	ret = -errno;
fail_ret:
	if (write(report, &ret, sizeof(ret)) < 0)
		_exit(127);
	_exit(127);
}

/* spawn_start() of a `cred`: fork() and exec, as posix_spawn() cannot
 * change who runs the program. */
static int start_as(const struct spawn *sp, pid_t *pid)
{
	char prog[PATH_MAX];
	char *const *env = sp->envp ? sp->envp : environ;
	int report[2], said = 0, status, ret;
	pid_t child;
	ssize_t n;

	ret = find_program(sp->argv[0], prog, sizeof(prog));
	if (ret < 0)
		return ret;
	if (pipe2(report, O_CLOEXEC) < 0)
		return -errno;
	child = fork();
	if (child == 0)
		child_as(sp, prog, env, report[1]);
	close(report[1]);
	if (child < 0) {
		ret = -errno;
		close(report[0]);
		return ret;
	}
	/* nothing comes when the exec went well: the pipe closed with it */
	while ((n = read(report[0], &said, sizeof(said))) < 0 && errno == EINTR)
		;
	close(report[0]);
	if (n == (ssize_t)sizeof(said) && said < 0) {
		while (waitpid(child, &status, 0) < 0 && errno == EINTR)
			;
		return said;
	}
	*pid = child;
	return 0;
}

int spawn_start(const struct spawn *sp, pid_t *pid)
{
	posix_spawnattr_t attr;
	posix_spawn_file_actions_t fa;
	int ret;

	if (sp->cred)
		return start_as(sp, pid);
	ret = prepare(sp, &attr, &fa);

	if (ret < 0)
		return ret;
	ret = start(sp, &attr, &fa, pid);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	return ret;
}

int spawn_detached(const struct spawn *sp, pid_t *pid)
{
	posix_spawnattr_t attr;
	posix_spawn_file_actions_t fa;
	int pfd[2], status, ret;
	/* what the middle process says: the pid, or a negative errno */
	struct { pid_t pid; int err; } said = { 0, -ECHILD };
	pid_t mid;

	/* the middle process could not search $PATH (it allocates) */
	if (sp->cred)
		return -EINVAL;
	ret = prepare(sp, &attr, &fa);
	if (ret < 0)
		return ret;
	if (pipe2(pfd, O_CLOEXEC) < 0) {
		ret = -errno;
		goto out;
	}
	mid = fork();
	if (mid == 0) {
		/* posix_spawn() maps its stack and allocates nothing: safe
		 * in the child of a threaded process, its actions made
		 * before the fork */
		said.err = start(sp, &attr, &fa, &said.pid);
		if (write(pfd[1], &said, sizeof(said)) != sizeof(said))
			_exit(1);
		_exit(0);
	}
	close(pfd[1]);
	if (mid < 0) {
		ret = -errno;
	} else {
		while (waitpid(mid, &status, 0) < 0 && errno == EINTR)
			;
		if (read(pfd[0], &said, sizeof(said)) != sizeof(said))
			said.err = -ECHILD;
		ret = said.err;
		if (!ret)
			*pid = said.pid;
	}
	close(pfd[0]);
out:
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	return ret;
}

bool spawn_drain(int fd, struct sbuf *into, size_t max)
{
	char buf[65536];
	ssize_t n = read(fd, buf, sizeof(buf));

	if (n < 0)
		return errno == EINTR || errno == EAGAIN;
	if (n == 0)
		return false;
	if (into->len < max)
		sbuf_add(into, buf, (size_t)n < max - into->len
				? (size_t)n : max - into->len);
	return true;
}

/* Keep `n` bytes past the head in the ring of the last `keep`. */
static int ring_add(struct spawn_output *o, const char *buf, size_t n)
{
	if (!o->ring) {
		o->ring = malloc(o->keep);
		if (!o->ring)
			return -ENOMEM;
	}
	if (n >= o->keep) {
		memcpy(o->ring, buf + n - o->keep, o->keep);
		o->ring_len = o->keep;
		o->ring_at = 0;
		return 0;
	}
	for (size_t done = 0; done < n;) {
		size_t room = o->keep - o->ring_at;
		size_t take = n - done < room ? n - done : room;

		memcpy(o->ring + o->ring_at, buf + done, take);
		o->ring_at = (o->ring_at + take) % o->keep;
		done += take;
	}
	o->ring_len = o->ring_len + n > o->keep ? o->keep : o->ring_len + n;
	return 0;
}

bool spawn_drain_ends(int fd, struct spawn_output *o)
{
	char buf[65536];
	ssize_t n = read(fd, buf, sizeof(buf));
	size_t to_head = 0;

	if (n < 0)
		return errno == EINTR || errno == EAGAIN;
	if (n == 0)
		return false;
	o->total += (uint64_t)n;
	if (o->head.len < o->keep) {
		to_head = o->keep - o->head.len < (size_t)n
				  ? o->keep - o->head.len : (size_t)n;
		sbuf_add(&o->head, buf, to_head);
	}
	if ((size_t)n > to_head && o->keep)
		ring_add(o, buf + to_head, (size_t)n - to_head);
	return true;
}

int spawn_output_text(const struct spawn_output *o, struct sbuf *out)
{
	uint64_t dropped = o->total - o->head.len - o->ring_len;
	/* the oldest byte of a full ring is where the next would go */
	size_t start = o->ring_len == o->keep ? o->ring_at : 0;
	int ret = sbuf_add(out, o->head.buf, o->head.len);

	if (!ret && dropped)
		ret = sbuf_addf(out, "%s[... %llu bytes not kept ...]\n",
				out->len && out->buf[out->len - 1] != '\n'
					? "\n" : "",
				(unsigned long long)dropped);
	if (!ret && o->ring_len)
		ret = sbuf_add(out, o->ring + start, o->ring_len - start);
	if (!ret && start)
		ret = sbuf_add(out, o->ring, start);
	return ret;
}

void spawn_output_release(struct spawn_output *o)
{
	sbuf_release(&o->head);
	free(o->ring);
	o->ring = NULL;
	o->ring_len = o->ring_at = 0;
	o->total = 0;
}

int spawn_capture(char *const argv[], int64_t timeout_ms, size_t max,
		  struct sbuf *out, struct sbuf *err)
{
	return spawn_capture_as(argv, NULL, NULL, timeout_ms, max, out, err);
}

int spawn_capture_as(char *const argv[], char *const envp[],
		     const struct spawn_cred *cred, int64_t timeout_ms,
		     size_t max, struct sbuf *out, struct sbuf *err)
{
	int po[2] = { -1, -1 }, pe[2] = { -1, -1 }, status = 0, ret;
	int64_t deadline = fclock_mono_ms() + timeout_ms;
	bool open_o = true, open_e = true, killed = false;
	struct spawn sp = { .argv = argv, .envp = envp, .cred = cred };
	pid_t pid = 0;

	if (pipe2(po, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0) {
		ret = -errno;
		goto out;
	}
	sp.io[1] = (struct spawn_io){ .how = SPAWN_FD, .fd = po[1] };
	sp.io[2] = (struct spawn_io){ .how = SPAWN_FD, .fd = pe[1] };
	ret = spawn_start(&sp, &pid);
	close(po[1]);
	close(pe[1]);
	po[1] = pe[1] = -1;
	if (ret < 0) {
		sbuf_addf(err, "cannot run %s: %s\n", argv[0], strerror(-ret));
		ret = 127;
		pid = 0;
		goto out;
	}
	while (open_o || open_e) {
		struct pollfd p[2] = { { open_o ? po[0] : -1, POLLIN, 0 },
				       { open_e ? pe[0] : -1, POLLIN, 0 } };
		int64_t left = deadline - fclock_mono_ms();

		if (left <= 0) {
			kill(pid, SIGKILL);
			killed = true;
			break;
		}
		if (poll(p, 2, left > 1000 ? 1000 : (int)left) < 0 &&
		    errno != EINTR)
			break;
		if (open_o && p[0].revents)
			open_o = spawn_drain(po[0], out, max);
		if (open_e && p[1].revents)
			open_e = spawn_drain(pe[0], err, max);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (killed)
		sbuf_addf(err, "%s did not answer in %lld s", argv[0],
			  (long long)(timeout_ms / 1000));
	ret = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
out:
	for (int i = 0; i < 2; i++) {
		if (po[i] >= 0)
			close(po[i]);
		if (pe[i] >= 0)
			close(pe[i]);
	}
	return ret;
}

void spawn_reset_child(const int *keep, size_t n)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	int sorted[KEEP_MAX];
	sigset_t none;
	int from = 3;

	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			sigaction(sig, &dfl, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* sorted by hand: no qsort() in a child */
	if (n > KEEP_MAX)
		n = KEEP_MAX;
	for (size_t i = 0; i < n; i++) {
		size_t j = i;

		for (; j > 0 && sorted[j - 1] > keep[i]; j--)
			sorted[j] = sorted[j - 1];
		sorted[j] = keep[i];
	}
	for (size_t i = 0; i < n; i++) {
		if (sorted[i] > from)
			close_range((unsigned)from, (unsigned)sorted[i] - 1, 0);
		if (sorted[i] + 1 > from)
			from = sorted[i] + 1;
	}
	close_range((unsigned)from, ~0u, 0);
}
