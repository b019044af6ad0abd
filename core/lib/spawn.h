/*
 * spawn: start a program with nothing of the daemon's, and hear what it
 * says.
 *
 * A process flowfs starts (the refresher, sbatch, squeue, scancel, a
 * local job, the sandbox's bwrap) must get none of the daemon's open
 * descriptors (the database, /dev/fuse, a fetch's socket), an empty
 * signal mask and every signal at its default (a FUSE worker blocks some
 * and ignores SIGPIPE, and `timeout` in a job must be able to stop what it
 * runs) -- but glibc's two of its own (32 and 33), which its posix_spawn()
 * leaves ignored and no program may use.  Every way flowfs starts a process goes through here:
 *
 *  - spawn_start(): posix_spawn() with that reset, the standard streams
 *    each /dev/null, a descriptor of the caller's or a file opened for
 *    writing, optionally a new session and another working folder.
 *  - spawn_detached(): the same, but the program is no child of the
 *    daemon (a middle process starts it and exits): nobody waits for it,
 *    it outlives the daemon, and no zombie of it is left (local jobs).
 *  - spawn_capture(): run a command to its end, its stdout and stderr
 *    captured, killed at a deadline (sbatch, squeue, scancel);
 *    spawn_capture_as() as another user, with another environment
 *    (a root daemon's sbatch for a user's job).
 *  - a `cred` in struct spawn: the program runs as that user
 *    (spawn_become()), started by fork() and exec, since posix_spawn()
 *    cannot change who runs it.
 *  - spawn_reset_child() and spawn_drain(): the two halves for a caller
 *    that must fork() itself because the child has more to do before its
 *    exec than posix_spawn() can (the sandbox: rlimits, cgroup, uid).
 *
 * Nothing of flowfs here.  Functions return 0 (or what they say) or a
 * negative errno.
 */
#ifndef FLOWFS_SPAWN_H
#define FLOWFS_SPAWN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "lib/sbuf.h"

/* Who a program runs as when it is not the caller (a root daemon starts
 * a user's jobs as that user: run/jobs.h). */
struct spawn_cred {
	uid_t uid;
	gid_t gid;
	const gid_t *groups;	/* the supplementary groups, in full */
	size_t ngroups;
};

/* What becomes of one of the standard streams 0, 1, 2. */
enum spawn_stream {
	SPAWN_NULL,	/* /dev/null (the default) */
	SPAWN_FD,	/* the caller's descriptor `fd` */
	SPAWN_FILE,	/* `path` opened for writing, created 0644, emptied */
};

struct spawn_io {
	enum spawn_stream how;
	int fd;
	const char *path;
};

struct spawn {
	char *const *argv;	/* argv[0] looked up in $PATH when it has
				 * no '/' */
	char *const *envp;	/* NULL: the daemon's environment */
	const char *dir;	/* NULL: the daemon's working folder */
	bool new_session;	/* setsid(): its own session and group */
	struct spawn_io io[3];
	/* NULL: the caller's uid, gids and capabilities; else the program
	 * runs as `cred` (the caller must be root), its SPAWN_FILE streams
	 * opened as that user */
	const struct spawn_cred *cred;
};

/* Start `sp`; *pid is the caller's child.  -errno when it could not
 * start (the program not found: -ENOENT; a `cred` it cannot become:
 * -EPERM). */
int spawn_start(const struct spawn *sp, pid_t *pid);

/* Start `sp` as no child of the caller's (above); *pid its pid.  A
 * `cred` is refused (-EINVAL): run/supervise.h starts a user's job. */
int spawn_detached(const struct spawn *sp, pid_t *pid);

/*
 * Run `argv` (stdin /dev/null) until it ends, its stdout and stderr each
 * captured into `out` and `err` (appended, at most `max` bytes each; the
 * rest is read and dropped), killed with SIGKILL when it runs past
 * `timeout_ms` (then `err` ends with "<argv[0]> did not answer in N s").
 * Returns its exit status (0..255), 128 + the signal that ended it, or
 * 127 with "cannot run <argv[0]>: <why>" in `err` when it could not
 * start (as a shell says it).
 */
int spawn_capture(char *const argv[], int64_t timeout_ms, size_t max,
		  struct sbuf *out, struct sbuf *err);

/* spawn_capture() with the environment `envp` (NULL: the caller's) and
 * as `cred` (NULL: the caller). */
int spawn_capture_as(char *const argv[], char *const envp[],
		     const struct spawn_cred *cred, int64_t timeout_ms,
		     size_t max, struct sbuf *out, struct sbuf *err);

/*
 * In a child after fork(), before its exec: become `c` -- its
 * supplementary groups, then its gid, then its uid, real, effective and
 * saved, so that a root caller keeps no capability (a uid other than 0
 * has none after it) and cannot come back.  0, or a negative errno (the
 * child must not exec then).  Only async-signal-safe calls.
 */
int spawn_become(const struct spawn_cred *c);

/*
 * In a child after fork(), before its exec: every signal at its default,
 * the mask empty, and every descriptor from 3 up closed but the `n` in
 * `keep` (any order).  Only async-signal-safe calls.
 */
void spawn_reset_child(const int *keep, size_t n);

/*
 * Read what is there on `fd` into `into`, kept to `max` bytes in all
 * (the rest dropped); false at end of file or on an error that is not
 * EINTR or EAGAIN.  For a poll() loop over a child's pipes.
 */
bool spawn_drain(int fd, struct sbuf *into, size_t max);

/*
 * What a program printed, kept to its first and its last `keep` bytes
 * whatever it prints (so a flood costs the daemon at most 2 * keep per
 * stream): the owner zero-fills it and sets `keep`; spawn_drain_ends()
 * is spawn_drain() into it; spawn_output_text() appends the text, with a
 * line "[... N bytes not kept ...]" where the middle went; then
 * spawn_output_release().
 */
struct spawn_output {
	size_t keep;
	struct sbuf head;
	char *ring;		/* the last `keep` bytes past the head */
	size_t ring_len, ring_at;
	uint64_t total;
};

bool spawn_drain_ends(int fd, struct spawn_output *o);
int spawn_output_text(const struct spawn_output *o, struct sbuf *out);
void spawn_output_release(struct spawn_output *o);

#endif
