#include "unit.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <ftw.h>
#include <cmocka.h>

int unit_tmpdir(char *dir, size_t size, const char *what)
{
	if ((size_t)snprintf(dir, size, "/tmp/flowfs-unit-%s-XXXXXX", what) >= size)
		return -1;
	return mkdtemp(dir) ? 0 : -1;
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
