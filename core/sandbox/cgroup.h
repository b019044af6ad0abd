/*
 * cgroup: one cgroup per experiment, bounding the memory and the
 * processes of its whole sandbox (sandbox.h), and one per local job,
 * holding every process it starts (run/supervise.h), where the daemon
 * can make one.
 * One experiment's or one job's cgroup; nothing of sessions or the store.
 *
 * cgroup_base_find() looks once, at start, for where to make them:
 * - cgroup v2 when /sys/fs/cgroup is a cgroup2 mount and the daemon's
 *   cgroup there (the "0::PATH" line of /proc/self/cgroup) offers memory
 *   and pids in its cgroup.controllers and is the daemon's to write (a
 *   systemd user session's delegated service, a root daemon's).  v2 lets
 *   no process live in a cgroup whose children have controllers, so the
 *   daemon moves itself into a child "flowfs-daemon" and enables +memory
 *   +pids for the children; experiments' cgroups are that child's
 *   siblings.
 * - else cgroup v1, the memory and pids hierarchies mounted at
 *   /sys/fs/cgroup/memory and /sys/fs/cgroup/pids, under the daemon's
 *   cgroup in each, when a cgroup can be made and removed there (root).
 * - else none: the per-process rlimits alone bound the sandbox.
 *
 * cgroup_make() makes one (named after the scratch folder, unique while
 * it lives), with its memory limit (and as much memory and swap in all,
 * where the kernel counts swap) and its pids limit; cgroup_enter() puts
 * the calling process in it, between fork() and exec (async-signal-safe:
 * the descriptors are opened by cgroup_make()); cgroup_oom() says whether
 * the kernel killed a process of it for want of memory;
 * cgroup_remove() kills what is left in it and removes it.
 */
#ifndef FLOWFS_CGROUP_H
#define FLOWFS_CGROUP_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "lib/ferr.h"

struct cgroup_base {
	int version;		/* 0: none found, 1 or 2 */
	char dir[PATH_MAX];	/* where cgroups are made (v1: memory's) */
	char pids[PATH_MAX];	/* v1: where in the pids hierarchy */
};

/*
 * One line of /proc/self/cgroup, "ID:CONTROLLERS:PATH": 1 when it is the
 * line of `controller` (one of its comma-separated CONTROLLERS; "" for
 * the v2 line "0::PATH"), PATH copied to `path` (`size` bytes); 0 when it
 * is another's; -EINVAL when the line is not of that form or PATH not
 * absolute, -ENAMETOOLONG when PATH does not fit.
 */
int cgroup_parse_line(const char *line, const char *controller, char *path,
		      size_t size);

/* Where to make cgroups (see above) into *b: 0, or a negative errno and
 * `why` says why none can be had (b->version is then 0). */
int cgroup_base_find(struct cgroup_base *b, struct ferr *why);

struct cgroup {
	int version;		/* 0: none made */
	char dir[PATH_MAX], pids[PATH_MAX];
	int procs[2];		/* their cgroup.procs, open for writing; -1 */
};

/* A cgroup `name` under `b` into *cg: at most `memory` bytes and `pids`
 * processes and threads (0: no bound of its own on that, as for a local
 * job's cgroup, there to gather its processes: run/supervise.h).  0, or
 * a negative errno (err says why). */
int cgroup_make(const struct cgroup_base *b, const char *name, int64_t memory,
		long pids, struct cgroup *cg, struct ferr *err);

/* Put the calling process into `cg`: 0 or a negative errno. */
int cgroup_enter(const struct cgroup *cg);

/* Whether the kernel killed one of its processes for want of memory. */
bool cgroup_oom(const struct cgroup *cg);

/* Kill what is left in `cg` and remove it (a few tries, while the
 * killed go); 0, or a negative errno when it could not be removed. */
int cgroup_remove(struct cgroup *cg);

#endif
