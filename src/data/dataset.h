/* Data sets for `train` / `eval --data SPEC`: loading into memory, statistics,
 * seeded shuffling and batch assembly with augmentation.
 *
 * SPEC forms:
 *   mnist:DIR      IDX files train-images-idx3-ubyte, train-labels-idx1-ubyte,
 *                  t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte, each plain or
 *                  .gz (MNIST, Fashion-MNIST, any IDX set of that layout).
 *   cifar10:DIR    data_batch_1..5.bin (train) and test_batch.bin, plain or .gz;
 *                  records of 1 label byte + 3072 bytes (R, G, B planes, 32x32).
 *   cifar100:DIR   train.bin and test.bin, plain or .gz; records of a coarse
 *                  and a fine label byte + 3072 bytes; the fine label (0-99) is
 *                  the class.
 *   images:DIR[,labels=FILE]
 *                  JPEG and PNG files (image_folder.c): torchvision ImageFolder
 *                  layouts DIR/train/<class>/ with DIR/val/<class>/ (or
 *                  DIR/test/<class>/), or DIR/<class>/ alone (one split, used as
 *                  both train and test), or a flat DIR with a labels FILE; decoded
 *                  as PIL's Image.open(f).convert('RGB') does, then optionally
 *                  resized and centre-cropped as torchvision's Resize/CenterCrop
 *                  (amd_image_opts). Without resize/crop every image must have
 *                  the same size.
 *   tensors:X.pb,Y.pb[,XT.pb,YT.pb]
 *                  TensorProto files: X float [N,C,H,W], Y int64/int32 [N]; the
 *                  optional second pair is the test split, otherwise the test
 *                  split is the train data itself.
 *
 * Layout: every sample is C x H x W, row-major (NCHW once batched). Image
 * formats keep uint8 pixels; tensors: keeps floats.
 *
 * Normalisation: batches hold (x/255 - mean[c]) / std[c] for image formats,
 * where mean/std are computed exactly from the training images at load time
 * (MNIST: 0.1307/0.3081); tensors: data are passed through unchanged (mean 0,
 * std 1). The caller may overwrite ds->mean / ds->std after loading.
 *
 * Errors: loaders return -1 with one line in the amd_status (file name and
 * reason) and leave the data set empty (nothing allocated). */
#ifndef AMD_DATASET_H
#define AMD_DATASET_H

#include <stddef.h>
#include <stdint.h>

#include "../core/status.h"
#include "../core/train_types.h"

/* The most a file header may make the loader allocate for one split's pixels. */
#define AMD_DATA_MAX_BYTES ((int64_t)1 << 34)

typedef enum amd_data_format {
  AMD_DATA_NONE = 0,
  AMD_DATA_IDX,      /* mnist: */
  AMD_DATA_CIFAR10,  /* cifar10: */
  AMD_DATA_CIFAR100, /* cifar100: */
  AMD_DATA_IMAGES,   /* images: */
  AMD_DATA_TENSORS,  /* tensors: */
} amd_data_format;

typedef struct amd_data_split {
  int64_t n;       /* samples */
  uint8_t *u8;     /* [n, C, H, W] pixels (image formats), else NULL */
  float *f32;      /* [n, C, H, W] values (tensors:), else NULL */
  int64_t *labels; /* [n], each in [0, n_classes) */
  /* images: with amd_image_opts.uncropped_train (train --augment rrc), the
   * training split is kept resized but not cropped, each image of its own
   * size (u8 NULL): image i is rag_h[i] x rag_w[i] x C pixels, HWC, at
   * rag + rag_off[i]. Batches crop it: a random resized crop, or the centre
   * crop of C x H x W that the other images get (evaluation). */
  uint8_t *rag;
  int64_t *rag_off;
  int32_t *rag_h, *rag_w;
} amd_data_split;

typedef struct amd_dataset {
  amd_data_format format;
  int64_t c, h, w;    /* sample shape */
  int64_t n_classes;  /* images: folder count; cifar10: 10; cifar100: 100; others: max label + 1 */
  float *mean, *std;  /* [c], the normalisation batches get (see above) */
  char **class_names; /* images: [n_classes] folder names; else NULL */
  amd_data_split train, test;
  int test_is_train; /* tensors: with one pair, images: with one folder: test points at train's arrays */
  int partial;       /* images: one split, or the first files of one, decoded for evaluation (only_split) */
  int64_t skipped;   /* images: with skip_bad: the bad files left out */
  char note[1024];   /* images: a warning for the user (bad files skipped, files not loaded), or "" */
} amd_dataset;

/* How `images:` are decoded and preprocessed, and how any format is
 * normalised (the options --resize, --crop, --normalize, --workers,
 * --fast-decode, --skip-bad of `train` and `eval`). A zeroed struct is the
 * default: no resize, no crop, the data set's own statistics, one worker per
 * online CPU, exact decoding, bad files are errors. */
typedef enum amd_norm_kind {
  AMD_NORM_DATASET = 0, /* mean/std computed from the training split (tensors: identity) */
  AMD_NORM_IMAGENET,    /* mean 0.485,0.456,0.406 std 0.229,0.224,0.225 */
  AMD_NORM_NONE,        /* mean 0 std 1 (x/255 for images) */
  AMD_NORM_CUSTOM,      /* norm_mean/norm_std, norm_n values each (1 or 3) */
} amd_norm_kind;

typedef struct amd_image_opts {
  int resize;               /* N > 0: shorter side to N (torchvision Resize(N)) */
  int resize_h, resize_w;   /* > 0: exactly HxW (Resize((H, W))); resize is then 0 */
  int crop_h, crop_w;       /* > 0: centre crop (CenterCrop((H, W))), zero padded if larger */
  amd_norm_kind norm;
  float norm_mean[3], norm_std[3];
  int norm_n;               /* AMD_NORM_CUSTOM: 1 or 3 values */
  int workers;              /* decoding threads; 0: the online CPUs */
  int fast_decode;          /* JPEG: IDCT scaling to the smallest scale >= the resize target */
  int skip_bad;             /* bad files are skipped (counted on stderr) instead of failing */
  /* 1 (train --augment rrc): the training split is stored after --resize
   * but not cropped (amd_data_split.rag), for random resized crops of
   * --crop's size (required); the test split is centre-cropped as always */
  int uncropped_train;
  /* What a command that evaluates one split needs (eval, sweep): only_split 1
   * (the test split) or 2 (the train split) decodes only that split of a
   * DIR/train + DIR/val folder, and max_samples > 0 only N of its files,
   * evenly spaced (amd_spread_index: every class of a sorted folder is
   * represented, where the first N would be the first classes only);
   * both are ignored with the `dataset` normalisation, whose statistics come
   * from all the training images. 0: everything (train). */
  int only_split;
  int64_t max_samples;
  /* Where set, called about every 2 s during a long load (images:) with the
   * stage ("reading headers", "decoding"), the files done and the total. */
  void (*progress)(void *user, const char *stage, int64_t done, int64_t total);
  void *progress_user;
} amd_image_opts;

/* One command-line option of amd_image_opts: name (e.g. "--resize") and its
 * value (NULL when there is none). Returns 0 when name is not one of them, 1
 * when it was taken without a value (a flag), 2 when it took value, -1 on a
 * bad or missing value (a line in st). */
int amd_image_opt_parse(const char *name, const char *value, amd_image_opts *o, amd_status *st);
/* The usage lines of those options (for --help), each line indented by 2. */
const char *amd_image_opts_help(void);
/* A short text of the options that change the data (resume checks), e.g.
 * "resize=256 crop=224x224 norm=imagenet fast=0". */
const char *amd_image_opts_describe(const amd_image_opts *o, char *buf, size_t n);

/* Sample j of k samples spread evenly over n > k (j * n / k, rounded down):
 * the --limit subset of an image folder, whose files are sorted by class. */
static inline int64_t amd_spread_index(int64_t j, int64_t k, int64_t n) {
  return (int64_t)((__int128)j * n / k);
}

/* --limit N of train (eval and sweep pick the same samples by index): keeps
 * N samples of each split, sample j being j * n / N of the split's n
 * (amd_spread_index), so that a folder sorted by class keeps every class;
 * the splits are compacted in place (a split of N or fewer is kept whole). */
int amd_dataset_limit(amd_dataset *ds, int64_t limit, amd_status *st);

/* Parses SPEC and loads both splits; sets ds->format. ds is overwritten (not
 * freed first). amd_dataset_load_opts takes image options (NULL: defaults);
 * resize/crop are refused for formats other than images:, and the
 * normalisation applies to every format (its channel count must fit). */
int amd_dataset_load(const char *spec, amd_dataset *ds, amd_status *st);
int amd_dataset_load_opts(const char *spec, const amd_image_opts *opts, amd_dataset *ds, amd_status *st);
/* The per-format loaders behind amd_dataset_load (same contract). */
int amd_dataset_load_idx(const char *dir, amd_dataset *ds, amd_status *st);
int amd_dataset_load_cifar10(const char *dir, amd_dataset *ds, amd_status *st);
int amd_dataset_load_cifar100(const char *dir, amd_dataset *ds, amd_status *st);
int amd_dataset_load_images(const char *dir, amd_dataset *ds, amd_status *st);
/* images: with its SPEC argument "DIR[,labels=FILE]" and options (NULL: defaults). */
int amd_dataset_load_images_opts(const char *arg, const amd_image_opts *opts, amd_dataset *ds, amd_status *st);
int amd_dataset_load_tensors(const char *x_path, const char *y_path, const char *x_test_path,
                             const char *y_test_path, amd_dataset *ds, amd_status *st);
/* tensors: with its SPEC argument "X.pb,Y.pb[,XTEST.pb,YTEST.pb]". */
int amd_dataset_load_tensor_spec(const char *arg, amd_dataset *ds, amd_status *st);
/* Frees everything and zeroes ds; safe on a zeroed or already freed ds. */
void amd_dataset_free(amd_dataset *ds);

/* The SPEC prefix of a format: "mnist", "cifar10", "cifar100", "images", "tensors". */
const char *amd_data_format_name(amd_data_format f);
/* One line, e.g. "mnist: 60000 train / 10000 test, 1x28x28, 10 classes,
 * mean 0.1307 std 0.3081". */
const char *amd_dataset_describe(const amd_dataset *ds, char *buf, size_t n);

/* Per-channel mean and population std of x/255 over a uint8 split (exact, via
 * per-channel histograms); a std of 0 is reported as 1. mean/std: [c]. A
 * ragged split (rag): over every pixel of its stored, uncropped images. */
void amd_data_stats_u8(const amd_data_split *s, int64_t c, int64_t hw, float *mean, float *std);

/* ---- Random numbers: splitmix64, deterministic for a seed. ---- */
uint64_t amd_rng_next(uint64_t *state);
/* Uniform in [0, n) without modulo bias; n >= 1. */
uint64_t amd_rng_below(uint64_t *state, uint64_t n);
/* Fisher-Yates shuffle of perm[0..n). */
void amd_shuffle_i64(int64_t *perm, int64_t n, uint64_t *state);
/* perm[i] = i, then shuffled with a state seeded by seed. */
void amd_permutation(int64_t *perm, int64_t n, uint64_t seed);
/* Validation split of n training samples: perm (length n, caller's) gets a
 * seeded permutation; perm[0 .. n-k) are the training indices and
 * perm[n-k .. n) the k validation indices. Fails unless 0 <= k < n. */
int amd_val_split(int64_t n, int64_t k, uint64_t seed, int64_t *perm, amd_status *st);

/* ---- Batch assembly. ---- */
typedef struct amd_augment {
  int pad_crop;   /* P > 0: pad with P zero pixels (before normalisation, as torchvision's
                     RandomCrop(padding=P)), then crop HxW at a uniform offset in [0, 2P]^2 */
  int hflip;      /* 1: mirror left-right with probability 0.5 */
  int cutout;     /* S > 0: a SxS square (centre uniform over the image, clipped at the
                     border) set to 0 after normalisation, all channels */
  int hflip_alt;  /* 1 (flip:alt): mirror each sample in every other epoch, from a phase of its own
                     (flip_seed, the sample's index: no draw), so that every sample is seen
                     mirrored in one epoch of each pair (airbench94's alternating flip) */
  uint64_t flip_seed; /* hflip_alt: the phases' seed (the run's) */
  int64_t epoch;      /* hflip_alt: the epoch (0-based) whose batches are made */
  int mirror_all; /* 1 (without hflip): mirror every sample, no draw (test-time augmentation) */
  int shift_y, shift_x; /* without crop:P: every sample shifted by this offset (output (i, j) reads
                           (i + shift_y, j + shift_x); outside: padding), no draw (test-time augmentation) */
  int rrc;        /* 1: RandomResizedCrop (torchvision's algorithm, amd_rrc_box) from the stored
                     images of a ragged split (amd_data_split.rag), resized to H x W */
  double rrc_min_scale; /* rrc: the lower bound of the area fraction (default 0.08); the upper is 1 */
} amd_augment;

/* "crop:P,flip,flip:alt,cutout:S,rrc[:SMIN]" (any subset, comma-separated;
 * NULL: none) into a; rrc with crop:P is refused (both crop), flip with
 * flip:alt too. */
int amd_augment_parse(const char *s, amd_augment *a, amd_status *st);

/* RandomResizedCrop's box in an ih x iw image, torchvision's get_params with
 * ratio (3/4, 4/3): up to 10 tries of an area fraction uniform in
 * [min_scale, 1] and a log-uniform aspect ratio (w / h), each side rounded
 * half to even; the first that fits takes a uniform position; after 10
 * misses the centre crop of the whole image clamped to the ratio range. */
void amd_rrc_box(int64_t ih, int64_t iw, double min_scale, uint64_t *rng, int32_t *y, int32_t *x, int32_t *h,
                 int32_t *w);

/* Fills x [n, C, H, W] (normalised, augmented when aug is non-NULL and asks for
 * anything) and y [n] with samples idx[0..n) of split. The random draws per
 * sample, in order: the rrc box (a variable number), crop dy, crop dx, flip,
 * cutout cy, cutout cx (only those enabled); rng may be NULL when nothing
 * random is enabled. Indices must be in range (checked, always-on assert).
 * A ragged split (rag) is cropped per sample: the rrc box resized to H x W
 * with PIL's bilinear filter (torchvision's resized_crop on a PIL image), or
 * without rrc the centre crop; its samples are assembled on the OpenMP
 * threads after the draws (the same results on any thread count). */
void amd_dataset_batch(const amd_dataset *ds, const amd_data_split *split, const int64_t *idx, int64_t n,
                       const amd_augment *aug, uint64_t *rng, float *x, int64_t *y);

/* The same in two parts, so that the pixels can be assembled elsewhere (the
 * CUDA training kernels' data_batch, from a device copy of the split): _plan
 * makes every random draw (the same sequence as amd_dataset_batch) and fills
 * y; _fill writes the pixels of a plan, as amd_dataset_batch does. The plan's
 * type, amd_batch_sample, is core/train_types.h's. */
void amd_dataset_batch_plan(const amd_dataset *ds, const amd_data_split *split, const int64_t *idx, int64_t n,
                            const amd_augment *aug, uint64_t *rng, amd_batch_sample *plan, int64_t *y);
void amd_dataset_batch_fill(const amd_dataset *ds, const amd_data_split *split, const amd_batch_sample *plan,
                            int64_t n, float *x);
/* A ragged split's planned sample before normalisation and mirroring, as
 * H x W x C uint8 (HWC): the box resized (PIL's bilinear), or the centre crop. */
void amd_dataset_ragged_pixels(const amd_dataset *ds, const amd_data_split *split, const amd_batch_sample *p,
                               uint8_t *pix);
/* Channel c's normalisation: a uint8 pixel becomes raw * scale + shift (fp32
 * multiply, then add), a float value (raw - mean[c]) * inv, padding shift. */
void amd_dataset_batch_norm(const amd_dataset *ds, int64_t c, float *scale, float *shift, float *inv);

#endif
