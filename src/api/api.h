/* The public API's implementation (include/amdnn.h): what its files share.
 *
 * status.c   amdnn_status: a code and a message; the bridge from the
 *            library's amd_status
 * options.c  the option table (every option of every call, declared once)
 *            and amdnn_options, the values checked as they are set
 * session.c  sessions: open (load, modes, 8-bit settings), the device,
 *            info, run, grad, save
 * evaluate.c amdnn_session_evaluate and the evaluator that sweep shares
 * sweep.c    amdnn_session_sweep (per-layer sensitivity, resumable TSV)
 * train.c    amdnn_session_train (src/train/run.c on the session's graph)
 * bench.c    amdnn_session_bench
 * mult.c     multipliers alone: products, the mode GEMM on host and device,
 *            tables
 * conv.c     the library's GPU convolution on a caller's stream */
#ifndef AMD_API_H
#define AMD_API_H

#include <stdarg.h>

#include "../../include/amdnn.h"
#include "../core/graph.h"
#include "../core/status.h"
#include "../data/dataset.h"
#include "../mult/mode_map.h"
#include "../mult/mult.h"
#ifdef AMD_HAVE_CUDA
#include "../../cuda/mode_gemm.h"
#endif

struct amdnn_status {
  amdnn_code code;
  char msg[1024];
};

/* A status of this code and message (printf-style); NULL when out of memory
 * would leave none, which callers treat as AMDNN_ERR_NO_MEMORY's message. */
amdnn_status *api_error(amdnn_code code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The message of st as a status of this code. */
amdnn_status *api_from(const amd_status *st, amdnn_code code);

/* ------------------------------------------------------------ options */

/* How an option's value is checked (options.c). */
typedef int (*api_option_check)(const char *value, amd_status *st);

typedef struct api_option {
  amdnn_option_info info;
  api_option_check check; /* TEXT options: NULL accepts any non-empty value */
} api_option;

struct amdnn_options {
  char **values; /* per option of the table, the value set or NULL */
};

/* The table's entry of name (long or short), or -1. */
int api_option_index(const char *name);
/* The value set for name (an option of the table), or NULL. */
const char *api_opt(const amdnn_options *o, const char *name);
/* The value as a number or flag, def when unset (the value was checked when set). */
int64_t api_opt_i64(const amdnn_options *o, const char *name, int64_t def);
double api_opt_f64(const amdnn_options *o, const char *name, double def);
int api_opt_flag(const amdnn_options *o, const char *name);
/* Checks that every option set in o is one that `call` (an AMDNN_FOR_* bit)
 * takes; call_name names it in the message. o may be NULL. */
amdnn_status *api_opts_check(const amdnn_options *o, unsigned call, const char *call_name);
/* The image options set in o (resize, crop, normalize, workers, fast-decode,
 * skip-bad) into img (zeroed first). */
int api_image_opts(const amdnn_options *o, amd_image_opts *img, amd_status *st);

/* ---------------------------------------------------- multipliers alone */

struct amdnn_multiplier {
  amd_mult m;
};

/* NULL, or the status of a bad GEMM call of fn: an 8-bit table, a negative
 * size, a leading dimension under its rows (mult.c). */
amdnn_status *api_check_gemm(const char *fn, const amdnn_multiplier *m, int trans_a, int trans_b, int64_t M,
                             int64_t N, int64_t K, int64_t lda, int64_t ldb, int64_t ldc);
#ifdef AMD_HAVE_CUDA
/* The GEMM context of the current device and this stream (a cudaStream_t),
 * set to tier: a cuBLAS handle bound to the stream, the mode tables,
 * workspaces; made on first use and kept for the process (mult.c). */
int api_cuda_gemm_ctx(void *stream, amdnn_gemm_tier tier, amd_cuda_gemm_ctx **ctx, amd_status *st);
#endif

/* ------------------------------------------------------------ sessions */

/* Reads the process's environment once (AMD_GEMM_ISA, AMD_CUDA_POISON_OUTPUTS,
 * AMD_ALLOC_TRACE: docs/api.md); every entry point that computes calls it
 * first. */
void api_init(void);

struct amd_backend;

struct amdnn_session {
  amd_graph *g;
  amd_mode_set modes;
  char *path;
  /* the session's options (copies) */
  char *mode, *mode_map, *backward, *q8_grad, *q8_calib, *device;
  int debug_sync, gemm_exact;
  const struct amd_backend *be; /* opened on first use (api_session_backend) */
  char device_name[32];
  int trained; /* training changed the weights: the file no longer holds them */
  /* amdnn_session_info's answers, made once */
  amdnn_model_info info;
  struct api_node_shape *shapes;
  char shape_note[1024];
  char *device_summary;
};

/* The backend of the session's device option, opened on first use; for a
 * rank of several (local_rank > 0) "cuda" picks GPU local_rank mod count.
 * Its training kernels are registered; the GEMM tier is applied. */
int api_session_backend(amdnn_session *s, int local_rank, const struct amd_backend **be, amd_status *st);
/* Loads the session's model again from its file with the session's modes
 * (the 8-bit modes rewrite nodes: sweep needs fresh ones). */
int api_session_reload(amdnn_session *s, amd_status *st);
/* The same into a graph of the caller's (*g, with its mode set), leaving the
 * session's as it is (bench: its steps change the weights). The caller frees
 * both, also after a failure. */
int api_session_load(const amdnn_session *s, amd_graph **g, amd_mode_set *modes, amd_status *st);

/* A node's output shape and multiply-accumulates from a shape-only pass. */
typedef struct api_node_shape {
  char shape[160]; /* its first output's shape, e.g. "[1,6,28,28]" */
  int64_t macs;    /* Conv: output elements x (C_in / group) x kernel size; Gemm, MatMul: output elements x K */
  int known;       /* the pass reached the node */
} api_node_shape;
/* Runs g shape-only at batch 1 (symbolic input dims bound to 1) and fills
 * nodes[0 .. g->n_nodes - 1]; -1 with the reason in st when the pass stopped
 * (the nodes it reached are filled). */
int api_shape_pass(const amd_graph *g, api_node_shape *nodes, amd_status *st);

/* A line naming the device and the nodes that take its host fallback
 * (nothing on the CPU), and one with the GPU memory the caching allocator
 * held at most. */
void api_device_note(const amdnn_callbacks *cb, amdnn_session *s);
void api_memory_note(const amdnn_callbacks *cb, const struct amd_backend *be);
/* Fails now, not after days of training, when FILE cannot be created beside
 * path: makes and removes an empty probe file; what names it in the message. */
int api_check_writable(const char *path, const char *what, amd_status *st);
/* Makes folder dir (one level) and checks that files can be created in it. */
int api_check_folder(const char *dir, amd_status *st);
/* "47h30m", "90m", "3600s", "2h", "3600" -> seconds; -1 on junk. */
double api_parse_duration(const char *s);
/* amd_prof_report's table as an INFO message, the TSV to tsv. */
int api_profile_report(const amdnn_callbacks *cb, const char *tsv, double wall, int64_t steps, amd_status *st);

/* ----------------------------------------------------------- messages */

void api_message(const amdnn_callbacks *cb, amdnn_message_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A progress report; 1 when the callback asked to stop. */
int api_progress(const amdnn_callbacks *cb, const amdnn_progress *p);

/* --------------------------------------------------- shared evaluation */

struct amd_trainer;
struct amd_image_stream;

/* Where an image folder's load or stream reports its progress: the caller
 * keeps it alive as long as the stream, whose threads report. */
typedef struct api_image_progress {
  const amdnn_callbacks *cb;
  double t0;
} api_image_progress;

/* The evaluator of eval and sweep: the data set of opts' data for one split
 * (test unless split is train; of an image folder only that split, and with
 * limit only those images), an inference-mode trainer on the session's
 * device with opts' tta, the check that the model has an output per class.
 * stream non-NULL: an image folder whose normalisation is not `dataset` is
 * streamed (decoded batch after batch) unless opts say in-memory. */
int api_eval_setup(amdnn_session *s, const amdnn_options *opts, api_image_progress *ip, int split_test,
                   struct amd_image_stream **stream, amd_dataset *ds, struct amd_trainer *t, amd_status *st);
/* tta-shift without tta: -1 with the reason (train, eval and sweep check it before loading anything). */
int api_check_tta(const amdnn_options *opts, amd_status *st);
/* The inference-mode trainer alone (sweep makes it again after a reload), with opts' tta and tta-shift. */
int api_eval_trainer(amdnn_session *s, const amdnn_options *opts, struct amd_trainer *t, amd_status *st);
/* The probe of the model's outputs: one per class of ds. */
int api_check_outputs(struct amd_trainer *t, const amd_dataset *ds, amd_status *st);
/* The indices of `limit` samples spread evenly over split s (the --limit
 * rule of every command), or NULL for all of them (limit 0 or >= s->n). The
 * caller frees them. *n gets the count. */
int64_t *api_limit_index(const amd_data_split *s, int64_t limit, int64_t *n);

#endif
