/*
 * gexport: a session's job graph for the engines its users run it on,
 * generated on read like parameters.json (issue 16) from the plan of
 * jobspec.h:
 *
 *  - output/workflow.argo.yaml (gexport_argo): an Argo Workflow
 *    (argoproj.io/v1alpha1) with one DAG template, one task per node
 *    (named after the node, in plan order), its dependencies from the
 *    edges, and one container template per node: the node's image, its
 *    command, its input parameters as arguments, resources requests and
 *    limits from the machine type.  Jobs share a volume claimed by the
 *    workflow (volumeClaimTemplates "work", mounted at the plan's
 *    run_dir), so an edge's path reaches the next task.  YAML in block
 *    style, every string double-quoted (JSON's escapes), so no value
 *    becomes a number, a boolean or markup.
 *  - output/submit.slurm.sh (gexport_slurm): a standalone bash script
 *    that, run on a login node without flowfs, writes each job's batch
 *    script (jobspec_script()) into its folder and submits it with
 *    `sbatch --parsable`, each after its upstream jobs
 *    (`--dependency=afterok:<id>:<id>`), printing "<node id> <job id>"
 *    per job.  It stops at the first sbatch that fails (set -e) and
 *    says which node.
 *
 * Both are deterministic: the same plan gives the same bytes.
 */
#ifndef FLOWFS_GEXPORT_H
#define FLOWFS_GEXPORT_H

#include "jobspec.h"
#include "sbuf.h"

int gexport_argo(const struct jobspec_plan *plan,
		 const struct jobspec_options *opt, struct sbuf *out);
int gexport_slurm(const struct jobspec_plan *plan,
		  const struct jobspec_options *opt, struct sbuf *out);

#endif
