/* amdnn.h: the public C API of amdnn-onnx.
 *
 * amdnn-onnx runs, evaluates and trains ONNX models with every product of
 * their Conv, Gemm and MatMul nodes computed by an emulated hardware
 * multiplier (docs/multipliers.md is the contract of the arithmetic). This
 * header is the only one a program needs: the command-line tool and the
 * Python package use nothing else.
 *
 * Conventions
 * - Handles are opaque, made by a *_open / *_create call and released by the
 *   matching *_close / *_free call, which accepts NULL.
 * - Every call that can fail returns an amdnn_status pointer: NULL means
 *   success; otherwise it holds a code and a one-line message (what failed
 *   and where: the file, the node, the option) and the caller releases it
 *   with amdnn_status_free. Calls that cannot fail return their value.
 * - The library never prints, never exits and never aborts on bad input.
 *   Progress and results of long calls reach the caller through callbacks
 *   (amdnn_callbacks); an invariant broken by a bug in the library itself
 *   still stops the process with a message, as assert does.
 * - Options are named as the command line names them, without the dashes
 *   ("mode", "mode-map", "epochs"), and take their values as text, as on the
 *   command line ("am16", "10"); a flag takes "1" (on) or "0" (off). The
 *   table of options (amdnn_option_count, amdnn_option_at) says which calls
 *   take which option, with its default and help text.
 * - Tensors are dense, row-major (C order), in host memory unless a call
 *   says otherwise; dtype numbers are ONNX's TensorProto.DataType.
 * - Threads: different sessions and multipliers may be used from different
 *   threads at once; one handle from one thread at a time.
 * - One process uses one GPU: the first session opened on a CUDA device
 *   binds it; a session on another GPU in the same process is refused.
 */
#ifndef AMDNN_H
#define AMDNN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define AMDNN_VERSION_MAJOR 0
#define AMDNN_VERSION_MINOR 2
#define AMDNN_VERSION_PATCH 0
#define AMDNN_VERSION "0.2.0"

#if defined(__GNUC__)
#define AMDNN_API __attribute__((visibility("default")))
#else
#define AMDNN_API
#endif

/* The library's version ("0.2.0"); compare with AMDNN_VERSION to catch a
 * program built against another header. */
AMDNN_API const char *amdnn_version(void);

/* ------------------------------------------------------------------ errors */

typedef enum amdnn_code {
  AMDNN_OK = 0,
  AMDNN_ERR_ARGUMENT = 1, /* a bad argument: unknown option or mode, a value out of range, a NULL handle */
  AMDNN_ERR_FAILED = 2,   /* the work failed: an unreadable or invalid model or data file, I/O, a device */
  AMDNN_ERR_NO_MEMORY = 3,
  AMDNN_ERR_STOPPED = 4,  /* training stopped early with a checkpoint (walltime, signal, stop-after, a
                             callback's request): run it again with "resume" */
  AMDNN_ERR_DIVERGED = 5, /* training stopped: the loss or a gradient became NaN or Inf */
} amdnn_code;

typedef struct amdnn_status amdnn_status;

/* The code and message of a status (AMDNN_OK and "" for NULL). The message
 * lives as long as the status. */
AMDNN_API amdnn_code amdnn_status_code(const amdnn_status *st);
AMDNN_API const char *amdnn_status_message(const amdnn_status *st);
AMDNN_API void amdnn_status_free(amdnn_status *st);

/* ----------------------------------------------------------------- tensors */

#define AMDNN_MAX_RANK 8

typedef enum amdnn_dtype {
  AMDNN_FLOAT = 1,
  AMDNN_UINT8 = 2,
  AMDNN_INT8 = 3,
  AMDNN_INT32 = 6,
  AMDNN_INT64 = 7,
  AMDNN_BOOL = 9,
  AMDNN_FLOAT16 = 10,
  AMDNN_DOUBLE = 11,
} amdnn_dtype;

typedef struct amdnn_tensor {
  const char *name; /* inputs: the model input it feeds (NULL: the inputs in the model's order);
                       results: the value's name, owned by the tensor */
  int dtype;        /* an amdnn_dtype (other ONNX data types appear in results only) */
  int rank;
  int64_t dims[AMDNN_MAX_RANK];
  void *data;       /* contiguous; results: owned by the tensor */
} amdnn_tensor;

/* Elements of a tensor (1 for rank 0) and the size of one element in bytes
 * (0 for a dtype the library does not compute with). */
AMDNN_API int64_t amdnn_tensor_numel(const amdnn_tensor *t);
AMDNN_API size_t amdnn_dtype_size(int dtype);
/* ONNX's name of a dtype: "float", "int64", ... ("dtype(N)" for unknown N). */
AMDNN_API const char *amdnn_dtype_name(int dtype);
/* Frees the data and names of n tensors that a call returned, then the array. */
AMDNN_API void amdnn_tensors_free(amdnn_tensor *t, int n);
/* A serialized ONNX TensorProto file (the .pb files of the ONNX test suite,
 * onnx.numpy_helper.from_array(a).SerializeToString()) into *out (free it
 * with amdnn_tensors_free(out, 1)), and a tensor into one. */
AMDNN_API amdnn_status *amdnn_tensor_read(const char *path, amdnn_tensor **out);
AMDNN_API amdnn_status *amdnn_tensor_write(const char *path, const amdnn_tensor *t);

/* ------------------------------------------------------- the option table */

/* The calls (and commands of the command-line tool) an option belongs to. */
enum {
  AMDNN_FOR_SESSION = 1 << 0, /* amdnn_session_open: how the model runs (every model command) */
  AMDNN_FOR_INFO = 1 << 1,
  AMDNN_FOR_RUN = 1 << 2,
  AMDNN_FOR_GRAD = 1 << 3,
  AMDNN_FOR_TRAIN = 1 << 4,
  AMDNN_FOR_EVAL = 1 << 5,
  AMDNN_FOR_BENCH = 1 << 6,
  AMDNN_FOR_SWEEP = 1 << 7,
  AMDNN_FOR_LUT = 1 << 8,
};

typedef enum amdnn_option_kind {
  AMDNN_OPTION_FLAG,   /* no value on the command line; "1" or "0" here */
  AMDNN_OPTION_INT,    /* a whole number, within [min, max] */
  AMDNN_OPTION_FLOAT,  /* a finite number, within [min, max] */
  AMDNN_OPTION_TEXT,   /* anything the option's own check accepts (a mode, a schedule, a path, ...) */
} amdnn_option_kind;

typedef struct amdnn_option_info {
  const char *name;          /* "mode" (the command line's --mode) */
  char short_name;           /* 'o' for -o, or 0 */
  const char *metavar;       /* "MODE" (NULL for a flag) */
  amdnn_option_kind kind;
  double min, max;           /* INT and FLOAT: the accepted range */
  const char *default_value; /* as text; NULL: unset by default (the help says what that means) */
  const char *group;         /* the --help section: "multiplier", "data", "optimisation", ... */
  const char *help;          /* one paragraph, lines of at most 72 characters joined by '\n' */
  unsigned used_by;          /* AMDNN_FOR_* bits */
} amdnn_option_info;

/* The table: every option of every call, in --help order. */
AMDNN_API int amdnn_option_count(void);
AMDNN_API const amdnn_option_info *amdnn_option_at(int i);
/* The option of this name ("mode"; also the short name "o"), or NULL. */
AMDNN_API const amdnn_option_info *amdnn_option_find(const char *name);

/* A set of option values, checked as they are set: an unknown name or a bad
 * value is AMDNN_ERR_ARGUMENT with a message that names the option and the
 * accepted values. Setting an option again replaces its value; a NULL value
 * unsets it. */
typedef struct amdnn_options amdnn_options;
AMDNN_API amdnn_status *amdnn_options_create(amdnn_options **out);
AMDNN_API void amdnn_options_free(amdnn_options *o);
AMDNN_API amdnn_status *amdnn_options_set(amdnn_options *o, const char *name, const char *value);
/* The value set for name, else NULL (defaults are not filled in). */
AMDNN_API const char *amdnn_options_get(const amdnn_options *o, const char *name);

/* --------------------------------------------------------- multipliers */

/* The built-in modes in the order of the list (acc32 first); "lut" is the
 * 16-bit table mode, given as "lut:FILE". Each has a one-line summary. */
AMDNN_API int amdnn_mode_count(void);
AMDNN_API const char *amdnn_mode_name(int i);
AMDNN_API const char *amdnn_mode_summary(int i);
/* Every mode the library accepts, as the help text writes it:
 * "acc32, acc16, ..., lut:FILE, q8u:FILE|exact, q8s:FILE|exact". */
AMDNN_API const char *amdnn_mode_choices(void);

/* A multiplier: a mode name ("am16"), a 16-bit table ("lut:FILE"), or an
 * 8-bit table ("q8u:FILE", "q8s:FILE", "q8u:exact", "q8s:exact"). */
typedef struct amdnn_multiplier amdnn_multiplier;
AMDNN_API amdnn_status *amdnn_multiplier_open(const char *mode, amdnn_multiplier **out);
AMDNN_API void amdnn_multiplier_close(amdnn_multiplier *m);
/* The name as given; 'u' or 's' for an 8-bit table (its operands are uint8
 * or int8 codes), 0 for the float modes. */
AMDNN_API const char *amdnn_multiplier_name(const amdnn_multiplier *m);
AMDNN_API int amdnn_multiplier_codes(const amdnn_multiplier *m);

/* Element-wise products out[i] = a[i] x b[i] of a float mode, bit for bit
 * the products of docs/multipliers.md (the same code as the GEMMs). */
AMDNN_API amdnn_status *amdnn_multiply(const amdnn_multiplier *m, const float *a, const float *b, float *out,
                                       size_t n);
/* The same for an 8-bit table: a and b are uint8 (q8u) or int8 (q8s) codes,
 * out the table's int32 entries. */
AMDNN_API amdnn_status *amdnn_multiply_codes(const amdnn_multiplier *m, const void *a, const void *b,
                                             int32_t *out, size_t n);

/* The mode GEMM on host memory: C[M,N] = alpha * op(A) * op(B) + beta * C,
 * row-major, op(A) M x K (A stored K x M when trans_a), op(B) K x N; every
 * product in the multiplier's mode (NULL: acc32), sums in fp32; beta 0: C is
 * not read. The CPU's GEMM of Conv, Gemm and MatMul (bit for bit). */
AMDNN_API amdnn_status *amdnn_gemm(const amdnn_multiplier *m, int trans_a, int trans_b, int64_t M, int64_t N,
                                   int64_t K, float alpha, const float *A, int64_t lda, const float *B,
                                   int64_t ldb, float beta, float *C, int64_t ldc);

/* amdnn_gemm strided and batched, as amdnn_gemm_cuda takes it, on host
 * memory: for b in [0, batch), C_b = alpha * op(A_b) * op(B_b) + beta * C_b
 * with X_b = X + b * stride_x (a stride of 0 repeats one matrix, e.g. a
 * weight for every image). Each entry is exactly the amdnn_gemm call of its
 * matrices, so the bits are those of the CPU's Conv and MatMul, which make
 * the same calls image after image. stride_c 0 (with batch > 1) sums the
 * entries into one C in batch order, each a GEMM with beta 1 after the first
 * (which takes beta): the CPU Conv's weight gradient over a batch. Entries
 * with their own C run on the threads at once when each is small. */
AMDNN_API amdnn_status *amdnn_gemm_batched(const amdnn_multiplier *m, int trans_a, int trans_b, int64_t M,
                                           int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                                           int64_t stride_a, const float *B, int64_t ldb, int64_t stride_b,
                                           float beta, float *C, int64_t ldc, int64_t stride_c, int64_t batch);

/* The GEMM tiers of am16 and mbm14 on a GPU (docs/multipliers.md, "GEMM
 * tiers"): FAST sums the spec's products in another order (Mitchell products
 * plus their correction on tensor cores), EXACT gives the CPU's bits. */
typedef enum amdnn_gemm_tier { AMDNN_GEMM_FAST = 0, AMDNN_GEMM_EXACT = 1 } amdnn_gemm_tier;

/* The same GEMM on CUDA device memory of the current device, strided and
 * batched (X_b = X + b * stride_x; a stride of 0 repeats one matrix), queued
 * on the caller's CUDA stream (a cudaStream_t; NULL: the default stream):
 * nothing synchronises with the host, so a call costs no round trip. The
 * products are those of amdnn_gemm; the sums are in a fixed order, so runs
 * repeat bit for bit. AMDNN_ERR_FAILED in a build without CUDA or without a
 * GPU. */
AMDNN_API amdnn_status *amdnn_gemm_cuda(const amdnn_multiplier *m, amdnn_gemm_tier tier, int trans_a,
                                        int trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                                        int64_t lda, int64_t stride_a, const float *B, int64_t ldb,
                                        int64_t stride_b, float beta, float *C, int64_t ldc, int64_t stride_c,
                                        int64_t batch, void *cuda_stream);
/* CUDA devices usable by this build (0 without CUDA, a driver or a GPU). */
AMDNN_API int amdnn_cuda_device_count(void);

/* A 2-D convolution as ONNX Conv and F.conv2d take it: input X [n][c][h][w],
 * weight W [m][c / groups][kh][kw], output Y [n][m][oh][ow]; all float32,
 * contiguous. */
typedef struct amdnn_conv2d_shape {
  int64_t n, c, h, w; /* X */
  int64_t m, kh, kw;  /* W */
  int64_t groups;     /* >= 1, dividing c and m */
  int64_t stride[2], dilation[2]; /* >= 1, (height, width) */
  int64_t pads[4];    /* >= 0: top, left, bottom, right (ONNX's order: the starts, then the ends) */
} amdnn_conv2d_shape;

/* Checks a shape and gives its output size and the bytes of device
 * workspace that amdnn_conv2d_cuda (forward_bytes) and
 * amdnn_conv2d_backward_cuda (backward_bytes) take; works in every build. */
AMDNN_API amdnn_status *amdnn_conv2d_plan(const amdnn_conv2d_shape *s, int64_t *oh, int64_t *ow,
                                          size_t *forward_bytes, size_t *backward_bytes);

/* The library's own GPU convolution (the Conv node's kernels and GEMM calls
 * on the same shapes, so its bits): Y = conv(X, W) + bias (bias NULL: none)
 * with every product in m's mode (NULL: acc32), queued on the caller's CUDA
 * stream of the current device with the caller's device workspace of at
 * least the plan's forward_bytes (NULL when that is 0). Nothing synchronises
 * with the host. */
AMDNN_API amdnn_status *amdnn_conv2d_cuda(const amdnn_multiplier *m, amdnn_gemm_tier tier,
                                          const amdnn_conv2d_shape *s, const float *x, const float *w,
                                          const float *bias, float *y, void *workspace, size_t workspace_bytes,
                                          void *cuda_stream);
/* Its two backward GEMMs in m's mode: dX and dW (either NULL: not wanted)
 * written, not added to, from dY; the workspace of the plan's
 * backward_bytes. The bias gradient is dY summed over n, h and w. */
AMDNN_API amdnn_status *amdnn_conv2d_backward_cuda(const amdnn_multiplier *m, amdnn_gemm_tier tier,
                                                   const amdnn_conv2d_shape *s, const float *x, const float *w,
                                                   const float *dy, float *dx, float *dw, void *workspace,
                                                   size_t workspace_bytes, void *cuda_stream);

/* ---------------------------------------------------- multiplier tables */

/* Writes the table of a mode to path (atomically: a temporary file, then a
 * rename): a 7-bit design's 16384-byte section 5 table (acc16, am16, mit16),
 * or an 8-bit table (q8u:..., q8s:...) in format "amdq8" (default, NULL) or
 * "bin" (TFApprox's 65536 16-bit entries). */
AMDNN_API amdnn_status *amdnn_table_write(const char *mode, const char *path, const char *format);
/* Writes an 8-bit table given as its 65536 int32 entries, [a * 256 + b] for
 * code a (the data) and code b (the weight); signed: the codes are int8
 * (index by the code's byte, a & 255). */
AMDNN_API amdnn_status *amdnn_q8_table_write(const int32_t *table, int is_signed, const char *path,
                                             const char *format);
/* Reads an 8-bit table file (AMDQ8TAB, or a .bin read as int16 when
 * bin_signed) into table[65536]; *is_signed from the file (a .bin: bin_signed). */
AMDNN_API amdnn_status *amdnn_q8_table_read(const char *path, int bin_signed, int32_t *table, int *is_signed);

typedef struct amdnn_table_info {
  char format[96];   /* "section 5 table (lut:FILE)", "AMDQ8TAB (65536 int32)", "TFApprox .bin ..." */
  char sha256[65];
  int64_t bytes;
  int lut_bits;      /* a section 5 table: m (entries 4^m); 0 for an 8-bit table */
  /* 8-bit tables: */
  int is_signed;
  int32_t lo, hi;    /* the smallest and largest entry */
  int64_t n_diff;    /* entries that differ from the exact products */
  double mean_abs_error, mean_rel_error; /* over all pairs; the relative one over non-zero exact products */
  int64_t max_abs_error;
  int bilinear;      /* 1: T[a][b] = sum over bits of C[i][j] a_i b_j (which partial products it keeps) */
  double bit_weight[8][8]; /* bilinear: C[i][j] / 2^(i+j), i, j the bits 0..7 of the two codes */
} amdnn_table_info;
/* Describes a table file (bin_signed: read a .bin as int16). */
AMDNN_API amdnn_status *amdnn_table_describe(const char *path, int bin_signed, amdnn_table_info *out);

/* ---------------------------------------------------------- callbacks */

typedef enum amdnn_message_kind {
  AMDNN_MSG_INFO,    /* a line for the user (the command-line tool prints it on stdout) */
  AMDNN_MSG_NOTE,    /* a line about how the work runs: device, loading, speed (stderr) */
  AMDNN_MSG_WARNING, /* something the user should know: skipped files, a node without backward */
  AMDNN_MSG_ERROR,   /* why the work stopped, as it happens (the call's status says it too) */
  AMDNN_MSG_DEBUG,   /* diagnostics (several ranks' checksums) */
} amdnn_message_kind;

typedef struct amdnn_progress {
  const char *stage;     /* "train", "evaluate", "sweep", "decode images", "read headers" */
  int64_t epoch;         /* training: 0-based; else 0 */
  int64_t done, total;   /* batches (train, evaluate), rows (sweep) or files (images) */
  int64_t samples;       /* samples seen so far in this stage */
  double loss, accuracy; /* training: the running mean loss and top-1 of the epoch so far */
  double elapsed_s;      /* since the stage (or the resumed part of it) started */
  double images_per_s;
  double eta_s;          /* estimated seconds left in the stage; < 0: unknown */
} amdnn_progress;

typedef struct amdnn_epoch {
  int64_t epoch, epochs; /* 0-based epoch of the run's count */
  double train_loss, train_acc, test_loss, test_acc; /* accuracies as fractions */
  int has_val;
  double val_loss, val_acc;
  double lr;             /* the learning rate of the epoch's last step */
  double images_per_s, train_s;
  double loss_scale;     /* 1: no loss scaling (fp16 modes scale) */
  int64_t skipped;       /* steps skipped for overflowing gradients */
} amdnn_epoch;

typedef struct amdnn_sweep_row {
  const char *node, *op_type; /* "(baseline)" and "(all)" for the first and last rows */
  int index, count;           /* this row and the number of rows */
  int64_t macs;               /* multiply-accumulates per sample; -1 unknown */
  double top1, top5, loss;    /* fractions, mean cross-entropy */
  double top1_drop, loss_rise; /* against the baseline row */
  int64_t n;                  /* samples scored */
  int resumed;                /* taken from an earlier run's TSV, not evaluated again */
} amdnn_sweep_row;

/* Every member may be NULL. A callback that returns non-zero asks the call
 * to stop: training stops at the next step with a checkpoint (where a
 * checkpoint folder is set) and returns AMDNN_ERR_STOPPED; other calls stop
 * and return AMDNN_ERR_STOPPED. */
typedef struct amdnn_callbacks {
  void *user;
  void (*message)(void *user, amdnn_message_kind kind, const char *text);
  int (*progress)(void *user, const amdnn_progress *p);
  int (*epoch)(void *user, const amdnn_epoch *e);
  int (*sweep_row)(void *user, const amdnn_sweep_row *r);
  /* Training: progress after every step (a terminal's progress bar) instead
   * of about ten times an epoch. */
  int progress_every_step;
  /* Training: SIGTERM and SIGINT stop the run as a stop request does, with a
   * checkpoint (a second signal ends the process); the previous handlers come
   * back when the call returns. For programs that own the process: the
   * command-line tool sets it. */
  int catch_signals;
} amdnn_callbacks;

/* ----------------------------------------------------------- sessions */

/* A model opened with its settings (options used by AMDNN_FOR_SESSION:
 * mode, mode-map, backward-mode, q8-grad, q8-calib, device, gemm,
 * debug-sync). The device opens on first use. */
typedef struct amdnn_session amdnn_session;
AMDNN_API amdnn_status *amdnn_session_open(const char *model_path, const amdnn_options *opts,
                                           amdnn_session **out);
AMDNN_API void amdnn_session_close(amdnn_session *s);

typedef struct amdnn_value_info {
  const char *name;
  int dtype;                 /* 0: not declared */
  int rank;                  /* -1: not declared */
  int64_t dims[AMDNN_MAX_RANK];  /* -1 for a symbolic or unknown dimension */
  const char *dim_names[AMDNN_MAX_RANK]; /* the symbolic dimension's name, or NULL */
} amdnn_value_info;

typedef struct amdnn_model_info {
  const char *path, *producer; /* "pytorch 2.11.0" */
  int64_t ir_version;
  int opset;
  int n_inputs, n_outputs, n_nodes, n_gemm_nodes;
  int64_t parameters;          /* floats in float initializers */
  int n_float_initializers;
  int64_t macs;                /* multiply-accumulates per sample of the GEMM nodes, at batch 1 */
  int shapes_known;            /* 0: the shape pass stopped; shape_note says where */
  const char *shape_note;
  const char *device_summary;  /* "N of M nodes native; host fallback: ..." on the CUDA backend, or NULL
                                  in a build without CUDA */
} amdnn_model_info;

typedef struct amdnn_node_info {
  const char *name, *op_type;
  char shape[160];           /* its first output's shape at batch 1, "[1,6,28,28]", or "?" */
  int64_t macs;              /* GEMM nodes: multiply-accumulates per sample; else 0 */
  int on_multiplier;         /* 1: Conv, Gemm or MatMul (their products go through the multiplier) */
  const char *forward_mode, *backward_mode; /* on_multiplier: the modes; an 8-bit table node: its table */
} amdnn_node_info;

/* What the model is made of (shapes and MACs from a shape-only pass at batch
 * 1: symbolic dimensions bound to 1). Valid until the session closes. */
AMDNN_API amdnn_status *amdnn_session_info(amdnn_session *s, const amdnn_model_info **info);
AMDNN_API amdnn_status *amdnn_session_input(amdnn_session *s, int i, amdnn_value_info *out);
AMDNN_API amdnn_status *amdnn_session_output(amdnn_session *s, int i, amdnn_value_info *out);
AMDNN_API amdnn_status *amdnn_session_node(amdnn_session *s, int i, amdnn_node_info *out);
/* The device the session runs on ("cpu", "cuda:0"), opening it if needed. */
AMDNN_API amdnn_status *amdnn_session_device(amdnn_session *s, const char **name);

/* Runs the model once on its inputs with its own ONNX semantics (a
 * BatchNormalization exported in training mode uses the batch's statistics)
 * and returns every graph output (free with amdnn_tensors_free). */
AMDNN_API amdnn_status *amdnn_session_run(amdnn_session *s, const amdnn_tensor *inputs, int n_inputs,
                                          amdnn_tensor **outputs, int *n_outputs);

/* One batch in training mode: the mean softmax cross-entropy of the model's
 * first output (of the logits before a final Softmax / LogSoftmax) for
 * labels (int64 or int32 [N]), and the gradient of every trainable
 * initializer (free with amdnn_tensors_free). Options: AMDNN_FOR_GRAD
 * (label-smoothing). cb (may be NULL) hears the training set-up's warning
 * (a node without a backward pass, BatchNormalization folded at export). */
AMDNN_API amdnn_status *amdnn_session_grad(amdnn_session *s, const amdnn_tensor *x, const amdnn_tensor *labels,
                                           const amdnn_options *opts, const amdnn_callbacks *cb, double *loss,
                                           amdnn_tensor **grads, int *n_grads);

typedef struct amdnn_eval_result {
  int64_t n;                 /* samples scored */
  int64_t top1, top5;        /* how many */
  double loss;               /* mean cross-entropy */
  double seconds, images_per_s;
  int64_t n_classes;
  int64_t *confusion;        /* [n_classes][n_classes]: rows the label, columns the prediction */
  char **class_names;        /* image folders: the class folders' names; else NULL */
  char data_note[1024];      /* what was evaluated: "cifar10: 50000 train / 10000 test, 3x32x32, ..." */
} amdnn_eval_result;

/* Evaluates the model in inference mode (BatchNormalization on its running
 * statistics, no dropout) on a data source (options AMDNN_FOR_EVAL: data,
 * split, batch, limit, tta, the image options, confusion, profile). */
AMDNN_API amdnn_status *amdnn_session_evaluate(amdnn_session *s, const amdnn_options *opts,
                                               const amdnn_callbacks *cb, amdnn_eval_result **out);
AMDNN_API void amdnn_eval_result_free(amdnn_eval_result *r);

/* Per-layer sensitivity to the session's mode: the test split evaluated with
 * every product exact (the baseline), then with each Conv / Gemm / MatMul
 * node alone in the mode, then all of them; a row each through
 * cb->sweep_row (options AMDNN_FOR_SWEEP: data, batch, limit, tta, tsv,
 * plot, the image options). */
AMDNN_API amdnn_status *amdnn_session_sweep(amdnn_session *s, const amdnn_options *opts,
                                            const amdnn_callbacks *cb);

/* Trains the session's model (options AMDNN_FOR_TRAIN: data, epochs,
 * batch, optimizer, lr, ..., output, checkpoints); afterwards the session
 * holds the trained weights (save, evaluate or train it further). Returns
 * AMDNN_ERR_STOPPED when the run stopped early with a checkpoint and
 * AMDNN_ERR_DIVERGED when the loss became NaN or Inf. Under mpirun every
 * rank calls it (docs/distributed.md). */
AMDNN_API amdnn_status *amdnn_session_train(amdnn_session *s, const amdnn_options *opts,
                                            const amdnn_callbacks *cb);

typedef struct amdnn_bench_result {
  int64_t batch, steps;
  double seconds, images_per_s, ms_per_step;
  int inference;
} amdnn_bench_result;
/* Times training steps (or inference passes) on one random batch of the
 * model's input shape (options AMDNN_FOR_BENCH). */
AMDNN_API amdnn_status *amdnn_session_bench(amdnn_session *s, const amdnn_options *opts,
                                            const amdnn_callbacks *cb, amdnn_bench_result *out);

/* Writes the model with the session's current weights as ONNX, the original
 * graph turned into an inference graph (BatchNormalization on running
 * statistics, Dropout off) that onnxruntime and PyTorch load; atomically. */
AMDNN_API amdnn_status *amdnn_session_save(amdnn_session *s, const char *path);

#ifdef __cplusplus
}
#endif

#endif
