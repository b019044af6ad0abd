/* template_eval: rendering, the evaluation of expressions and the
 * execution of statements (if, for, print) against a context. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/template_i.h"

/*** evaluation ***/

static const char *const jinja_globals[] = {
	"cycler", "dict", "joiner", "lipsum", "namespace", "range",
};

static int lookup_name(struct render *r, const struct expr *e,
		       struct val *out)
{
	struct frame *f;
	json_t *j;
	size_t i;

	for (f = r->top; f; f = f->up) {
		int t;

		if (!strcmp(e->name, "loop")) {
			out->k = V_LOOP;
			out->j = NULL;
			out->loop = &f->loop;
			return 0;
		}
		for (t = 0; t < f->s->ntargets; t++)
			if (!strcmp(f->s->targets[t], e->name))
				return tmpl_v_json(out, json_incref(f->vals[t]));
	}
	j = r->context ? json_object_get(r->context, e->name) : NULL;
	if (j)
		return tmpl_v_json(out, json_incref(j));
	for (i = 0; i < ARRAY_SIZE(jinja_globals); i++)
		if (!strcmp(jinja_globals[i], e->name))
			return tmpl_r_fail(r, e, "unsupported: Jinja's global '%s'",
					   e->name);
	tmpl_set_undef(out, e->name, NULL);
	return 0;
}

static int eval(struct render *r, const struct expr *e, struct val *out)
{
	struct val a = { 0 }, b = { 0 }, args[2] = { { 0 }, { 0 } };
	bool t;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	if (++r->steps > MAX_STEPS)
		return tmpl_r_fail(r, e, "template too expensive to render (over %ld steps)",
				   MAX_STEPS);
	r->at = e;
	switch (e->kind) {
	case E_CONST:
		return tmpl_v_json(out, json_incref(e->cst));
	case E_NAME:
		return lookup_name(r, e, out);
	case E_ATTR:
		ret = eval(r, e->a, &a);
		r->at = e;
		if (!ret)
			ret = tmpl_do_getattr(r, &a, e->name, out);
		break;
	case E_ITEM:
		ret = eval(r, e->a, &a);
		if (!ret)
			ret = eval(r, e->b, &b);
		r->at = e;
		if (!ret)
			ret = tmpl_do_getitem(r, &a, &b, out);
		break;
	case E_ITEMS:
		return tmpl_r_fail(r, e, "%s", "unsupported expression: method call");
	case E_NOT:
		ret = eval(r, e->a, &a);
		r->at = e;
		if (!ret)
			ret = tmpl_truth(r, &a, &t);
		if (!ret)
			ret = tmpl_v_json(out, json_boolean(!t));
		break;
	case E_AND:
	case E_OR: {
		const struct expr *c;

		/* Python: the first operand that decides, else the last */
		ret = eval(r, e->a, &a);
		for (c = e->next; !ret && c; c = c->next) {
			r->at = e;
			ret = tmpl_truth(r, &a, &t);
			if (ret || t == (e->kind == E_OR))
				break;
			tmpl_v_release(&a);
			ret = eval(r, c->a, &a);
		}
		if (!ret) {
			*out = a;
			return 0;
		}
		break;
	}
	case E_CMP: {
		const struct expr *c;
		bool res = true;

		ret = eval(r, e->a, &a);
		for (c = e->next; !ret && c; c = c->next) {
			ret = eval(r, c->a, &b);
			r->at = c;
			if (!ret)
				ret = tmpl_py_eq(r, &a, &b, &t);
			tmpl_v_release(&a);
			a = b;
			memset(&b, 0, sizeof(b));
			if (!ret && t == (c->op == 1)) {
				res = false;	/* Python's chain stops here */
				break;
			}
		}
		if (!ret)
			ret = tmpl_v_json(out, json_boolean(res));
		break;
	}
	case E_FILTER:
		ret = eval(r, e->a, &a);
		if (!ret && e->args[0])
			ret = eval(r, e->args[0], &args[0]);
		if (!ret && e->args[1])
			ret = eval(r, e->args[1], &args[1]);
		r->at = e;
		if (!ret)
			ret = tmpl_apply_filter(r, e, &a, args, out);
		break;
	case E_TEST:
		ret = eval(r, e->a, &a);
		if (!ret) {
			t = (a.k != V_UNDEF) != (e->op == 1);
			ret = tmpl_v_json(out, json_boolean(t != e->negated));
		}
		break;
	}
	tmpl_v_release(&a);
	tmpl_v_release(&b);
	tmpl_v_release(&args[0]);
	tmpl_v_release(&args[1]);
	return ret;
}

static int check_output(struct render *r, const struct stmt *s)
{
	if (r->out->len - r->start > MAX_OUTPUT)
		return ferr_set_at(r->err, -EINVAL, s->line, 0,
				   "output larger than %zu bytes", MAX_OUTPUT);
	return 0;
}

/* Bind one item to the loop variables (unpacking when there are several). */
static int bind_targets(struct render *r, const struct stmt *s,
			struct frame *f, json_t *item)
{
	int t;

	for (t = 0; t < s->ntargets; t++) {
		json_decref(f->vals[t]);
		f->vals[t] = NULL;
	}
	if (s->ntargets == 1) {
		f->vals[0] = item;
		return 0;
	}
	{
		struct val v = { 0 };
		struct iter it;
		json_t *x;
		int ret;

		tmpl_v_json(&v, item);
		r->at = s->e;
		if (json_is_array(item) || json_is_object(item) ||
		    json_is_string(item)) {
			ret = tmpl_iter_init(r, &v, &it);
			if (!ret && it.n != (size_t)s->ntargets)
				ret = tmpl_r_fail(r, s->e, it.n > (size_t)s->ntargets
						  ? "too many values to unpack (expected %d)"
						  : "not enough values to unpack (expected %d)",
						  s->ntargets);
			for (t = 0; !ret && t < s->ntargets; t++) {
				ret = tmpl_iter_next(r, &it, &x);
				if (ret > 0) {
					f->vals[t] = x;
					ret = 0;
				}
			}
		} else {
			ret = tmpl_r_fail(r, s->e, "cannot unpack non-iterable %s object",
					  tmpl_type_name(&v));
		}
		tmpl_v_release(&v);
		return ret;
	}
}

static int exec_for(struct render *r, const struct stmt *s)
{
	struct val v = { 0 };
	struct frame f = { 0 };
	struct iter it;
	json_t *item;
	int ret, t;
	bool any = false;

	f.vals = calloc((size_t)s->ntargets, sizeof(*f.vals));
	if (!f.vals)
		return -ENOMEM;
	f.up = r->top;
	f.s = s;
	if (s->e->kind == E_ITEMS) {
		ret = eval(r, s->e->a, &v);
		if (ret < 0)
			goto out;
		r->at = s->e;
		if (v.k == V_UNDEF) {
			ret = tmpl_undefined_error(r, &v);
			goto out;
		}
		if (v.k != V_JSON || !json_is_object(v.j)) {
			ret = tmpl_r_fail(r, s->e, "'%s' object has no method items()",
					  tmpl_type_name(&v));
			goto out;
		}
		f.loop.length = json_object_size(v.j);
		r->top = &f;
		for (it.it = json_object_iter(v.j); it.it;
		     it.it = json_object_iter_next(v.j, it.it)) {
			any = true;
			for (t = 0; t < 2; t++)
				json_decref(f.vals[t]);
			f.vals[0] = json_stringn_nocheck(json_object_iter_key(it.it),
					json_object_iter_key_len(it.it));
			f.vals[1] = json_incref(json_object_iter_value(it.it));
			ret = f.vals[0] ? tmpl_exec_body(r, s->body) : -ENOMEM;
			if (ret < 0)
				break;
			f.loop.index0++;
		}
		r->top = f.up;
		if (ret < 0)
			goto out;
	} else {
		ret = eval(r, s->e, &v);
		if (!ret)
			ret = tmpl_iter_init(r, &v, &it);
		if (ret < 0)
			goto out;
		f.loop.length = it.n;
		r->top = &f;
		while ((ret = tmpl_iter_next(r, &it, &item)) > 0) {
			any = true;
			ret = bind_targets(r, s, &f, item);
			if (!ret)
				ret = tmpl_exec_body(r, s->body);
			if (ret < 0)
				break;
			f.loop.index0++;
		}
		r->top = f.up;
		if (ret < 0)
			goto out;
	}
	if (!any)
		ret = tmpl_exec_body(r, s->orelse);	/* in the outer scope */
out:
	for (t = 0; t < s->ntargets; t++)
		json_decref(f.vals[t]);
	free(f.vals);
	tmpl_v_release(&v);
	return ret;
}

int tmpl_exec_body(struct render *r, const struct stmt *s)
{
	int ret = 0;

	for (; s && !ret; s = s->next) {
		struct val v = { 0 };
		bool t;

		if (++r->steps > MAX_STEPS)
			return ferr_set_at(r->err, -EINVAL, s->line, 0,
				"template too expensive to render (over %ld steps)",
				MAX_STEPS);
		switch (s->kind) {
		case S_TEXT:
			ret = sbuf_add(r->out, s->text, s->len);
			if (!ret)
				ret = check_output(r, s);
			break;
		case S_PRINT:
			ret = eval(r, s->e, &v);
			if (!ret)
				ret = tmpl_py_str(r, r->out, &v);
			if (!ret)
				ret = check_output(r, s);
			tmpl_v_release(&v);
			break;
		case S_IF: {
			const struct stmt *c = s;

			for (;;) {
				ret = eval(r, c->e, &v);
				if (!ret)
					ret = tmpl_truth(r, &v, &t);
				tmpl_v_release(&v);
				if (ret || t || !c->orelse || !c->orelse->elif)
					break;
				c = c->orelse;
			}
			if (!ret)
				ret = tmpl_exec_body(r, t ? c->body : c->orelse);
			break;
		}
		case S_FOR:
			ret = exec_for(r, s);
			break;
		}
	}
	return ret;
}
