/* The backend op harness (tests/backend_ops): every backend against the CPU,
 * op by op, from one list of cases, in the manner of ggml's test-backend-ops.
 *
 * A case (hc_case) is data: an op type (or several, "Add|Mul": one case
 * each), an opset, its inputs (shape, value range or values), its
 * attributes, the inputs whose gradients `-m grad` compares, the tolerance,
 * and for the GEMM ops (Conv, Gemm, MatMul) the multiplier modes it runs in.
 * The family files (cases_*.c) hold the tables; main.c joins them into the
 * one list; run.c binds a case into a one-node graph and runs it on the CPU
 * (the reference) and on the backend under test; perf.c times it;
 * special.c holds the checks that are no op case (the training kernels).
 *
 * Comparison: max |got - ref| <= tol * max(1, max |ref|) per tensor, tol 0
 * meaning equal values; a NaN on either side fails (the inputs are finite).
 * Every input a case draws comes from a seed made of -s SEED and the case's
 * label, so a filtered run (-o) sees the same inputs as a full one. */
#ifndef AMD_HARNESS_H
#define AMD_HARNESS_H

#include <stdint.h>

#include "exec/backend.h"
#include "exec/train_kernels.h"

enum { HC_MAX_IN = 6, HC_MAX_ATTR = 6, HC_MAX_OUT = 8 };

/* ---- a case's inputs ---- */
typedef enum hc_kind {
  HC_END = 0, /* no more inputs */
  HC_F32,     /* float, uniform in [lo, hi) */
  HC_I64,     /* int64 holding vals ("0,4,-1"); shape NULL: 1-D of the values */
  HC_I32,     /* int32 holding vals */
  HC_IRAND,   /* int64, integers uniform in [lo, hi) */
  HC_BOOL,    /* bool, each true with probability 1/2 */
  HC_OMIT,    /* an omitted optional input (in[k] NULL) */
  HC_SAME     /* the very tensor of input `same` again */
} hc_kind;

typedef struct hc_input {
  hc_kind kind;
  const char *shape; /* "4,3,6,6"; "" a scalar (rank 0) */
  double lo, hi;
  const char *vals;
  double flip;      /* HC_F32: each element's sign flipped with this probability */
  const char *poke; /* "i:v,i:v": element i (flat) set to v after drawing */
  int same;
} hc_input;

#define F32(shape_, lo_, hi_)                                                                                \
  { .kind = HC_F32, .shape = (shape_), .lo = (lo_), .hi = (hi_) }
#define SCALAR(v_)                                                                                           \
  { .kind = HC_F32, .shape = "", .lo = (v_), .hi = (v_) }
#define I64(shape_, vals_)                                                                                   \
  { .kind = HC_I64, .shape = (shape_), .vals = (vals_) }
#define I32(shape_, vals_)                                                                                   \
  { .kind = HC_I32, .shape = (shape_), .vals = (vals_) }
#define IRAND(shape_, lo_, hi_)                                                                              \
  { .kind = HC_IRAND, .shape = (shape_), .lo = (lo_), .hi = (hi_) }
#define BOOLS(shape_)                                                                                        \
  { .kind = HC_BOOL, .shape = (shape_) }
#define OMIT                                                                                                 \
  { .kind = HC_OMIT }
#define SAME(k_)                                                                                             \
  { .kind = HC_SAME, .same = (k_) }

/* ---- attributes ---- */
typedef struct hc_attr {
  const char *name; /* NULL: no more attributes */
  char type;        /* 'i' int, 'f' float, 's' string, 'I' ints (in s, "1,1,1,1") */
  int64_t i;
  float f;
  const char *s;
} hc_attr;

#define A_INT(n_, v_)                                                                                        \
  { .name = (n_), .type = 'i', .i = (v_) }
#define A_FLOAT(n_, v_)                                                                                      \
  { .name = (n_), .type = 'f', .f = (v_) }
#define A_STR(n_, v_)                                                                                        \
  { .name = (n_), .type = 's', .s = (v_) }
#define A_INTS(n_, v_)                                                                                       \
  { .name = (n_), .type = 'I', .s = (v_) }

/* ---- the case ---- */
/* The multiplier modes of the GEMM ops: acc32 (node->mult NULL), am16, and
 * am16 with a backend's exact GEMM tier (the CUDA backend's --gemm exact). */
enum { HC_M_ACC32 = 1, HC_M_AM16 = 2, HC_M_AM16_EXACT = 4, HC_GEMM_MODES = 7, HC_MODE_COUNT = 3 };

/* What a case expects of the backend under test: its own kernels (the
 * default), the host fallback, or either (cases that must fail). */
enum { HC_NATIVE = 0, HC_HOST, HC_EITHER };

/* A case that must fail, on the backend as on the CPU, at this stage. */
typedef enum hc_expect {
  HC_RUNS = 0,
  HC_FAILS_LOAD,     /* the node is refused at bind (a bad attribute); -m forward */
  HC_FAILS_FORWARD,  /* both forwards fail with a message; -m forward */
  HC_FAILS_BACKWARD, /* both forwards run, both backwards (into `grad`) fail; -m grad */
} hc_expect;

typedef struct hc_case {
  const char *op; /* op type; "A|B|C": the same case for each */
  int opset;
  const char *note; /* what the case is for (printed) */
  hc_input in[HC_MAX_IN];
  hc_attr attr[HC_MAX_ATTR];
  int n_out;          /* outputs the node has (0: 1) */
  unsigned grad;      /* bit k: -m grad compares input k's gradient (0: forward only) */
  int dy_all;         /* a random dY into every float output, not only output 0 */
  int nondiff_grad;   /* grad names inputs the op never differentiates: its backward must leave their
                         pre-filled buffers as they were (the random ops) */
  int inference;      /* ctx.inference = 1 (else ctx.training = 1) */
  int native;         /* HC_NATIVE, HC_HOST, HC_EITHER */
  double tol;         /* 0: equal values */
  unsigned modes;     /* GEMM ops: HC_M_* (0: acc32 only) */
  int relu_out;       /* forward with a Relu fused in (ctx.relu_out; forward only) */
  const char *add_in; /* shape of a residual fused in (ctx.add_in), uniform in [-1, 1) */
  hc_expect expect;
} hc_case;

/* The family tables (cases_*.c); main.c joins them into the one list. */
typedef struct hc_family {
  const char *name;
  const hc_case *cases;
  int n;
} hc_family;

extern const hc_family hc_family_gemm, hc_family_norm, hc_family_unary, hc_family_binary, hc_family_shape,
    hc_family_index, hc_family_reduce;

/* ---- backends under test ---- */
/* A backend the harness can run against the CPU. available: 1 when it can
 * run here, else 0 with the reason in why (--probe asks only this). open: 0
 * with *be (and its training kernels *tk, or NULL), 77 when it cannot run
 * here (why says so), -1 on an error (st). has_kernel: whether the backend has its own kernels
 * for an op (NULL: no coverage check); set_exact_tier: the exact GEMM tier
 * on / off (NULL: no tiers: the mode HC_M_AM16_EXACT is not run). */
typedef struct hb_backend {
  const char *name;
  int (*available)(char *why, size_t n);
  int (*open)(const amd_backend **be, const amd_train_kernels **tk, char *why, size_t n, amd_status *st);
  void (*close)(void);
  int (*has_kernel)(int op_idx);
  void (*set_exact_tier)(int on);
  int checks_native; /* 0: the case's native / host expectation is not checked (the CPU itself) */
} hb_backend;

/* Every backend this build has, the CPU first, NULL-terminated (backends_*.c). */
extern const hb_backend *const hb_backends[];
extern const hb_backend hb_backend_cpu;

/* ---- running ---- */
enum { HC_MODE_FORWARD, HC_MODE_GRAD, HC_MODE_PERF };

typedef struct hc_opts {
  int mode;
  const char *ops[64]; /* -o: only these op types (n_ops 0: all) */
  int n_ops;
  const char *backend; /* -b */
  int verbose;
  uint64_t seed;
  int runs; /* -m perf: timed runs after the warm-up */
} hc_opts;

/* The backend under test, opened. */
typedef struct hb_target {
  const hb_backend *entry;
  const amd_backend *be;
  const amd_train_kernels *tk;
  unsigned char covered[AMD_OP_COUNT]; /* ops some case ran on the backend's own kernels */
} hb_target;

typedef struct hc_tally {
  int passed, failed;
} hc_tally;

/* One expanded case: a hc_case for one op of its list, with its label. */
typedef struct hc_run {
  const hc_case *c;
  char op[40];
  char label[512]; /* "Op-opset inputs attributes (note)" */
} hc_run;

/* run.c */
int hc_expand(const hc_case *c, int k, hc_run *r);       /* the k-th op of c; 0 when it has none */
int hc_check_case(const hc_run *r, char *why, size_t n); /* a well-formed case (0), else why */
const char *hc_mode_name(unsigned mode_bit);
void hc_run_case(const hc_opts *o, hb_target *t, const hc_run *r, unsigned mode_bit, hc_tally *tally);
/* perf.c: -m perf's table, between begin and end */
void hc_perf_begin(const hc_opts *o, hb_target *t);
void hc_perf_case(const hc_opts *o, hb_target *t, const hc_run *r, unsigned mode_bit);
void hc_perf_end(hb_target *t);
/* special.c: the checks that are no op case, each with a name that -o selects */
typedef struct hc_special {
  const char *name; /* "train.optim": -o train.optim or -o train */
  void (*run)(const hb_target *t, const hc_opts *o, hc_tally *tally);
} hc_special;
extern const hc_special hc_specials[];
extern const int hc_n_specials;

/* A printf-style line: "ok   " / "FAIL " then the text. */
void hc_report(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
