/* The option table: every option of every call (and of every command of the
 * command-line tool), declared once with its kind, range, default, help and
 * the calls that take it; and amdnn_options, a set of values checked against
 * it as they are set. The CLI builds its parser and --help from this table,
 * the Python package its keyword arguments and docstrings, so that one name
 * has one meaning everywhere. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../exec/mode_apply.h"
#include "../mult/mult.h"
#include "../train/optim.h"
#include "api.h"

/* ------------------------------------------------------------ the checks */

static int check_mode(const char *v, amd_status *st) { return amd_mult_check_name(v, st); }

static int check_backward(const char *v, amd_status *st) {
  return strcmp(v, "exact") == 0 ? 0 : amd_mult_check_name(v, st);
}

/* NAME_OR_OPTYPE=MODE,... (the name may hold '=': the last one splits) */
static int check_mode_map(const char *v, amd_status *st) {
  char *copy = strdup(v), *save = NULL;
  if (!copy) return amd_fail(st, "out of memory");
  int rc = 0, n = 0;
  for (char *tok = strtok_r(copy, ",", &save); tok && rc == 0; tok = strtok_r(NULL, ",", &save), n++) {
    char *eq = strrchr(tok, '=');
    if (!eq || eq == tok || !eq[1])
      rc = amd_fail(st, "'%s' is not NAME_OR_OPTYPE=MODE (e.g. Conv=am16,fc=acc32)", tok);
    else if (amd_mult_check_name(eq + 1, st))
      rc = amd_fail_prefix(st, "entry '%s'", tok);
  }
  free(copy);
  if (rc == 0 && n == 0) rc = amd_fail(st, "no NAME_OR_OPTYPE=MODE entry");
  return rc;
}

static int check_choice(const char *v, const char *const *choices, amd_status *st) {
  char list[256] = "";
  for (int i = 0; choices[i]; i++) {
    if (strcmp(v, choices[i]) == 0) return 0;
    size_t k = strlen(list);
    snprintf(list + k, sizeof list - k, "%s%s", i ? ", " : "", choices[i]);
  }
  return amd_fail(st, "'%s' is not one of %s", v, list);
}

#define CHOICES(fn, ...)                                                                                    \
  static int fn(const char *v, amd_status *st) {                                                          \
    static const char *const c[] = {__VA_ARGS__, NULL};                                                   \
    return check_choice(v, c, st);                                                                        \
  }
CHOICES(check_gemm, "fast", "exact")
CHOICES(check_q8_grad, "ste", "table")
CHOICES(check_split, "test", "train")
CHOICES(check_format, "amdq8", "bin")

static int check_q8_calib(const char *v, amd_status *st) {
  double pct;
  return amd_q8_calib_parse(v, &pct, st);
}

static int check_device(const char *v, amd_status *st) {
  if (!strcmp(v, "cpu") || !strcmp(v, "cuda")) return 0;
  if (!strncmp(v, "cuda:", 5) && v[5]) {
    char *end;
    errno = 0;
    long n = strtol(v + 5, &end, 10);
    if (!errno && !*end && n >= 0 && n <= 1024) return 0;
  }
  return amd_fail(st, "'%s' is not cpu, cuda or cuda:N (N a GPU index)", v);
}

static int check_data(const char *v, amd_status *st) {
  static const char *const kinds[] = {"mnist:", "cifar10:", "cifar100:", "images:", "tensors:"};
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
    size_t n = strlen(kinds[k]);
    if (!strncmp(v, kinds[k], n)) return v[n] ? 0 : amd_fail(st, "'%s' names no folder or file after '%s'", v, kinds[k]);
  }
  return amd_fail(st, "'%s' is not mnist:DIR, cifar10:DIR, cifar100:DIR, images:DIR or tensors:X.pb,Y.pb", v);
}

static int check_optimizer(const char *v, amd_status *st) {
  amd_optim o;
  return amd_optim_init(v, &o, st);
}

static int check_schedule(const char *v, amd_status *st) {
  amd_schedule s;
  return amd_schedule_parse(v, 0.01, 0, &s, st);
}

static int check_lookahead(const char *v, amd_status *st) {
  int64_t k;
  double d;
  return amd_lookahead_parse(v, &k, &d, st);
}

static int check_augment(const char *v, amd_status *st) {
  amd_augment a;
  return amd_augment_parse(v, &a, st);
}

/* The image options through the data set's own parser (data/dataset.h). */
static int check_image(const char *flag, const char *v, amd_status *st) {
  amd_image_opts o = {0};
  return amd_image_opt_parse(flag, v, &o, st) < 0 ? -1 : 0;
}
static int check_resize(const char *v, amd_status *st) { return check_image("--resize", v, st); }
static int check_crop(const char *v, amd_status *st) { return check_image("--crop", v, st); }
static int check_normalize(const char *v, amd_status *st) { return check_image("--normalize", v, st); }

/* "47h30m", "90m", "3600s", "2h", "3600" -> seconds; -1 on junk. */
double api_parse_duration(const char *s) {
  double total = 0;
  int any = 0;
  while (*s) {
    char *end;
    double v = strtod(s, &end);
    if (end == s || v < 0 || !isfinite(v)) return -1;
    double mul = 1;
    if (*end == 'h') mul = 3600, end++;
    else if (*end == 'm') mul = 60, end++;
    else if (*end == 's') end++;
    else if (*end) return -1;
    total += v * mul;
    any = 1;
    s = end;
  }
  return any ? total : -1;
}

static int check_duration(const char *v, amd_status *st) {
  return api_parse_duration(v) > 0 ? 0 : amd_fail(st, "'%s' is not a duration such as 47h30m, 90m or 3600s", v);
}

/* ------------------------------------------------------------- the table */

enum {
  S = AMDNN_FOR_SESSION,
  INFO = AMDNN_FOR_INFO,
  RUN = AMDNN_FOR_RUN,
  GRAD = AMDNN_FOR_GRAD,
  TRAIN = AMDNN_FOR_TRAIN,
  EVAL = AMDNN_FOR_EVAL,
  BENCH = AMDNN_FOR_BENCH,
  SWEEP = AMDNN_FOR_SWEEP,
  LUT = AMDNN_FOR_LUT,
  DEV = S | RUN | GRAD | TRAIN | EVAL | BENCH | SWEEP, /* the device options: every command that computes */
};

#define BIG 1e15 /* "no upper bound" for counts (they are int64 inside) */

#define OPT(name, sh, meta, kind, lo, hi, def, group, used, check, help)                                   \
  {{name, sh, meta, kind, lo, hi, def, group, help, used}, check}
#define FLAG(name, group, used, help) OPT(name, 0, NULL, AMDNN_OPTION_FLAG, 0, 1, NULL, group, used, NULL, help)
#define INT(name, meta, lo, hi, def, group, used, help)                                                     \
  OPT(name, 0, meta, AMDNN_OPTION_INT, lo, hi, def, group, used, NULL, help)
#define REAL(name, meta, lo, hi, def, group, used, help)                                                    \
  OPT(name, 0, meta, AMDNN_OPTION_FLOAT, lo, hi, def, group, used, NULL, help)
#define TEXT(name, meta, def, group, used, check, help)                                                     \
  OPT(name, 0, meta, AMDNN_OPTION_TEXT, 0, 0, def, group, used, check, help)

static const api_option table[] = {
    /* the multiplier */
    TEXT("mode", "MODE", "acc32", "multiplier", S | INFO | RUN | GRAD | TRAIN | EVAL | BENCH | SWEEP | LUT,
         check_mode,
         "the product of every Conv, Gemm and MatMul, in the forward pass and\n"
         "both backward GEMMs: a mode of `amdnn-onnx modes`, lut:FILE (a 16-bit\n"
         "table), q8u:FILE or q8s:FILE (8-bit tables; also q8u:exact, q8s:exact).\n"
         "sweep: the mode under test; lut: the mode whose table is written"),
    TEXT("mode-map", "NAME=MODE,...", NULL, "multiplier", S | INFO | RUN | GRAD | TRAIN | EVAL | BENCH,
         check_mode_map,
         "overrides --mode for the nodes of that name (see `amdnn-onnx info`) or\n"
         "op type (Conv, Gemm, MatMul), e.g. the first Conv and the classifier\n"
         "exact: conv1=acc32,Gemm=acc32"),
    TEXT("backward-mode", "exact|MODE", NULL, "multiplier", S | INFO | GRAD | TRAIN | BENCH, check_backward,
         "both backward GEMMs of every node in this mode, exact meaning acc32\n"
         "(default: each node's forward mode)"),
    TEXT("gemm", "fast|exact", "fast", "multiplier", DEV, check_gemm,
         "the GPU's GEMM tier of am16 and mbm14: Mitchell products plus their\n"
         "correction on tensor cores, the spec's products summed in another\n"
         "order (fast), or each product materialised and summed in k order,\n"
         "the CPU's bits (exact). Other modes and the CPU have one tier"),
    TEXT("q8-grad", "ste|table", "ste", "multiplier", S | GRAD | TRAIN | BENCH, check_q8_grad,
         "the backward of the float Conv/Gemm/MatMul nodes that a q8 mode\n"
         "quantizes on the fly: ste, the clipped straight-through estimator;\n"
         "table adds the table's own slopes (docs/quantized.md)"),
    TEXT("q8-calib", "minmax|percentile[:P]", "minmax", "multiplier", S | RUN | GRAD | TRAIN | EVAL | BENCH,
         check_q8_calib,
         "the data range of the float Conv/Gemm/MatMul nodes that a q8 mode\n"
         "quantizes on the fly, calibrated on their first 4 batches: their min\n"
         "and max, or each batch's (100-P)-th and P-th percentile\n"
         "(P default 99.99, 50 < P <= 100), the widest over the batches"),
    /* the device */
    TEXT("device", "cpu|cuda[:N]", NULL, "device", DEV, check_device,
         "where the model runs (default: cuda when a GPU is present, else cpu;\n"
         "under mpirun each rank takes GPU local-rank mod GPU-count)"),
    FLAG("debug-sync", "device", DEV, "synchronise after every GPU kernel (finds a faulting kernel)"),
    /* data */
    TEXT("data", "SPEC", NULL, "data", TRAIN | EVAL | SWEEP, check_data,
         "mnist:DIR (IDX files, .gz or not; Fashion-MNIST too), cifar10:DIR,\n"
         "cifar100:DIR (binary batches, .bin or .bin.gz), images:DIR (JPEG and\n"
         "PNG folders: DIR/train/<class>/ and DIR/val/<class>/, or DIR/<class>/,\n"
         "or images:DIR,labels=FILE), tensors:X.pb,Y.pb[,XTEST.pb,YTEST.pb]"),
    TEXT("split", "test|train", "test", "data", EVAL, check_split, "the split evaluated"),
    INT("limit", "N", 1, BIG, NULL, "data", TRAIN | EVAL | SWEEP,
        "use N samples of each split, spread evenly over it (sample j of N is\n"
        "j * size / N), so that a folder sorted by class keeps every class;\n"
        "the same samples in every command and run (quick runs)"),
    INT("batch", "N", 1, 1 << 30, NULL, "data", TRAIN | EVAL | BENCH | SWEEP,
        "samples per batch (default 128 for train and bench, 256 for eval and\n"
        "sweep); under mpirun per rank: the global batch is ranks x N (x\n"
        "--accumulate)"),
    INT("accumulate", "N", 1, 4096, "1", "data", TRAIN,
        "each step computes N shares of --batch samples one after another and\n"
        "steps once on their summed gradients (global batch N x --batch, x the\n"
        "ranks under mpirun); each share has its own BatchNormalization\n"
        "statistics, as a rank has: --accumulate 2 on one GPU trains the model\n"
        "that mpirun -np 2 trains on two"),
    INT("val", "N", 0, BIG, "0", "data", TRAIN, "hold out N training samples (seeded) as a validation set"),
    FLAG("no-shuffle", "data", TRAIN, "keep the data order (default: a seeded permutation per epoch)"),
    TEXT("augment", "LIST", NULL, "data", TRAIN, check_augment,
         "comma list of crop:P (pad P and crop back), flip, flip:alt (each\n"
         "image mirrored in every other epoch, from a seeded phase of its own),\n"
         "cutout:S, rrc[:SMIN] (images: with --crop N, torchvision's\n"
         "RandomResizedCrop(N, scale=(SMIN, 1)), SMIN default 0.08, from each\n"
         "image kept uncropped)"),
    FLAG("tta", "data", TRAIN | EVAL | SWEEP,
         "test-time augmentation: score each test image and its left-right\n"
         "mirror by the mean of the two logits"),
    INT("tta-shift", "N", 0, 16, "0", "data", TRAIN | EVAL | SWEEP,
        "with --tta, also score the image shifted N pixels down-right and N\n"
        "up-left (padding as crop:P), each with its mirror: the logits are 1/2\n"
        "the unshifted pair's mean and 1/4 each shifted pair's (airbench94's\n"
        "test-time translations, N 1)"),
    FLAG("host-batches", "data", TRAIN,
         "on a GPU, assemble each batch on the host and upload it (default\n"
         "there: the images go to the GPU once and a kernel makes each batch;\n"
         "the same batches)"),
    /* images */
    TEXT("resize", "N|HxW", NULL, "images", TRAIN | EVAL | SWEEP, check_resize,
         "images: shorter side to N (PIL's antialiased bilinear resize, as\n"
         "torchvision's Resize on PIL images), or exactly HxW"),
    TEXT("crop", "N|HxW", NULL, "images", TRAIN | EVAL | SWEEP, check_crop,
         "images: centre crop (torchvision's CenterCrop; zero padding when the\n"
         "image is smaller)"),
    TEXT("normalize", "NORM", "dataset", "images", TRAIN | EVAL | SWEEP, check_normalize,
         "imagenet (mean 0.485,0.456,0.406, std 0.229,0.224,0.225), dataset\n"
         "(the training split's own statistics), none (x/255), or\n"
         "M1,M2,M3/S1,S2,S3 (or M/S)"),
    INT("workers", "N", 1, 1024, NULL, "images", TRAIN | EVAL | SWEEP,
        "images: decoding threads (default: the online CPUs)"),
    FLAG("fast-decode", "images", TRAIN | EVAL | SWEEP,
         "images: decode JPEGs at 1/2, 1/4 or 1/8 scale when still >= the\n"
         "resize target; faster, but the pixels differ from torchvision's"),
    FLAG("skip-bad", "images", TRAIN | EVAL | SWEEP,
         "images: skip corrupt or unreadable files (counted in a warning)\n"
         "instead of failing"),
    FLAG("in-memory", "images", EVAL,
         "decode an image folder whole before evaluating (default: streamed,\n"
         "decoded batch after batch while the model runs, unless --normalize\n"
         "is dataset; the same results)"),
    /* optimisation */
    INT("epochs", "N", 1, BIG, "10", "optimisation", TRAIN, "passes over the training split"),
    TEXT("optimizer", "NAME", "sgd", "optimisation", TRAIN, check_optimizer, "sgd, adam, adamw, rmsprop or lion"),
    REAL("lr", "LR", 0, INFINITY, "0.01", "optimisation", TRAIN, "the learning rate (the schedule's peak)"),
    REAL("momentum", "M", 0, INFINITY, NULL, "optimisation", TRAIN,
         "SGD and RMSprop momentum (default 0.9 for sgd, 0 for rmsprop)"),
    FLAG("nesterov", "optimisation", TRAIN, "Nesterov momentum (sgd)"),
    REAL("wd", "WD", 0, INFINITY, "0", "optimisation", TRAIN, "weight decay (decoupled for adamw)"),
    TEXT("schedule", "SPEC", "constant", "optimisation", TRAIN, check_schedule,
         "constant, step:E1,E2[:GAMMA] (times GAMMA, default 0.1, at those\n"
         "epochs), cosine[:MIN] (to MIN x lr), onecycle[:PCT],\n"
         "triangle[:PCT[:START[:END]]] (linear from START x lr up to lr over PCT\n"
         "of the steps, then down to END x lr; defaults 0.25, 0, 0)"),
    INT("warmup", "N", 0, BIG, "0", "optimisation", TRAIN,
        "linear learning-rate warm-up over the first N epochs"),
    REAL("label-smoothing", "EPS", 0, 0.999999, "0", "optimisation", TRAIN | GRAD,
         "label smoothing of the cross-entropy, in [0, 1)"),
    TEXT("lookahead", "K[:D]", NULL, "optimisation", TRAIN, check_lookahead,
         "every K steps pull the weights (and BatchNormalization statistics)\n"
         "back to their slow average: slow += (1 - d)(w - slow), w = slow, with\n"
         "d = D x (step / steps)^3 (D default 0.95^K); the trained model is\n"
         "the slow weights (airbench94's Lookahead: 5)"),
    TEXT("freeze", "LIST", NULL, "optimisation", TRAIN, NULL,
         "comma list; a parameter is kept fixed when an entry is a prefix of\n"
         "its initializer name ('layer1.'), a pattern with * or ? of the whole\n"
         "name ('*.bn1.weight'), or the name or op type of a node that reads\n"
         "it ('Conv': every Conv's weights and biases)"),
    INT("seed", "N", 0, 9.2e18, "1", "optimisation", TRAIN | BENCH,
        "data order, augmentation, dropout, --reinit (bench: the random batch)"),
    FLAG("reinit", "optimisation", TRAIN,
         "start from fresh weights, initialised as PyTorch does by default\n"
         "(default: the model's own weights: fine-tuning)"),
    /* steps */
    FLAG("sync-steps", "steps", TRAIN | BENCH,
         "on a GPU, wait for each step's loss before queuing the next (default:\n"
         "the host queues a step while the GPU runs the one before; the same\n"
         "results; fp16 modes, --profile and several ranks always wait)"),
    FLAG("no-graph", "steps", TRAIN | BENCH,
         "on a GPU, launch every step's kernels (default: full batches replay a\n"
         "CUDA graph of the step; the same results)"),
    INT("steps", "K", 1, BIG, NULL, "steps", BENCH, "timed steps (default 20 on the CPU, 100 on a GPU)"),
    INT("warmup-steps", "W", 0, BIG, "5", "steps", BENCH, "untimed steps before them"),
    FLAG("infer", "steps", BENCH, "time inference passes instead of training steps"),
    /* output */
    OPT("output", 'o', "FILE", AMDNN_OPTION_TEXT, 0, 0, NULL, "output", TRAIN | LUT, NULL,
         "where to write: train, the trained model (the original graph with the\n"
         "trained weights, for inference); lut, the table (atomically)"),
    TEXT("metrics", "FILE.tsv", NULL, "output", TRAIN,
         NULL, "a row per epoch: epoch, hours, train_loss, train_acc, test_loss,\n"
               "test_top1, lr, images_per_s (+ val columns)"),
    TEXT("plot", "FILE.png", NULL, "output", TRAIN | SWEEP, NULL,
         "train: loss and accuracy curves, redrawn after each epoch; sweep: a\n"
         "bar chart of the top-1 drop per node"),
    TEXT("confusion", "FILE.png", NULL, "output", EVAL, NULL, "the confusion matrix as a picture"),
    TEXT("tsv", "FILE.tsv", NULL, "output", SWEEP, NULL,
         "the rows, one flushed per node; a FILE of the same sweep is resumed\n"
         "(its rows kept), a FILE of another is an error"),
    TEXT("profile", "FILE.tsv", NULL, "output", TRAIN | EVAL | BENCH, NULL,
         "time per stage (im2col, GEMM, backward-data, backward-weights) and per\n"
         "op family (on a GPU timed with CUDA events): a table and FILE.tsv"),
    /* checkpoints */
    TEXT("checkpoint-dir", "DIR", NULL, "checkpoints", TRAIN, NULL,
         "save checkpoints there (the last two are kept)"),
    INT("checkpoint-every", "N", 1, BIG, NULL, "checkpoints", TRAIN, "every N epochs (default 1 with a folder)"),
    REAL("checkpoint-minutes", "M", 1e-6, INFINITY, NULL, "checkpoints", TRAIN, "also every M minutes of training"),
    INT("checkpoint-steps", "N", 1, BIG, NULL, "checkpoints", TRAIN, "also every N optimizer steps"),
    FLAG("resume", "checkpoints", TRAIN, "continue from the newest valid checkpoint of --checkpoint-dir"),
    TEXT("walltime", "T", NULL, "checkpoints", TRAIN, check_duration,
         "stop with a checkpoint before T (47h30m, 90m, 3600s); SIGTERM and\n"
         "SIGINT do the same"),
    INT("stop-after", "N", 1, BIG, NULL, "checkpoints", TRAIN | SWEEP,
        "stop after N optimizer steps (train) or N rows (sweep) as --walltime\n"
        "would: run again (train: with --resume) to continue"),
    /* several processes */
    FLAG("sync-bn", "several processes", TRAIN,
         "BatchNormalization statistics over the global batch, their sums\n"
         "through MPI every step (default: each rank's own batch; the running\n"
         "statistics averaged)"),
    /* tables */
    TEXT("format", "amdq8|bin", "amdq8", "tables", LUT, check_format,
         "8-bit tables: AMDQ8TAB (65536 int32) or TFApprox's .bin (65536\n"
         "little-endian 16-bit entries)"),
    TEXT("describe", "FILE", NULL, "tables", LUT, NULL,
         "print a table's format, signedness, SHA-256, its error against the\n"
         "exact products and its bit form (which partial products it keeps)"),
    FLAG("signed", "tables", LUT, "--describe: read a .bin table as int16 (q8s; default uint16, q8u)"),
};

enum { N_OPTIONS = sizeof table / sizeof table[0] };

int amdnn_option_count(void) { return N_OPTIONS; }

const amdnn_option_info *amdnn_option_at(int i) { return i >= 0 && i < N_OPTIONS ? &table[i].info : NULL; }

int api_option_index(const char *name) {
  if (!name) return -1;
  for (int i = 0; i < N_OPTIONS; i++)
    if (!strcmp(table[i].info.name, name) || (name[0] && !name[1] && table[i].info.short_name == name[0]))
      return i;
  return -1;
}

const amdnn_option_info *amdnn_option_find(const char *name) { return amdnn_option_at(api_option_index(name)); }

/* ------------------------------------------------------------ the values */

amdnn_status *amdnn_options_create(amdnn_options **out) {
  if (!out) return api_error(AMDNN_ERR_ARGUMENT, "amdnn_options_create: out is NULL");
  amdnn_options *o = calloc(1, sizeof *o);
  if (o) o->values = calloc(N_OPTIONS, sizeof *o->values);
  if (!o || !o->values) {
    free(o);
    *out = NULL;
    return api_error(AMDNN_ERR_NO_MEMORY, "out of memory");
  }
  *out = o;
  return NULL;
}

void amdnn_options_free(amdnn_options *o) {
  if (!o) return;
  for (int i = 0; i < N_OPTIONS; i++) free(o->values[i]);
  free(o->values);
  free(o);
}

/* Checks value against option i: 0, or -1 with the reason in st. */
static int check_value(const api_option *opt, const char *v, amd_status *st) {
  const amdnn_option_info *in = &opt->info;
  char *end;
  switch (in->kind) {
  case AMDNN_OPTION_FLAG:
    if (strcmp(v, "1") && strcmp(v, "0")) return amd_fail(st, "a flag takes 1 (on) or 0 (off), not '%s'", v);
    return 0;
  case AMDNN_OPTION_INT: {
    errno = 0;
    long long n = strtoll(v, &end, 10);
    if (errno || end == v || *end) return amd_fail(st, "'%s' is not a whole number", v);
    if ((double)n < in->min || (double)n > in->max) {
      if (in->max >= BIG) return amd_fail(st, "%lld is below %.0f", n, in->min);
      return amd_fail(st, "%lld is outside %.0f..%.0f", n, in->min, in->max);
    }
    return 0;
  }
  case AMDNN_OPTION_FLOAT: {
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || *end || !isfinite(x)) return amd_fail(st, "'%s' is not a finite number", v);
    if (x < in->min || x > in->max) {
      if (isinf(in->max)) return amd_fail(st, "%g is below %g", x, in->min);
      return amd_fail(st, "%g is outside [%g, %g]", x, in->min, in->max);
    }
    return 0;
  }
  case AMDNN_OPTION_TEXT:
    if (!*v) return amd_fail(st, "an empty value");
    return opt->check ? opt->check(v, st) : 0;
  }
  return amd_fail(st, "unknown option kind");
}

amdnn_status *amdnn_options_set(amdnn_options *o, const char *name, const char *value) {
  if (!o || !name) return api_error(AMDNN_ERR_ARGUMENT, "amdnn_options_set: options or name is NULL");
  int i = api_option_index(name);
  if (i < 0) return api_error(AMDNN_ERR_ARGUMENT, "unknown option '%s' (amdnn-onnx COMMAND --help lists them)", name);
  amd_status st = {{0}};
  if (value && check_value(&table[i], value, &st)) {
    char flag[128];
    snprintf(flag, sizeof flag, "--%s", table[i].info.name);
    /* the parsers below name their option themselves: no second prefix */
    if (!strncmp(st.msg, flag, strlen(flag))) return api_error(AMDNN_ERR_ARGUMENT, "%s", st.msg);
    return api_error(AMDNN_ERR_ARGUMENT, "%s: %s", flag, st.msg);
  }
  char *copy = value ? strdup(value) : NULL;
  if (value && !copy) return api_error(AMDNN_ERR_NO_MEMORY, "out of memory");
  free(o->values[i]);
  o->values[i] = copy;
  return NULL;
}

const char *amdnn_options_get(const amdnn_options *o, const char *name) {
  int i = api_option_index(name);
  return o && i >= 0 ? o->values[i] : NULL;
}

const char *api_opt(const amdnn_options *o, const char *name) {
  int i = api_option_index(name);
  AMD_ASSERT(i >= 0); /* the library asks only for options of its table */
  return o ? o->values[i] : NULL;
}

int64_t api_opt_i64(const amdnn_options *o, const char *name, int64_t def) {
  const char *v = api_opt(o, name);
  return v ? (int64_t)strtoll(v, NULL, 10) : def;
}

double api_opt_f64(const amdnn_options *o, const char *name, double def) {
  const char *v = api_opt(o, name);
  return v ? strtod(v, NULL) : def;
}

int api_opt_flag(const amdnn_options *o, const char *name) {
  const char *v = api_opt(o, name);
  return v && !strcmp(v, "1");
}

/* "train, eval, sweep": the calls of a used_by mask. */
static void calls_of(unsigned used, char *buf, size_t n) {
  static const char *const names[] = {"session", "info", "run", "grad", "train", "eval", "bench", "sweep", "lut"};
  size_t k = 0;
  buf[0] = 0;
  for (int b = 0; b < 9 && k < n; b++)
    if (used & (1u << b)) k += (size_t)snprintf(buf + k, n - k, "%s%s", k ? ", " : "", names[b]);
}

amdnn_status *api_opts_check(const amdnn_options *o, unsigned call, const char *call_name) {
  for (int i = 0; o && i < N_OPTIONS; i++) {
    if (!o->values[i]) continue;
    const amdnn_option_info *in = &table[i].info;
    if ((in->used_by & call) && !((in->used_by & AMDNN_FOR_SESSION) && call != AMDNN_FOR_SESSION)) continue;
    char calls[160];
    calls_of(in->used_by, calls, sizeof calls);
    if (in->used_by & AMDNN_FOR_SESSION)
      return api_error(AMDNN_ERR_ARGUMENT, "%s: option '%s' is set when the session opens (amdnn_session_open)",
                       call_name, in->name);
    return api_error(AMDNN_ERR_ARGUMENT, "%s takes no option '%s' (it is an option of: %s)", call_name, in->name,
                     calls);
  }
  return NULL;
}

int api_image_opts(const amdnn_options *o, amd_image_opts *img, amd_status *st) {
  static const char *const names[] = {"resize", "crop", "normalize", "workers", "fast-decode", "skip-bad"};
  memset(img, 0, sizeof *img);
  for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
    const char *v = api_opt(o, names[k]);
    if (!v || !strcmp(v, "0")) continue;
    char flag[32];
    snprintf(flag, sizeof flag, "--%s", names[k]);
    const int is_flag = !strcmp(names[k], "fast-decode") || !strcmp(names[k], "skip-bad");
    if (amd_image_opt_parse(flag, is_flag ? NULL : v, img, st) < 0) return -1;
  }
  return 0;
}
