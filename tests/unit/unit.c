#include "unit.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <ftw.h>
#include <cmocka.h>
#include <string.h>
#include <errno.h>
#include <sys/stat.h>

#include "flowfs-config.h"

int unit_tmpdir(char *dir, size_t size, const char *what)
{
	if ((size_t)snprintf(dir, size, "/tmp/flowfs-unit-%s-XXXXXX", what) >= size)
		return -1;
	return mkdtemp(dir) ? 0 : -1;
}

static void write_file(const char *path, const char *data, size_t len)
{
	FILE *f = fopen(path, "wb");

	if (!f)
		fail_msg("cannot write %s: %s", path, strerror(errno));
	if (fwrite(data, 1, len, f) != len || fclose(f) != 0)
		fail_msg("cannot write %s", path);
}

void unit_keep_deck(const char *what, const char *deck, size_t len,
		    const char *notes)
{
	static unsigned counter;
	const char *dir = getenv("FLOWFS_DECK_DUMP");
	char path[4096];

	if (!dir || !*dir)
		return;
	counter++;
	snprintf(path, sizeof(path), "%s/%s-%u.dat", dir, what, counter);
	write_file(path, deck, len);
	snprintf(path, sizeof(path), "%s/%s-%u.notes", dir, what, counter);
	write_file(path, notes ? notes : "", notes ? strlen(notes) : 0);
}

static int remove_one(const char *path, const struct stat *sb, int flag,
		      struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

void unit_rmtree(const char *dir)
{
	nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

int64_t unit_sql_int(sqlite3 *db, const char *fmt, ...)
{
	char sql[1024];
	sqlite3_stmt *q = NULL;
	int64_t v = -12345;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(sql, sizeof(sql), fmt, ap);
	va_end(ap);
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &q, NULL), SQLITE_OK);
	if (sqlite3_step(q) == SQLITE_ROW)
		v = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	return v;
}

char *unit_read_shared(const char *path, size_t *len)
{
	/* the repo is where the built-in skills' source tree is */
	const char *src = FLOWFS_SOURCE_SKILLS;
	size_t n = strlen(src) - strlen("/core/skills");
	char full[1024];
	FILE *f;
	char *buf;
	long size;

	snprintf(full, sizeof(full), "%.*s/../shared/%s", (int)n, src, path);
	f = fopen(full, "rb");
	if (!f)
		return NULL;
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	size = ftell(f);
	assert_true(size >= 0);
	rewind(f);
	buf = malloc((size_t)size + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)size, f), (size_t)size);
	buf[size] = '\0';
	fclose(f);
	*len = (size_t)size;
	return buf;
}

int unit_db_open(const char *what, char *dir, char *path, struct store **st,
		 struct tree **t)
{
	*st = NULL;
	*t = NULL;
	if (unit_tmpdir(dir, 64, what) < 0)
		return -1;
	snprintf(path, 128, "%s/test.db", dir);
	if (store_open(st, path, NULL) < 0 || tree_new(t, *st) < 0) {
		unit_db_close(dir, *st, *t);
		*st = NULL;
		*t = NULL;
		return -1;
	}
	return 0;
}

void unit_db_close(const char *dir, struct store *st, struct tree *t)
{
	tree_free(t);
	store_close(st);
	unit_rmtree(dir);
}

void unit_db_reopen_after(const char *path, const char *undo,
			  struct store **st, struct tree **t)
{
	char *msg = NULL;

	if (sqlite3_exec(store_db(*st), undo, NULL, NULL, &msg) != SQLITE_OK)
		fail_msg("undo: %s", msg);
	tree_free(*t);
	store_close(*st);
	*t = NULL;
	*st = NULL;
	assert_int_equal(store_open(st, path, NULL), 0);
	assert_int_equal(tree_new(t, *st), 0);
}

void unit_put(const char *base, const char *rel, const char *text)
{
	char path[1024];
	FILE *f;

	if (snprintf(path, sizeof(path), "%s/%s", base, rel) >= (int)sizeof(path))
		fail_msg("path too long: %s/%s", base, rel);
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(path, 0755) < 0 && errno != EEXIST)
			fail_msg("mkdir %s: %s", path, strerror(errno));
		*p = '/';
	}
	f = fopen(path, "w");
	if (!f)
		fail_msg("write %s: %s", path, strerror(errno));
	fputs(text, f);
	fclose(f);
}

json_t *unit_json(const char *text)
{
	char *s = strdup(text);
	json_error_t e;
	json_t *v;

	assert_non_null(s);
	for (char *p = s; *p; p++)
		if (*p == '\'')
			*p = '"';
	v = json_loads(s, JSON_ALLOW_NUL | JSON_DECODE_ANY, &e);
	if (!v)
		fail_msg("bad test JSON: %s: %s", e.text, s);
	free(s);
	return v;
}
