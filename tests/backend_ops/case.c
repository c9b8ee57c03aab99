/* A case made real: its label, its checks, its inputs drawn from its seed,
 * its one-node graph (tests/grad/gradcheck.h binds it), its inputs on the
 * backend under test, and the comparison of a backend tensor with the CPU's. */
#include <math.h>
#include <stdarg.h>

#include "../grad/gradcheck.h"
#include "exec_case.h"

/* Parses "a,b,c" into v[0..max); returns the count (0 for ""), -1 for a bad
 * or too long list. */
static int parse_list(const char *s, int64_t *v, int max) {
  int n = 0;
  if (!s) return -1;
  while (*s) {
    char *end;
    long long x = strtoll(s, &end, 10);
    if (end == s || n == max) return -1;
    v[n++] = (int64_t)x;
    s = end;
    if (*s == ',')
      s++;
    else if (*s)
      return -1;
  }
  return n;
}

/* The shape of an input: its "shape", or for HC_I64 / HC_I32 without one
 * the count of its values. Returns the rank, -1 when malformed. */
static int input_shape(const hc_input *in, int64_t *dims) {
  int64_t v[64];
  if (!in->shape && (in->kind == HC_I64 || in->kind == HC_I32)) {
    int n = parse_list(in->vals, v, 64);
    if (n < 0) return -1;
    dims[0] = n;
    return 1;
  }
  int r = parse_list(in->shape, dims, AMD_MAX_RANK);
  for (int d = 0; d < r; d++)
    if (dims[d] < 0) return -1;
  return r;
}

static int n_inputs(const hc_case *c) {
  int n = 0;
  while (n < HC_MAX_IN && c->in[n].kind != HC_END) n++;
  return n;
}

static void appendf(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void appendf(char *buf, size_t size, const char *fmt, ...) {
  size_t len = strlen(buf);
  if (len + 1 >= size) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + len, size - len, fmt, ap);
  va_end(ap);
}

static void append_dims(char *buf, size_t size, const int64_t *dims, int rank) {
  appendf(buf, size, "[");
  for (int d = 0; d < rank; d++) appendf(buf, size, "%s%lld", d ? "," : "", (long long)dims[d]);
  appendf(buf, size, "]");
}

static void append_input(char *buf, size_t size, const hc_input *in) {
  int64_t dims[64];
  const int rank = input_shape(in, dims);
  switch (in->kind) {
  case HC_F32:
    if (rank == 0 && in->lo == in->hi)
      appendf(buf, size, " %g", in->lo);
    else
      appendf(buf, size, " "), append_dims(buf, size, dims, rank);
    break;
  case HC_I64:
  case HC_I32:
    appendf(buf, size, " %s", in->kind == HC_I64 ? "i64" : "i32");
    if (in->shape) append_dims(buf, size, dims, rank);
    appendf(buf, size, "{%s}", in->vals);
    break;
  case HC_IRAND:
    appendf(buf, size, " i64"), append_dims(buf, size, dims, rank);
    break;
  case HC_BOOL:
    appendf(buf, size, " bool"), append_dims(buf, size, dims, rank);
    break;
  case HC_OMIT:
    appendf(buf, size, " -");
    break;
  case HC_SAME:
    appendf(buf, size, " =in%d", in->same);
    break;
  default:
    break;
  }
  if (in->poke) appendf(buf, size, "(%s)", in->poke);
}

int hc_expand(const hc_case *c, int k, hc_run *r) {
  const char *p = c->op;
  if (!p) return 0;
  for (int i = 0; i < k; i++) {
    p = strchr(p, '|');
    if (!p) return 0;
    p++;
  }
  const size_t len = strcspn(p, "|");
  if (len == 0 || len >= sizeof r->op) return 0;
  memset(r, 0, sizeof *r);
  r->c = c;
  memcpy(r->op, p, len);
  snprintf(r->label, sizeof r->label, "%s-%d", r->op, c->opset);
  for (int i = 0; i < n_inputs(c); i++) append_input(r->label, sizeof r->label, &c->in[i]);
  for (int a = 0; a < HC_MAX_ATTR && c->attr[a].name; a++) {
    const hc_attr *at = &c->attr[a];
    appendf(r->label, sizeof r->label, " %s=", at->name);
    if (at->type == 'i') appendf(r->label, sizeof r->label, "%lld", (long long)at->i);
    if (at->type == 'f') appendf(r->label, sizeof r->label, "%g", (double)at->f);
    if (at->type == 's' || at->type == 'I') appendf(r->label, sizeof r->label, "%s", at->s);
  }
  if (c->add_in) appendf(r->label, sizeof r->label, " +Add[%s]", c->add_in);
  if (c->relu_out) appendf(r->label, sizeof r->label, " +Relu");
  if (c->note) appendf(r->label, sizeof r->label, " (%s)", c->note);
  return 1;
}

/* ---------------------------------------------------------------- checks */

static int check_input(const hc_case *c, int k, char *why, size_t n) {
  const hc_input *in = &c->in[k];
  int64_t dims[64], v[64], numel = 1;
  if (in->kind == HC_SAME) {
    if (in->same < 0 || in->same >= k || c->in[in->same].kind == HC_SAME || c->in[in->same].kind == HC_OMIT)
      return snprintf(why, n, "input %d repeats input %d, which it cannot", k, in->same), -1;
    return 0;
  }
  if (in->kind == HC_OMIT) return 0;
  const int rank = input_shape(in, dims);
  if (rank < 0) return snprintf(why, n, "input %d: bad shape \"%s\"", k, in->shape ? in->shape : ""), -1;
  for (int d = 0; d < rank; d++) numel *= dims[d];
  if (in->kind == HC_I64 || in->kind == HC_I32) {
    const int nv = parse_list(in->vals, v, 64);
    if (nv != numel)
      return snprintf(why, n, "input %d: %d values for %lld elements", k, nv, (long long)numel), -1;
  }
  if ((in->kind == HC_F32 || in->kind == HC_IRAND) && in->hi < in->lo)
    return snprintf(why, n, "input %d: empty range", k), -1;
  for (const char *p = in->poke; p && *p;) {
    char *end;
    const long long i = strtoll(p, &end, 10);
    if (*end != ':' || i < 0 || i >= numel)
      return snprintf(why, n, "input %d: bad poke \"%s\"", k, in->poke), -1;
    strtod(end + 1, &end);
    p = *end == ',' ? end + 1 : end;
    if (*end && *end != ',') return snprintf(why, n, "input %d: bad poke \"%s\"", k, in->poke), -1;
  }
  return 0;
}

static hc_kind kind_of(const hc_case *c, int k) {
  return c->in[k].kind == HC_SAME ? c->in[c->in[k].same].kind : c->in[k].kind;
}

int hc_check_case(const hc_run *r, char *why, size_t n) {
  const hc_case *c = r->c;
  const amd_op *op = amd_op_find(r->op);
  const int n_in = n_inputs(c);
  if (!op) return snprintf(why, n, "no op %s", r->op), -1;
  if (c->opset <= 0) return snprintf(why, n, "no opset"), -1;
  for (int k = 0; k < n_in; k++)
    if (check_input(c, k, why, n)) return -1;
  for (int k = 0; k < HC_MAX_IN; k++) {
    if (!((c->grad >> k) & 1)) continue;
    if (k >= n_in || kind_of(c, k) != HC_F32)
      return snprintf(why, n, "gradient of input %d, not a float", k), -1;
    if (((op->nondiff_inputs >> k) & 1) && !c->nondiff_grad)
      return snprintf(why, n, "gradient of input %d, which %s never differentiates", k, r->op), -1;
  }
  if (c->grad >> HC_MAX_IN) return snprintf(why, n, "gradient of a missing input"), -1;
  if (c->expect == HC_FAILS_BACKWARD && !c->grad)
    return snprintf(why, n, "a backward failure needs grad"), -1;
  if (c->modes && !op->is_gemm) return snprintf(why, n, "multiplier modes on %s, no GEMM op", r->op), -1;
  if (c->modes & ~(unsigned)HC_GEMM_MODES) return snprintf(why, n, "unknown mode bits"), -1;
  if ((c->relu_out || c->add_in) && c->grad) return snprintf(why, n, "a fused case has no backward"), -1;
  if (c->relu_out && !op->fuses_relu && !op->fuses_add)
    return snprintf(why, n, "%s fuses no Relu", r->op), -1;
  if (c->add_in && !op->fuses_add) return snprintf(why, n, "%s fuses no Add", r->op), -1;
  int64_t dims[AMD_MAX_RANK];
  if (c->add_in && parse_list(c->add_in, dims, AMD_MAX_RANK) < 0)
    return snprintf(why, n, "bad add_in shape"), -1;
  if (c->n_out < 0 || c->n_out > HC_MAX_OUT) return snprintf(why, n, "bad n_out"), -1;
  if (c->native < HC_NATIVE || c->native > HC_EITHER) return snprintf(why, n, "bad native"), -1;
  if (c->native == HC_EITHER && c->expect == HC_RUNS)
    return snprintf(why, n, "a running case says native or host"), -1;
  for (int a = 0; a < HC_MAX_ATTR && c->attr[a].name; a++) {
    const hc_attr *at = &c->attr[a];
    if (!strchr("ifsI", at->type) || at->type == 0)
      return snprintf(why, n, "attribute %s: bad type", at->name), -1;
    if ((at->type == 's' || at->type == 'I') && !at->s)
      return snprintf(why, n, "attribute %s: no value", at->name), -1;
    if (at->type == 'I' && parse_list(at->s, dims, AMD_MAX_RANK) < 0)
      return snprintf(why, n, "attribute %s: bad list", at->name), -1;
  }
  return 0;
}

/* ---------------------------------------------------------------- making a case */

typedef struct hc_priv {
  gc_node g;
  Onnx__AttributeProto *attrs[HC_MAX_ATTR];
  int n_attrs;
  amd_tensor host[HC_MAX_IN]; /* the drawn inputs */
  amd_tensor up[HC_MAX_IN];   /* their uploaded copies (float inputs) */
  amd_tensor add_host, add_dev;
} hc_priv;

static uint64_t case_seed(uint64_t seed, const char *label) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const char *p = label; *p; p++) h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
  uint64_t z = h + (seed + 1) * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return z ? z : 0x9e3779b97f4a7c15ull;
}

amd_tensor hc_draw(const amd_tensor *shape_of, double lo, double hi) {
  return gc_tensor(AMD_FLOAT, shape_of->rank, shape_of->dims, lo, hi);
}

/* Input k of the case (checked by hc_check_case) into t. */
static void draw_input(const hc_input *in, amd_tensor *t) {
  int64_t dims[64], v[64];
  const int rank = input_shape(in, dims);
  amd_status st;
  if (in->kind == HC_F32) {
    *t = gc_tensor(AMD_FLOAT, rank, dims, in->lo, in->hi);
    for (int64_t i = 0; in->flip > 0 && i < amd_tensor_numel(t); i++)
      if (gc_uniform() < in->flip) amd_tensor_set_f64(t, i, -amd_tensor_get_f64(t, i));
  } else {
    amd_tensor_set_shape(t,
                         in->kind == HC_I32    ? AMD_INT32
                         : in->kind == HC_BOOL ? AMD_BOOL
                                               : AMD_INT64,
                         rank, dims);
    AMD_ASSERT(amd_tensor_alloc(t, &st) == 0);
    const int nv = in->kind == HC_I64 || in->kind == HC_I32 ? parse_list(in->vals, v, 64) : 0;
    for (int64_t i = 0; i < amd_tensor_numel(t); i++) {
      if (in->kind == HC_IRAND)
        amd_tensor_set_i64(t, i, (int64_t)in->lo + (int64_t)(gc_uniform() * (in->hi - in->lo)));
      if (in->kind == HC_BOOL) amd_tensor_set_i64(t, i, gc_uniform() < 0.5);
      if (i < nv) amd_tensor_set_i64(t, i, v[i]);
    }
  }
  for (const char *p = in->poke; p && *p;) {
    char *end;
    const long long i = strtoll(p, &end, 10);
    const double val = strtod(end + 1, &end);
    if (t->dtype == AMD_FLOAT)
      amd_tensor_set_f64(t, i, val);
    else
      amd_tensor_set_i64(t, i, (int64_t)val);
    p = *end == ',' ? end + 1 : end;
  }
}

static void make_attrs(const hc_case *c, hc_priv *p) {
  for (int a = 0; a < HC_MAX_ATTR && c->attr[a].name; a++) {
    const hc_attr *at = &c->attr[a];
    int64_t v[AMD_MAX_RANK];
    Onnx__AttributeProto *pa = NULL;
    if (at->type == 'i') pa = gc_attr_int(at->name, at->i);
    if (at->type == 'f') pa = gc_attr_float(at->name, at->f);
    if (at->type == 's') pa = gc_attr_string(at->name, at->s);
    if (at->type == 'I') pa = gc_attr_ints(at->name, parse_list(at->s, v, AMD_MAX_RANK), v);
    p->attrs[p->n_attrs++] = pa;
  }
}

/* Stops the run: the harness cannot go on (the backend lost its memory). */
static void must(int rc, const char *what, const amd_status *st) {
  if (rc == 0) return;
  printf("FAIL %s: %s\n", what, st->msg);
  exit(1);
}

int hc_exec_open(hc_exec *x, const hc_opts *o, hb_target *t, const hc_run *r, const char *what,
                 unsigned mode_bit) {
  const hc_case *c = r->c;
  memset(x, 0, sizeof *x);
  hc_priv *p = calloc(1, sizeof *p);
  AMD_ASSERT(p);
  x->priv = p, x->run = r, x->t = t, x->what = what, x->mode_bit = mode_bit, x->ok = 1;
  x->verbose = o->verbose;
  gc_rng = case_seed(o->seed, r->label);
  x->n_in = n_inputs(c);
  for (int k = 0; k < x->n_in; k++) {
    if (c->in[k].kind == HC_SAME) x->in[k] = x->in[c->in[k].same];
    if (c->in[k].kind == HC_SAME || c->in[k].kind == HC_OMIT) continue;
    draw_input(&c->in[k], &p->host[k]);
    x->in[k] = &p->host[k];
  }
  if (c->add_in) {
    int64_t dims[AMD_MAX_RANK];
    const int rank = parse_list(c->add_in, dims, AMD_MAX_RANK);
    p->add_host = gc_tensor(AMD_FLOAT, rank, dims, -1, 1);
  }
  make_attrs(c, p);
  if (gc_bind(&p->g, r->op, c->opset, p->attrs, p->n_attrs, x->in, x->n_in, c->n_out ? c->n_out : 1,
              &x->bind_st))
    return -1;
  x->node = &p->g.node;
  p->g.node.mult = p->g.node.bwd_mult = hc_mult(mode_bit);
  amd_status st = {{0}};
  for (int k = 0; k < x->n_in; k++) {
    if (!x->in[k]) continue;
    x->dev[k] = x->in[k];
    if (x->in[k]->dtype != AMD_FLOAT) continue;
    must(amd_backend_upload(t->be, x->in[k], &p->up[k], &st), "upload", &st);
    x->dev[k] = &p->up[k];
  }
  if (c->add_in) must(amd_backend_upload(t->be, &p->add_host, &p->add_dev, &st), "upload", &st);
  x->native = t->be->compute->supports(x->node, (const amd_tensor *const *)x->dev);
  if (x->native && x->node->op->idx >= 0) t->covered[x->node->op->idx] = 1;
  x->cctx =
      (amd_ctx){.training = !c->inference, .inference = c->inference, .rng = 777, .relu_out = c->relu_out};
  x->gctx = x->cctx;
  if (c->add_in) x->cctx.add_in = &p->add_host, x->gctx.add_in = &p->add_dev;
  return 0;
}

void hc_exec_close(hc_exec *x) {
  hc_priv *p = x->priv;
  for (int k = 0; k < HC_MAX_IN; k++) {
    if (p->up[k].data) x->t->be->buf->free(&p->up[k]);
    amd_tensor_free(&p->host[k]);
  }
  if (p->add_dev.data) x->t->be->buf->free(&p->add_dev);
  amd_tensor_free(&p->add_host);
  free(p->g.node.attrs); /* a parse that failed may have made them */
  gc_attrs_free(p->attrs, p->n_attrs);
  free(p);
  x->priv = NULL;
  (void)gradcheck, (void)gc_summary; /* gradcheck.h's finite differences are not used here */
}

/* ---------------------------------------------------------------- results */

static amd_mult am16;
static int am16_parsed;

const amd_mult *hc_mult(unsigned mode_bit) {
  if (mode_bit != HC_M_AM16 && mode_bit != HC_M_AM16_EXACT) return NULL; /* acc32: node->mult NULL */
  if (!am16_parsed) {
    amd_status st = {{0}};
    must(amd_mult_parse("am16", &am16, &st), "am16", &st);
    am16_parsed = 1;
  }
  return &am16;
}

void hc_mult_free(void) {
  if (am16_parsed) amd_mult_free(&am16);
  am16_parsed = 0;
}

void hc_note(hc_exec *x, const char *fmt, ...) {
  if (x->n_notes + 8 >= sizeof x->notes) return;
  int n = snprintf(x->notes + x->n_notes, sizeof x->notes - x->n_notes, "     ");
  va_list ap;
  va_start(ap, fmt);
  n += vsnprintf(x->notes + x->n_notes + n, sizeof x->notes - x->n_notes - (size_t)n, fmt, ap);
  va_end(ap);
  x->n_notes = strlen(x->notes);
  if (x->n_notes + 1 < sizeof x->notes) x->notes[x->n_notes++] = '\n', x->notes[x->n_notes] = 0;
}

/* "[i,j,k]" of flat index i in t's shape */
static void where_str(const amd_tensor *t, int64_t i, char *buf, size_t size) {
  int64_t idx[AMD_MAX_RANK];
  for (int d = t->rank - 1; d >= 0; d--) {
    idx[d] = t->dims[d] ? i % t->dims[d] : 0;
    i = t->dims[d] ? i / t->dims[d] : 0;
  }
  buf[0] = 0;
  append_dims(buf, size, idx, t->rank);
}

int hc_compare(hc_exec *x, const char *what, int k, const amd_tensor *ref, const amd_tensor *got,
               double tol) {
  amd_status st = {{0}};
  amd_tensor h = {0};
  char shape[96] = "", shape_got[96] = "";
  append_dims(shape, sizeof shape, ref->dims, ref->rank);
  if (amd_backend_download(x->t->be, got, &h, &st)) {
    hc_note(x, "%s %d %s: download: %s", what, k, shape, st.msg);
    return 0;
  }
  if (!amd_same_shape(ref, &h) || ref->dtype != h.dtype) {
    append_dims(shape_got, sizeof shape_got, h.dims, h.rank);
    hc_note(x, "%s %d: cpu %s %s, %s %s %s", what, k, amd_dtype_name(ref->dtype), shape, x->t->entry->name,
            amd_dtype_name(h.dtype), shape_got);
    amd_tensor_free(&h);
    return 0;
  }
  double md = 0, scale = 1;
  int64_t at = 0;
  for (int64_t i = 0; i < amd_tensor_numel(ref); i++) {
    const double a = amd_tensor_get_f64(ref, i), b = amd_tensor_get_f64(&h, i);
    double d = fabs(a - b);
    if (isnan(a) != isnan(b)) d = INFINITY;
    if (!isnan(md) && (d > md || isnan(d))) md = d, at = i;
    scale = fmax(scale, fabs(a));
  }
  const int ok = md <= tol * scale;
  if (!ok) {
    char where[96];
    where_str(ref, at, where, sizeof where);
    hc_note(x, "%s %d %s: max |diff| %.3g > %.3g (tol %g x %.3g) at %s: cpu %.9g, %s %.9g", what, k, shape,
            md, tol * scale, tol, scale, where, amd_tensor_get_f64(ref, at), x->t->entry->name,
            amd_tensor_get_f64(&h, at));
  } else if (x->verbose) {
    hc_note(x, "%s %d %s: max |diff| %.3g <= %.3g", what, k, shape, md, tol * scale);
  }
  amd_tensor_free(&h);
  return ok;
}

void hc_finish(hc_exec *x, hc_tally *tally) {
  const char *mode = x->mode_bit ? hc_mode_name(x->mode_bit) : NULL;
  printf("%s %s %s: %s%s%s\n", x->ok ? "ok  " : "FAIL", x->t->entry->name, x->what, x->run->label,
         mode ? " | " : "", mode ? mode : "");
  if (x->n_notes) fputs(x->notes, stdout);
  x->ok ? tally->passed++ : tally->failed++;
}
