/*
 * tools: the tool map ($XDG_CONFIG_HOME/flowfs/tools.json), which says
 * how each node label runs:
 *
 *   {"<label>": {"image": "...", "images": [...], "machine_type": "...",
 *                "command": [...], "options": [...], "outputs": {...},
 *                "resources": {...}}}
 *
 * every field optional; each entry is checked by jobspec_check_tool()
 * (jobspec.h says what each field means: `images` the other images a
 * node may name, `options` the parameters whose value may begin an
 * argument with "-").  A node takes its label's image
 * and machine type when it names none (graph.h); a submit and the exports
 * take the commands (jobspec.h).
 */
#ifndef FLOWFS_GRAPH_TOOLS_H
#define FLOWFS_GRAPH_TOOLS_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "lib/ferr.h"

struct graph_tools;

/* Read a tool map; a missing file is an empty map.  -EINVAL + err for a
 * file that is not such an object, naming the file. */
int graph_tools_load(const char *path, struct graph_tools **out,
		     struct ferr *err);
void graph_tools_free(struct graph_tools *tools);
/* The map as read (an object; NULL for NULL). */
const json_t *graph_tools_map(const struct graph_tools *tools);
/* The entry of `label`, or NULL (none, or no map). */
const json_t *graph_tools_entry(const struct graph_tools *tools,
				const char *label);

/*
 * The map of a file a person edits while flowfs runs: read again when the
 * file's time changes, at the cost of a stat() a call.  A file that cannot
 * be used is an empty map, and `err` of graph_toolfile_get() says why
 * until it is mended.  While `pins` is not zero (a user holds the map
 * outside the caller's lock) the map is kept as it is.  The owner
 * zero-fills it, sets `path`, serializes its calls, and calls
 * graph_toolfile_release() at the end.
 */
struct graph_toolfile {
	const char *path;
	struct graph_tools *tools;
	int64_t mtime_ns;	/* of the file as read; 0: missing */
	struct ferr err;	/* why `tools` is empty, when it is */
	unsigned pins;
};

/*
 * The current map (never NULL but out of memory): *err says why it is
 * empty when it is (err may be NULL).  *fresh_error (may be NULL) is set
 * when this call read the file and it could not be used: said once per
 * change of the file, by the caller, where a person looks.
 */
const struct graph_tools *graph_toolfile_get(struct graph_toolfile *tf,
					     struct ferr *err,
					     bool *fresh_error);
void graph_toolfile_release(struct graph_toolfile *tf);

#endif
