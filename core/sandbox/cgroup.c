/*
 * cgroup: a cgroup per experiment; see cgroup.h.
 */
#include "sandbox/cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#define CGROUP_ROOT "/sys/fs/cgroup"
/* how long cgroup_remove() waits for the killed to go */
#define REMOVE_TRIES 100
#define REMOVE_WAIT_NS 10000000L

int cgroup_parse_line(const char *line, const char *controller, char *path,
		      size_t size)
{
	const char *list = strchr(line, ':'), *at, *end;
	size_t want = strlen(controller), n;
	bool mine = false;

	if (!list || list == line)
		return -EINVAL;
	list++;
	end = strchr(list, ':');
	if (!end || end[1] != '/')
		return -EINVAL;
	if (!want) {
		mine = end == list;
	} else {
		for (at = list; at < end; at += n + 1) {
			n = strcspn(at, ",:");
			if (n == want && !strncmp(at, controller, n))
				mine = true;
		}
	}
	if (!mine)
		return 0;
	n = strcspn(end + 1, "\n");
	if (n >= size)
		return -ENAMETOOLONG;
	memcpy(path, end + 1, n);
	path[n] = 0;
	return 1;
}

/* The daemon's cgroup path for `controller` ("": v2) into `path`. */
static int own_path(const char *controller, char *path, size_t size)
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	char line[PATH_MAX + 128];
	int ret = -ENOENT;

	if (!f)
		return -errno;
	while (ret == -ENOENT && fgets(line, sizeof(line), f)) {
		int got = cgroup_parse_line(line, controller, path, size);

		if (got)
			ret = got < 0 ? got : 0;
	}
	fclose(f);
	return ret;
}

static int write_text(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, text, strlen(text)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

static int write_in(const char *dir, const char *name, const char *text)
{
	char path[PATH_MAX + 64];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return write_text(path, text);
}

/* `name` of `dir`, at most size - 1 bytes of it, into buf. */
static int read_in(const char *dir, const char *name, char *buf, size_t size)
{
	char path[PATH_MAX + 64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	return 0;
}

/* Whether the space-separated `list` has `word`. */
static bool has_word(const char *list, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = list; (p = strstr(p, word)); p += n)
		if ((p == list || p[-1] == ' ') && (!p[n] || strchr(" \n", p[n])))
			return true;
	return false;
}

static bool is_fs(const char *path, long magic)
{
	struct statfs sf;

	return statfs(path, &sf) == 0 && (long)sf.f_type == magic;
}

/* `sub` made and removed in `dir`: whether cgroups can be made there. */
static int probe(const char *dir)
{
	char path[PATH_MAX + 64];

	snprintf(path, sizeof(path), "%s/flowfs-probe-%ld", dir, (long)getpid());
	if (mkdir(path, 0755) < 0)
		return -errno;
	return rmdir(path) < 0 ? -errno : 0;
}

static int find_v2(struct cgroup_base *b, struct ferr *why)
{
	char own[PATH_MAX], dir[PATH_MAX], list[512], leaf[PATH_MAX + 32];
	int ret = own_path("", own, sizeof(own));

	if (ret < 0)
		return ferr_set(why, ret, "no cgroup v2 line in /proc/self/cgroup");
	if (snprintf(dir, sizeof(dir), "%s%s", CGROUP_ROOT,
		     strcmp(own, "/") ? own : "") >= (int)sizeof(dir))
		return ferr_set(why, -ENAMETOOLONG, "its cgroup's path is too long");
	ret = read_in(dir, "cgroup.controllers", list, sizeof(list));
	if (ret < 0 || !has_word(list, "memory") || !has_word(list, "pids"))
		return ferr_set(why, ret < 0 ? ret : -ENOTSUP, "its cgroup %s does"
				" not offer the memory and pids controllers", own);
	if (access(dir, W_OK) < 0)
		return ferr_set(why, -errno, "its cgroup %s is not its to"
				" write", own);
	/* the root cgroup may hold processes and have controllers both */
	if (strcmp(own, "/")) {
		snprintf(leaf, sizeof(leaf), "%s/flowfs-daemon", dir);
		if (mkdir(leaf, 0755) < 0 && errno != EEXIST)
			return ferr_set(why, -errno, "cannot make %s: %s", leaf,
					strerror(errno));
		ret = write_in(leaf, "cgroup.procs", "0");
		if (ret < 0)
			return ferr_set(why, ret, "cannot move into %s: %s", leaf,
					strerror(-ret));
	}
	/* the process that started it (fuse_daemonize()'s parent) may take
	 * a moment to leave the cgroup */
	for (int tries = 0; (ret = write_in(dir, "cgroup.subtree_control",
					   "+memory +pids")) == -EBUSY &&
	     tries < REMOVE_TRIES; tries++)
		nanosleep(&(struct timespec){ 0, REMOVE_WAIT_NS }, NULL);
	if (ret < 0)
		/* other processes share its cgroup: it stays in its leaf,
		 * which changes nothing for them */
		return ferr_set(why, ret, "cannot enable memory and pids in its"
				" cgroup %s: %s", own, strerror(-ret));
	b->version = 2;
	memcpy(b->dir, dir, sizeof(dir));
	return 0;
}

static int find_v1(struct cgroup_base *b, struct ferr *why)
{
	static const char *const ctl[2] = { "memory", "pids" };
	char *into[2] = { b->dir, b->pids };

	for (int i = 0; i < 2; i++) {
		char own[PATH_MAX], mnt[64];
		int ret;

		snprintf(mnt, sizeof(mnt), "%s/%s", CGROUP_ROOT, ctl[i]);
		if (!is_fs(mnt, CGROUP_SUPER_MAGIC))
			return ferr_set(why, -ENOENT, "no cgroup v2 with memory"
					" and pids, and no cgroup v1 %s at %s",
					ctl[i], mnt);
		ret = own_path(ctl[i], own, sizeof(own));
		if (ret < 0)
			return ferr_set(why, ret, "no cgroup v1 %s line in"
					" /proc/self/cgroup", ctl[i]);
		if (snprintf(into[i], PATH_MAX, "%s%s", mnt, strcmp(own, "/") ?
			     own : "") >= PATH_MAX)
			return ferr_set(why, -ENAMETOOLONG, "its cgroup's path is"
					" too long");
		ret = probe(into[i]);
		if (ret < 0)
			return ferr_set(why, ret, "cannot make a cgroup in %s: %s",
					into[i], strerror(-ret));
	}
	b->version = 1;
	return 0;
}

int cgroup_base_find(struct cgroup_base *b, struct ferr *why)
{
	struct ferr v2 = FERR_INIT;
	int ret;

	memset(b, 0, sizeof(*b));
	if (is_fs(CGROUP_ROOT, CGROUP2_SUPER_MAGIC)) {
		ret = find_v2(b, &v2);
		if (!ret)
			return 0;
		return ferr_set(why, ret, "%s", v2.message);
	}
	ret = find_v1(b, why);
	if (ret < 0)
		memset(b, 0, sizeof(*b));
	return ret;
}

/* mkdir `dir`/`name` into `path`; one left by a daemon that was killed
 * is removed first (it is empty: its sandbox died with that daemon). */
static int make_dir(const char *dir, const char *name, char *path)
{
	if (snprintf(path, PATH_MAX, "%s/%s", dir, name) >= PATH_MAX)
		return -ENAMETOOLONG;
	if (mkdir(path, 0755) == 0)
		return 0;
	if (errno != EEXIST || rmdir(path) < 0 || mkdir(path, 0755) < 0)
		return -errno;
	return 0;
}

static int open_procs(const char *dir)
{
	char path[PATH_MAX + 64];
	int fd;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* A file the kernel may not have (swap not counted, an older kernel). */
static int optional(int ret)
{
	return ret == -ENOENT ? 0 : ret;
}

int cgroup_make(const struct cgroup_base *b, const char *name, int64_t memory,
		long pids, struct cgroup *cg, struct ferr *err)
{
	char mem[32], max[32];
	int ret;

	memset(cg, 0, sizeof(*cg));
	cg->procs[0] = cg->procs[1] = -1;
	snprintf(mem, sizeof(mem), "%lld", (long long)memory);
	snprintf(max, sizeof(max), "%ld", pids);
	ret = make_dir(b->dir, name, cg->dir);
	if (ret < 0) {
		cg->dir[0] = 0;
		goto out;
	}
	cg->version = b->version;
	if (b->version == 1) {
		ret = make_dir(b->pids, name, cg->pids);
		if (ret < 0) {
			cg->pids[0] = 0;
			goto out;
		}
		if (memory > 0)
			ret = write_in(cg->dir, "memory.limit_in_bytes", mem);
		/* memory and swap: where the kernel counts swap at all */
		if (!ret && memory > 0)
			ret = optional(write_in(cg->dir, "memory.memsw.limit_in_bytes",
						mem));
		if (!ret && pids > 0)
			ret = write_in(cg->pids, "pids.max", max);
		if (!ret)
			ret = cg->procs[1] = open_procs(cg->pids);
	} else {
		if (memory > 0)
			ret = write_in(cg->dir, "memory.max", mem);
		if (!ret && memory > 0)
			ret = optional(write_in(cg->dir, "memory.swap.max", "0"));
		/* an out-of-memory kill ends the whole sandbox, not one of
		 * its processes that the others then wait for */
		if (!ret && memory > 0)
			write_in(cg->dir, "memory.oom.group", "1");
		if (!ret && pids > 0)
			ret = write_in(cg->dir, "pids.max", max);
	}
	if (ret >= 0)
		ret = cg->procs[0] = open_procs(cg->dir);
	if (ret > 0)
		ret = 0;
out:
	if (ret < 0) {
		ferr_set(err, ret, "cannot make the experiment's cgroup: %s",
			 strerror(-ret));
		cgroup_remove(cg);
	}
	return ret;
}

int cgroup_enter(const struct cgroup *cg)
{
	for (int i = 0; i < 2; i++)
		if (cg->procs[i] >= 0 && write(cg->procs[i], "0", 1) < 0)
			return -errno;
	return 0;
}

bool cgroup_oom(const struct cgroup *cg)
{
	char text[1024];
	const char *at;

	if (!cg->version ||
	    read_in(cg->dir, cg->version == 1 ? "memory.oom_control" :
		    "memory.events", text, sizeof(text)) < 0)
		return false;
	at = strstr(text, "oom_kill ");
	return at && strtol(at + 9, NULL, 10) > 0;
}

/* Kill every process listed in `dir`'s cgroup.procs: whether there was
 * one. */
static bool kill_left(const char *dir)
{
	char text[4096];
	bool any = false;

	if (read_in(dir, "cgroup.procs", text, sizeof(text)) < 0)
		return false;
	for (char *p = text, *end; *p; p = end) {
		long pid = strtol(p, &end, 10);

		if (end == p)
			break;
		if (pid > 0) {
			kill((pid_t)pid, SIGKILL);
			any = true;
		}
	}
	return any;
}

int cgroup_remove(struct cgroup *cg)
{
	char *dirs[2] = { cg->dir, cg->pids };
	int ret = 0;

	for (int i = 0; i < 2; i++) {
		if (cg->procs[i] >= 0)
			close(cg->procs[i]);
		cg->procs[i] = -1;
	}
	for (int i = 0; i < 2; i++) {
		struct timespec wait = { 0, REMOVE_WAIT_NS };
		int tries = 0;

		if (!dirs[i][0])
			continue;
		while (rmdir(dirs[i]) < 0) {
			if (errno == ENOENT)
				break;
			if (errno != EBUSY || ++tries >= REMOVE_TRIES) {
				ret = -errno;
				break;
			}
			kill_left(dirs[i]);
			nanosleep(&wait, NULL);
		}
		dirs[i][0] = 0;
	}
	cg->version = 0;
	return ret;
}
