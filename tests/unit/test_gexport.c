/*
 * Unit tests for gexport: plans made by hand (the exports read nothing
 * but the plan) written as an Argo Workflow and as a Slurm submit
 * script.  The YAML is read back by a real parser (PyYAML, through
 * /usr/bin/python3) so its quoting is checked for real, and one small
 * plan's YAML is compared whole with text written by hand; the script
 * is checked by `bash -n` and run for real against a fake sbatch.  The
 * Argo schema itself: tests/integration/test_argo_schema.py.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/fjson.h"
#include "graph/gexport.h"
#include "unit.h"

/* ---- plans by hand ------------------------------------------------------ */

struct tjob {
	const char *id, *label, *image;
	const char *argv[16];
	unsigned cpus, gpus, minutes;
	unsigned long mem;
	const char *inputs;	/* a JSON object's text, NULL: {} */
	size_t deps[8];		/* 1-based job numbers, 0 ends */
	const char *dir;	/* the folder's name, NULL: the id */
};

static char *xdup(const char *s)
{
	char *d = strdup(s);

	assert_non_null(d);
	return d;
}

static void make_plan(struct jobspec_plan *plan, const struct tjob *tj,
		      size_t n, const char *run_dir)
{
	plan->n = n;
	plan->jobs = calloc(n, sizeof(*plan->jobs));
	assert_non_null(plan->jobs);
	for (size_t i = 0; i < n; i++) {
		struct jobspec_job *j = &plan->jobs[i];
		const char *text = tj[i].inputs ? tj[i].inputs : "{}";
		char path[1024];

		j->node_id = xdup(tj[i].id);
		j->label = xdup(tj[i].label ? tj[i].label : "tool");
		snprintf(path, sizeof(path), "%s/%s", run_dir,
			 tj[i].dir ? tj[i].dir : tj[i].id);
		j->job_dir = xdup(path);
		j->image = xdup(tj[i].image ? tj[i].image : "");
		j->machine_type = xdup("");
		while (tj[i].argv[j->argc])
			j->argc++;
		j->argv = calloc(j->argc + 1, sizeof(*j->argv));
		assert_non_null(j->argv);
		for (size_t a = 0; a < j->argc; a++)
			j->argv[a] = xdup(tj[i].argv[a]);
		j->cpus = tj[i].cpus ? tj[i].cpus : 1;
		j->memory_mib = tj[i].mem;
		j->gpus = tj[i].gpus;
		j->time_minutes = tj[i].minutes;
		while (tj[i].deps[j->ndeps])
			j->ndeps++;
		j->deps = calloc(j->ndeps + 1, sizeof(*j->deps));
		assert_non_null(j->deps);
		for (size_t d = 0; d < j->ndeps; d++)
			j->deps[d] = tj[i].deps[d] - 1;
		assert_int_equal(fjson_parse(&j->inputs, text, strlen(text),
					     NULL), 0);
	}
}

static const struct jobspec_options argo_opt = {
	.session = "demo", .run_dir = "/work", .tools_path = "tools.json",
};

static char *argo_text(const struct jobspec_plan *plan,
		       const struct jobspec_options *opt)
{
	struct sbuf sb = SBUF_INIT;
	struct ferr err = FERR_INIT;

	assert_int_equal(gexport_argo(plan, opt, &sb, &err), 0);
	return sbuf_detach(&sb, NULL);
}

/* ---- PyYAML ------------------------------------------------------------- */

static void put_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

/* `yaml` as PyYAML's safe_load reads it, through JSON. */
static json_t *yaml_load(const char *yaml)
{
	char dir[64], path[128], cmd[512];
	struct sbuf sb = SBUF_INIT;
	json_t *doc = NULL;
	struct ferr err = FERR_INIT;
	FILE *p;

	assert_int_equal(unit_tmpdir(dir, sizeof(dir), "gexport-yaml"), 0);
	snprintf(path, sizeof(path), "%s/w.yaml", dir);
	put_file(path, yaml);
	snprintf(cmd, sizeof(cmd), "/usr/bin/python3 -c 'import yaml, json, "
		 "sys; print(json.dumps(yaml.safe_load(open(sys.argv[1], "
		 "encoding=\"utf-8\")), ensure_ascii=False))' %s", path);
	p = popen(cmd, "r");
	assert_non_null(p);
	assert_int_equal(sbuf_read(&sb, p), 0);
	assert_int_equal(pclose(p), 0);
	if (fjson_parse(&doc, sb.buf, sb.len, &err) < 0)
		fail_msg("PyYAML's JSON: %s", err.message);
	sbuf_release(&sb);
	unit_rmtree(dir);
	return doc;
}

static const char *jstr(const json_t *doc, const char *path)
{
	json_t *v = json_object_get(doc, path);

	if (!json_is_string(v))
		fail_msg("%s is not a string", path);
	return json_string_value(v);
}

/* spec.templates[k] */
static json_t *tmpl(const json_t *doc, size_t k)
{
	json_t *t = json_array_get(json_object_get(json_object_get(doc, "spec"),
						   "templates"), k);

	assert_non_null(t);
	return t;
}

/* spec.templates[0].dag.tasks[k] */
static json_t *task(const json_t *doc, size_t k)
{
	json_t *t = json_array_get(json_object_get(json_object_get(
			tmpl(doc, 0), "dag"), "tasks"), k);

	assert_non_null(t);
	return t;
}

static json_t *container(const json_t *doc, size_t k)
{
	json_t *c = json_object_get(tmpl(doc, k), "container");

	assert_non_null(c);
	return c;
}

static void assert_json(const json_t *v, const char *text)
{
	json_t *want;

	assert_int_equal(fjson_parse(&want, text, strlen(text), NULL), 0);
	if (!json_equal(v, want)) {
		char *got = fjson_dumps(v);

		fail_msg("got %s, want %s", got ? got : "?", text);
	}
	json_decref(want);
}

/* ---- Argo --------------------------------------------------------------- */

/* One small plan, its whole YAML written by hand. */
static void test_argo_exact(void **state)
{
	static const struct tjob tj[] = {
		{ .id = "prep", .image = "python:3.12",
		  .argv = { "python3", "prep.py", "--n", "3", NULL },
		  .cpus = 2, .mem = 8192,
		  .inputs = "{\"n\": 3, \"name\": \"x\"}" },
		{ .id = "relax", .argv = { "relax", "/work/prep/out.cif" },
		  .gpus = 1, .minutes = 60, .deps = { 1 },
		  .inputs = "{\"structure\": \"/work/prep/out.cif\"}" },
	};
	static const char want[] =
		"apiVersion: \"argoproj.io/v1alpha1\"\n"
		"kind: \"Workflow\"\n"
		"metadata:\n"
		"  generateName: \"flowfs-demo-\"\n"
		"spec:\n"
		"  entrypoint: \"graph\"\n"
		"  volumeClaimTemplates:\n"
		"    - apiVersion: \"v1\"\n"
		"      kind: \"PersistentVolumeClaim\"\n"
		"      metadata:\n"
		"        name: \"work\"\n"
		"      spec:\n"
		"        accessModes:\n"
		"          - \"ReadWriteMany\"\n"
		"        resources:\n"
		"          requests:\n"
		"            storage: \"10Gi\"\n"
		"  templates:\n"
		"    - name: \"graph\"\n"
		"      dag:\n"
		"        tasks:\n"
		"          - name: \"prep\"\n"
		"            template: \"prep\"\n"
		"            dependencies: []\n"
		"            arguments:\n"
		"              parameters:\n"
		"                - name: \"n\"\n"
		"                  value: \"3\"\n"
		"                - name: \"name\"\n"
		"                  value: \"x\"\n"
		"          - name: \"relax\"\n"
		"            template: \"relax\"\n"
		"            dependencies:\n"
		"              - \"prep\"\n"
		"            arguments:\n"
		"              parameters:\n"
		"                - name: \"structure\"\n"
		"                  value: \"/work/prep/out.cif\"\n"
		"    - name: \"prep\"\n"
		"      metadata:\n"
		"        annotations:\n"
		"          flowfs/node-id: \"prep\"\n"
		"      inputs:\n"
		"        parameters:\n"
		"          - name: \"n\"\n"
		"          - name: \"name\"\n"
		"      container:\n"
		"        name: \"main\"\n"
		"        image: \"python:3.12\"\n"
		"        command:\n"
		"          - \"python3\"\n"
		"          - \"prep.py\"\n"
		"          - \"--n\"\n"
		"          - \"3\"\n"
		"        workingDir: \"/work/prep\"\n"
		"        volumeMounts:\n"
		"          - name: \"work\"\n"
		"            mountPath: \"/work\"\n"
		"        resources:\n"
		"          requests:\n"
		"            cpu: \"2\"\n"
		"            memory: \"8192Mi\"\n"
		"          limits:\n"
		"            cpu: \"2\"\n"
		"            memory: \"8192Mi\"\n"
		"    - name: \"relax\"\n"
		"      metadata:\n"
		"        annotations:\n"
		"          flowfs/node-id: \"relax\"\n"
		"      inputs:\n"
		"        parameters:\n"
		"          - name: \"structure\"\n"
		"      activeDeadlineSeconds: 3600\n"
		"      container:\n"
		"        name: \"main\"\n"
		"        image: \"debian:12-slim\"\n"
		"        command:\n"
		"          - \"relax\"\n"
		"          - \"/work/prep/out.cif\"\n"
		"        workingDir: \"/work/relax\"\n"
		"        volumeMounts:\n"
		"          - name: \"work\"\n"
		"            mountPath: \"/work\"\n"
		"        resources:\n"
		"          requests:\n"
		"            cpu: \"1\"\n"
		"            nvidia.com/gpu: \"1\"\n"
		"          limits:\n"
		"            cpu: \"1\"\n"
		"            nvidia.com/gpu: \"1\"\n";
	struct jobspec_plan plan;
	struct sbuf sb = SBUF_INIT;
	char *got;

	(void)state;
	make_plan(&plan, tj, 2, "/work");
	got = argo_text(&plan, &argo_opt);
	assert_string_equal(got, want);
	/* appends, and the same plan gives the same bytes */
	assert_int_equal(sbuf_addstr(&sb, "# x\n"), 0);
	assert_int_equal(gexport_argo(&plan, &argo_opt, &sb, NULL), 0);
	assert_int_equal(strncmp(sb.buf, "# x\n", 4), 0);
	assert_string_equal(sb.buf + 4, want);
	sbuf_release(&sb);
	free(got);
	jobspec_plan_release(&plan);
}

/* A diamond: a -> b, a -> c, b + c -> d (c names a twice, as two edges
 * would); tasks in plan order, each with its upstream tasks. */
static void test_argo_diamond(void **state)
{
	static const struct tjob tj[] = {
		{ .id = "a", .argv = { "gen" } },
		{ .id = "b", .argv = { "left" }, .deps = { 1 } },
		{ .id = "c", .argv = { "right" }, .deps = { 1, 1 } },
		{ .id = "d", .argv = { "join" }, .deps = { 2, 3 } },
	};
	struct jobspec_plan plan;
	json_t *doc;
	char *y;

	(void)state;
	make_plan(&plan, tj, 4, "/work");
	y = argo_text(&plan, &argo_opt);
	doc = yaml_load(y);
	assert_string_equal(jstr(doc, "apiVersion"), "argoproj.io/v1alpha1");
	assert_string_equal(jstr(doc, "kind"), "Workflow");
	assert_json(json_object_get(json_object_get(doc, "spec"), "entrypoint"),
		    "\"graph\"");
	assert_json(json_object_get(task(doc, 0), "dependencies"), "[]");
	assert_json(json_object_get(task(doc, 1), "dependencies"), "[\"a\"]");
	assert_json(json_object_get(task(doc, 2), "dependencies"), "[\"a\"]");
	assert_json(json_object_get(task(doc, 3), "dependencies"),
		    "[\"b\", \"c\"]");
	for (size_t k = 0; k < 4; k++) {
		assert_string_equal(jstr(task(doc, k), "template"),
				    jstr(tmpl(doc, k + 1), "name"));
		assert_string_equal(jstr(container(doc, k + 1), "workingDir"),
				    plan.jobs[k].job_dir);
	}
	assert_json(json_object_get(json_object_get(doc, "spec"),
				    "volumeClaimTemplates"),
		    "[{\"apiVersion\": \"v1\", \"kind\": "
		    "\"PersistentVolumeClaim\", "
		    "\"metadata\": {\"name\": \"work\"}, \"spec\": "
		    "{\"accessModes\": [\"ReadWriteMany\"], \"resources\": "
		    "{\"requests\": {\"storage\": \"10Gi\"}}}}]");
	assert_json(json_object_get(container(doc, 4), "volumeMounts"),
		    "[{\"name\": \"work\", \"mountPath\": \"/work\"}]");
	json_decref(doc);
	free(y);
	jobspec_plan_release(&plan);
}

/* Node ids made task names Argo takes ([a-z0-9-], no leading digit, at
 * most GEXPORT_NAME_MAX bytes), each once, "graph" kept for the DAG. */
static void test_argo_names(void **state)
{
	char longid[200], cutid[80], cut[64];
	struct tjob tj[] = {
		{ .id = "Relax Step_1" },	/* relax-step-1 */
		{ .id = "1abc" },		/* n-1abc */
		{ .id = "graph" },		/* graph-2 */
		{ .id = "A.B" },		/* a-b */
		{ .id = "a-b" },		/* a-b-2 */
		{ .id = "a--b" },		/* a-b-3 */
		{ .id = "a-b-2" },		/* a-b-2-2 */
		{ .id = "\xce\xb1\xce\xb2" },	/* n */
		{ .id = "--" },			/* n-2 */
		{ .id = longid },
		{ .id = "GRAPH" },		/* graph-3 */
		{ .id = cutid },	/* 55 x then " yz": cut before "-y" */
	};
	const char *const want[] = {
		"relax-step-1", "n-1abc", "graph-2", "a-b", "a-b-2", "a-b-3",
		"a-b-2-2", "n", "n-2", NULL, "graph-3", cut,
	};
	size_t n = sizeof(tj) / sizeof(tj[0]);
	struct jobspec_plan plan;
	struct jobspec_options opt = argo_opt;
	json_t *doc;
	char *y;

	(void)state;
	memset(longid, 'x', sizeof(longid) - 1);
	longid[sizeof(longid) - 1] = '\0';
	snprintf(cut, sizeof(cut), "%.55s", longid);
	snprintf(cutid, sizeof(cutid), "%s yz", cut);
	for (size_t i = 0; i < n; i++) {
		tj[i].argv[0] = "true";
		tj[i].dir = i == 9 ? "long" : i == 11 ? "cut" : NULL;
		if (i)
			tj[i].deps[0] = i;
	}
	make_plan(&plan, tj, n, "/work");
	opt.session = "My Session_01: \xce\xb1 test!";
	y = argo_text(&plan, &opt);
	doc = yaml_load(y);
	assert_string_equal(jstr(json_object_get(doc, "metadata"),
				 "generateName"), "flowfs-my-session-01-test-");
	for (size_t i = 0; i < n; i++) {
		const char *name = jstr(task(doc, i), "name");

		if (want[i])
			assert_string_equal(name, want[i]);
		else
			assert_int_equal(strlen(name), GEXPORT_NAME_MAX);
		assert_string_equal(jstr(tmpl(doc, i + 1), "name"), name);
		/* the id itself stays, as an annotation */
		assert_string_equal(jstr(json_object_get(json_object_get(
			tmpl(doc, i + 1), "metadata"), "annotations"),
			"flowfs/node-id"), tj[i].id);
		if (i)
			assert_string_equal(jstr(task(doc, i - 1), "name"),
				json_string_value(json_array_get(
					json_object_get(task(doc, i),
							"dependencies"), 0)));
	}
	json_decref(doc);
	free(y);

	/* a long session name is cut to 40 bytes; none gives "flowfs-" */
	opt.session = longid;
	y = argo_text(&plan, &opt);
	assert_non_null(strstr(y, "generateName: \"flowfs-xxxxxxxxxxxxxxxxxxxx"
			       "xxxxxxxxxxxxxxxxxxxx-\"\n"));
	free(y);
	opt.session = "!!!";
	y = argo_text(&plan, &opt);
	assert_non_null(strstr(y, "generateName: \"flowfs-\"\n"));
	free(y);
	jobspec_plan_release(&plan);
}

/* Values YAML would otherwise read as something else, or not read:
 * every one comes back the same string; "$" doubled in a command. */
static void test_argo_quoting(void **state)
{
	static const char *const tricky[] = {
		"say \"hi\"", "back\\slash", "two\nlines", "tab\there",
		"cr\rlf", "a: b", "# not a comment", "  leading spaces",
		"trailing  ", "yes", "no", "on", "1.0", "0x10", "1e3", "null",
		"~", "", "- item", "[1, 2]", "{a: b}", "&anchor", "*alias",
		"!tag", "|", ">", "? key", "@at", "`tick`", "%pct", "\x01\x1f",
		"del\x7f", "nel\xc2\x85", "ls\xe2\x80\xa8ps\xe2\x80\xa9",
		"bom\xef\xbb\xbf", "\xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80",
		"---", "...", "'single'", "=", NULL,
	};
	struct tjob tj[1] = {
		{ .id = "n1", .argv = { "tool", "$(HOME)", "a$$b", "$x" },
		  .image = "registry.example/t:1",
		  .inputs = "{\"num\": 5, \"real\": 1.5, \"flag\": true, "
			    "\"none\": null, \"list\": [1, \"x\"], "
			    "\"obj\": {\"k\": \"v\"}, \"bad name!\": \"v\", "
			    "\"bad_name_\": \"w\"}" },
	};
	struct jobspec_plan plan;
	json_t *doc, *params, *cmd;
	size_t n = 0;
	char *y;

	(void)state;
	/* argv[4..14] here (a tjob holds 15 and the NULL), the rest below */
	for (; tricky[n]; n++)
		if (n < 11)
			tj[0].argv[4 + n] = tricky[n];
	make_plan(&plan, tj, 1, "/work");
	/* all the tricky ones as input values too, after the typed ones */
	for (size_t k = 0; k < n; k++) {
		char key[32];

		snprintf(key, sizeof(key), "s%zu", k);
		json_object_set_new(plan.jobs[0].inputs, key,
				    json_string(tricky[k]));
	}
	for (size_t k = 11; k < n; k++) {
		char **argv = realloc(plan.jobs[0].argv,
				      (plan.jobs[0].argc + 2) * sizeof(char *));

		assert_non_null(argv);
		plan.jobs[0].argv = argv;
		argv[plan.jobs[0].argc++] = xdup(tricky[k]);
		argv[plan.jobs[0].argc] = NULL;
	}
	y = argo_text(&plan, &argo_opt);
	/* every scalar but activeDeadlineSeconds is quoted: no line ends in
	 * a bare value */
	for (const char *p = y; *p; p = strchr(p, '\n') + 1) {
		const char *colon = strstr(p, ": ");
		const char *eol = strchr(p, '\n');
		const char *quote = strchr(p, '"');

		if (colon && colon < eol && (!quote || colon < quote) &&
		    colon[2] != '"' && colon[2] != '[')
			fail_msg("bare value: %.*s", (int)(eol - p), p);
	}
	doc = yaml_load(y);
	cmd = json_object_get(container(doc, 1), "command");
	assert_int_equal(json_array_size(cmd), 4 + n);
	assert_string_equal(json_string_value(json_array_get(cmd, 1)),
			    "$$(HOME)");
	assert_string_equal(json_string_value(json_array_get(cmd, 2)),
			    "a$$$$b");
	assert_string_equal(json_string_value(json_array_get(cmd, 3)), "$$x");
	for (size_t k = 0; k < n; k++) {
		json_t *v = json_array_get(cmd, 4 + k);
		if (!json_is_string(v) ||
		    strcmp(json_string_value(v), tricky[k]))
			fail_msg("command[%zu] is not \"%s\"", 4 + k,
				 tricky[k]);
	}
	params = json_object_get(json_object_get(task(doc, 0), "arguments"),
				 "parameters");
	assert_json(json_array_get(params, 0), "{\"name\": \"num\", "
		    "\"value\": \"5\"}");
	assert_json(json_array_get(params, 1), "{\"name\": \"real\", "
		    "\"value\": \"1.5\"}");
	assert_json(json_array_get(params, 2), "{\"name\": \"flag\", "
		    "\"value\": \"true\"}");
	assert_json(json_array_get(params, 3), "{\"name\": \"none\", "
		    "\"value\": \"null\"}");
	assert_json(json_array_get(params, 4), "{\"name\": \"list\", "
		    "\"value\": \"[\\n  1,\\n  \\\"x\\\"\\n]\"}");
	assert_json(json_array_get(params, 5), "{\"name\": \"obj\", "
		    "\"value\": \"{\\n  \\\"k\\\": \\\"v\\\"\\n}\"}");
	/* Argo's [-a-zA-Z0-9_]+, each once */
	assert_json(json_array_get(params, 6), "{\"name\": \"bad_name_\", "
		    "\"value\": \"v\"}");
	assert_json(json_array_get(params, 7), "{\"name\": \"bad_name__2\", "
		    "\"value\": \"w\"}");
	for (size_t k = 0; k < n; k++) {
		json_t *p = json_array_get(params, 8 + k);
		char key[32];

		snprintf(key, sizeof(key), "s%zu", k);
		assert_string_equal(jstr(p, "name"), key);
		if (strcmp(jstr(p, "value"), tricky[k]))
			fail_msg("value of %s is not \"%s\"", key, tricky[k]);
		/* the container template declares the same names */
		assert_string_equal(jstr(json_array_get(json_object_get(
			json_object_get(tmpl(doc, 1), "inputs"), "parameters"),
			8 + k), "name"), key);
	}
	/* the escapes themselves, as they are written */
	assert_non_null(strstr(y, "\"del\\u007f\""));
	assert_non_null(strstr(y, "\"nel\\u0085\""));
	assert_non_null(strstr(y, "\"ls\\u2028ps\\u2029\""));
	assert_non_null(strstr(y, "\"bom\\ufeff\""));
	assert_non_null(strstr(y, "\"\\u0001\\u001f\""));
	assert_non_null(strstr(y, "\"\xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80\""));
	json_decref(doc);
	free(y);
	jobspec_plan_release(&plan);
}

/* Bytes that are not UTF-8 cannot be in YAML: U+FFFD. */
static void test_argo_not_utf8(void **state)
{
	struct tjob tj[1] = { { .id = "n1", .argv = { "t", "a\xff" "b" } } };
	struct jobspec_plan plan;
	json_t *doc;
	char *y;

	(void)state;
	make_plan(&plan, tj, 1, "/work");
	y = argo_text(&plan, &argo_opt);
	assert_non_null(strstr(y, "- \"a\\ufffdb\"\n"));
	doc = yaml_load(y);
	assert_string_equal(json_string_value(json_array_get(json_object_get(
		container(doc, 1), "command"), 1)), "a\xef\xbf\xbd" "b");
	json_decref(doc);
	free(y);
	jobspec_plan_release(&plan);
}

/* Resources: requests = limits; memory and GPUs only when said; the
 * time as activeDeadlineSeconds; an image, or the fallback. */
static void test_argo_resources(void **state)
{
	static const struct tjob tj[] = {
		{ .id = "big", .image = "nvcr.io/x:1", .argv = { "t" },
		  .cpus = 16, .mem = 65536, .gpus = 4, .minutes = 525600 },
		{ .id = "small", .argv = { "t" } },
	};
	struct jobspec_plan plan;
	json_t *doc;
	char *y;

	(void)state;
	make_plan(&plan, tj, 2, "/work");
	y = argo_text(&plan, &argo_opt);
	doc = yaml_load(y);
	assert_json(json_object_get(container(doc, 1), "resources"),
		    "{\"requests\": {\"cpu\": \"16\", \"memory\": \"65536Mi\", "
		    "\"nvidia.com/gpu\": \"4\"}, \"limits\": {\"cpu\": \"16\", "
		    "\"memory\": \"65536Mi\", \"nvidia.com/gpu\": \"4\"}}");
	assert_json(json_object_get(tmpl(doc, 1), "activeDeadlineSeconds"),
		    "31536000");
	assert_string_equal(jstr(container(doc, 1), "image"), "nvcr.io/x:1");
	assert_json(json_object_get(container(doc, 2), "resources"),
		    "{\"requests\": {\"cpu\": \"1\"}, \"limits\": "
		    "{\"cpu\": \"1\"}}");
	assert_null(json_object_get(tmpl(doc, 2), "activeDeadlineSeconds"));
	assert_string_equal(jstr(container(doc, 2), "image"),
			    GEXPORT_ARGO_IMAGE);
	assert_string_equal(jstr(container(doc, 2), "name"), "main");
	json_decref(doc);
	free(y);
	jobspec_plan_release(&plan);
}

/* "{{" anywhere Argo would read it is refused, naming node and field;
 * `out` is left as it was. */
static void test_argo_braces(void **state)
{
	static const struct tjob cases[][2] = {
		{ { .id = "ok", .argv = { "t" } },
		  { .id = "n2", .argv = { "t", "x{{workflow.name}}" } } },
		{ { .id = "ok", .argv = { "t" } },
		  { .id = "n2", .argv = { "t" },
		    .inputs = "{\"p\": \"{{ inputs.parameters.p }}\"}" } },
		{ { .id = "ok", .argv = { "t" } },
		  { .id = "n2", .argv = { "t" },
		    .inputs = "{\"p\": [\"{{\"]}" } },
		{ { .id = "ok", .argv = { "t" } },
		  { .id = "n2", .image = "x{{y", .argv = { "t" } } },
		{ { .id = "ok", .argv = { "t" } },
		  { .id = "n{{2", .dir = "n2", .argv = { "t" } } },
	};
	static const char *const field[] = {
		"argv[1]", "input \"p\"", "input \"p\"", "the image", "its id",
	};

	(void)state;
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct jobspec_plan plan;
		struct sbuf sb = SBUF_INIT;
		struct ferr err = FERR_INIT;
		char want[256];

		make_plan(&plan, cases[c], 2, "/work");
		assert_int_equal(sbuf_addstr(&sb, "kept"), 0);
		assert_int_equal(gexport_argo(&plan, &argo_opt, &sb, &err),
				 -EINVAL);
		assert_string_equal(sb.buf, "kept");
		snprintf(want, sizeof(want), "node \"%s\": %s holds \"{{\"",
			 cases[c][1].id, field[c]);
		if (strncmp(err.message, want, strlen(want)))
			fail_msg("case %zu: %s", c, err.message);
		sbuf_release(&sb);
		jobspec_plan_release(&plan);
	}
}

/* An empty plan still makes a workflow (jobspec refuses one first). */
static void test_argo_empty(void **state)
{
	struct jobspec_plan plan = { NULL, 0 };
	json_t *doc;
	char *y;

	(void)state;
	y = argo_text(&plan, &argo_opt);
	doc = yaml_load(y);
	assert_json(json_object_get(json_object_get(tmpl(doc, 0), "dag"),
				    "tasks"), "[]");
	json_decref(doc);
	free(y);
}

/* ---- Slurm -------------------------------------------------------------- */

static char *slurm_text(const struct jobspec_plan *plan,
			const struct jobspec_options *opt)
{
	struct sbuf sb = SBUF_INIT;

	assert_int_equal(gexport_slurm(plan, opt, &sb, NULL), 0);
	return sbuf_detach(&sb, NULL);
}

/* Run `cmd` with sh; its exit status, or -1. */
static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	st = system(cmd);
	return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	struct sbuf sb = SBUF_INIT;

	if (!f)
		return xdup("");
	assert_int_equal(sbuf_read(&sb, f), 0);
	fclose(f);
	return sbuf_detach(&sb, NULL);
}

/*
 * A fake sbatch in <dir>/bin: it records each call's arguments as
 * "<a><b>...\n" in <dir>/calls and prints ids 1001, 1002... as
 * "<id>;cluster"; call number $FAIL_AT fails, and $EMPTY_AT prints
 * nothing.
 */
static void fake_sbatch(const char *dir)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/bin", dir);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/bin/sbatch", dir);
	put_file(path,
		 "#!/bin/sh\n"
		 "n=$(cat \"$FAKE/count\" 2>/dev/null || echo 0)\n"
		 "n=$((n + 1))\n"
		 "echo \"$n\" > \"$FAKE/count\"\n"
		 "printf '<%s>' \"$@\" >> \"$FAKE/calls\"\n"
		 "echo >> \"$FAKE/calls\"\n"
		 "if [ \"$n\" = \"${FAIL_AT:-}\" ]; then\n"
		 "  echo 'sbatch: error: Batch job submission failed' >&2\n"
		 "  exit 1\n"
		 "fi\n"
		 "[ \"$n\" = \"${EMPTY_AT:-}\" ] && exit 0\n"
		 "echo \"$((1000 + n));cluster\"\n");
	assert_int_equal(chmod(path, 0700), 0);
}

/* The diamond again, with names the shell must not read: the script
 * parses, submits in plan order after the right ids, writes each batch
 * script as jobspec_script() made it, and prints "<node> <id>". */
static void test_slurm_run(void **state)
{
	struct tjob tj[] = {
		{ .id = "a", .argv = { "echo", "x" }, .cpus = 2, .mem = 100 },
		{ .id = "it's b", .dir = "its_b", .argv = { "echo", "$HOME" },
		  .deps = { 1 } },
		{ .id = "-n", .dir = "n", .argv = { "echo" }, .deps = { 1, 1 } },
		{ .id = "d", .argv = { "echo", "`x` $(y)" }, .deps = { 2, 3 } },
	};
	struct jobspec_options opt = {
		.session = "s\nrm -rf /tmp/never", .tools_path = "t.json",
	};
	char dir[64], run_dir[128], path[512];
	struct jobspec_plan plan;
	char *text, *got;

	(void)state;
	assert_int_equal(unit_tmpdir(dir, sizeof(dir), "gexport-slurm"), 0);
	snprintf(run_dir, sizeof(run_dir), "%s/run dir", dir);
	opt.run_dir = run_dir;
	make_plan(&plan, tj, 4, run_dir);
	text = slurm_text(&plan, &opt);
	assert_int_equal(strncmp(text, "#!/bin/bash\n", 12), 0);
	assert_non_null(strstr(text, "\nset -euo pipefail\n"));
	/* the session's newline does not end the comment */
	assert_non_null(strstr(text, "session\n#   s?rm -rf /tmp/never\n"));
	assert_non_null(strstr(text, "--dependency=afterok:\"$jid_0\" "));
	assert_non_null(strstr(text, "jid_2=$(sbatch --parsable "
			       "--dependency=afterok:\"$jid_0\" "));
	assert_non_null(strstr(text, "--dependency=afterok:\"$jid_1\":"
			       "\"$jid_2\" --kill-on-invalid-dep=yes "));
	assert_null(strstr(text, "jid_0=$(sbatch --parsable --dep"));
	/* deterministic */
	got = slurm_text(&plan, &opt);
	assert_string_equal(got, text);
	free(got);

	snprintf(path, sizeof(path), "%s/submit.slurm.sh", dir);
	put_file(path, text);
	assert_int_equal(run("bash -n '%s'", path), 0);
	fake_sbatch(dir);
	assert_int_equal(run("cd '%s' && PATH=\"$PWD/bin:$PATH\" FAKE=\"$PWD\" "
			     "bash submit.slurm.sh > out 2> err", dir), 0);
	snprintf(path, sizeof(path), "%s/out", dir);
	got = slurp(path);
	assert_string_equal(got, "a 1001\nit's b 1002\n-n 1003\nd 1004\n");
	free(got);
	snprintf(path, sizeof(path), "%s/calls", dir);
	got = slurp(path);
	{
		struct sbuf want = SBUF_INIT;
		static const char *const dep[] = {
			"", "<--dependency=afterok:1001>",
			"<--dependency=afterok:1001>",
			"<--dependency=afterok:1002:1003>",
		};
		static const char *const kill[] = {
			"", "<--kill-on-invalid-dep=yes>",
			"<--kill-on-invalid-dep=yes>",
			"<--kill-on-invalid-dep=yes>",
		};

		for (size_t i = 0; i < 4; i++) {
			const char *d = plan.jobs[i].job_dir;

			assert_int_equal(sbuf_addf(&want, "<--parsable>%s%s"
				"<--chdir=%s><--output=%s/.flowfs-stdout>"
				"<--error=%s/.flowfs-stderr>"
				"<%s/.flowfs-job.sh>\n", dep[i], kill[i], d, d,
				d, d), 0);
		}
		assert_string_equal(got, want.buf);
		sbuf_release(&want);
	}
	free(got);
	/* each batch script byte for byte */
	for (size_t i = 0; i < 4; i++) {
		struct sbuf want = SBUF_INIT;

		assert_int_equal(jobspec_script(&plan, i, &opt, &want), 0);
		snprintf(path, sizeof(path), "%s/" JOBSPEC_SCRIPT,
			 plan.jobs[i].job_dir);
		got = slurp(path);
		assert_string_equal(got, want.buf);
		free(got);
		sbuf_release(&want);
	}
	free(text);
	jobspec_plan_release(&plan);
	unit_rmtree(dir);
}

/* The 2nd sbatch fails, or prints no id: the script stops there, exit
 * status 1, naming that node; the 3rd is never submitted. */
static void test_slurm_failure(void **state)
{
	static const struct tjob tj[] = {
		{ .id = "first", .argv = { "true" } },
		{ .id = "the second", .argv = { "true" }, .dir = "second",
		  .deps = { 1 } },
		{ .id = "third", .argv = { "true" }, .deps = { 2 } },
	};
	static const char *const env[] = { "FAIL_AT=2", "EMPTY_AT=2" };
	static const char *const why[] = {
		"submit.slurm.sh: sbatch failed for node the second\n",
		"submit.slurm.sh: sbatch failed for node the second: "
		"no job id: \n",
	};

	(void)state;
	for (size_t c = 0; c < 2; c++) {
		struct jobspec_options opt = { .session = "s" };
		char dir[64], run_dir[128], path[512];
		struct jobspec_plan plan;
		char *text, *got;

		assert_int_equal(unit_tmpdir(dir, sizeof(dir), "gexport-fail"),
				 0);
		snprintf(run_dir, sizeof(run_dir), "%s/run", dir);
		opt.run_dir = run_dir;
		make_plan(&plan, tj, 3, run_dir);
		text = slurm_text(&plan, &opt);
		snprintf(path, sizeof(path), "%s/submit.slurm.sh", dir);
		put_file(path, text);
		fake_sbatch(dir);
		assert_int_equal(run("cd '%s' && PATH=\"$PWD/bin:$PATH\" "
				     "FAKE=\"$PWD\" %s bash submit.slurm.sh "
				     "> out 2> err", dir, env[c]), 1);
		snprintf(path, sizeof(path), "%s/out", dir);
		got = slurp(path);
		assert_string_equal(got, "first 1001\n");
		free(got);
		snprintf(path, sizeof(path), "%s/err", dir);
		got = slurp(path);
		if (!strstr(got, why[c]))
			fail_msg("stderr: %s", got);
		free(got);
		snprintf(path, sizeof(path), "%s/count", dir);
		got = slurp(path);
		assert_string_equal(got, "2\n");
		free(got);
		free(text);
		jobspec_plan_release(&plan);
		unit_rmtree(dir);
	}
}

/* A batch script holding the here-document's delimiter as a line (an
 * argv item with newlines) gets another delimiter, and arrives whole. */
static void test_slurm_delimiter(void **state)
{
	static const struct tjob tj[] = {
		{ .id = "n1", .argv = { "printf", "%s",
			"x\nFLOWFS_JOB_EOF\nFLOWFS_JOB_EOF_1\ny" } },
	};
	struct jobspec_options opt = { .session = "s" };
	char dir[64], run_dir[128], path[512];
	struct jobspec_plan plan;
	struct sbuf want = SBUF_INIT;
	char *text, *got;

	(void)state;
	assert_int_equal(unit_tmpdir(dir, sizeof(dir), "gexport-eof"), 0);
	snprintf(run_dir, sizeof(run_dir), "%s/run", dir);
	opt.run_dir = run_dir;
	make_plan(&plan, tj, 1, run_dir);
	text = slurm_text(&plan, &opt);
	assert_non_null(strstr(text, "<<'FLOWFS_JOB_EOF_2'\n"));
	snprintf(path, sizeof(path), "%s/submit.slurm.sh", dir);
	put_file(path, text);
	fake_sbatch(dir);
	assert_int_equal(run("cd '%s' && PATH=\"$PWD/bin:$PATH\" FAKE=\"$PWD\" "
			     "bash submit.slurm.sh > out 2> err", dir), 0);
	assert_int_equal(jobspec_script(&plan, 0, &opt, &want), 0);
	snprintf(path, sizeof(path), "%s/" JOBSPEC_SCRIPT, plan.jobs[0].job_dir);
	got = slurp(path);
	assert_string_equal(got, want.buf);
	/* and the batch script itself runs the argv as it was */
	assert_int_equal(run("bash '%s' > /dev/null 2>&1", path), 0);
	free(got);
	snprintf(path, sizeof(path), "%s/.flowfs-exit", plan.jobs[0].job_dir);
	got = slurp(path);
	assert_int_equal(strncmp(got, "0 ", 2), 0);
	free(got);
	sbuf_release(&want);
	free(text);
	jobspec_plan_release(&plan);
	unit_rmtree(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_argo_exact),
		cmocka_unit_test(test_argo_diamond),
		cmocka_unit_test(test_argo_names),
		cmocka_unit_test(test_argo_quoting),
		cmocka_unit_test(test_argo_not_utf8),
		cmocka_unit_test(test_argo_resources),
		cmocka_unit_test(test_argo_braces),
		cmocka_unit_test(test_argo_empty),
		cmocka_unit_test(test_slurm_run),
		cmocka_unit_test(test_slurm_failure),
		cmocka_unit_test(test_slurm_delimiter),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
