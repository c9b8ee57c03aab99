/* Small helpers shared by the commands. */
#ifndef AMD_CLI_UTIL_H
#define AMD_CLI_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* A file name for a tensor name: characters other than letters, digits, '.',
 * '_' and '-' become '_'. */
const char *amd_safe_name(const char *name, char *buf, size_t n);
/* Creates a folder if missing (one level). */
int amd_make_dir(const char *path, char *err, size_t err_len);
/* Parses a non-negative integer / a float option value; returns -1 on junk. */
int amd_parse_i64(const char *s, int64_t *out);
int amd_parse_float(const char *s, float *out);

struct amd_backend;
struct amd_graph;
struct amd_status;
struct amd_env;
struct amd_dataset;
struct amd_data_split;
/* The process's environment (core/env.h), read once; the first call also
 * applies what the library takes before any work (AMD_GEMM_ISA,
 * AMD_CUDA_POISON_OUTPUTS). main() calls it first thing. */
const struct amd_env *amd_cli_env(void);
/* The backend for --device SPEC: "cpu", "cuda" or "cuda:N"; NULL picks cuda:0
 * when this build has the CUDA backend and a GPU is present, else the CPU.
 * Asking for cuda without one (or in a build without CUDA) is an error that
 * says which. debug_sync: synchronise after every GPU kernel. The device's
 * training kernels are registered with it (train/kernels.h). */
int amd_cli_backend(const char *spec, int debug_sync, const struct amd_backend **be, struct amd_status *st);
/* The same for one of several ranks on a node: "cuda" or NULL (with a GPU
 * present) pick GPU (local_rank mod GPU count), so that the ranks of a node
 * spread over its GPUs; "cuda:N" is taken as it is. */
int amd_cli_backend_rank(const char *spec, int debug_sync, int local_rank, const struct amd_backend **be,
                         struct amd_status *st);
/* One stderr line for a device backend: the device and the nodes that take
 * the host fallback (nothing for the CPU). */
void amd_cli_backend_note(const char *cmd, const struct amd_graph *g, const struct amd_backend *be);
/* Fails now, not after days of training, when FILE cannot be created next to
 * `path`: makes and removes an empty probe file. what names it in the message. */
int amd_cli_check_writable(const char *path, const char *what, struct amd_status *st);
/* One stderr line for the CUDA backend: the peak of the device memory its
 * caching allocator held (nothing for the CPU). */
void amd_cli_device_memory_note(const char *cmd, const struct amd_backend *be);
/* Writes "N of M nodes native; host fallback: name (Op), ..." for backend be into buf. */
const char *amd_cli_fallback_summary(const struct amd_graph *g, const struct amd_backend *be, char *buf, size_t n);

/* A node's output shape and multiply-accumulates from a shape-only pass. */
typedef struct amd_cli_node_shape {
  char shape[160]; /* its first output's shape, e.g. "[1,6,28,28]" */
  int64_t macs;    /* Conv: output elements x (C_in / group) x kernel size;
                      Gemm, MatMul (batched too): output elements x K; others 0 */
  int known;       /* the pass reached the node */
} amd_cli_node_shape;
/* Runs g shape-only at batch 1 (symbolic input dims bound to 1; float tensors
 * are not computed) and fills nodes[0 .. g->n_nodes - 1]. 0, or -1 with the
 * reason in st when the pass stopped (the nodes it reached are filled). */
int amd_cli_shape_pass(const struct amd_graph *g, amd_cli_node_shape *nodes, struct amd_status *st);

/* The samples `--limit N` scores in split s (eval, sweep): NULL for the
 * first N (the caller passes idx NULL), except for an image folder decoded
 * whole, whose files are sorted by class: then N indices spread evenly
 * (amd_spread_index), the same images a partially decoded folder holds
 * (amd_image_opts.max_samples). The caller frees the array. */
int64_t *amd_cli_limit_index(const struct amd_dataset *ds, const struct amd_data_split *s, int64_t limit);

struct amd_image_opts;
struct amd_image_stream;
struct amd_trainer;
/* eval and sweep, before their first batch: the data set of SPEC data for
 * evaluating one split (split_test: the test split, else the training one;
 * of an image folder only that split is decoded, and with limit > 0 only
 * `limit` images of it, spread over the classes; progress lines on stderr
 * headed by cmd, e.g. "amdnn-onnx eval"), a line describing it, the trainer
 * in inference mode on the backend of --device (device, debug_sync) with
 * test-time augmentation (tta), and the check that the model has an output
 * per class. stream non-NULL (eval): an image folder whose normalisation is
 * not `dataset` is opened as a stream of batches of `batch`
 * (data/image_stream.h: decoded while the model runs) instead of decoded
 * into memory first (its warning, ds->note, is the caller's to print after
 * amd_image_stream_finish); *stream stays NULL otherwise. The caller frees ds and t
 * and closes *stream, also after a failure. */
int amd_cli_eval_setup(const char *cmd, struct amd_graph *g, const char *data, struct amd_image_opts *img,
                       int split_test, int64_t limit, int64_t batch, struct amd_image_stream **stream,
                       const char *device, int debug_sync, int tta, struct amd_dataset *ds, struct amd_trainer *t,
                       struct amd_status *st);

/* The two halves of amd_cli_eval_setup's evaluator, for a caller that makes
 * it again on another graph (sweep, per row): an inference-only trainer on
 * --device's backend (*be) scoring with tta; then the probe of the model's
 * outputs (one zero image: the nodes quantized on the fly count it among
 * their calibration calls) and the check that there is one per class. */
int amd_cli_eval_trainer(struct amd_graph *g, const char *device, int debug_sync, int tta, struct amd_trainer *t,
                         const struct amd_backend **be, struct amd_status *st);
int amd_cli_check_outputs(struct amd_trainer *t, const struct amd_dataset *ds, struct amd_status *st);

/* amd_image_opts.progress for the commands: a line on stderr, user is the
 * command's name (e.g. "amdnn-onnx eval"). */
void amd_cli_image_progress(void *user, const char *stage, int64_t done, int64_t total);

/* --q8-calib's value checked while parsing the arguments (amd_q8_calib_parse,
 * exec/mode_apply.h): 0 when valid, else 2 after "prog: why" on stderr. */
int amd_cli_check_q8_calib(const char *prog, const char *calib);

/* --gemm fast|exact: the GPU's GEMM tier for am16 and mbm14 (docs/multipliers.md,
 * "GEMM tiers"), applied to the CUDA backend now and when it opens; the CPU
 * has only the exact one. 0 when valid, else 2 after "prog: why" on stderr. */
int amd_cli_gemm_tier(const char *prog, const char *value);
#define AMD_CLI_GEMM_HELP                                                                                   \
  "--gemm fast|exact (GPU): am16 and mbm14 GEMMs as Mitchell products plus their correction on\n"            \
  "tensor cores, the spec's products summed in another order (fast, the default), or every product\n"       \
  "materialised and summed in k order, the CPU's bits (exact). Other modes have one tier.\n"

#endif
