/* One case made real (case.c), for the runners (run.c, perf.c): its inputs
 * drawn on the host, its node bound, its inputs on the backend under test,
 * the contexts of both sides, and the lines it will print. */
#ifndef AMD_HARNESS_EXEC_CASE_H
#define AMD_HARNESS_EXEC_CASE_H

#include "harness.h"
#include "mult/mult.h"

typedef struct hc_exec {
  const hc_run *run;
  hb_target *t;
  const char *what;     /* "forward", "grad", "perf" */
  unsigned mode_bit;    /* HC_M_* (GEMM ops), else 0 */
  const amd_node *node; /* NULL: the bind failed (bind_st says why) */
  amd_status bind_st;
  int n_in;
  amd_tensor *in[HC_MAX_IN];  /* host inputs, as the CPU gets them (NULL: omitted) */
  amd_tensor *dev[HC_MAX_IN]; /* the backend's: float inputs uploaded, the others the host's */
  amd_ctx cctx, gctx;         /* the CPU's and the backend's context for a forward */
  int native;                 /* the backend runs the node with its own kernels */
  int ok;
  int verbose;      /* -v: a note for every comparison */
  char notes[4096]; /* detail lines, printed under the case line */
  size_t n_notes;
  void *priv; /* case.c's own (the gc_node, the tensors, the attributes) */
} hc_exec;

/* Draws the case's inputs from its seed, binds its node (mode_bit's
 * multiplier on a GEMM op), uploads the float inputs (and a fused residual)
 * to t's backend and asks it whether its kernels take the node (noted in
 * t->covered). Returns 0, or -1 when the bind failed (x->node NULL, the
 * inputs drawn). */
int hc_exec_open(hc_exec *x, const hc_opts *o, hb_target *t, const hc_run *r, const char *what,
                 unsigned mode_bit);
void hc_exec_close(hc_exec *x);
/* A float tensor of the given shape uniform in [lo, hi), from the case's stream. */
amd_tensor hc_draw(const amd_tensor *shape_of, double lo, double hi);
/* Compares host tensor ref with the backend's got (downloaded); 1 when
 * within tol (max |got - ref| <= tol * max(1, max |ref|), no NaN); a failure
 * notes the largest difference and where. */
int hc_compare(hc_exec *x, const char *what, int k, const amd_tensor *ref, const amd_tensor *got, double tol);
void hc_note(hc_exec *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints the case's line (ok / FAIL, backend, mode, label) and its notes;
 * counts it. */
void hc_finish(hc_exec *x, hc_tally *tally);
/* run.c's pieces that perf.c shares: both forwards with the case's contexts
 * (0, or -1 noted and nothing left allocated); dY on the host and the
 * backend (output 0, or with all every float output); the gradient buffers
 * of the case's `grad` inputs, uniform in [lo, hi), on both; frees. */
int hc_forward_both(hc_exec *x, amd_tensor *cout, amd_tensor *gout);
void hc_make_dy(hc_exec *x, const amd_tensor *cout, int n_out, int all, amd_tensor *dy, amd_tensor *ddy,
                const amd_tensor **cdo, const amd_tensor **gdo);
void hc_grad_buffers(hc_exec *x, double lo, double hi, amd_tensor *cg, amd_tensor *gg, amd_tensor **cdin,
                     amd_tensor **gdin);
void hc_free_outs(const amd_backend *be, amd_tensor *out, int n);
void hc_free_grads(hc_exec *x, amd_tensor *cg, amd_tensor *gg);
void hc_free_dy(hc_exec *x, amd_tensor *dy, amd_tensor *ddy, int n_out);
/* The multiplier of a mode bit (NULL: acc32). */
const amd_mult *hc_mult(unsigned mode_bit);
void hc_mult_free(void);

#endif
