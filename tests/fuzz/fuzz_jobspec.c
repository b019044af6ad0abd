/*
 * Fuzz target for jobspec (issue 16).  The bytes are a tool map and a
 * graph, two JSON texts separated by a NUL byte (without one: the whole
 * is the graph, under a built-in map).  The map's entries go through
 * jobspec_check_tool(); those it accepts make the map jobspec_plan()
 * sees (with a container runner when the first byte is odd), and every
 * job of a plan gets its script and sbatch flags.
 *
 * Checked apart from jobspec.c: a refused entry's message names it; a
 * refused plan leaves nothing and says why, and a cycle it names is one
 * (when no id holds " -> "); an accepted plan has a job per node in an
 * order where each comes after its deps, the same order as a naive Kahn
 * that takes the ready node listed first, deps sorted without repeats,
 * folder names unique, non-empty, made of [A-Za-z0-9._-] and not
 * starting with "."; argv NULL-terminated and within the bounds; out_
 * <label> first among the outputs, every output inside the job folder;
 * resources within the bounds; and the script's command line, read back
 * as bash would read the quoting it uses, is argv exactly, its first
 * word quoted.  Hostile values (issue 25): a job's image is none or an
 * image reference its map entry names (`image` or `images`); a command
 * argument of a tool without `options` reads as an option only when its
 * item's own text holds a "-"; and for every command item of an accepted
 * entry rendered with a node's inputs, where its argument begins is told
 * (jobspec_arg_origin() agrees with the template's lexer) unless the
 * argument holds nearly every byte the telling uses, and an argument said
 * to be the map's own comes from an item that holds a "-".
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/fjson.h"
#include "lib/template.h"
#include "graph/jobspec.h"
#include "graph/jobspec_i.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define RUN_DIR "/tmp/fuzz run"
#define NAIVE_MAX 64

static void die(const char *what, const char *detail)
{
	fprintf(stderr, "fuzz_jobspec: %s%s%s\n", what, detail ? ": " : "",
		detail ? detail : "");
	abort();
}

static const char builtin_tools[] =
	"{\"relax\": {\"image\": \"reg/abacus:3.8\", \"machine_type\":"
	" \"c2_m8_cpu\", \"command\": [\"abacus\", \"{{ structure }}\","
	" \"{{ job_dir }}/out\", \"{{ node.id }}\"], \"outputs\":"
	" {\"energy\": \"e.json\"}, \"resources\": {\"partition\": \"p\"}},"
	" \"gen\": {\"command\": [\"gen\", \"{{ inputs|tojson }}\"]}}";

static bool safe_byte(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

/* The node index of `id` in the graph's nodes, or -1. */
static long node_index(const json_t *nodes, const char *id)
{
	const json_t *n;
	size_t i;

	json_array_foreach(nodes, i, n)
		if (!strcmp(json_string_value(json_object_get(n, "id")), id))
			return (long)i;
	return -1;
}

/* Kahn's algorithm done naively: the ready node listed first. */
static void check_order(const json_t *graph, const struct jobspec_plan *p)
{
	const json_t *nodes = json_object_get(graph, "nodes");
	const json_t *edges = json_object_get(graph, "edges");
	size_t n = json_array_size(nodes), ne = json_array_size(edges);
	long *src = calloc(ne + 1, sizeof(*src)), *dst = calloc(ne + 1,
								  sizeof(*dst));
	bool *done = calloc(n, sizeof(*done));
	const json_t *e;
	size_t i;

	if (!src || !dst || !done)
		die("out of memory", NULL);
	json_array_foreach(edges, i, e) {
		src[i] = node_index(nodes, json_string_value(
			json_object_get(e, "source_node_id")));
		dst[i] = node_index(nodes, json_string_value(
			json_object_get(e, "target_node_id")));
		if (src[i] < 0 || dst[i] < 0)
			die("a plan with an edge to no node", NULL);
	}
	for (size_t k = 0; k < n; k++) {
		size_t pick = n;

		for (size_t c = 0; c < n && pick == n; c++) {
			bool ready = !done[c];

			for (size_t j = 0; ready && j < ne; j++)
				ready = !(dst[j] == (long)c && !done[src[j]]);
			if (ready)
				pick = c;
		}
		if (pick == n)
			die("a plan of a graph with a cycle", NULL);
		done[pick] = true;
		if (strcmp(p->jobs[k].node_id, json_string_value(json_object_get(
				json_array_get(nodes, pick), "id"))))
			die("the order is not the ready node listed first",
			    p->jobs[k].node_id);
	}
	free(src);
	free(dst);
	free(done);
}

/* Read back the words of bash quoting as jobspec writes it: bare words
 * and '...' with '\'' for a quote, separated by " \\\n  ", ended by "\n".
 * The number of words; *first_quoted: whether word 0 began with '. */
static size_t unquote(const char *s, char ***words, bool *first_quoted,
		      const char **end)
{
	size_t n = 0;
	char **w = NULL;

	for (;;) {
		struct sbuf word = SBUF_INIT;

		if (*s == '\'' && !n)
			*first_quoted = true;
		while (*s && *s != ' ' && *s != '\n') {
			if (*s == '\'') {
				const char *q = strchr(s + 1, '\'');

				if (!q)
					die("an unclosed quote in a script", s);
				sbuf_add(&word, s + 1, (size_t)(q - s - 1));
				s = q + 1;
			} else if (*s == '\\' && s[1] == '\'') {
				sbuf_addch(&word, '\'');
				s += 2;
			} else {
				if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGH"
					    "IJKLMNOPQRSTUVWXYZ0123456789_./=:,"
					    "@%+-", *s))
					die("a bare byte bash would read", s);
				sbuf_addch(&word, *s++);
			}
		}
		w = realloc(w, (n + 2) * sizeof(*w));
		if (!w)
			die("out of memory", NULL);
		w[n++] = sbuf_detach(&word, NULL);
		w[n] = NULL;
		if (!strncmp(s, " \\\n  ", 5)) {
			s += 5;
			continue;
		}
		if (*s != '\n')
			die("a command line ends oddly", s);
		*end = s + 1;
		break;
	}
	*words = w;
	return n;
}

static void check_script(const struct jobspec_plan *p, size_t i,
			 const struct jobspec_options *opt)
{
	const struct jobspec_job *j = &p->jobs[i];
	struct sbuf s = SBUF_INIT, q = SBUF_INIT;
	static const char started[] = "mv -f .flowfs-started.tmp "
		".flowfs-started\n";
	const char *cmd, *end;
	char **words, **flags;
	bool first_quoted = false;
	size_t n;

	if (jobspec_script(p, i, opt, &s) < 0)
		die("jobspec_script failed", j->node_id);
	if (strncmp(s.buf, "#!/bin/bash\n#SBATCH --job-name=flowfs-", 38))
		die("a script does not start as one", s.buf);
	/* no line the names make: every line starts as the script means */
	for (const char *l = s.buf; *l; l = strchr(l, '\n') + 1) {
		if (!strncmp(l, "#SBATCH --", 10)) {
			static const char *const keys[] = {
				"job-name=", "nodes=1\n", "ntasks=1\n",
				"cpus-per-task=", "mem=", "gres=gpu:", "time=",
				"partition=", NULL
			};
			int k = 0;

			while (keys[k] && strncmp(l + 10, keys[k],
						  strlen(keys[k])))
				k++;
			if (!keys[k])
				die("an #SBATCH line of no known flag", l);
			for (const char *c = l + 10; *c != '\n'; c++)
				if (!safe_byte(*c) && !strchr("=:", *c))
					die("an #SBATCH line with an odd byte", l);
		}
		if (!strchr(l, '\n'))
			die("a script does not end with a newline", l);
		/* from here on quoted words may hold newlines */
		if (!strncmp(l, "cd ", 3))
			break;
	}
	cmd = strstr(s.buf, started);
	if (!cmd)
		die("a script does not record its start", s.buf);
	n = unquote(cmd + strlen(started), &words, &first_quoted, &end);
	if (n != j->argc)
		die("a script's command has other words than argv", cmd);
	for (size_t a = 0; a < n; a++) {
		if (strcmp(words[a], j->argv[a]))
			die("a script's word is not its argv item", words[a]);
		free(words[a]);
	}
	free(words);
	if (!first_quoted)
		die("a script's first word is bare", cmd);
	if (strncmp(end, "code=$?\n", 8))
		die("a script does not take the command's code", end);
	/* jobspec_shell_quote alone round-trips too */
	for (size_t a = 0; a < j->argc; a++) {
		sbuf_reset(&q);
		if (jobspec_shell_quote(&q, j->argv[a]) < 0 ||
		    sbuf_addch(&q, '\n') < 0)
			die("jobspec_shell_quote failed", NULL);
		n = unquote(q.buf, &words, &first_quoted, &end);
		if (n != 1 || strcmp(words[0], j->argv[a]) || *end)
			die("a quoted word reads back different", q.buf);
		free(words[0]);
		free(words);
	}
	if (jobspec_sbatch_flags(p, i, &flags) < 0)
		die("jobspec_sbatch_flags failed", NULL);
	if (!flags[0] || !flags[1] || !flags[2] || flags[3] ||
	    strncmp(flags[0], "--chdir=", 8) || strcmp(flags[0] + 8, j->job_dir))
		die("sbatch flags are not the three", NULL);
	for (int k = 0; flags[k]; k++)
		free(flags[k]);
	free(flags);
	sbuf_release(&s);
	sbuf_release(&q);
}

/* The job's image: none, or a reference its tool's entry names. */
static void check_image(const struct jobspec_job *j, const json_t *tool)
{
	const json_t *list = json_object_get(tool, "images"), *v;
	const char *why;
	bool named = !strcmp(j->image, json_string_value(json_object_get(
		tool, "image")) ? json_string_value(json_object_get(tool,
		"image")) : "");
	size_t i;

	if (!*j->image)
		return;
	if (jobspec_image_check(j->image, &why) < 0)
		die("a job's image is no image reference", j->image);
	json_array_foreach(list, i, v)
		named = named || !strcmp(json_string_value(v), j->image);
	if (!named)
		die("a job's image is none its map entry names", j->image);
}

/* A tool without options: an argument reads as an option only when its
 * item's text holds a "-" (the map's own, or a number's). */
static void check_options(const struct jobspec_job *j, const json_t *tool)
{
	const json_t *cmd = json_object_get(tool, "command");
	size_t n = json_array_size(cmd), first = j->argc - n;

	if (json_object_get(tool, "options") || n > j->argc)
		return;
	for (size_t a = 0; a < n; a++)
		if (jobspec_is_option(j->argv[first + a]) &&
		    !strchr(json_string_value(json_array_get(cmd, a)), '-'))
			die("a node's value begins an option", j->argv[first + a]);
}

static size_t marks_held(const char *s, size_t len)
{
	static const char marks[] = "\x01\x02\x03\x04\x05\x06\x07\x08\x0e"
		"\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x7f";
	size_t n = 0;

	for (const char *m = marks; *m; m++)
		n += memchr(s, *m, len) != NULL;
	return n;
}

/* Each command item of each accepted entry a node uses, rendered with
 * that node's inputs: where an option it makes begins is told. */
static void check_origins(const json_t *graph, const json_t *good)
{
	const json_t *node;
	size_t i;

	json_array_foreach(json_object_get(graph, "nodes"), i, node) {
		const json_t *tool = json_object_get(good, json_string_value(
			json_object_get(node, "label")));
		const json_t *item, *par;
		json_t *ctx = json_object();
		size_t k;

		if (!ctx)
			die("out of memory", NULL);
		json_array_foreach(json_object_get(node, "input_parameters"), k,
				   par)
			if (json_is_string(json_object_get(par, "name")))
				json_object_set(ctx, json_string_value(
					json_object_get(par, "name")),
					json_object_get(par, "value") ?
					json_object_get(par, "value") :
					json_null());
		json_array_foreach(json_object_get(tool, "command"), k, item) {
			const char *text = json_string_value(item);
			struct tmpl *t = NULL;
			struct sbuf out = SBUF_INIT;
			char expr[200];
			int ret;

			if (tmpl_parse(&t, text, strlen(text), NULL) < 0 ||
			    tmpl_render(t, ctx, &out, NULL) < 0 ||
			    memchr(out.buf, '\0', out.len) ||
			    !jobspec_is_option(out.buf)) {
				tmpl_free(t);
				sbuf_release(&out);
				continue;
			}
			ret = jobspec_arg_origin(text, ctx, out.buf, out.len,
						 NULL, expr, sizeof(expr));
			if (ret == 1 && !*expr && marks_held(out.buf,
							     out.len) < 21)
				die("where an argument begins was not told",
				    text);
			if (ret == 0 && !strchr(text, '-'))
				die("an argument without the map's \"-\" is "
				    "called the map's", text);
			tmpl_free(t);
			sbuf_release(&out);
		}
		json_decref(ctx);
	}
}

static void check_plan(const json_t *graph, const struct jobspec_plan *p,
		       const struct jobspec_options *opt, const json_t *tools)
{
	const json_t *nodes = json_object_get(graph, "nodes");

	if (p->n != json_array_size(nodes) || !p->n)
		die("a plan has other than a job per node", NULL);
	for (size_t i = 0; i < p->n; i++) {
		const struct jobspec_job *j = &p->jobs[i];
		const char *name = j->job_dir + strlen(RUN_DIR "/");
		size_t total = 0;

		if (jobspec_find(p, j->node_id) != (long)i)
			die("jobspec_find does not find a job", j->node_id);
		for (size_t d = 0; d < j->ndeps; d++)
			if (j->deps[d] >= i || (d && j->deps[d] <= j->deps[d - 1]))
				die("deps not earlier, sorted and unique",
				    j->node_id);
		if (strncmp(j->job_dir, RUN_DIR "/", strlen(RUN_DIR "/")) ||
		    !*name || *name == '.')
			die("a job folder is not a name in run_dir", j->job_dir);
		for (const char *c = name; *c; c++)
			if (!safe_byte(*c))
				die("a job folder has an unsafe byte", j->job_dir);
		for (size_t k = 0; k < i; k++)
			if (!strcmp(p->jobs[k].job_dir, j->job_dir))
				die("two jobs share a folder", j->job_dir);
		if (!j->argc || j->argv[j->argc])
			die("argv is empty or not NULL-terminated", j->node_id);
		for (size_t a = 0; a < j->argc; a++)
			total += strlen(j->argv[a]) + 1;
		if (total > JOBSPEC_COMMAND_MAX)
			die("a command past JOBSPEC_COMMAND_MAX", j->node_id);
		if (!j->cpus || j->cpus > 4096 || j->gpus > 64 ||
		    j->memory_mib > 16777216 || j->time_minutes > 525600)
			die("resources out of bounds", j->node_id);
		if (!j->noutputs || strncmp(j->outputs[0].name, "out_", 4) ||
		    strcmp(j->outputs[0].name + 4, j->label))
			die("out_<label> is not the first output", j->node_id);
		for (size_t o = 0; o < j->noutputs; o++) {
			const char *path = j->outputs[o].path;
			size_t len = strlen(j->job_dir);

			if (strncmp(path, j->job_dir, len) ||
			    (path[len] && path[len] != '/') ||
			    strstr(path + len, "/../") || strstr(path + len, "//"))
				die("an output outside its job folder", path);
		}
		if (!json_is_object(j->inputs) || !j->image || !j->machine_type)
			die("a job lacks a field", j->node_id);
		check_image(j, json_object_get(tools, j->label));
		check_options(j, json_object_get(tools, j->label));
		check_script(p, i, opt);
	}
	if (p->n <= NAIVE_MAX && json_array_size(json_object_get(graph,
								  "edges")) <= 256)
		check_order(graph, p);
}

/* A cycle message "a -> b -> a": each arrow an edge of the graph. */
static void check_cycle(const json_t *graph, const char *msg)
{
	const json_t *nodes = json_object_get(graph, "nodes");
	const json_t *edges = json_object_get(graph, "edges");
	const json_t *v;
	char *copy, *at, *prev = NULL, *first = NULL;
	size_t i;

	json_array_foreach(nodes, i, v) {
		const char *id = json_string_value(json_object_get(v, "id"));

		if (!id || strstr(id, " -> ") || strstr(id, "..."))
			return;
	}
	if (strlen(msg) > 400)	/* may be cut */
		return;
	copy = strdup(msg + strlen("the graph has a cycle: "));
	if (!copy)
		die("out of memory", NULL);
	for (at = copy; at;) {
		char *next = strstr(at, " -> ");

		if (next) {
			*next = '\0';
			next += 4;
		}
		if (prev) {
			bool found = false;

			json_array_foreach(edges, i, v)
				found = found || (!strcmp(json_string_value(
					json_object_get(v, "source_node_id")), prev) &&
					!strcmp(json_string_value(json_object_get(
					v, "target_node_id")), at));
			if (!found)
				die("a cycle message names no edge", msg);
		} else {
			first = at;
		}
		prev = at;
		at = next;
	}
	if (!prev || prev == first || strcmp(prev, first))
		die("a cycle message does not come back", msg);
	free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const runner[] = {
		"apptainer", "exec", "--bind", "{{ job_dir }}",
		"docker://{{ image }}", NULL
	};
	struct jobspec_options opt = {
		.session = "fuzz sess'ion\n", .run_dir = RUN_DIR,
		.container = size && (data[0] & 1) ? runner : NULL,
		.tools_path = "tools.json",
	};
	const char *text = (const char *)data;
	const uint8_t *nul = memchr(data, 0, size);
	json_t *tools = NULL, *graph = NULL, *good = json_object();
	struct jobspec_plan p;
	struct ferr err = FERR_INIT;
	int ret;

	if (!good)
		return 0;
	if (nul) {
		if (fjson_parse(&tools, text, (size_t)(nul - data), NULL) < 0)
			tools = NULL;
		if (fjson_parse(&graph, (const char *)nul + 1,
				size - (size_t)(nul - data) - 1, NULL) < 0)
			graph = NULL;
	} else {
		if (fjson_parse(&tools, builtin_tools, strlen(builtin_tools),
				NULL) < 0)
			die("the built-in tool map does not parse", NULL);
		if (fjson_parse(&graph, text, size, NULL) < 0)
			graph = NULL;
	}
	if (json_is_object(tools)) {
		const char *label;
		json_t *entry;

		json_object_foreach(tools, label, entry) {
			char want[FERR_MESSAGE_MAX];

			ferr_clear(&err);
			ret = jobspec_check_tool(label, entry, &err);
			if (!ret) {
				if (json_object_set(good, label, entry) < 0)
					die("out of memory", NULL);
				continue;
			}
			if (ret != -EINVAL && ret != -ENOMEM)
				die("jobspec_check_tool: an odd return", NULL);
			/* "\"relax\": ..." or "\"relax.image\" ..." */
			snprintf(want, sizeof(want), "\"%s", label);
			if (ret == -EINVAL &&
			    (strncmp(err.message, want, strlen(want)) ||
			     !err.message[strlen(want)] ||
			     !strchr("\".", err.message[strlen(want)])))
				die("a refusal does not name its entry",
				    err.message);
		}
	}
	if (graph) {
		ferr_clear(&err);
		ret = jobspec_plan(graph, good, &opt, &p, &err);
		/* to see what a corpus input does */
		if (getenv("FUZZ_JOBSPEC_VERBOSE"))
			fprintf(stderr, "plan: %d %s (%zu jobs)\n", ret,
				err.message, ret ? 0 : p.n);
		check_origins(graph, good);
		if (!ret) {
			check_plan(graph, &p, &opt, good);
			jobspec_plan_release(&p);
		} else {
			if (ret != -EINVAL && ret != -E2BIG && ret != -ENOMEM)
				die("jobspec_plan: an odd return", NULL);
			if (p.jobs || p.n)
				die("a refused plan left jobs", NULL);
			if (ret != -ENOMEM && !*err.message)
				die("a refused plan says nothing", NULL);
			if (!strncmp(err.message, "the graph has a cycle: ", 23))
				check_cycle(graph, err.message);
		}
	}
	json_decref(tools);
	json_decref(graph);
	json_decref(good);
	return 0;
}
