/*
 * Unit tests for core/graph/tools: the tool map kept for a file a person
 * edits while flowfs runs (graph_toolfile_get): read once per change of
 * the file's time, an unusable file an empty map with its reason (said
 * once, fresh), nothing replaced while pinned.  What an entry may hold is
 * test_graph.c's and test_jobspec.c's.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <unistd.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <setjmp.h>
#include <cmocka.h>

#include "graph/tools.h"
#include "unit.h"

struct fixture {
	char dir[64];
	char path[128];
	struct graph_toolfile tf;
};

static int setup(void **state)
{
	static struct fixture fx;

	memset(&fx, 0, sizeof(fx));
	if (unit_tmpdir(fx.dir, sizeof(fx.dir), "tools") < 0)
		return -1;
	snprintf(fx.path, sizeof(fx.path), "%s/tools.json", fx.dir);
	fx.tf.path = fx.path;
	*state = &fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	graph_toolfile_release(&fx->tf);
	unit_rmtree(fx->dir);
	return 0;
}

/* Write the map with mtime `sec` (so a change is seen within a second). */
static void write_map(struct fixture *fx, const char *text, time_t sec)
{
	struct timespec times[2] = { { sec, 0 }, { sec, 0 } };

	unit_put(fx->dir, "tools.json", text);
	assert_int_equal(utimensat(AT_FDCWD, fx->path, times, 0), 0);
}

static bool has_label(const struct graph_tools *t, const char *label)
{
	return graph_tools_entry(t, label) != NULL;
}

static void test_missing_file_is_an_empty_map(void **state)
{
	struct fixture *fx = *state;
	struct ferr err = FERR_INIT;
	bool fresh = true;
	const struct graph_tools *t = graph_toolfile_get(&fx->tf, &err, &fresh);

	assert_non_null(t);
	assert_false(fresh);
	assert_string_equal(err.message, "");
	assert_int_equal(json_object_size(graph_tools_map(t)), 0);
	assert_null(graph_tools_entry(t, "x"));
	assert_null(graph_tools_entry(NULL, "x"));
}

static void test_read_again_when_the_file_changes(void **state)
{
	struct fixture *fx = *state;
	struct ferr err = FERR_INIT;
	const struct graph_tools *t, *again;
	bool fresh;

	write_map(fx, "{\"a\": {\"image\": \"i\"}}", 1000);
	t = graph_toolfile_get(&fx->tf, &err, &fresh);
	assert_true(has_label(t, "a"));
	/* the same time: the same map, not read again */
	again = graph_toolfile_get(&fx->tf, NULL, NULL);
	assert_ptr_equal(again, t);
	write_map(fx, "{\"b\": {\"image\": \"i\"}}", 1001);
	t = graph_toolfile_get(&fx->tf, &err, &fresh);
	assert_false(has_label(t, "a"));
	assert_true(has_label(t, "b"));
	assert_false(fresh);
	/* removed: empty again, no reason to give */
	assert_int_equal(unlink(fx->path), 0);
	t = graph_toolfile_get(&fx->tf, &err, &fresh);
	assert_false(has_label(t, "b"));
	assert_string_equal(err.message, "");
}

static void test_a_broken_file_is_said_once(void **state)
{
	struct fixture *fx = *state;
	struct ferr err = FERR_INIT;
	const struct graph_tools *t;
	bool fresh;

	write_map(fx, "{\"a\": {\"image\": \"i\"}}", 1000);
	graph_toolfile_get(&fx->tf, NULL, NULL);
	write_map(fx, "[1, 2]", 1001);
	t = graph_toolfile_get(&fx->tf, &err, &fresh);
	assert_true(fresh);
	assert_non_null(strstr(err.message, "must be a JSON object"));
	assert_non_null(strstr(err.message, fx->path));
	/* the old map is not kept: an unusable file is an empty map */
	assert_false(has_label(t, "a"));
	/* asked again: the reason stays, but is no news */
	t = graph_toolfile_get(&fx->tf, &err, &fresh);
	assert_false(fresh);
	assert_non_null(strstr(err.message, "must be a JSON object"));
	/* mended */
	write_map(fx, "{\"c\": {}}", 1002);
	t = graph_toolfile_get(&fx->tf, &err, &fresh);
	assert_false(fresh);
	assert_string_equal(err.message, "");
	assert_true(has_label(t, "c"));
}

static void test_a_pinned_map_is_kept(void **state)
{
	struct fixture *fx = *state;
	const struct graph_tools *t, *pinned;

	write_map(fx, "{\"a\": {}}", 1000);
	pinned = graph_toolfile_get(&fx->tf, NULL, NULL);
	fx->tf.pins++;
	write_map(fx, "{\"b\": {}}", 1001);
	t = graph_toolfile_get(&fx->tf, NULL, NULL);
	assert_ptr_equal(t, pinned);
	assert_true(has_label(t, "a"));
	fx->tf.pins--;
	t = graph_toolfile_get(&fx->tf, NULL, NULL);
	assert_true(has_label(t, "b"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_missing_file_is_an_empty_map,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_read_again_when_the_file_changes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_broken_file_is_said_once,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_a_pinned_map_is_kept,
						setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
