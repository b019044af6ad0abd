/*
 * sandbox: run a scientific workflow's experiment (seed 004) — Python code
 * an engine wrote — and turn what it printed into an observation.  One
 * experiment; nothing of sessions or the store.
 *
 * ---- The sandbox ----
 * sandbox_run_python() runs `python3 -I <file>` in `dir` (a scratch copy of the
 * session's uploads/) inside bubblewrap (bwrap, which must be on PATH; see
 * sandbox_check()): new user, PID, mount, network, IPC and UTS
 * namespaces, uid 65534 inside, every capability dropped, no_new_privs, a
 * read-only view of /usr (and the /bin, /lib* links to it, a few files of
 * /etc python needs), a fresh /proc, a minimal /dev, a tmpfs /tmp, `dir`
 * the one writable place (at its own path), no user namespace made
 * inside, a seccomp filter (sandbox_seccomp_filter()), an environment of
 * PATH, HOME and LANG only, signals unblocked and at their defaults.  A daemon
 * running as root starts bwrap as limits->uid/gid (a user of its own,
 * flowfs-sandbox, else 65534, nobody), so the sandbox is no one else's on
 * the host either; sandbox_prepare_dir() hands `dir` to that uid.
 *
 * ---- Limits ----
 * Limits: CPU seconds, address space and file size per process, no
 * core files, processes and threads (RLIMIT_NPROC, set inside the
 * sandbox's user namespace so that it counts the sandbox's uid only), a
 * wall-clock timeout, and a bound on what the run adds to `dir`,
 * measured while it runs (sandbox.c says how): its entries and
 * their allocated blocks; past disk_mib or `files` more than `dir` held
 * when the program started, the program is stopped as at the timeout.
 * Files it unlinked but holds open are not seen.  Where limits->cgroups
 * has a place for one (cgroup.h), bwrap starts in a cgroup of its own
 * that bounds the whole sandbox to memory_total_mib of memory and
 * `procs` processes and threads, removed after the run; when the kernel
 * killed a process of it for want of memory, the program is stopped as
 * at the timeout.
 *
 * ---- The end of a run ----
 * When the program ends, times out, outgrows `dir` or is cancelled (a
 * cancel hook is polled) bwrap is killed, and with it its PID namespace:
 * no process of the experiment outlives sandbox_run_python().
 *
 * ---- The observation ----
 * sandbox_observation() is the seed's observation: stdout when the program
 * succeeded, else stderr (else "exit status N", or "killed by signal N
 * (SIGNAME)" for a status of 128 + N, N 1..64, as bwrap reports a
 * program a signal killed), then a line "(stopped after N s)" or
 * "(stopped: why)" when it was stopped;
 * with runs of 3 or more identical lines folded to one line
 * "<line> (repeated N times)" and text over 16,000 characters cut to its
 * first and last 8,000 with a line saying how many were cut.
 */
#ifndef FLOWFS_SANDBOX_H
#define FLOWFS_SANDBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "sandbox/cgroup.h"
#include "lib/ferr.h"
#include "lib/sbuf.h"

struct sandbox_limits {
	long cpu_s;		/* RLIMIT_CPU; 0: 60 */
	long wall_s;		/* killed after this; 0: 120 */
	long memory_mib;	/* RLIMIT_AS; 0: 2048 */
	long file_mib;		/* RLIMIT_FSIZE; 0: 256 */
	long procs;		/* RLIMIT_NPROC in the sandbox; 0: 256 */
	/* the host uid and gid the sandbox runs as when the daemon is
	 * root (--sandbox-user); 0: SANDBOX_ID */
	uid_t uid;
	gid_t gid;
	long disk_mib;		/* what it may add to `dir`; 0: 1024 */
	long files;		/* files and folders it may add; 0: 10000 */
	/* with a cgroup: the whole sandbox's memory; 0: 4096 */
	long memory_total_mib;
	/* where to make the sandbox's cgroup; NULL or none found: the
	 * rlimits alone */
	const struct cgroup_base *cgroups;
};

/* Why sandbox_run_python() stopped the program before it ended (timeouts are
 * sandbox_result.timed_out). */
enum sandbox_over {
	SANDBOX_OVER_NONE,
	SANDBOX_OVER_DISK,		/* `dir` grew past disk_mib */
	SANDBOX_OVER_FILES,	/* past `files` entries */
	SANDBOX_OVER_DEPTH,	/* folders nested deeper than SANDBOX_SCRATCH_DEPTH */
	SANDBOX_OVER_MEMORY,	/* its cgroup ran out of memory */
};

/* The deepest `dir` may be nested (the daemon walks it to measure it). */
#define SANDBOX_SCRATCH_DEPTH 64

/* The host uid and gid the sandbox runs as when the daemon is root and
 * no other is given (nobody). */
#define SANDBOX_ID 65534

struct sandbox_result {
	int status;		/* as waitpid() gives it */
	bool timed_out;
	enum sandbox_over over;
	/* what it printed: each its first and last 256 KiB, with a line
	 * "[... N bytes not kept ...]" between when it printed more */
	struct sbuf out, err;
};

void sandbox_result_release(struct sandbox_result *r);

/*
 * Run `python3 -I file` in `dir`.  0 and *res (whatever the program's
 * own exit status), -ECANCELED when cancelled(ctx) said so (the process
 * group is killed), -EBUSY when the sandbox's processes did not end
 * after it (`dir` may still be changing: leave it alone), or a negative
 * errno when it could not be started (err says why).
 */
int sandbox_run_python(const char *dir, const char *file,
		const struct sandbox_limits *limits, bool (*cancelled)(void *ctx),
		void *ctx, struct sandbox_result *res, struct ferr *err);

/*
 * Any program in the same sandbox, for what runs untrusted input through
 * a program flowfs trusts (DATCOM on a deck, gnuplot on its tables):
 * argv as the sandbox sees it (argv[0] looked for on the sandbox's PATH
 * unless it has a '/'), and `bind`, when not NULL, a host file shown
 * read-only at the same path inside (a program outside /usr: its
 * libraries must be in /usr).  sandbox_run_python() is this with
 * python3 -I FILE.  Returns as sandbox_run_python() does.
 */
struct sandbox_program {
	const char *const *argv;	/* NULL-terminated */
	const char *bind;
};

int sandbox_run(const char *dir, const struct sandbox_program *prog,
		const struct sandbox_limits *limits, bool (*cancelled)(void *ctx),
		void *ctx, struct sandbox_result *res, struct ferr *err);

/*
 * Whether experiments can run: 0, or -ENOENT when bwrap is not an
 * executable file in a folder of $PATH (err says to install bubblewrap).
 */
int sandbox_check(struct ferr *err);

/*
 * Start one sandbox as sandbox_run_python() does (the same bwrap command line,
 * uid and limits), running an empty program in a new folder below
 * `parent` (removed after): 0 when it ran and exited 0, else a negative
 * errno and err says why in one line, with bwrap's own complaint (user
 * namespaces disabled, ...).  About 20 ms plus python3's start.
 */
int sandbox_trial(const char *parent, const struct sandbox_limits *limits,
		       struct ferr *err);

/* A command line: argv[n] is NULL. */
struct sandbox_args {
	char **argv;
	size_t n, alloc;
};

void sandbox_args_release(struct sandbox_args *a);

/* The bwrap command line sandbox_run_python() runs (see above), into `a`. */
int sandbox_bwrap_args(const char *dir, const char *file,
		      const struct sandbox_limits *limits, struct sandbox_args *a);

/*
 * The seccomp filter the sandbox applies before python3 starts, as BPF
 * in a new memfd (*fd, close-on-exec, at offset 0; bwrap --seccomp reads
 * it): system calls an experiment has no use for (keys, namespaces,
 * mounts, ptrace, BPF, io_uring, modules, clocks, ...) and clone() with
 * a namespace flag fail with EPERM, clone3() with ENOSYS (so that libc
 * falls back to clone()), other architectures' calls kill the process.
 * 0 or a negative errno.
 */
int sandbox_seccomp_filter(int *fd);

/*
 * Make the scratch folder `dir` ready for the sandbox: every symbolic
 * link below it that does not resolve to a file or folder inside `dir`
 * is removed (dropped(ctx, path) is told each, path relative to `dir`);
 * as root, everything is handed to limits->uid and gid (see struct
 * sandbox_limits).  0 or a negative errno.
 */
int sandbox_prepare_dir(const char *dir, const struct sandbox_limits *limits,
		     void (*dropped)(void *ctx, const char *path), void *ctx);

/*
 * The daemon's own folder for scratch folders, `tmp`/flowfs-<uid>/
 * daemon-XXXXXX, flock()ed through s->fd for the daemon's life (its
 * descriptor is close-on-exec).  flowfs-<uid> is made mode 0700 (0711 for
 * root: the sandbox's uid goes through it) or, when there, must be a
 * folder (not a link) of this uid; its mode is set.  Folders of it whose
 * lock is free (a daemon killed with kill -9) are removed first
 * (sandbox_remove_tree()), *swept says how many.  0, or a negative errno
 * and err says why in one line.
 */
struct sandbox_scratch {
	int fd;		/* the folder, locked; -1: none */
	char *path;
};

int sandbox_scratch_open(const char *tmp, struct sandbox_scratch *s, size_t *swept,
		      struct ferr *err);

/* Remove the daemon's folder when it is empty (what a run left, its
 * processes not ended, is for the next daemon's sweep), and release
 * its lock. */
void sandbox_scratch_close(struct sandbox_scratch *s);

/*
 * rm -rf of `dir`, whatever modes were left on its folders, walked by
 * descriptor: a symbolic link is removed, never followed, and a folder
 * swapped for a link while it runs is not reached through it.
 */
void sandbox_remove_tree(const char *dir);

/*
 * Open `name` in folder `dirfd`, a file an experiment made, for copying
 * out: a descriptor when it is a regular file with one link (never a
 * symbolic link, a FIFO, a device or a hard link to something else),
 * with *st filled; else a negative errno.
 */
int sandbox_open_made(int dirfd, const char *name, struct stat *st);

/*
 * What a scratch folder holds, as the daemon measures it while a program
 * runs in it (walked by descriptor, no link followed, at most
 * SANDBOX_SCRATCH_DEPTH folders deep, a folder the program made
 * unlistable opened for the walk): its entries (files, folders, links,
 * ...) and their allocated blocks.
 */
struct sandbox_use {
	int64_t bytes;		/* st_blocks * 512 */
	long entries;
};

/* What `dir` may hold while a program runs in it: what it holds now,
 * plus limits->disk_mib MiB and limits->files entries. */
void sandbox_scratch_max(const char *dir, const struct sandbox_limits *limits,
			 struct sandbox_use *max);

/*
 * What `dir` holds (*use, counted up to the first limit passed), and
 * which limit of `max` it is past: SANDBOX_OVER_FILES, _DISK, or _DEPTH
 * for a folder nested deeper than SANDBOX_SCRATCH_DEPTH; else
 * SANDBOX_OVER_NONE (a folder that cannot be opened holds nothing).
 */
enum sandbox_over sandbox_scratch_over(const char *dir,
				       const struct sandbox_use *max,
				       struct sandbox_use *use);

/* The observation for `res` (see above), appended to `out`. */
int sandbox_observation(const struct sandbox_result *res, const struct sandbox_limits *limits,
		     struct sbuf *out);

/* Fold and cut `text` (see above), appended to `out`. */
int sandbox_fold(const char *text, size_t len, struct sbuf *out);

#endif
