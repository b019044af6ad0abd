/* backup: a consistent copy of a mounted store; see backup.h. */
#include "store/backup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/fcopy.h"
#include "store/contents.h"

/* Copy the database, one moment of it, to `part`. */
static int copy_database(struct store *st, const char *part,
			 struct ferr *err)
{
	sqlite3 *dst = NULL;
	sqlite3_backup *b;
	int rc, fd;

	fd = open(part, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return ferr_set(err, -errno, "cannot make %s: %s", part,
				strerror(errno));
	close(fd);
	rc = sqlite3_open_v2(part, &dst, SQLITE_OPEN_READWRITE, NULL);
	if (rc == SQLITE_OK) {
		b = sqlite3_backup_init(dst, "main", store_db(st), "main");
		rc = b ? sqlite3_backup_step(b, -1) : sqlite3_errcode(dst);
		if (b)
			sqlite3_backup_finish(b);
		if (rc == SQLITE_DONE)
			rc = sqlite3_exec(dst, "PRAGMA journal_mode=WAL", NULL,
					  NULL, NULL);
	}
	if (rc != SQLITE_OK)
		ferr_set(err, store_errno(rc) ? store_errno(rc) : -EIO,
			 "cannot copy %s: %s", store_path(st),
			 dst ? sqlite3_errmsg(dst) : sqlite3_errstr(rc));
	sqlite3_close(dst);
	return rc == SQLITE_OK ? 0 : store_errno(rc) ? store_errno(rc) : -EIO;
}

/* Data file `name` of `from` in `to`: a hard link, else a copy
 * (fcopy(): shared blocks, the kernel's copy, or read and write on
 * another file system). */
static int take_file(int from, int to, const char *name)
{
	int in, out, ret = 0;
	struct stat sb;

	if (linkat(from, name, to, name, 0) == 0)
		return 0;
	if (errno == ENOENT)
		return -ENOENT;
	in = openat(from, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (in < 0)
		return -errno;
	out = openat(to, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (out < 0 || fstat(in, &sb) < 0) {
		ret = -errno;
		goto out;
	}
	ret = fcopy(in, out, sb.st_size);
out:
	if (out >= 0)
		close(out);
	close(in);
	return ret;
}

/* Empty the folder `dirfd` of what an earlier try put there. */
static void empty_dir(int dirfd)
{
	int fd = dup(dirfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			unlinkat(dirfd, e->d_name, 0);
	closedir(d);
}

/* Every data file the copy at `part` names, into `to`: -ENOENT when one
 * is gone (deleted since the copy: try again). */
static int take_files(const char *part, int from, int to, struct ferr *err)
{
	static const char sql[] = "SELECT id FROM contents WHERE refs > 0";
	sqlite3 *db = NULL;
	sqlite3_stmt *q = NULL;
	int rc, ret = 0;

	rc = sqlite3_open_v2(part, &db, SQLITE_OPEN_READONLY, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(db, sql, -1, &q, NULL);
	while (rc == SQLITE_OK && !ret &&
	       (rc = sqlite3_step(q)) == SQLITE_ROW) {
		char name[24];

		snprintf(name, sizeof(name), "%lld",
			 (long long)sqlite3_column_int64(q, 0));
		ret = take_file(from, to, name);
		if (ret < 0 && ret != -ENOENT)
			ferr_set(err, ret, "cannot copy data file %s: %s",
				 name, strerror(-ret));
		rc = SQLITE_OK;
	}
	if (!ret && rc != SQLITE_OK && rc != SQLITE_DONE)
		ret = ferr_set(err, -EIO, "cannot read %s: %s", part,
			       sqlite3_errmsg(db));
	sqlite3_finalize(q);
	sqlite3_close(db);
	return ret;
}

int store_backup(struct store *st, const char *dest, struct ferr *err)
{
	char part[PATH_MAX], dir[PATH_MAX];
	int from = -1, to = -1, ret = 0;

	if (snprintf(part, sizeof(part), "%s.part", dest) >= (int)sizeof(part) ||
	    snprintf(dir, sizeof(dir), "%s.d", dest) >= (int)sizeof(dir))
		return ferr_set(err, -ENAMETOOLONG, "%s: name too long", dest);
	if (access(dest, F_OK) == 0 || access(dir, F_OK) == 0)
		return ferr_set(err, -EEXIST, "%s exists: a backup goes to a"
				" new name", access(dest, F_OK) == 0 ? dest : dir);
	if (mkdir(dir, 0700) < 0)
		return ferr_set(err, -errno, "cannot make %s: %s", dir,
				strerror(errno));
	from = open(contents_dir(store_contents(st)),
		    O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	to = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (from < 0 || to < 0) {
		ret = ferr_set(err, -errno, "cannot open %s: %s",
			       from < 0 ? contents_dir(store_contents(st)) : dir,
			       strerror(errno));
		goto out;
	}
	for (int tries = 0; tries < BACKUP_TRIES; tries++) {
		unlink(part);
		empty_dir(to);
		ret = copy_database(st, part, err);
		if (!ret)
			ret = take_files(part, from, to, err);
		if (ret != -ENOENT)
			break;
	}
	if (ret == -ENOENT)
		ferr_set(err, ret, "the store changed under every one of %d"
			 " tries; try again when it is quieter", BACKUP_TRIES);
	if (!ret && rename(part, dest) < 0)
		ret = ferr_set(err, -errno, "cannot rename %s to %s: %s", part,
			       dest, strerror(errno));
out:
	if (ret < 0) {
		unlink(part);
		if (to >= 0)
			empty_dir(to);
		rmdir(dir);
	}
	if (from >= 0)
		close(from);
	if (to >= 0)
		close(to);
	return ret;
}
