/*
 * gexport_render: a job graph's exports from the command line, for
 * tests/integration/test_argo_schema.py, which checks the Argo workflow
 * of a real plan against Argo's schema (until a test can read
 * output/workflow.argo.yaml from a mount).
 *
 *	gexport_render argo|slurm < {"graph": ..., "tools": ...,
 *				      "session": "s", "run_dir": "/work"}
 *
 * prints the export; on a refusal prints the message on stderr, exit 1.
 */
#include <stdio.h>
#include <string.h>

#include "lib/fjson.h"
#include "graph/gexport.h"

int main(int argc, char **argv)
{
	struct sbuf in = SBUF_INIT, out = SBUF_INIT;
	struct ferr err = FERR_INIT;
	struct jobspec_plan plan = { NULL, 0 };
	struct jobspec_options opt = { .tools_path = "tools.json" };
	json_t *doc = NULL;
	int ret = 1;

	if (argc != 2 || (strcmp(argv[1], "argo") && strcmp(argv[1], "slurm"))) {
		fprintf(stderr, "usage: gexport_render argo|slurm < doc.json\n");
		return 2;
	}
	if (sbuf_read(&in, stdin) < 0 ||
	    fjson_parse(&doc, in.buf, in.len, &err) < 0) {
		fprintf(stderr, "gexport_render: %s\n", err.message);
		goto out;
	}
	opt.session = json_string_value(json_object_get(doc, "session"));
	opt.run_dir = json_string_value(json_object_get(doc, "run_dir"));
	if (!opt.session || !opt.run_dir) {
		fprintf(stderr, "gexport_render: no session or run_dir\n");
		goto out;
	}
	if (jobspec_plan(json_object_get(doc, "graph"),
			 json_object_get(doc, "tools"), &opt, &plan, &err) < 0 ||
	    (!strcmp(argv[1], "argo") ? gexport_argo(&plan, &opt, &out, &err)
				      : gexport_slurm(&plan, &opt, &out,
						      &err)) < 0) {
		fprintf(stderr, "gexport_render: %s\n", err.message);
		goto out;
	}
	ret = fwrite(out.buf, 1, out.len, stdout) == out.len ? 0 : 1;
out:
	jobspec_plan_release(&plan);
	json_decref(doc);
	sbuf_release(&in);
	sbuf_release(&out);
	return ret;
}
