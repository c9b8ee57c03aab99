/* The random ops: RandomUniform, RandomNormal (a shape attribute),
 * RandomUniformLike, RandomNormalLike (the shape of their input), Bernoulli
 * (a 0 / 1 draw per element of its probability input). PyTorch's exporter
 * (dynamo=True, model.train()) writes Dropout as RandomUniformLike -> Less
 * -> Cast -> Mul, and ONNX's own function body of Bernoulli is
 * RandomUniformLike -> Greater -> Cast.
 *
 * Versions: RandomUniform, RandomNormal, RandomUniformLike and
 * RandomNormalLike 1 and 22, Bernoulli 15 and 22: version 22 only adds
 * bfloat16 to the type lists, the semantics are the same.
 *
 * Attributes: dtype (TensorProto type of the output; RandomUniform /
 * RandomNormal default float, the *Like ops and Bernoulli default to their
 * input's type); low / high (default 0 / 1; high < low is an error, high ==
 * low gives low everywhere) or mean / scale (default 0 / 1; scale < 0 is an
 * error); shape (RandomUniform / RandomNormal, required, dims >= 0); seed:
 * IGNORED. Every draw comes from one stream, owned by the trainer: the
 * executor's ctx->rng, the state Dropout draws its masks from, which `train`
 * seeds from --seed, splits per rank and step in data-parallel runs, and
 * saves in its checkpoints. A per-node seed would repeat the same numbers at
 * every step (a fixed dropout mask) and could not follow --seed or a resume.
 *
 * Output types: float and double; Bernoulli also bool and the integer types
 * (0 or 1). The inputs of the *Like ops are read for their shape and dtype
 * only (fwd_unread_in); Bernoulli's probabilities must be float or double: p
 * <= 0 (and NaN) gives 0, p >= 1 gives 1 (u < p with u in [0, 1)), so values
 * outside [0, 1], which ONNX does not allow, act as clamped instead of
 * failing (the GPU kernel could only report them with a sync).
 *
 * The draws (random.h, shared with the CUDA kernels of cuda/ops/random.cu,
 * which give the same bits): element i of a uniform or Bernoulli output
 * uses draw i of the stream at ctx->rng, element i of a normal output draws
 * 2i and 2i + 1 (Box-Muller); the forward pass then advances ctx->rng past
 * the draws it used, as Dropout does. The draws do not depend on ctx->training
 * or ctx->inference: the ops mean the same in every mode (a training export
 * keeps its dropout in `eval`; export in eval mode for inference).
 *
 * Backward: none flows (the outputs are not differentiable in the inputs); the
 * backward adds nothing, so that gradients stop here without the trainer's
 * "no backward" warning, and reads no tensor (bwd_unread_in / _out). */
#include <math.h>
#include <string.h>

#include "random.h"
#include "shape_util.h"

/* ---------------------------------------------------------------- parsing */

/* A float attribute: def when absent; an error when not a float. */
static int attr_f(const amd_attr_list *p, const char *name, double def, double *out, amd_status *st) {
  const amd_attr *a = amd_attr_find(p, name);
  *out = def;
  if (!a) return 0;
  if (!a->has_f) return amd_fail(st, "attribute %s must be a float", name);
  if (!isfinite(a->f)) return amd_fail(st, "attribute %s must be finite (got %g)", name, (double)a->f);
  *out = a->f;
  return 0;
}

static int out_dtype_ok(int dist, int dt) {
  if (dt == AMD_FLOAT || dt == AMD_DOUBLE) return 1;
  if (dist != AMD_RAND_BERNOULLI) return 0;
  return dt == AMD_BOOL || dt == AMD_INT8 || dt == AMD_INT16 || dt == AMD_INT32 || dt == AMD_INT64 ||
         dt == AMD_UINT8 || dt == AMD_UINT16 || dt == AMD_UINT32 || dt == AMD_UINT64;
}

static const char *dtypes_msg(int dist) {
  return dist == AMD_RAND_BERNOULLI ? "float, double, bool and the integer types" : "float, double";
}

/* with_shape: RandomUniform / RandomNormal (a shape attribute, dtype default float) */
static int random_parse(amd_node *n, const amd_attr_list *p, int dist, int with_shape, amd_status *st) {
  amd_random_attrs *a = amd_attrs_new(n, sizeof *a, st);
  if (!a) return -1;
  a->dist = dist;
  a->rank = -1;
  const amd_attr *dt = amd_attr_find(p, "dtype");
  a->dtype = with_shape ? AMD_FLOAT : 0;
  if (dt) {
    if (!dt->has_i) return amd_fail(st, "attribute dtype must be an int (a TensorProto data type)");
    if (!out_dtype_ok(dist, (int)dt->i))
      return amd_fail(st, "dtype %s is not supported (%s)", amd_dtype_name((amd_dtype)dt->i),
                      dtypes_msg(dist));
    a->dtype = (int)dt->i;
  }
  if (dist == AMD_RAND_UNIFORM) {
    if (attr_f(p, "low", 0.0, &a->a, st) || attr_f(p, "high", 1.0, &a->b, st)) return -1;
    if (a->b < a->a) return amd_fail(st, "high (%g) is less than low (%g)", a->b, a->a);
  } else if (dist == AMD_RAND_NORMAL) {
    if (attr_f(p, "mean", 0.0, &a->a, st) || attr_f(p, "scale", 1.0, &a->b, st)) return -1;
    if (a->b < 0) return amd_fail(st, "scale (%g) is negative", a->b);
  }
  if (with_shape) {
    int r = attr_ints(p, "shape", a->dims, AMD_MAX_RANK, st);
    if (r == -3) return -1;
    if (r < 0) return amd_fail(st, "missing required attribute shape");
    for (int k = 0; k < r; k++)
      if (a->dims[k] < 0) return amd_fail(st, "shape[%d] = %lld is negative", k, (long long)a->dims[k]);
    a->rank = r;
  }
  return 0;
}

static int uniform_parse(amd_node *n, const amd_attr_list *p, amd_status *st) {
  return random_parse(n, p, AMD_RAND_UNIFORM, 1, st);
}
static int normal_parse(amd_node *n, const amd_attr_list *p, amd_status *st) {
  return random_parse(n, p, AMD_RAND_NORMAL, 1, st);
}
static int uniform_like_parse(amd_node *n, const amd_attr_list *p, amd_status *st) {
  return random_parse(n, p, AMD_RAND_UNIFORM, 0, st);
}
static int normal_like_parse(amd_node *n, const amd_attr_list *p, amd_status *st) {
  return random_parse(n, p, AMD_RAND_NORMAL, 0, st);
}
static int bernoulli_parse(amd_node *n, const amd_attr_list *p, amd_status *st) {
  return random_parse(n, p, AMD_RAND_BERNOULLI, 0, st);
}

/* ---------------------------------------------------------------- infer */

static int random_infer(const amd_node *n, const amd_tensor *const *in, amd_tensor *out, amd_status *st) {
  const amd_random_attrs *a = n->attrs;
  if (a->rank >= 0) { /* RandomUniform / RandomNormal */
    amd_tensor_set_shape(&out[0], (amd_dtype)a->dtype, a->rank, a->dims);
    return 0;
  }
  if (need_in(n, in, 0, "input", st)) return -1;
  const amd_tensor *x = in[0];
  if (a->dist == AMD_RAND_BERNOULLI && x->dtype != AMD_FLOAT && x->dtype != AMD_DOUBLE)
    return amd_fail(st, "input has dtype %s (Bernoulli's probabilities must be float or double)",
                    amd_dtype_name(x->dtype));
  int dt = a->dtype ? a->dtype : (int)x->dtype;
  if (!out_dtype_ok(a->dist, dt))
    return amd_fail(st, "output dtype %s (the input's, without a dtype attribute) is not supported (%s)",
                    amd_dtype_name((amd_dtype)dt), dtypes_msg(a->dist));
  amd_tensor_set_shape(&out[0], (amd_dtype)dt, x->rank, x->dims);
  return 0;
}

/* ---------------------------------------------------------------- forward */

static int random_forward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in, amd_tensor *out,
                          amd_status *st) {
  const amd_random_attrs *a = n->attrs;
  if (!ctx) return amd_fail(st, "%s needs a random state (no context)", n->op->name);
  amd_tensor *y = &out[0];
  const int64_t cnt = amd_tensor_numel(y);
  const uint64_t s0 = ctx->rng;
  const amd_tensor *p = a->dist == AMD_RAND_BERNOULLI ? in[0] : NULL;
  if (y->dtype == AMD_FLOAT) {
    float *d = y->data;
    for (int64_t i = 0; i < cnt; i++)
      d[i] = amd_random_f32(a->dist, a->a, a->b, s0, i, p ? amd_tensor_get_f64(p, i) : 0);
  } else if (y->dtype == AMD_DOUBLE) {
    double *d = y->data;
    for (int64_t i = 0; i < cnt; i++)
      d[i] = amd_random_f64(a->dist, a->a, a->b, s0, i, p ? amd_tensor_get_f64(p, i) : 0);
  } else if (p && out_dtype_ok(a->dist, y->dtype)) {
    for (int64_t i = 0; i < cnt; i++)
      amd_tensor_set_i64(y, i, amd_random_value(a->dist, 0, 0, s0, i, amd_tensor_get_f64(p, i)) != 0);
  } else {
    return amd_fail(st, "output dtype %s is not supported", amd_dtype_name(y->dtype));
  }
  ctx->rng = amd_splitmix_skip(s0, amd_random_draws(a->dist, cnt));
  return 0;
}

/* No gradient flows through a draw: adds nothing. */
static int random_backward(const amd_node *n, amd_ctx *ctx, const amd_tensor *const *in,
                           const amd_tensor *out, const amd_tensor *const *dout, amd_tensor *const *din,
                           amd_status *st) {
  (void)n, (void)ctx, (void)in, (void)out, (void)dout, (void)din, (void)st;
  return 0;
}

const amd_op amd_op_RandomUniform = {.name = "RandomUniform",
                                     .idx = AMD_OP_IDX_RandomUniform,
                                     .since = {1, 22},
                                     .parse = uniform_parse,
                                     .infer = random_infer,
                                     .forward = random_forward,
                                     .backward = random_backward,
                                     .bwd_unread_out = 1};

const amd_op amd_op_RandomNormal = {.name = "RandomNormal",
                                    .idx = AMD_OP_IDX_RandomNormal,
                                    .since = {1, 22},
                                    .parse = normal_parse,
                                    .infer = random_infer,
                                    .forward = random_forward,
                                    .backward = random_backward,
                                    .bwd_unread_out = 1};

const amd_op amd_op_RandomUniformLike = {.name = "RandomUniformLike",
                                         .idx = AMD_OP_IDX_RandomUniformLike,
                                         .since = {1, 22},
                                         .parse = uniform_like_parse,
                                         .infer = random_infer,
                                         .forward = random_forward,
                                         .backward = random_backward,
                                         .nondiff_inputs = 1,
                                         .bwd_unread_in = 1,
                                         .bwd_unread_out = 1,
                                         .fwd_unread_in = 1};

const amd_op amd_op_RandomNormalLike = {.name = "RandomNormalLike",
                                        .idx = AMD_OP_IDX_RandomNormalLike,
                                        .since = {1, 22},
                                        .parse = normal_like_parse,
                                        .infer = random_infer,
                                        .forward = random_forward,
                                        .backward = random_backward,
                                        .nondiff_inputs = 1,
                                        .bwd_unread_in = 1,
                                        .bwd_unread_out = 1,
                                        .fwd_unread_in = 1};

const amd_op amd_op_Bernoulli = {.name = "Bernoulli",
                                 .idx = AMD_OP_IDX_Bernoulli,
                                 .since = {15, 22},
                                 .parse = bernoulli_parse,
                                 .infer = random_infer,
                                 .forward = random_forward,
                                 .backward = random_backward,
                                 .nondiff_inputs = 1,
                                 .bwd_unread_in = 1,
                                 .bwd_unread_out = 1};
