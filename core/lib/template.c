/* template: the template language's entry points (tmpl_parse, tmpl_render,
 * tmpl_free) and the parsed template's memory; see template.h. */
#include "lib/template.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/template_i.h"
#include "lib/utf8.h"

const char tmpl_default_prompt[] =
	"Please call the skill named \"{{ skill.id }}\".\n"
	"\n"
	"# Inputs\n"
	"{% for key, value in input.items() %}\n"
	"- {{ key }}: {{ value }}\n"
	"{% endfor %}\n"
	"\n"
	"# Parameters\n"
	"{% for key, value in parameter.items() %}\n"
	"- {{ key }}: {{ value }}\n"
	"{% endfor %}\n"
	"\n"
	"Task: Execute the skill using the above inputs and parameters.\n";

/*** the parsed template ***/

void *tmpl_t_alloc(struct tmpl *t, size_t size)
{
	void *p;

	if (t->nallocs == t->allocs_cap) {
		size_t cap = t->allocs_cap ? 2 * t->allocs_cap : 64;
		void **a = realloc(t->allocs, cap * sizeof(*a));

		if (!a)
			return NULL;
		t->allocs = a;
		t->allocs_cap = cap;
	}
	p = calloc(1, size ? size : 1);
	if (p)
		t->allocs[t->nallocs++] = p;
	return p;
}

int tmpl_t_keep(struct tmpl *t, json_t *j)
{
	if (!j)
		return -ENOMEM;
	if (t->nconsts == t->consts_cap) {
		size_t cap = t->consts_cap ? 2 * t->consts_cap : 16;
		json_t **a = realloc(t->consts, cap * sizeof(*a));

		if (!a) {
			json_decref(j);
			return -ENOMEM;
		}
		t->consts = a;
		t->consts_cap = cap;
	}
	t->consts[t->nconsts++] = j;
	return 0;
}

void tmpl_free(struct tmpl *t)
{
	size_t i;

	if (!t)
		return;
	for (i = 0; i < t->nallocs; i++)
		free(t->allocs[i]);
	for (i = 0; i < t->nconsts; i++)
		json_decref(t->consts[i]);
	free(t->allocs);
	free(t->consts);
	free(t->src);
	free(t);
}

int tmpl_parse(struct tmpl **out, const char *text, size_t len,
	       struct ferr *err)
{
	struct tmpl *t = NULL;
	struct lexer lx = { 0 };
	struct parser p = { 0 };
	size_t i, o = 0;
	int line = 1, col = 1, ret;

	*out = NULL;
	if (len > MAX_TEXT)
		return ferr_set(err, -EINVAL, "template larger than %u bytes",
				MAX_TEXT);
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->src = malloc(len + 1);
	if (!t->src) {
		ret = -ENOMEM;
		goto out;
	}
	/* Jinja2 reads "\r\n" and "\r" as "\n", then drops one final newline
	 * (keep_trailing_newline=False). */
	for (i = 0; i < len;) {
		uint32_t cp;
		size_t k = utf8_decode((const unsigned char *)text + i, len - i,
				       &cp);

		if (!k) {
			ret = ferr_set_at(err, -EINVAL, line, col, "%s",
					  "template is not valid UTF-8");
			goto out;
		}
		if (text[i] == '\r') {
			t->src[o++] = '\n';
			i += i + 1 < len && text[i + 1] == '\n' ? 2 : 1;
			line++;
			col = 1;
			continue;
		}
		if (text[i] == '\n') {
			line++;
			col = 1;
		} else {
			col++;
		}
		memcpy(t->src + o, text + i, k);
		o += k;
		i += k;
	}
	if (o && t->src[o - 1] == '\n')
		o--;
	t->src[o] = '\0';

	lx.t = t;
	lx.s = t->src;
	lx.n = o;
	lx.line = 1;
	lx.col = 1;
	lx.err = err;
	ret = tmpl_lex(&lx);
	if (ret < 0)
		goto out;
	p.t = t;
	p.toks = lx.toks;
	p.err = err;
	ret = tmpl_parse_body(&p, &t->body, NULL, NULL);
	if (ret < 0)
		goto out;
	*out = t;
	t = NULL;
out:
	free(lx.toks);
	tmpl_free(t);
	return ret;
}

int tmpl_render(const struct tmpl *t, const json_t *context, struct sbuf *out,
		struct ferr *err)
{
	struct ferr scratch = FERR_INIT;
	struct render r = { 0 };
	int ret;

	if (context && !json_is_object(context))
		return ferr_set(err, -EINVAL, "%s",
				"the template context must be a JSON object");
	r.context = context;
	r.out = out;
	r.start = out->len;
	r.err = err ? err : &scratch;
	ret = tmpl_exec_body(&r, t->body);
	if (ret < 0)
		sbuf_setlen(out, r.start);
	return ret;
}
