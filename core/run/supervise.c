/* supervise: a job's every process ends with it; see supervise.h. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "run/supervise.h"

/* what one look at /proc or a cgroup can hold: a job with more
 * processes is killed over several rounds */
#define SCAN_MAX 32768
/* between two rounds of SIGKILL */
#define ROUND_NS 20000000L
/* how long the supervisor waits for its cgroup to let itself be removed */
#define RMDIR_TRIES 100

/* The supervisor's own memory (it is a fork of the caller's and
 * allocates nothing): one scan at a time. */
static pid_t scan_pid[SCAN_MAX], scan_ppid[SCAN_MAX], below[SCAN_MAX];
static bool taken[SCAN_MAX];
static char dents[16384], text[16384];

/* ---- async-signal-safe small helpers -------------------------------------- */

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* `v` in decimal at `out` (room for 20 digits): its length. */
static size_t put_uint(char *out, unsigned long v)
{
	char digits[24];
	size_t n = 0, len;

	do {
		digits[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	len = n;
	while (n)
		*out++ = digits[--n];
	return len;
}

/* The decimal number at *p (skipping nothing), *p moved past it; -1
 * when there is none. */
static long take_uint(const char **p)
{
	long v = -1;

	while (**p >= '0' && **p <= '9') {
		v = (v < 0 ? 0 : v * 10) + (**p - '0');
		(*p)++;
	}
	return v;
}

static void say(int fd, const char *what, int err)
{
	char line[256];
	size_t n = 0, len = strlen(what);

	if (len > 180)
		len = 180;
	memcpy(line, "flowfs: ", 8);
	n = 8;
	memcpy(line + n, what, len);
	n += len;
	memcpy(line + n, " (errno ", 8);
	n += 8;
	n += put_uint(line + n, (unsigned long)err);
	line[n++] = ')';
	line[n++] = '\n';
	if (write(fd, line, n) < 0)
		return;
}

/* ---- the processes below the supervisor ------------------------------------ */

/* The parent of process `pid` (its /proc/<pid>/stat), or -1. */
static pid_t parent_of(pid_t pid)
{
	char path[40], buf[512];
	const char *p, *close_paren = NULL;
	ssize_t n;
	int fd;

	memcpy(path, "/proc/", 6);
	memcpy(path + 6 + put_uint(path + 6, (unsigned long)pid), "/stat", 6);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	/* "pid (comm) S ppid ...": the command may hold ") " itself */
	for (p = buf; *p; p++)
		if (*p == ')')
			close_paren = p;
	if (!close_paren || close_paren[1] != ' ' || !close_paren[2] ||
	    close_paren[3] != ' ')
		return -1;
	p = close_paren + 4;
	return (pid_t)take_uint(&p);
}

/* Every process whose parents lead to `self` (the supervisor: each
 * orphan of the job is given to it), into below[]: how many. */
static size_t descendants(pid_t self)
{
	size_t n = 0, found = 0;
	bool grew = true;
	long got;
	int fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	while (n < SCAN_MAX &&
	       (got = syscall(SYS_getdents64, fd, dents, sizeof(dents))) > 0) {
		for (long at = 0; at < got && n < SCAN_MAX;) {
			/* struct linux_dirent64: ino, off, reclen, type, name */
			unsigned short reclen;
			const char *name = dents + at + 19;
			long pid;

			memcpy(&reclen, dents + at + 16, sizeof(reclen));
			at += reclen;
			pid = take_uint(&name);
			if (pid <= 0 || *name)
				continue;
			scan_pid[n] = (pid_t)pid;
			scan_ppid[n] = parent_of((pid_t)pid);
			taken[n] = false;
			n++;
		}
	}
	close(fd);
	/* a parent is listed before or after its child: until no more */
	while (grew) {
		grew = false;
		for (size_t i = 0; i < n; i++) {
			bool mine = scan_ppid[i] == self;

			for (size_t k = 0; !mine && !taken[i] && k < found; k++)
				mine = below[k] == scan_ppid[i];
			if (mine && !taken[i]) {
				taken[i] = true;
				below[found++] = scan_pid[i];
				grew = true;
			}
		}
	}
	return found;
}

/* `sig` to every process listed in `dir`/cgroup.procs. */
static void signal_cgroup(const char *dir, int sig)
{
	char path[PATH_MAX + 16];
	size_t len = strlen(dir);
	long carry = -1;
	ssize_t n;
	int fd;

	if (!len || len + 14 > sizeof(path))
		return;
	memcpy(path, dir, len);
	memcpy(path + len, "/cgroup.procs", 14);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	/* one pid a line; a line may be cut between two reads */
	while ((n = read(fd, text, sizeof(text))) > 0) {
		for (ssize_t i = 0; i < n; i++) {
			if (text[i] >= '0' && text[i] <= '9') {
				carry = (carry < 0 ? 0 : carry * 10) +
					(text[i] - '0');
			} else {
				if (carry > 0)
					kill((pid_t)carry, sig);
				carry = -1;
			}
		}
	}
	if (carry > 0)
		kill((pid_t)carry, sig);
	close(fd);
}

/* `sig` to every process of the job still there. */
static void signal_all(const struct supervise *sv, pid_t self, int sig)
{
	size_t n = descendants(self);

	for (size_t i = 0; i < n; i++)
		kill(below[i], sig);
	if (sv->cg && sv->cg->version)
		signal_cgroup(sv->cg->dir, sig);
}

/* ---- the job and its supervisor -------------------------------------------- */

static void __attribute__((noreturn)) run_job(const struct supervise *sv)
{
	sigset_t none;
	int ret;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* before the uid goes: root's processes enter a v1 cgroup */
	if (sv->cg && sv->cg->version && (ret = cgroup_enter(sv->cg)) < 0) {
		say(sv->fds[2], "cannot put the job in its cgroup", -ret);
		_exit(127);
	}
	if (sv->cred && (ret = spawn_become(sv->cred)) < 0) {
		say(sv->fds[2], "cannot run the job as its user", -ret);
		_exit(127);
	}
	if (fchdir(sv->dir) < 0) {
		say(sv->fds[2], "cannot go to the job's folder", errno);
		_exit(127);
	}
	/* the sources are all above 2 (the caller's 0, 1, 2 are open):
	 * none is overwritten before it is copied */
	for (int i = 0; i < 4; i++) {
		if (sv->fds[i] == i ? fcntl(i, F_SETFD, 0) < 0
				    : dup2(sv->fds[i], i) < 0) {
			say(sv->fds[2], "cannot hand the job its files", errno);
			_exit(127);
		}
	}
	close_range(4, ~0u, 0);
	execve(sv->argv[0], sv->argv, sv->envp);
	say(2, "cannot start the job's shell", errno);
	_exit(127);
}

/* The cgroup's folders, once it is empty. */
static void remove_cgroup(const struct cgroup *cg)
{
	const char *dirs[2] = { cg->dir, cg->pids };
	struct timespec wait = { 0, 10000000L };

	for (int i = 0; i < 2; i++) {
		if (!dirs[i][0])
			continue;
		for (int tries = 0; rmdir(dirs[i]) < 0 && errno == EBUSY &&
		     tries < RMDIR_TRIES; tries++)
			nanosleep(&wait, NULL);
	}
}

static void __attribute__((noreturn))
supervisor(const struct supervise *sv, int report)
{
	int keep[8] = { report, sv->dir, sv->fds[0], sv->fds[1], sv->fds[2],
			sv->fds[3] };
	size_t nkeep = 6;
	bool job_ended = false, stopping = false;
	int64_t deadline = 0;
	sigset_t wake;
	pid_t self, job;
	int status = 0;

	if (sv->cg)
		for (int i = 0; i < 2; i++)
			if (sv->cg->procs[i] >= 0)
				keep[nkeep++] = sv->cg->procs[i];
	/* nothing of the caller's (the database, /dev/fuse) stays open */
	spawn_reset_child(keep, nkeep);
	sigemptyset(&wake);
	sigaddset(&wake, SIGTERM);
	sigaddset(&wake, SIGINT);
	sigaddset(&wake, SIGHUP);
	sigaddset(&wake, SIGCHLD);
	sigprocmask(SIG_BLOCK, &wake, NULL);
	self = getpid();
	if (setsid() < 0 || prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
		_exit(127);
	/* the caller learns the pid once it is a process group to signal */
	if (write(report, &self, sizeof(self)) != (ssize_t)sizeof(self))
		_exit(127);
	close(report);
	job = fork();
	if (job == 0)
		run_job(sv);
	close(sv->dir);
	for (int i = 0; i < 4; i++)
		close(sv->fds[i]);
	if (sv->cg)
		for (int i = 0; i < 2; i++)
			if (sv->cg->procs[i] >= 0)
				close(sv->cg->procs[i]);
	if (job < 0)
		_exit(127);
	for (;;) {
		struct timespec left, *wait = NULL;
		siginfo_t info;
		pid_t p;
		int st, sig;

		while ((p = waitpid(-1, &st, WNOHANG)) > 0) {
			if (p == job) {
				job_ended = true;
				status = st;
			}
		}
		/* no child: nothing of the job is left anywhere below */
		if (p < 0 && errno == ECHILD)
			break;
		if (job_ended || (stopping && mono_ns() >= deadline)) {
			signal_all(sv, self, SIGKILL);
			left = (struct timespec){ 0, ROUND_NS };
			wait = &left;
		} else if (stopping) {
			int64_t ns = deadline - mono_ns();

			left = (struct timespec){ ns / 1000000000,
						  ns % 1000000000 };
			wait = &left;
		}
		sig = wait ? sigtimedwait(&wake, &info, wait)
			   : sigwaitinfo(&wake, &info);
		if (sig > 0 && sig != SIGCHLD && !stopping) {
			stopping = true;
			deadline = mono_ns() + sv->grace_ns;
			signal_all(sv, self, SIGTERM);
		}
	}
	if (sv->cg && sv->cg->version) {
		/* what a supervisor killed before it is not below this one */
		signal_cgroup(sv->cg->dir, SIGKILL);
		remove_cgroup(sv->cg);
	}
	_exit(WIFEXITED(status) ? WEXITSTATUS(status)
	      : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 127);
}

int supervise_start(const struct supervise *sv, pid_t *pid)
{
	int pfd[2], status, ret = 0;
	pid_t mid, said = 0;
	ssize_t n;

	if (pipe2(pfd, O_CLOEXEC) < 0)
		return -errno;
	mid = fork();
	if (mid == 0) {
		/* the middle process: the supervisor is no child of the
		 * caller's, nobody waits for it and it leaves no zombie */
		pid_t sup = fork();

		if (sup == 0)
			supervisor(sv, pfd[1]);
		_exit(sup < 0 ? 1 : 0);
	}
	close(pfd[1]);
	if (mid < 0) {
		ret = -errno;
		close(pfd[0]);
		return ret;
	}
	while (waitpid(mid, &status, 0) < 0 && errno == EINTR)
		;
	while ((n = read(pfd[0], &said, sizeof(said))) < 0 && errno == EINTR)
		;
	close(pfd[0]);
	if (n != (ssize_t)sizeof(said) || said <= 0)
		return -ECHILD;
	*pid = said;
	return 0;
}
