/* tools: the tool map, read from its file and checked; see tools.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "graph/jobspec.h"
#include "graph/tools.h"
#include "lib/fjson.h"

struct graph_tools {
	json_t *map;	/* {"<label>": {...}}, each checked by jobspec */
};

int graph_tools_load(const char *path, struct graph_tools **out,
		     struct ferr *err)
{
	struct graph_tools *t;
	json_t *map = NULL;
	const char *label;
	json_t *entry;
	FILE *f;
	struct sbuf text = SBUF_INIT;
	int ret = 0;

	*out = NULL;
	f = fopen(path, "rb");
	if (!f && errno != ENOENT)
		return ferr_set(err, -errno, "cannot read %s: %s", path,
				strerror(errno));
	if (f) {
		ret = sbuf_read(&text, f);
		if (ret == -EIO)
			ferr_set(err, ret, "cannot read %s", path);
		fclose(f);
		if (!ret)
			ret = fjson_parse(&map, text.buf, text.len, err);
		if (ret < 0)
			goto out;
		if (!json_is_object(map)) {
			ret = ferr_set(err, -EINVAL,
				       "%s must be a JSON object {\"<label>\": {\"command\": [...], \"image\": ..., ...}}",
				       path);
			goto out;
		}
		json_object_foreach(map, label, entry) {
			ret = jobspec_check_tool(label, entry, err);
			if (ret < 0) {
				/* the file's name before the entry's words */
				char why[FERR_MESSAGE_MAX];

				snprintf(why, sizeof(why), "%s",
					 err ? err->message : "");
				if (err)
					ferr_set(err, ret, "%s: %s", path, why);
				goto out;
			}
		}
	} else {
		map = json_object();
		if (!map) {
			ret = -ENOMEM;
			goto out;
		}
	}
	t = malloc(sizeof(*t));
	if (!t) {
		ret = -ENOMEM;
		goto out;
	}
	t->map = map;
	map = NULL;
	*out = t;
out:
	json_decref(map);
	sbuf_release(&text);
	return ret;
}

const json_t *graph_tools_map(const struct graph_tools *tools)
{
	return tools ? tools->map : NULL;
}

void graph_tools_free(struct graph_tools *tools)
{
	if (!tools)
		return;
	json_decref(tools->map);
	free(tools);
}

const json_t *graph_tools_entry(const struct graph_tools *tools,
				const char *label)
{
	return tools && label ? json_object_get(tools->map, label) : NULL;
}

const struct graph_tools *graph_toolfile_get(struct graph_toolfile *tf,
					     struct ferr *err,
					     bool *fresh_error)
{
	struct graph_tools *fresh = NULL;
	struct ferr why = FERR_INIT;
	struct stat st;
	int64_t mtime = 0;

	if (fresh_error)
		*fresh_error = false;
	if (stat(tf->path, &st) == 0)
		mtime = (int64_t)st.st_mtim.tv_sec * 1000000000 +
			st.st_mtim.tv_nsec;
	if ((!tf->tools || mtime != tf->mtime_ns) &&
	    !(tf->tools && tf->pins)) {
		if (graph_tools_load(tf->path, &fresh, &why) < 0) {
			if (fresh_error)
				*fresh_error = true;
			/* used as empty until mended */
			graph_tools_load("/nonexistent/flowfs-tools.json",
					 &fresh, NULL);
		}
		if (fresh) {
			graph_tools_free(tf->tools);
			tf->tools = fresh;
			tf->mtime_ns = mtime;
			tf->err = why;
		}
	}
	if (err)
		*err = tf->err;
	return tf->tools;
}

void graph_toolfile_release(struct graph_toolfile *tf)
{
	graph_tools_free(tf->tools);
	tf->tools = NULL;
}
