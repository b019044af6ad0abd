/* jobdir: job folders that are their user's own; see jobdir.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "run/jobdir.h"

/* made below the home of a user whose jobs a root daemon runs there */
static const char *const home_levels[] = {
	".local", "state", "flowfs", "jobs", NULL
};

/* A folder opened without following any link, the last component's
 * included (RESOLVE_NO_SYMLINKS: ELOOP; O_NOFOLLOW would make a link to
 * a folder ENOTDIR, and the message wrong). */
static int openat2_dir(int dfd, const char *path, unsigned long long resolve)
{
	struct open_how how = {
		.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC,
		.resolve = resolve | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	int fd = (int)syscall(SYS_openat2, dfd, path, &how, sizeof(how));

	return fd < 0 ? -errno : fd;
}

/* What the open of `shown` answered, as a refusal. */
static int refuse_open(int ret, const char *shown, struct ferr *err)
{
	if (ret == -ELOOP || ret == -EXDEV)
		return ferr_set(err, -EACCES, "%s is a symbolic link, or one is"
				" on its way (a job's folder is never reached"
				" through one)", shown);
	if (ret == -ENOTDIR)
		return ferr_set(err, -EACCES, "%s is not a folder", shown);
	return ferr_set(err, ret, "cannot open %s: %s", shown, strerror(-ret));
}

/* A folder of u's that no one else may write. */
static int check_own(const struct stat *st, const char *shown,
		     const struct jobdir_user *u, struct ferr *err)
{
	if (!S_ISDIR(st->st_mode))
		return ferr_set(err, -EACCES, "%s is not a folder", shown);
	if (st->st_uid != u->uid)
		return ferr_set(err, -EACCES, "%s belongs to uid %u, not to %s"
				" (uid %u), whose jobs would run in it",
				shown, (unsigned)st->st_uid, u->name,
				(unsigned)u->uid);
	if (st->st_mode & (S_IWGRP | S_IWOTH))
		return ferr_set(err, -EACCES, "%s can be written by others"
				" (mode %04o): chmod go-w %s", shown,
				(unsigned)(st->st_mode & 07777), shown);
	return 0;
}

int jobdir_open(const char *path, const struct jobdir_user *u,
		struct ferr *err)
{
	struct stat st;
	int fd = openat2_dir(AT_FDCWD, path, 0), ret;

	if (fd < 0)
		return refuse_open(fd, path, err);
	ret = fstat(fd, &st) < 0 ? ferr_set(err, -errno, "cannot stat %s: %s",
					   path, strerror(errno))
				 : check_own(&st, path, u, err);
	if (ret < 0) {
		close(fd);
		return ret;
	}
	return fd;
}

int jobdir_make(int dfd, const char *name, mode_t mode, const char *shown,
		const struct jobdir_user *u, struct ferr *err)
{
	bool made = mkdirat(dfd, name, mode) == 0;
	struct stat st;
	int fd, ret;

	if (!made && errno != EEXIST)
		return ferr_set(err, -errno, "cannot make %s: %s", shown,
				strerror(errno));
	fd = openat2_dir(dfd, name, RESOLVE_BENEATH);
	if (fd < 0)
		return refuse_open(fd, shown, err);
	if (fstat(fd, &st) < 0) {
		ret = ferr_set(err, -errno, "cannot stat %s: %s", shown,
			       strerror(errno));
		goto fail;
	}
	/* made just now by this process (no one else makes a folder of
	 * its uid): the user's from here; a root daemon gives it away */
	if (made && st.st_uid == geteuid() && st.st_uid != u->uid) {
		if (fchown(fd, u->uid, u->gid) < 0) {
			ret = ferr_set(err, -errno, "cannot give %s to %s: %s",
				       shown, u->name, strerror(errno));
			goto fail;
		}
		st.st_uid = u->uid;
	}
	ret = check_own(&st, shown, u, err);
	if (ret < 0)
		goto fail;
	return fd;
fail:
	close(fd);
	return ret;
}

/*
 * Every folder from / down to `path` (included when `self`): root's or
 * u's, and one that others may write has the sticky bit -- else its
 * owner, or anyone, could move what is below it away and put another
 * folder in its place.
 */
static int check_above(const char *path, bool self, const struct jobdir_user *u,
		       struct ferr *err)
{
	char at[PATH_MAX];
	size_t len = strlen(path);

	if (len >= sizeof(at) || path[0] != '/')
		return ferr_set(err, -EINVAL, "%s is not an absolute path", path);
	for (size_t i = 1; i <= len; i++) {
		struct stat st;

		if (i < len && path[i] != '/')
			continue;
		if (i == len && !self)
			break;
		memcpy(at, path, i);
		at[i] = '\0';
		if (lstat(at, &st) < 0)
			return ferr_set(err, -errno, "cannot stat %s: %s", at,
					strerror(errno));
		if (S_ISLNK(st.st_mode))
			return ferr_set(err, -EACCES, "%s is a symbolic link (a"
					" job's folder is never reached"
					" through one)", at);
		if (!S_ISDIR(st.st_mode))
			return ferr_set(err, -EACCES, "%s is not a folder", at);
		if (st.st_uid != 0 && st.st_uid != u->uid)
			return ferr_set(err, -EACCES, "%s belongs to uid %u, who"
					" could move the job folders of %s in"
					" it away", at, (unsigned)st.st_uid,
					u->name);
		if ((st.st_mode & (S_IWGRP | S_IWOTH)) &&
		    !(st.st_mode & S_ISVTX))
			return ferr_set(err, -EACCES, "%s can be written by"
					" others and has no sticky bit (mode"
					" %04o): they could move the job"
					" folders in it away (chmod +t %s, as"
					" /tmp has)", at,
					(unsigned)(st.st_mode & 07777), at);
	}
	return 0;
}

/* `levels` made and checked below folder `top` (whose path is `path`,
 * which grows by each level): the last one's descriptor, or -errno. */
static int make_levels(int top, char *path, size_t size,
		       const char *const *levels, mode_t mode,
		       const struct jobdir_user *u, struct ferr *err)
{
	int fd = top;

	for (size_t i = 0; levels[i]; i++) {
		size_t len = strlen(path);
		int next;

		if (snprintf(path + len, size - len, "/%s", levels[i]) >=
		    (int)(size - len)) {
			close(fd);
			return ferr_set(err, -ENAMETOOLONG, "%s/%s: too long",
					path, levels[i]);
		}
		next = jobdir_make(fd, levels[i], mode, path, u, err);
		close(fd);
		if (next < 0)
			return next;
		fd = next;
	}
	return fd;
}

int jobdir_base(const char *work, bool use_home, const struct jobdir_user *u,
		char **base, struct ferr *err)
{
	const char *one[2] = { u->name, NULL };
	const char *const *levels = NULL;
	char path[PATH_MAX], *home = NULL;
	struct stat st;
	int fd = -1, ret;

	*base = NULL;
	if (use_home) {
		/* the home is found through the links the system has
		 * (/home -> /data/home); what is below it, never */
		if (!u->home || u->home[0] != '/' ||
		    !(home = realpath(u->home, NULL))) {
			ret = ferr_set(err, -EACCES, "%s (uid %u) has no home"
				       " folder to run jobs in (start flowfs"
				       " with --work-dir)", u->name,
				       (unsigned)u->uid);
			goto out;
		}
		ret = check_above(home, false, u, err);
		if (ret < 0)
			goto out;
		snprintf(path, sizeof(path), "%s", home);
		levels = home_levels;
		ret = fd = jobdir_open(path, u, err);
		if (ret < 0)
			goto out;
		ret = fd = make_levels(fd, path, sizeof(path), levels, 0700, u,
				       err);
		goto out;
	}
	if (snprintf(path, sizeof(path), "%s", work) >= (int)sizeof(path)) {
		ret = ferr_set(err, -ENAMETOOLONG, "%s: too long", work);
		goto out;
	}
	/* the user's own, written by no one else: the jobs go right in */
	if (lstat(work, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == u->uid &&
	    !(st.st_mode & (S_IWGRP | S_IWOTH))) {
		ret = check_above(work, false, u, err);
		if (!ret)
			ret = fd = jobdir_open(path, u, err);
		goto out;
	}
	/* shared: a folder of the user's own in it */
	if (!u->name || !*u->name || strchr(u->name, '/') ||
	    !strcmp(u->name, ".") || !strcmp(u->name, "..")) {
		ret = ferr_set(err, -EACCES, "uid %u has no name a folder can"
			       " have", (unsigned)u->uid);
		goto out;
	}
	ret = check_above(work, true, u, err);
	if (ret < 0)
		goto out;
	fd = openat2_dir(AT_FDCWD, work, 0);
	if (fd < 0) {
		ret = refuse_open(fd, work, err);
		goto out;
	}
	ret = fd = make_levels(fd, path, sizeof(path), one, 0700, u, err);
out:
	if (fd >= 0)
		close(fd);
	free(home);
	if (ret >= 0) {
		*base = strdup(path);
		ret = *base ? 0 : -ENOMEM;
	}
	return ret;
}
