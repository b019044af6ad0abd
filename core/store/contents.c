/* contents: the data files beside the database and their counts; see
 * contents.h. */
#include "store/contents.h"

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
static int int_of(struct store *st, const char *sql, int64_t *out);

struct contents {
	int dirfd;
	char *dir;
	bool reserved;		/* RESERVE_NAME holds CONTENTS_RESERVE */
};

#define RESERVE_NAME "reserve"

int contents_open(struct contents **out, const char *db_path,
		  struct ferr *err)
{
	struct contents *c;
	struct stat sb;
	int ret;

	*out = NULL;
	c = calloc(1, sizeof(*c));
	if (!c || asprintf(&c->dir, "%s.d", db_path) < 0) {
		free(c);
		return ferr_set(err, -ENOMEM, "out of memory");
	}
	c->dirfd = -1;
	if (mkdir(c->dir, 0700) < 0 && errno != EEXIST) {
		ret = ferr_set(err, -errno, "cannot make %s, where the contents"
			       " of large files are kept: %s", c->dir,
			       strerror(errno));
		goto fail;
	}
	c->dirfd = open(c->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC |
			O_NOFOLLOW);
	if (c->dirfd < 0 || fstat(c->dirfd, &sb) < 0) {
		ret = ferr_set(err, -errno, "cannot open %s: %s", c->dir,
			       strerror(errno));
		goto fail;
	}
	if (sb.st_mode & 077) {
		ret = ferr_set(err, -EPERM, "%s (the contents of large files)"
			       " may be read by other users (mode %04o):"
			       " chmod 700 %s", c->dir,
			       (unsigned)(sb.st_mode & 07777), c->dir);
		goto fail;
	}
	*out = c;
	return 0;
fail:
	contents_close(c);
	return ret;
}

void contents_close(struct contents *c)
{
	if (!c)
		return;
	if (c->dirfd >= 0)
		close(c->dirfd);
	free(c->dir);
	free(c);
}

const char *contents_dir(const struct contents *c)
{
	return c->dir;
}

static void name_of(int64_t id, char name[24])
{
	snprintf(name, 24, "%lld", (long long)id);
}

int contents_reserve(struct contents *c)
{
	int fd, ret = 0;

	if (c->reserved)
		return 0;
	fd = openat(c->dirfd, RESERVE_NAME, O_RDWR | O_CREAT | O_CLOEXEC |
		    O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	/* blocks of its own, not a hole: what it holds is held */
	if (fallocate(fd, 0, 0, CONTENTS_RESERVE) < 0)
		ret = -errno;
	close(fd);
	if (ret < 0)
		unlinkat(c->dirfd, RESERVE_NAME, 0);
	else
		c->reserved = true;
	return ret;
}

bool contents_unreserve(struct contents *c)
{
	if (!c->reserved)
		return false;
	c->reserved = false;
	return unlinkat(c->dirfd, RESERVE_NAME, 0) == 0;
}

bool contents_reserved(const struct contents *c)
{
	return c->reserved;
}

int contents_create(struct contents *c, int64_t id)
{
	char name[24];
	int fd;

	name_of(id, name);
	fd = openat(c->dirfd, name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC |
		    O_NOFOLLOW, 0600);
	return fd < 0 ? -errno : fd;
}

int contents_open_file(struct contents *c, int64_t id, bool ro)
{
	char name[24];
	int fd;

	name_of(id, name);
	fd = openat(c->dirfd, name, (ro ? O_RDONLY : O_RDWR) | O_CLOEXEC |
		    O_NOFOLLOW);
	return fd < 0 ? -errno : fd;
}

int contents_remove(struct contents *c, int64_t id)
{
	char name[24];

	name_of(id, name);
	if (unlinkat(c->dirfd, name, 0) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

int contents_copy(struct contents *c, int src_fd, int64_t len, int64_t id)
{
	int fd = contents_create(c, id), ret;

	if (fd < 0)
		return fd;
	ret = fcopy(src_fd, fd, len);
	if (ret < 0) {
		close(fd);
		contents_remove(c, id);
		return ret;
	}
	return fd;
}

int64_t contents_allocated(int fd)
{
	struct stat sb;

	if (fstat(fd, &sb) < 0)
		return -errno;
	return (int64_t)sb.st_blocks * 512;
}

/* A file name that is a content's number, or -1. */
static int64_t id_of(const char *name)
{
	char *end;
	long long v;

	if (name[0] < '1' || name[0] > '9')
		return -1;
	errno = 0;
	v = strtoll(name, &end, 10);
	return *end || errno ? -1 : (int64_t)v;
}

int contents_sweep(struct contents *c, struct store *st)
{
	static const char list[] = "SELECT id FROM contents WHERE refs <= 0"
		" LIMIT 256";
	static const char del[] = "DELETE FROM contents WHERE id = ?1"
		" AND refs <= 0";
	int64_t ids[256];
	size_t n = 0;
	sqlite3_stmt *q = store_stmt(st, list);
	int rc, ret;

	if (!q)
		return -EIO;
	while ((rc = sqlite3_step(q)) == SQLITE_ROW && n < 256)
		ids[n++] = sqlite3_column_int64(q, 0);
	store_done(q);
	if (rc != SQLITE_DONE && rc != SQLITE_ROW)
		return store_errno(rc);
	if (!n)
		return 0;
	/* the files first: a row left by a crash here is swept again */
	for (size_t i = 0; i < n; i++)
		contents_remove(c, ids[i]);
	ret = store_begin(st);
	for (size_t i = 0; i < n && !ret; i++)
		ret = store_run(st, del, STORE_INT(ids[i]));
	if (ret < 0) {
		store_rollback(st);
		return ret;
	}
	return store_commit(st);
}

bool contents_sweep_due(struct store *st)
{
	static const char sql[] = "SELECT EXISTS (SELECT 1 FROM contents"
		" WHERE refs <= 0)";
	int64_t due = 0;

	return int_of(st, sql, &due) == 0 && due;
}

int contents_refs(struct store *st, int64_t id, int64_t *refs)
{
	static const char sql[] = "SELECT refs FROM contents WHERE id = ?1";
	int ret = store_int(st, sql, refs, STORE_INT(id));

	if (ret == -ENOENT) {
		*refs = 0;
		ret = 0;
	}
	return ret;
}

int contents_space(struct contents *c, struct store *st, int64_t *bytes)
{
	/* a shared content counts once, at its largest size */
	static const char sql[] = "SELECT coalesce(sum(s), 0) FROM"
		" (SELECT max(size) AS s FROM inodes WHERE content IS NOT NULL"
		" GROUP BY content)";

	(void)c;
	*bytes = 0;
	return int_of(st, sql, bytes);
}

/* The first column of the one row of `sql`, which binds nothing. */
static int int_of(struct store *st, const char *sql, int64_t *out)
{
	sqlite3_stmt *q = store_stmt(st, sql);
	int rc;

	if (!q)
		return -EIO;
	rc = sqlite3_step(q);
	if (rc == SQLITE_ROW)
		*out = sqlite3_column_int64(q, 0);
	store_done(q);
	return rc == SQLITE_ROW ? 0 : rc == SQLITE_DONE ? -ENOENT
							: store_errno(rc);
}

/* Whether content `id` has a row (a count, 0 or more). */
static int has_row(struct store *st, int64_t id, bool *has)
{
	static const char sql[] = "SELECT EXISTS (SELECT 1 FROM contents"
		" WHERE id = ?1)";
	int64_t any = 0;
	int ret = store_int(st, sql, &any, STORE_INT(id));

	*has = any != 0;
	return ret;
}

/* Remove the files no row names; *max_id: the largest number seen. */
static int sweep_orphans(struct contents *c, struct store *st,
			 int64_t *max_id)
{
	int fd = dup(c->dirfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;
	int ret = 0;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	while (!ret && (e = readdir(d))) {
		int64_t id = id_of(e->d_name);
		bool has;

		if (id < 0)
			continue;
		if (id > *max_id)
			*max_id = id;
		ret = has_row(st, id, &has);
		if (!ret && !has)
			ret = contents_remove(c, id);
	}
	closedir(d);
	return ret;
}

int contents_check(struct contents *c, struct store *st,
		   contents_report_fn report, void *ctx)
{
	static const char sql[] = "SELECT content, max(size),"
		" max(coalesce(session, 0)) FROM inodes"
		" WHERE content IS NOT NULL GROUP BY content";
	sqlite3_stmt *q = store_stmt(st, sql);
	int rc, found = 0;

	if (!q)
		return -EIO;
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(q, 0);
		int64_t size = sqlite3_column_int64(q, 1);
		int64_t session = sqlite3_column_int64(q, 2);
		char name[24], line[PATH_MAX + 160];
		struct stat sb;

		name_of(id, name);
		if (fstatat(c->dirfd, name, &sb, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(sb.st_mode) && sb.st_size >= size)
			continue;
		found++;
		if (!report)
			continue;
		if (fstatat(c->dirfd, name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
			snprintf(line, sizeof(line), "damaged: the data file"
				 " %s/%s is missing (%lld bytes lost)",
				 c->dir, name, (long long)size);
		else
			snprintf(line, sizeof(line), "damaged: the data file"
				 " %s/%s holds %lld bytes of %lld (the rest"
				 " reads short)", c->dir, name,
				 (long long)sb.st_size, (long long)size);
		report(ctx, session, line);
	}
	store_done(q);
	return rc == SQLITE_DONE ? found : store_errno(rc);
}

/* Each row of `sql` (an id, a text), reported: how many. */
static int report_rows(struct store *st, const char *sql, const char *fmt,
		       contents_report_fn report, void *ctx)
{
	sqlite3_stmt *q = store_stmt(st, sql);
	int rc, n = 0;

	if (!q)
		return -EIO;
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		char line[512];
		const char *text = (const char *)sqlite3_column_text(q, 1);

		snprintf(line, sizeof(line), fmt,
			 (long long)sqlite3_column_int64(q, 0), text ? text : "");
		if (report)
			report(ctx, 0, line);
		n++;
	}
	store_done(q);
	return rc == SQLITE_DONE ? n : store_errno(rc);
}

int contents_verify(struct contents *c, struct store *st,
		    contents_report_fn report, void *ctx)
{
	static const char integrity[] = "SELECT 0, quick_check"
		" FROM pragma_quick_check WHERE quick_check <> 'ok'";
	static const char counts[] = "SELECT id, 'counted ' || refs ||"
		" ' times, named by ' || n || ' rows' FROM (SELECT id, refs,"
		" (SELECT count(*) FROM inodes WHERE content = contents.id) AS n"
		" FROM contents) WHERE refs > 0 AND refs <> n";
	static const char unknown[] = "SELECT content, 'inode ' ||"
		" group_concat(ino, ', ') FROM inodes WHERE content IS NOT NULL"
		" AND content NOT IN (SELECT id FROM contents) GROUP BY content";
	static const char both[] = "SELECT ino, '' FROM inodes i"
		" WHERE content IS NOT NULL"
		" AND EXISTS (SELECT 1 FROM chunks WHERE ino = i.ino)";
	int n, total = 0;

	n = report_rows(st, integrity, "the database: %lld%s", report, ctx);
	if (n < 0)
		return n;
	total += n;
	n = report_rows(st, counts, "content %lld is miscounted: %s",
			report, ctx);
	if (n < 0)
		return n;
	total += n;
	n = report_rows(st, unknown, "content %lld is named (%s) but not"
			" counted", report, ctx);
	if (n < 0)
		return n;
	total += n;
	n = report_rows(st, both, "inode %lld has both a data file and"
			" chunk rows%s", report, ctx);
	if (n < 0)
		return n;
	total += n;
	n = contents_check(c, st, report, ctx);
	return n < 0 ? n : total + n;
}

int contents_orphans(struct contents *c, struct store *st,
		     contents_report_fn report, void *ctx)
{
	int fd = dup(c->dirfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;
	int n = 0, ret = 0;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	while (!ret && (e = readdir(d))) {
		int64_t id = id_of(e->d_name);
		char line[PATH_MAX + 96];
		bool has;

		if (id < 0)
			continue;
		ret = has_row(st, id, &has);
		if (ret < 0 || has)
			continue;
		snprintf(line, sizeof(line), "%s/%s is no content's (left by a"
			 " crash: the next mount removes it)", c->dir,
			 e->d_name);
		if (report)
			report(ctx, 0, line);
		n++;
	}
	closedir(d);
	return ret < 0 ? ret : n;
}

int contents_mount_sweep(struct contents *c, struct store *st,
			 int64_t *next_id)
{
	static const char max_sql[] = "SELECT coalesce(max(id), 0)"
		" FROM contents";
	int64_t max_id = 0, max_row = 0;
	int ret;

	/* the unused contents first: their files then are orphans too */
	do
		ret = contents_sweep(c, st);
	while (!ret && contents_sweep_due(st));
	if (!ret)
		ret = sweep_orphans(c, st, &max_id);
	if (!ret)
		ret = int_of(st, max_sql, &max_row);
	*next_id = (max_row > max_id ? max_row : max_id) + 1;
	return ret;
}
