/*
 * sandbox: one experiment in bubblewrap, and what it observed; see sandbox.h.
 */

/*
 * What the run adds to `dir` is measured while it runs: every
 * SCRATCH_POLL_MS the daemon walks `dir` (no link followed, at most
 * SANDBOX_SCRATCH_DEPTH deep; a folder it may not list opened to it for
 * the walk) and sums its entries and their allocated blocks.
 */
#include "sandbox/sandbox.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lib/fclock.h"
#include "lib/spawn.h"
#include "lib/utf8.h"

/* What is kept of an experiment's stdout and of its stderr: the first
 * and the last this many bytes (the observation shows at most 16,000
 * characters of them; a flood costs the daemon no more than this). */
#define OUTPUT_KEEP ((size_t)256 << 10)
/* how long bwrap may take to say its init's pid, and how long the
 * sandbox's processes may take to be gone once it ended */
#define SANDBOX_SAY_MS 10000
/* the sizes of the sandbox's /dev/shm and /tmp (64 and 256 MiB) */
#define SANDBOX_SHM_BYTES "67108864"
#define SANDBOX_TMP_BYTES "268435456"
#define SANDBOX_END_MS 30000
/* how often the scratch folder is measured while the program runs */
#define SCRATCH_POLL_MS 250
#define FOLD_AT 3
#define CUT_OVER 16000
#define CUT_KEEP 8000
/* the start-up trial sandbox runs an empty program: it gets this long */
#define TRIAL_WALL_S 30
/* exit statuses 128 + 1..64 are signals (shells read them so) */
#define SANDBOX_SIGNAL_MAX 64

void sandbox_result_release(struct sandbox_result *r)
{
	sbuf_release(&r->out);
	sbuf_release(&r->err);
}

static long or_default(long v, long def)
{
	return v > 0 ? v : def;
}

static uid_t uid_inside(const struct sandbox_limits *lim)
{
	return lim->uid ? lim->uid : SANDBOX_ID;
}

static gid_t gid_inside(const struct sandbox_limits *lim)
{
	return lim->gid ? lim->gid : SANDBOX_ID;
}

static void limit(int what, rlim_t value)
{
	struct rlimit rl = { value, value };

	setrlimit(what, &rl);
}

/* ---- the sandbox's command line --------------------------------------------- */

int sandbox_check(struct ferr *err)
{
	const char *path = getenv("PATH"), *p, *end;

	for (p = path; p && *p; p = *end ? end + 1 : end) {
		char file[PATH_MAX];
		struct stat st;
		int n;

		end = strchrnul(p, ':');
		n = snprintf(file, sizeof(file), "%.*s/bwrap", (int)(end - p), p);
		if (n > 0 && (size_t)n < sizeof(file) && end > p &&
		    stat(file, &st) == 0 && S_ISREG(st.st_mode) &&
		    access(file, X_OK) == 0)
			return 0;
	}
	return ferr_set(err, -ENOENT, "--allow-exec needs bubblewrap, and no"
			" bwrap is on PATH: install it (Debian package"
			" bubblewrap)");
}

void sandbox_args_release(struct sandbox_args *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->argv[i]);
	free(a->argv);
	memset(a, 0, sizeof(*a));
}

/* Append the strings up to NULL. */
static int add_args(struct sandbox_args *a, ...)
{
	const char *s;
	va_list ap;
	int ret = 0;

	va_start(ap, a);
	while (!ret && (s = va_arg(ap, const char *))) {
		if (a->n + 2 > a->alloc) {
			size_t alloc = a->alloc ? 2 * a->alloc : 64;
			char **argv = realloc(a->argv, alloc * sizeof(*argv));

			if (!argv) {
				ret = -ENOMEM;
				break;
			}
			a->argv = argv;
			a->alloc = alloc;
		}
		a->argv[a->n] = strdup(s);
		if (!a->argv[a->n]) {
			ret = -ENOMEM;
			break;
		}
		a->argv[++a->n] = NULL;
	}
	va_end(ap);
	return ret;
}

/* What python3 needs of the system besides /usr: the merged-/usr links
 * (or the folders, on a system without them) and a few files of /etc
 * (the loader's cache, the time zone, Debian's alternatives: numpy's
 * BLAS is found through them).  Nothing else of /etc: no passwd, no
 * shadow, no ssl keys. */
static int add_system(struct sandbox_args *a)
{
	static const char *const tops[] = { "/bin", "/sbin", "/lib", "/lib32",
					    "/lib64", "/libx32" };
	static const char *const etc[] = { "/etc/ld.so.cache", "/etc/localtime",
					   "/etc/alternatives" };
	int ret = add_args(a, "--ro-bind", "/usr", "/usr", NULL);

	for (size_t i = 0; !ret && i < sizeof(tops) / sizeof(*tops); i++) {
		char target[PATH_MAX];
		struct stat st;
		ssize_t n;

		if (lstat(tops[i], &st) < 0)
			continue;
		if (S_ISLNK(st.st_mode)) {
			n = readlink(tops[i], target, sizeof(target) - 1);
			if (n <= 0)
				continue;
			target[n] = 0;
			ret = add_args(a, "--symlink", target, tops[i], NULL);
		} else if (S_ISDIR(st.st_mode)) {
			ret = add_args(a, "--ro-bind", tops[i], tops[i], NULL);
		}
	}
	for (size_t i = 0; !ret && i < sizeof(etc) / sizeof(*etc); i++)
		ret = add_args(a, "--ro-bind-try", etc[i], etc[i], NULL);
	return ret;
}

/* As sandbox_bwrap_args(), for any program, with bwrap's
 * --json-status-fd and --seccomp when those descriptors are >= 0. */
static int bwrap_argv(const char *dir, const struct sandbox_program *prog,
			const struct sandbox_limits *lim, int status_fd,
			int seccomp_fd, struct sandbox_args *a)
{
	char id[16], nproc[48], fd[16], filter[16];
	int ret;

	memset(a, 0, sizeof(*a));
	snprintf(id, sizeof(id), "%d", SANDBOX_ID);
	snprintf(nproc, sizeof(nproc), "--nproc=%ld:%ld",
		 or_default(lim->procs, 256), or_default(lim->procs, 256));
	snprintf(fd, sizeof(fd), "%d", status_fd);
	snprintf(filter, sizeof(filter), "%d", seccomp_fd);
	ret = add_args(a, "bwrap", "--unshare-all", "--unshare-user",
		       "--disable-userns",
		       "--die-with-parent", "--new-session", "--cap-drop", "ALL",
		       "--uid", id, "--gid", id, "--hostname", "flowfs-experiment",
		       NULL);
	if (!ret)
		ret = add_system(a);
	if (!ret)
		/* memory the sandbox writes as files counts against no
		 * rlimit: /tmp and /dev/shm are sized, /dev is read-only */
		ret = add_args(a, "--proc", "/proc", "--dev", "/dev", "--size",
			       SANDBOX_SHM_BYTES, "--tmpfs", "/dev/shm",
			       "--remount-ro", "/dev", "--size", SANDBOX_TMP_BYTES,
			       "--tmpfs", "/tmp", "--bind", dir, dir, "--chdir", dir,
			       "--clearenv", "--setenv", "PATH",
			       "/usr/local/bin:/usr/bin:/bin", "--setenv", "HOME",
			       "/tmp", "--setenv", "LANG", "C.UTF-8", NULL);
	/* a program outside /usr (--datcom's), after /tmp's tmpfs, which
	 * would hide it; under /usr it is there already */
	if (!ret && prog->bind && strncmp(prog->bind, "/usr/", 5))
		ret = add_args(a, "--ro-bind", prog->bind, prog->bind, NULL);
	if (!ret && status_fd >= 0)
		ret = add_args(a, "--json-status-fd", fd, NULL);
	if (!ret && seccomp_fd >= 0)
		ret = add_args(a, "--seccomp", filter, NULL);
	/* RLIMIT_NPROC is set inside, once the user namespace is made: set
	 * before, the kernel would also hold the namespace to it counted
	 * over every process of the daemon's uid */
	if (!ret)
		ret = add_args(a, "--", "prlimit", nproc, "--", NULL);
	for (size_t i = 0; !ret && prog->argv[i]; i++)
		ret = add_args(a, prog->argv[i], NULL);
	if (ret)
		sandbox_args_release(a);
	return ret;
}

int sandbox_bwrap_args(const char *dir, const char *file,
		      const struct sandbox_limits *limits, struct sandbox_args *a)
{
	const char *argv[] = { "python3", "-I", file, NULL };
	struct sandbox_program prog = { .argv = argv };

	return bwrap_argv(dir, &prog, limits, -1, -1, a);
}

/* ---- the seccomp filter ------------------------------------------------------- */

/* What an experiment has no use for and the kernel's bugs have been
 * found in: keys, namespaces and mounts, tracing, BPF, io_uring, module
 * and clock and swap calls (the list Flatpak's sandbox refuses, and
 * then some).  Refused with EPERM; a name this architecture lacks is
 * skipped. */
static const char *const refused_calls[] = {
	"syslog", "uselib", "acct", "quotactl", "add_key", "keyctl",
	"request_key", "move_pages", "mbind", "get_mempolicy",
	"set_mempolicy", "migrate_pages", "unshare", "setns", "mount",
	"umount2", "pivot_root", "chroot", "perf_event_open", "ptrace",
	"process_vm_readv", "process_vm_writev", "kcmp", "bpf",
	"userfaultfd", "kexec_load", "kexec_file_load", "open_by_handle_at",
	"name_to_handle_at", "init_module", "finit_module", "delete_module",
	"io_uring_setup", "io_uring_enter", "io_uring_register", "fsopen",
	"fsconfig", "fsmount", "fspick", "open_tree", "move_mount",
	"mount_setattr", "swapon", "swapoff", "reboot", "settimeofday",
	"clock_settime", "clock_adjtime", "adjtimex", "lookup_dcookie",
	"vhangup", "nfsservctl", "modify_ldt", "pidfd_getfd",
	"fanotify_init", "landlock_create_ruleset",
};

int sandbox_seccomp_filter(int *fd)
{
	static const unsigned long new_ns[] = { CLONE_NEWNS, CLONE_NEWUTS,
		CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET,
		CLONE_NEWCGROUP };
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	int ret = ctx ? 0 : -ENOMEM;

	*fd = -1;
	for (size_t i = 0; !ret && i < sizeof(refused_calls) /
	     sizeof(*refused_calls); i++) {
		int nr = seccomp_syscall_resolve_name(refused_calls[i]);

		if (nr != __NR_SCMP_ERROR)
			ret = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
	}
	/* clone3's flags are in memory a filter cannot read: ENOSYS makes
	 * libc fall back to clone(), whose flags it can */
	if (!ret)
		ret = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS),
				       SCMP_SYS(clone3), 0);
	for (size_t i = 0; !ret && i < sizeof(new_ns) / sizeof(*new_ns); i++)
		ret = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone),
				       1, SCMP_A0(SCMP_CMP_MASKED_EQ, new_ns[i],
						  new_ns[i]));
	/* typing into a terminal (there is none: --new-session; twice
	 * kept out) */
	if (!ret)
		ret = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl),
				       1, SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu,
						  TIOCSTI));
	if (!ret) {
		*fd = memfd_create("flowfs-seccomp", MFD_CLOEXEC);
		ret = *fd < 0 ? -errno : 0;
	}
	if (!ret)
		ret = seccomp_export_bpf(ctx, *fd);
	if (!ret && lseek(*fd, 0, SEEK_SET) < 0)
		ret = -errno;
	if (ret && *fd >= 0) {
		close(*fd);
		*fd = -1;
	}
	seccomp_release(ctx);
	return ret;
}

/* ---- the scratch folder ----------------------------------------------------- */

/* sandbox_prepare_dir() below `path` (root: the realpath of the folder). */
static int prepare(const char *root, struct sbuf *path, size_t top,
		   const struct sandbox_limits *lim,
		   void (*dropped)(void *ctx, const char *path), void *ctx,
		   int depth)
{
	size_t len = path->len;
	struct dirent *e;
	DIR *d;
	int ret = 0;

	if (depth > 64)
		return -ELOOP;
	d = opendir(path->buf);
	if (!d)
		return -errno;
	while (!ret && (e = readdir(d))) {
		struct stat st;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		sbuf_setlen(path, len);
		ret = sbuf_addf(path, "/%s", e->d_name);
		if (ret || lstat(path->buf, &st) < 0)
			continue;
		if (S_ISLNK(st.st_mode)) {
			char *real = realpath(path->buf, NULL);
			size_t n = strlen(root);
			bool inside = real && !strncmp(real, root, n) &&
				      (!real[n] || real[n] == '/');

			free(real);
			if (!inside) {
				if (unlink(path->buf) < 0) {
					ret = -errno;
					break;
				}
				if (dropped)
					dropped(ctx, path->buf + top + 1);
				continue;
			}
		}
		if (geteuid() == 0 &&
		    lchown(path->buf, uid_inside(lim), gid_inside(lim)) < 0) {
			ret = -errno;
			break;
		}
		if (S_ISDIR(st.st_mode))
			ret = prepare(root, path, top, lim, dropped, ctx,
				      depth + 1);
	}
	closedir(d);
	sbuf_setlen(path, len);
	return ret;
}

int sandbox_prepare_dir(const char *dir, const struct sandbox_limits *limits,
		     void (*dropped)(void *ctx, const char *path), void *ctx)
{
	struct sbuf path = SBUF_INIT;
	char *root = realpath(dir, NULL);
	int ret = root ? 0 : -errno;

	if (!ret)
		ret = sbuf_addstr(&path, root);
	if (!ret && geteuid() == 0 &&
	    chown(root, uid_inside(limits), gid_inside(limits)) < 0)
		ret = -errno;
	if (!ret)
		ret = prepare(root, &path, strlen(root), limits, dropped, ctx, 0);
	sbuf_release(&path);
	free(root);
	return ret;
}

/* Folder `name` of `parent` (never a link put in its place) opened to
 * be emptied: made its owner's to list and write whatever mode the
 * experiment left on it (chmod through its O_PATH descriptor, which
 * names that folder and no other).  A descriptor, or -1. */
static int open_to_empty(int parent, const char *name)
{
	char proc[64];
	int p = openat(parent, name, O_PATH | O_NOFOLLOW | O_DIRECTORY |
		       O_CLOEXEC), fd;

	if (p < 0)
		return -1;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", p);
	chmod(proc, 0700);
	fd = open(proc, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	close(p);
	return fd;
}

/* Remove what folder `fd` holds (it is closed), folders depth first, by
 * descriptor: no path is resolved again, so nothing the experiment
 * swapped in meanwhile is followed.  Nesting past `depth` is left. */
static void empty_folder(int fd, int depth)
{
	DIR *d = fdopendir(fd);
	struct dirent *e;

	if (!d) {
		close(fd);
		return;
	}
	while ((e = readdir(d))) {
		int sub;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (unlinkat(dirfd(d), e->d_name, 0) == 0 || errno != EISDIR ||
		    depth <= 0)
			continue;
		sub = open_to_empty(dirfd(d), e->d_name);
		if (sub < 0)
			continue;
		empty_folder(sub, depth - 1);
		unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR);
	}
	closedir(d);
}

/* Not through a shell: the daemon has threads, and system() would block
 * signals for the whole process. */
void sandbox_remove_tree(const char *dir)
{
	int fd = open_to_empty(AT_FDCWD, dir);

	if (fd < 0)
		return;
	empty_folder(fd, 4 * SANDBOX_SCRATCH_DEPTH);
	rmdir(dir);
}

/* The folder of every daemon of this uid, `tmp`/flowfs-<uid>, opened
 * (never through a link) and checked to be ours alone: /tmp is shared,
 * and another user may have made that name first. */
static int scratch_base(const char *tmp, struct sbuf *path, struct ferr *err)
{
	/* root's sandbox uid must pass through it to its folder */
	mode_t mode = geteuid() == 0 ? 0711 : 0700;
	struct stat st;
	int fd;

	if (sbuf_addf(path, "%s/flowfs-%u", tmp, (unsigned)geteuid()) < 0)
		return -ENOMEM;
	if (mkdir(path->buf, mode) < 0 && errno != EEXIST)
		return ferr_set(err, -errno, "cannot make %s: %s", path->buf,
				strerror(errno));
	fd = open(path->buf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return ferr_set(err, errno == ELOOP || errno == ENOTDIR ?
				-ENOTDIR : -errno, "%s: %s: remove it, or set"
				" TMPDIR to a folder of your own", path->buf,
				errno == ELOOP || errno == ENOTDIR ?
				"not a folder (a symbolic link?)" :
				strerror(errno));
	if (fstat(fd, &st) < 0 || st.st_uid != geteuid()) {
		close(fd);
		return ferr_set(err, -EPERM, "%s belongs to uid %u, not to"
				" flowfs's (%u): remove it, or set TMPDIR to"
				" a folder of your own", path->buf,
				(unsigned)st.st_uid, (unsigned)geteuid());
	}
	if ((st.st_mode & 07777) != mode && fchmod(fd, mode) < 0) {
		int ret = -errno;

		close(fd);
		return ferr_set(err, ret, "cannot make %s private: %s",
				path->buf, strerror(-ret));
	}
	return fd;
}

/* Remove the daemon folders below `base` (fd `bfd`) whose lock no daemon
 * holds; the number removed. */
static size_t sweep(int bfd, const char *base)
{
	struct sbuf path = SBUF_INIT;
	int dfd = dup(bfd);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	struct dirent *e;
	size_t swept = 0;

	if (!d) {
		if (dfd >= 0)
			close(dfd);
		return 0;
	}
	while ((e = readdir(d))) {
		int fd;

		if (strncmp(e->d_name, "daemon-", 7))
			continue;
		fd = openat(bfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
			    O_CLOEXEC);
		if (fd < 0)
			continue;
		/* held by its daemon for its life: free, the daemon is gone */
		if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
			sbuf_reset(&path);
			if (!sbuf_addf(&path, "%s/%s", base, e->d_name)) {
				sandbox_remove_tree(path.buf);
				swept++;
			}
		}
		close(fd);
	}
	closedir(d);
	sbuf_release(&path);
	return swept;
}

int sandbox_scratch_open(const char *tmp, struct sandbox_scratch *s, size_t *swept,
		      struct ferr *err)
{
	struct sbuf base = SBUF_INIT;
	int bfd, ret = 0;

	s->fd = -1;
	s->path = NULL;
	*swept = 0;
	bfd = scratch_base(tmp, &base, err);
	if (bfd < 0) {
		ret = bfd;
		goto out;
	}
	/* one daemon at a time sweeps or makes its folder: a folder is
	 * never seen between its making and its lock */
	if (flock(bfd, LOCK_EX) < 0) {
		ret = ferr_set(err, -errno, "cannot lock %s: %s", base.buf,
			       strerror(errno));
		goto out;
	}
	*swept = sweep(bfd, base.buf);
	if (asprintf(&s->path, "%s/daemon-XXXXXX", base.buf) < 0) {
		s->path = NULL;
		ret = -ENOMEM;
		goto out;
	}
	if (!mkdtemp(s->path)) {
		ret = ferr_set(err, -errno, "cannot make a folder in %s: %s",
			       base.buf, strerror(errno));
		goto out;
	}
	s->fd = open(s->path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (s->fd < 0 || flock(s->fd, LOCK_EX | LOCK_NB) < 0 ||
	    (geteuid() == 0 && fchmod(s->fd, 0711) < 0)) {
		ret = ferr_set(err, -errno, "cannot lock %s: %s", s->path,
			       strerror(errno));
		rmdir(s->path);
	}
out:
	if (bfd >= 0)
		close(bfd);	/* and its lock with it */
	sbuf_release(&base);
	if (ret < 0)
		sandbox_scratch_close(s);
	return ret;
}

void sandbox_scratch_close(struct sandbox_scratch *s)
{
	/* only when empty: each run removes its own folder, except one
	 * whose processes did not end (still changing: not walked now); the
	 * next daemon's sweep removes that */
	if (s->path && s->fd >= 0)
		rmdir(s->path);
	if (s->fd >= 0)
		close(s->fd);
	free(s->path);
	s->fd = -1;
	s->path = NULL;
}

int sandbox_open_made(int dirfd, const char *name, struct stat *st)
{
	/* O_NONBLOCK: a FIFO named like a result must not hold the run */
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
			O_NOCTTY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (fstat(fd, st) < 0) {
		int ret = -errno;

		close(fd);
		return ret;
	}
	if (!S_ISREG(st->st_mode) || st->st_nlink != 1) {
		close(fd);
		return S_ISREG(st->st_mode) ? -EMLINK : -EINVAL;
	}
	return fd;
}

/* ---- measuring it while it runs --------------------------------------------- */

/*
 * Folder `name` of `parent`, which the daemon may not list (an
 * experiment's chmod 000 or 100, its uid being the daemon's): opened
 * through an O_PATH descriptor of it (never a link put in its place),
 * whose mode is opened to the owner for the walk.  A descriptor to read,
 * *path its O_PATH one and *mode the mode to put back (shut_close()), or
 * -1.
 */
static int shut_open(int parent, const char *name, int *path, mode_t *mode)
{
	char proc[64];
	struct stat st;
	int p = openat(parent, name, O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
	int fd = -1;

	if (p < 0)
		return -1;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", p);
	if (fstat(p, &st) < 0 || st.st_uid != geteuid() ||
	    chmod(proc, (st.st_mode & 07777) | 0500) < 0)
		goto out;
	fd = open(proc, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		chmod(proc, st.st_mode & 07777);
		goto out;
	}
	*path = p;
	*mode = st.st_mode & 07777;
	return fd;
out:
	close(p);
	return -1;
}

static void shut_close(int path, mode_t mode)
{
	char proc[64];

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", path);
	chmod(proc, mode);
	close(path);
}

/*
 * Add what folder `fd` holds (it is closed) to *use, stopping at the
 * first limit passed: that SANDBOX_OVER_*, or SANDBOX_OVER_NONE.  A folder the
 * daemon may not list is opened to it while it is walked: unmeasured,
 * it would hide what it holds.
 */
static enum sandbox_over scratch_walk(int fd, int depth, const struct sandbox_use *max,
				   struct sandbox_use *use)
{
	enum sandbox_over over = SANDBOX_OVER_NONE;
	DIR *d = fdopendir(fd);
	struct dirent *e;

	if (!d) {
		close(fd);
		return over;
	}
	while (!over && (e = readdir(d))) {
		int sub, shut = -1;
		mode_t mode = 0;
		struct stat st;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		use->bytes += (int64_t)st.st_blocks * 512;
		if (++use->entries > max->entries)
			over = SANDBOX_OVER_FILES;
		else if (use->bytes > max->bytes)
			over = SANDBOX_OVER_DISK;
		if (over || !S_ISDIR(st.st_mode))
			continue;
		if (depth >= SANDBOX_SCRATCH_DEPTH) {
			over = SANDBOX_OVER_DEPTH;
			continue;
		}
		sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY |
			     O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0 && errno == EACCES)
			sub = shut_open(dirfd(d), e->d_name, &shut, &mode);
		if (sub >= 0)
			over = scratch_walk(sub, depth + 1, max, use);
		if (shut >= 0)
			shut_close(shut, mode);
	}
	closedir(d);
	return over;
}

enum sandbox_over sandbox_scratch_over(const char *dir,
				       const struct sandbox_use *max,
				       struct sandbox_use *use)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	memset(use, 0, sizeof(*use));
	return fd < 0 ? SANDBOX_OVER_NONE : scratch_walk(fd, 0, max, use);
}

void sandbox_scratch_max(const char *dir, const struct sandbox_limits *limits,
			 struct sandbox_use *max)
{
	static const struct sandbox_use none = { INT64_MAX, LONG_MAX };
	struct sandbox_use use;

	/* what the rounds before left is theirs: the limits are on what
	 * this program adds */
	sandbox_scratch_over(dir, &none, &use);
	max->bytes = use.bytes + ((int64_t)or_default(limits->disk_mib, 1024) << 20);
	max->entries = use.entries + or_default(limits->files, 10000);
}

/* What the program is past, if anything: its folder's limits, its
 * cgroup's memory. */
static enum sandbox_over measure(const char *dir, const struct sandbox_use *max,
			      const struct cgroup *cg)
{
	struct sandbox_use use;

	if (cgroup_oom(cg))
		return SANDBOX_OVER_MEMORY;
	return sandbox_scratch_over(dir, max, &use);
}

/* ---- running it --------------------------------------------------------------- */

/* The environment bwrap runs in: PATH only to find what it runs. */
static char *const bwrap_environment[] = {
	"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", NULL
};

/* In the child (only async-signal-safe calls: the daemon has threads):
 * never returns.  `report` is close-on-exec: it closes without a byte
 * when bwrap starts, or carries "E<errno>" when the child cannot get
 * that far.  `status` is bwrap's --json-status-fd, `filter` its
 * --seccomp. */
static void child(char *const argv[], const struct sandbox_limits *lim,
		  const struct cgroup *cg, int out, int err, int report,
		  int status, int filter)
{
	int keep[3] = { report, status, filter };
	int null;

	setpgid(0, 0);
	/* before the uid is dropped: a v1 cgroup takes root's processes */
	if (cg->version && cgroup_enter(cg) < 0)
		goto fail;
	limit(RLIMIT_CPU, (rlim_t)or_default(lim->cpu_s, 60));
	limit(RLIMIT_AS, (rlim_t)or_default(lim->memory_mib, 2048) << 20);
	limit(RLIMIT_FSIZE, (rlim_t)or_default(lim->file_mib, 256) << 20);
	limit(RLIMIT_CORE, 0);
	null = open("/dev/null", O_RDONLY);
	if (null < 0 || dup2(null, 0) < 0 || dup2(out, 1) < 0 ||
	    dup2(err, 2) < 0 || fcntl(status, F_SETFD, 0) < 0 ||
	    fcntl(filter, F_SETFD, 0) < 0)
		goto fail;
	/* root's sandbox is no one else's on the host either: with uid 0
	 * outside, root-owned files would be the sandbox's own */
	if (geteuid() == 0 &&
	    (setgroups(0, NULL) < 0 ||
	     setresgid(gid_inside(lim), gid_inside(lim), gid_inside(lim)) < 0 ||
	     setresuid(uid_inside(lim), uid_inside(lim), uid_inside(lim)) < 0))
		goto fail;
	/* nothing of the daemon's (the database, /dev/fuse) goes along,
	 * and the FUSE worker's blocked and ignored signals are not the
	 * experiment's (`timeout` must be able to stop what it runs);
	 * `report` closes itself at exec */
	spawn_reset_child(keep, 3);
	/* bwrap's own environment is what /proc/1/environ shows inside
	 * (its init is bwrap): none of the daemon's variables go in, the
	 * program's are set by --clearenv and --setenv (bwrap_argv()) */
	execvpe(argv[0], argv, bwrap_environment);
fail:
	dprintf(report, "E%d", errno);
	_exit(127);
}

/* The first line of `text` (at most 200 bytes), for a message. */
static int first_line(const struct sbuf *text)
{
	const char *nl = text->len ? memchr(text->buf, '\n', text->len) : NULL;
	size_t n = nl ? (size_t)(nl - text->buf) : text->len;

	return (int)(n > 200 ? 200 : n);
}

/*
 * bwrap's first status object, {"child-pid": N}: the sandbox's init as
 * the daemon sees it, read into status[*n..] (the rest of bwrap's
 * status is appended there later).  A pidfd of it, or -1 when bwrap
 * ends or says nothing for SANDBOX_SAY_MS (it could not make the
 * sandbox).  Opened while bwrap still waits for that init, so the pid
 * cannot have been reused.
 */
static int bwrap_wait_init(int statfd, char *status, size_t size, size_t *n)
{
	int64_t until = fclock_mono_ms() + SANDBOX_SAY_MS;
	const char *at;
	long pid;

	while (!(at = strstr(status, "\"child-pid\"")) || !strchr(at, '}')) {
		struct pollfd p = { statfd, POLLIN, 0 };
		int64_t left = until - fclock_mono_ms();
		ssize_t got;

		if (left <= 0 || *n + 1 >= size ||
		    poll(&p, 1, (int)left) <= 0)
			return -1;
		got = read(statfd, status + *n, size - 1 - *n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return -1;
		*n += (size_t)got;
		status[*n] = 0;
	}
	at = strchr(at, ':');
	pid = at ? strtol(at + 1, NULL, 10) : 0;
	return pid > 0 ? (int)syscall(SYS_pidfd_open, (pid_t)pid, 0) : -1;
}

/*
 * The end of the sandbox's PID namespace: its init is killed (when the
 * program ended, it is on its way out already) and its end waited for;
 * the kernel ends an init only once every process of its namespace is
 * gone, and bwrap itself may be gone before that.  False when they are
 * not gone after SANDBOX_END_MS (a process stuck in the kernel).
 */
static bool bwrap_end(int init)
{
	struct pollfd p = { init, POLLIN, 0 };
	int64_t until = fclock_mono_ms() + SANDBOX_END_MS;

	if (init < 0)
		return true;
	syscall(SYS_pidfd_send_signal, init, SIGKILL, NULL, 0);
	for (;;) {
		int64_t left = until - fclock_mono_ms();
		int got;

		if (left <= 0)
			return false;
		got = poll(&p, 1, (int)left);
		if (got > 0)
			return true;
		if (got < 0 && errno != EINTR)
			return false;
	}
}

int sandbox_run_python(const char *dir, const char *file,
		const struct sandbox_limits *limits, bool (*cancelled)(void *ctx),
		void *ctx, struct sandbox_result *res, struct ferr *err)
{
	const char *argv[] = { "python3", "-I", file, NULL };
	struct sandbox_program prog = { .argv = argv };

	return sandbox_run(dir, &prog, limits, cancelled, ctx, res, err);
}

int sandbox_run(const char *dir, const struct sandbox_program *prog,
		const struct sandbox_limits *limits, bool (*cancelled)(void *ctx),
		void *ctx, struct sandbox_result *res, struct ferr *err)
{
	int outp[2] = { -1, -1 }, errp[2] = { -1, -1 }, rep[2] = { -1, -1 };
	int statp[2] = { -1, -1 }, filter = -1;
	int64_t deadline = fclock_mono_ms() + 1000 * or_default(limits->wall_s, 120);
	bool open_out = true, open_err = true, cancel = false, reaped = false;
	bool ended;
	struct sandbox_use max;
	struct cgroup cg = { .procs = { -1, -1 } };
	const char *name = strrchr(dir, '/');
	int64_t measured;
	struct sandbox_args args = { 0 };
	struct spawn_output out_ends = { .keep = OUTPUT_KEEP };
	struct spawn_output err_ends = { .keep = OUTPUT_KEEP };
	char report[32] = "", status[1024] = "";
	size_t said = 0;
	ssize_t got;
	pid_t pid;
	int init = -1, ret = 0;

	memset(res, 0, sizeof(*res));
	sbuf_init(&res->out);
	sbuf_init(&res->err);
	if (pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0 ||
	    pipe2(rep, O_CLOEXEC) < 0 || pipe2(statp, O_CLOEXEC) < 0) {
		ret = ferr_set(err, -errno, "cannot run the experiment: %s",
			       strerror(errno));
		goto out;
	}
	/* made before fork(): the child of a threaded process may not
	 * allocate */
	ret = sandbox_seccomp_filter(&filter);
	if (ret < 0) {
		ret = ferr_set(err, ret, "cannot make the experiment's seccomp"
			       " filter: %s", strerror(-ret));
		goto out;
	}
	ret = bwrap_argv(dir, prog, limits, statp[1], filter, &args);
	if (ret < 0)
		goto out;
	sandbox_scratch_max(dir, limits, &max);
	if (limits->cgroups && limits->cgroups->version) {
		char cgname[NAME_MAX + 1];

		/* the folder's name is unique within this daemon only, and
		 * daemons of one cgroup share where these are made */
		snprintf(cgname, sizeof(cgname), "%ld-%s", (long)getpid(),
			 name ? name + 1 : dir);
		ret = cgroup_make(limits->cgroups, cgname,
				  (int64_t)or_default(limits->memory_total_mib,
						      4096) << 20,
				  or_default(limits->procs, 256), &cg, err);
		if (ret < 0)
			goto out;
	}
	measured = fclock_mono_ms();
	pid = fork();
	if (pid < 0) {
		ret = ferr_set(err, -errno, "cannot run the experiment: %s",
			       strerror(errno));
		goto out;
	}
	if (pid == 0)
		child(args.argv, limits, &cg, outp[1], errp[1], rep[1], statp[1],
		      filter);
	close(outp[1]);
	close(errp[1]);
	close(rep[1]);
	close(statp[1]);
	outp[1] = errp[1] = rep[1] = statp[1] = -1;
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
		ret = ferr_set(err, -EIO, "cannot start the experiment's sandbox"
			       " (bwrap): %s", strerror(atoi(report + 1)));
		goto out;
	}
	init = bwrap_wait_init(statp[0], status, sizeof(status), &said);
	while (open_out || open_err) {
		/* a closed pipe is left out (poll skips negative fds) */
		struct pollfd p[2] = { { open_out ? outp[0] : -1, POLLIN, 0 },
				       { open_err ? errp[0] : -1, POLLIN, 0 } };

		if (poll(p, 2, 100) < 0 && errno != EINTR)
			break;
		if (open_out && p[0].revents)
			open_out = spawn_drain_ends(outp[0], &out_ends);
		if (open_err && p[1].revents)
			open_err = spawn_drain_ends(errp[0], &err_ends);
		if (cancelled && cancelled(ctx)) {
			cancel = true;
			break;
		}
		if (fclock_mono_ms() > deadline) {
			res->timed_out = true;
			break;
		}
		if (fclock_mono_ms() - measured >= SCRATCH_POLL_MS) {
			res->over = measure(dir, &max, &cg);
			measured = fclock_mono_ms();
			if (res->over)
				break;
		}
	}
	if (spawn_output_text(&out_ends, &res->out) < 0 ||
	    spawn_output_text(&err_ends, &res->err) < 0)
		ret = -ENOMEM;
	/* The program closed its output: bwrap follows it out with its
	 * exit status, its PID namespace emptied (its init's end kills what
	 * is left).  Else, or when it does not, bwrap is killed, and with
	 * it that namespace: nothing the program left behind, in any
	 * session or process group, outlives the run. */
	while (!cancel && !res->timed_out && !res->over) {
		pid_t done = waitpid(pid, &res->status, WNOHANG);

		if (done == pid)
			reaped = true;
		if (done != 0)
			break;
		if (cancelled && cancelled(ctx))
			cancel = true;
		else if (fclock_mono_ms() > deadline)
			res->timed_out = true;
		else if (fclock_mono_ms() - measured >= SCRATCH_POLL_MS) {
			res->over = measure(dir, &max, &cg);
			measured = fclock_mono_ms();
		} else {
			poll(NULL, 0, 10);
		}
	}
	if (!reaped) {
		kill(-pid, SIGKILL);
		kill(pid, SIGKILL);
		waitpid(pid, &res->status, 0);
	}
	/* bwrap writes { "exit-code": N } once the program it ran ends;
	 * without it, what is on stderr is bwrap's own complaint (the
	 * sandbox could not be made) */
	fcntl(statp[0], F_SETFL, O_NONBLOCK);
	for (size_t n = said; n < sizeof(status) - 1; n += (size_t)got) {
		got = read(statp[0], status + n, sizeof(status) - 1 - n);
		status[got > 0 ? n + (size_t)got : n] = 0;
		if (got <= 0)
			break;
	}
	/* nothing of the experiment may run on while its files are read
	 * and its folder removed */
	ended = bwrap_end(init);
	/* killed before the next look, or the program went on without
	 * the process the kernel killed */
	if (ended && !cancel && !res->over && cgroup_oom(&cg))
		res->over = SANDBOX_OVER_MEMORY;
	if (!ended)
		ret = ferr_set(err, -EBUSY, "the experiment's processes did not"
			       " end within %d s of its end", SANDBOX_END_MS / 1000);
	else if (cancel)
		ret = ferr_set(err, -ECANCELED, "cancelled");
	else if (!res->timed_out && !res->over &&
		 !strstr(status, "\"exit-code\""))
		ret = ferr_set(err, -EIO, "cannot start the experiment's sandbox"
			       " (bwrap): %.*s", first_line(&res->err),
			       res->err.len ? res->err.buf : "");
out:
	for (int i = 0; i < 2; i++) {
		if (outp[i] >= 0)
			close(outp[i]);
		if (errp[i] >= 0)
			close(errp[i]);
		if (rep[i] >= 0)
			close(rep[i]);
		if (statp[i] >= 0)
			close(statp[i]);
	}
	if (filter >= 0)
		close(filter);
	if (init >= 0)
		close(init);
	if (cg.version)
		cgroup_remove(&cg);
	sandbox_args_release(&args);
	spawn_output_release(&out_ends);
	spawn_output_release(&err_ends);
	if (ret < 0)
		sandbox_result_release(res);
	return ret;
}

int sandbox_trial(const char *parent, const struct sandbox_limits *limits,
		       struct ferr *err)
{
	struct sandbox_limits lim = *limits;
	struct sandbox_result res;
	struct ferr why = FERR_INIT;
	char *dir = NULL, *path = NULL;
	int fd, ret;

	if (asprintf(&dir, "%s/flowfs-trial-XXXXXX", parent) < 0)
		return -ENOMEM;
	if (!mkdtemp(dir)) {
		ret = ferr_set(err, -errno, "--allow-exec: cannot make a folder"
			       " for the trial sandbox in %s: %s", parent,
			       strerror(errno));
		free(dir);
		return ret;
	}
	ret = asprintf(&path, "%s/trial.py", dir) < 0 ? -ENOMEM : 0;
	if (!ret) {
		/* an empty program: python3's own start is what is tried */
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
			  O_CLOEXEC, 0644);
		ret = fd < 0 ? -errno : 0;
		if (fd >= 0)
			close(fd);
	}
	if (!ret)
		ret = sandbox_prepare_dir(dir, limits, NULL, NULL);
	if (ret < 0) {
		ret = ferr_set(err, ret, "--allow-exec: cannot make the trial"
			       " sandbox's folder %s: %s", dir, strerror(-ret));
		goto out;
	}
	lim.wall_s = TRIAL_WALL_S;
	ret = sandbox_run_python(dir, "trial.py", &lim, NULL, NULL, &res, &why);
	if (ret < 0) {
		ret = ferr_set(err, ret, "--allow-exec: the trial sandbox"
			       " failed: %s", why.message);
		goto out;
	}
	if (res.timed_out || !WIFEXITED(res.status) || WEXITSTATUS(res.status)) {
		struct sbuf how = SBUF_INIT;

		/* "exit status N", "killed by signal N", "(stopped after N s)" */
		sbuf_reset(&res.out);
		ret = sandbox_observation(&res, &lim, &how);
		ret = ferr_set(err, -EIO, "--allow-exec: python3 -I did not run"
			       " in the trial sandbox: %.*s", first_line(&how),
			       ret ? "" : how.buf);
		sbuf_release(&how);
	}
	sandbox_result_release(&res);
out:
	unlink(path);
	rmdir(dir);
	free(path);
	free(dir);
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

int sandbox_fold(const char *text, size_t len, struct sbuf *out)
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

/* "killed by signal N (SIGNAME)"; a signal without a name (a real-time
 * one) by its number alone. */
static int add_signal(struct sbuf *out, const char *sep, int sig)
{
	const char *name = sigabbrev_np(sig);

	if (name)
		return sbuf_addf(out, "%skilled by signal %d (SIG%s)", sep, sig,
				 name);
	return sbuf_addf(out, "%skilled by signal %d", sep, sig);
}

int sandbox_observation(const struct sandbox_result *res,
		     const struct sandbox_limits *limits, struct sbuf *out)
{
	bool ok = !res->timed_out && !res->over && WIFEXITED(res->status) &&
		  WEXITSTATUS(res->status) == 0;
	const struct sbuf *text = ok || !res->err.len ? &res->out : &res->err;
	int ret = sandbox_fold(text->buf, text->len, out);
	const char *nl = out->len && out->buf[out->len - 1] != '\n' ? "\n" : "";

	if (ret || ok)
		return ret;
	if (res->timed_out)
		return sbuf_addf(out, "%s(stopped after %ld s)", nl,
				 or_default(limits->wall_s, 120));
	if (res->over == SANDBOX_OVER_DISK)
		return sbuf_addf(out, "%s(stopped: it wrote more than %ld MiB"
				 " to its folder)", nl,
				 or_default(limits->disk_mib, 1024));
	if (res->over == SANDBOX_OVER_FILES)
		return sbuf_addf(out, "%s(stopped: it made more than %ld files"
				 " and folders in its folder)", nl,
				 or_default(limits->files, 10000));
	if (res->over == SANDBOX_OVER_MEMORY)
		return sbuf_addf(out, "%s(stopped: it ran out of memory, %ld MiB"
				 " for all its processes)", nl,
				 or_default(limits->memory_total_mib, 4096));
	if (res->over == SANDBOX_OVER_DEPTH)
		return sbuf_addf(out, "%s(stopped: it nested folders more than"
				 " %d deep)", nl, SANDBOX_SCRATCH_DEPTH);
	/* bwrap passes on a program killed by signal N as exit status
	 * 128 + N, as shells show it */
	if (!res->err.len && WIFEXITED(res->status) &&
	    WEXITSTATUS(res->status) > 128 &&
	    WEXITSTATUS(res->status) <= 128 + SANDBOX_SIGNAL_MAX)
		return add_signal(out, nl, WEXITSTATUS(res->status) - 128);
	if (!res->err.len && WIFEXITED(res->status))
		return sbuf_addf(out, "%sexit status %d", nl,
				 WEXITSTATUS(res->status));
	if (WIFSIGNALED(res->status))
		return add_signal(out, nl, WTERMSIG(res->status));
	return 0;
}
