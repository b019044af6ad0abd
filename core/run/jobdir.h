/*
 * jobdir: the folders local and Slurm jobs run in (jobs.h), made and
 * opened so that no other user's folder, link or file is taken for one.
 *
 * A work folder may be a shared scratch (mode 1777, as /tmp): another
 * user could make <work>/<session>-<n>/run-<k>/<node>/ before the daemon
 * does, with a link or a FIFO in it where the daemon writes the job's
 * script (issue 25: a root-only file was overwritten, another user's
 * script ran as root).  So every folder a job's folder lies in is its
 * job user's, and the daemon reaches each one without following a link:
 *
 *  - jobdir_base() says where a user's job folders go, at submit: the
 *    work folder itself when it is the user's own and no one else may
 *    write it (`--work-dir` of one user's daemon, the default
 *    ~/.local/state/flowfs/jobs); else a folder of the user's in it,
 *    <work>/<user name> (the uid when there is no name), mode 0700, made
 *    when missing and given to the user; or, with `use_home` (a root
 *    daemon without --work-dir, for a user other than root), the user's
 *    <home>/.local/state/flowfs/jobs.  Every folder above it must be
 *    root's or the user's, and one that others may write must have the
 *    sticky bit (then they cannot move or replace what is in it).
 *  - jobdir_open() opens that folder at each job's start, by a path that
 *    may hold no link (openat2 RESOLVE_NO_SYMLINKS), and checks it again:
 *    a folder, the user's, not writable by group or others.
 *  - jobdir_make() makes and opens each level below it beneath a
 *    descriptor (mkdirat, then openat2 RESOLVE_BENEATH |
 *    RESOLVE_NO_SYMLINKS, O_NOFOLLOW): a level that is there already
 *    passes the same checks; one this process made (its own uid) is
 *    given to the user.
 * A refusal is -EACCES, with a message naming the folder and why
 * ("/scratch/alice belongs to uid 1002, not to alice (uid 1001)"; "... is
 * a symbolic link"; "... can be written by others (mode 0777)").
 */
#ifndef FLOWFS_JOBDIR_H
#define FLOWFS_JOBDIR_H

#include <stdbool.h>
#include <sys/types.h>

#include "lib/ferr.h"

struct jobdir_user {
	uid_t uid;
	gid_t gid;
	const char *name;	/* the per-user folder: login name or uid */
	const char *home;	/* NULL or "": none known */
};

/* Where `u`'s job folders go (above), under `work` (absolute, resolved):
 * *base (absolute, no link in it; free it), made when missing.  0,
 * -EACCES or another negative errno with err. */
int jobdir_base(const char *work, bool use_home, const struct jobdir_user *u,
		char **base, struct ferr *err);

/* Folder `path` (absolute; no link may be in it), `u`'s and written by
 * no one else: a descriptor of it (O_RDONLY | O_DIRECTORY), or a
 * negative errno with err. */
int jobdir_open(const char *path, const struct jobdir_user *u,
		struct ferr *err);

/* Folder `name` (one component) in folder `dfd`, made with `mode` when
 * missing, opened and checked as jobdir_open() does; `shown` is its
 * path in messages.  A descriptor, or a negative errno with err. */
int jobdir_make(int dfd, const char *name, mode_t mode, const char *shown,
		const struct jobdir_user *u, struct ferr *err);

#endif
