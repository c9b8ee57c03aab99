/* Data sets: SPEC parsing and dispatch to the format readers (idx.c, cifar.c,
 * image_folder.c, tensors.c, which share reader_common.c), RNG, shuffling and
 * batch assembly (see dataset.h). */
#include "dataset.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image_decode.h"
#include "reader_common.h"

#ifdef _OPENMP
#define AMD_PRAGMA(x) _Pragma(#x)
#else
#define AMD_PRAGMA(x)
#endif

/* ---------------------------------------------------------------- load / free */

/* Every data format: the SPEC prefix before the colon and its reader. Adding
 * a format is a reader file, its enum entry (dataset.h) and one line here. */
static const struct data_format {
  amd_data_format id;
  const char *prefix;
  int (*load)(const char *arg, amd_dataset *ds, amd_status *st);
} formats[] = {
    {AMD_DATA_IDX, "mnist", amd_dataset_load_idx},
    {AMD_DATA_CIFAR10, "cifar10", amd_dataset_load_cifar10},
    {AMD_DATA_CIFAR100, "cifar100", amd_dataset_load_cifar100},
    {AMD_DATA_IMAGES, "images", amd_dataset_load_images},
    {AMD_DATA_TENSORS, "tensors", amd_dataset_load_tensor_spec},
};
enum { N_FORMATS = sizeof formats / sizeof *formats };

const char *amd_data_format_name(amd_data_format f) {
  for (int i = 0; i < N_FORMATS; i++)
    if (formats[i].id == f) return formats[i].prefix;
  return "none";
}

static void split_free(amd_data_split *s) {
  free(s->u8);
  free(s->f32);
  free(s->labels);
  free(s->rag);
  free(s->rag_off);
  free(s->rag_h);
  free(s->rag_w);
  memset(s, 0, sizeof *s);
}

void amd_dataset_free(amd_dataset *ds) {
  if (!ds) return;
  if (ds->test_is_train) memset(&ds->test, 0, sizeof ds->test);
  split_free(&ds->train);
  split_free(&ds->test);
  free(ds->mean);
  free(ds->std);
  if (ds->class_names) {
    for (int64_t i = 0; i < ds->n_classes; i++) free(ds->class_names[i]);
    free(ds->class_names);
  }
  memset(ds, 0, sizeof *ds);
}

/* Keeps samples idx[0..k) of s (increasing, so every move goes down), in place. */
static void split_keep(amd_data_split *s, int64_t c, int64_t hw, int64_t k) {
  const int64_t per = c * hw;
  int64_t rag_end = 0;
  for (int64_t j = 0; j < k; j++) {
    const int64_t i = amd_spread_index(j, k, s->n);
    s->labels[j] = s->labels[i];
    if (s->u8) memmove(s->u8 + j * per, s->u8 + i * per, (size_t)per);
    if (s->f32) memmove(s->f32 + j * per, s->f32 + i * per, (size_t)per * sizeof *s->f32);
    if (s->rag) { /* images of their own sizes, one after the other */
      const int64_t bytes = (int64_t)s->rag_h[i] * s->rag_w[i] * c;
      memmove(s->rag + rag_end, s->rag + s->rag_off[i], (size_t)bytes);
      s->rag_off[j] = rag_end, s->rag_h[j] = s->rag_h[i], s->rag_w[j] = s->rag_w[i];
      rag_end += bytes;
    }
  }
  s->n = k;
}

int amd_dataset_limit(amd_dataset *ds, int64_t limit, amd_status *st) {
  if (limit < 1) return amd_fail(st, "--limit %lld: must be at least 1", (long long)limit);
  const int64_t hw = ds->h * ds->w;
  if (ds->train.n > limit) split_keep(&ds->train, ds->c, hw, limit);
  if (ds->test_is_train) ds->test = ds->train; /* the same arrays, now shorter */
  else if (ds->test.n > limit) split_keep(&ds->test, ds->c, hw, limit);
  return 0;
}

/* Overrides ds->mean / ds->std as opts->norm asks (AMD_NORM_DATASET keeps them). */
int amd_data_apply_norm(amd_dataset *ds, const amd_image_opts *o, amd_status *st) {
  static const float in_mean[3] = {0.485f, 0.456f, 0.406f}, in_std[3] = {0.229f, 0.224f, 0.225f};
  if (o->norm == AMD_NORM_DATASET) return 0;
  const float *m = NULL, *s = NULL;
  int n = 0;
  if (o->norm == AMD_NORM_IMAGENET) m = in_mean, s = in_std, n = 3;
  else if (o->norm == AMD_NORM_CUSTOM) m = o->norm_mean, s = o->norm_std, n = o->norm_n;
  if (n && n != ds->c && n != 1)
    return amd_fail(st, "--normalize gives %d channel value(s) but the data has %lld channel(s)", n, (long long)ds->c);
  for (int64_t c = 0; c < ds->c; c++) {
    ds->mean[c] = n ? m[n == 1 ? 0 : c] : 0.0f;
    ds->std[c] = n ? s[n == 1 ? 0 : c] : 1.0f;
  }
  return 0;
}

int amd_dataset_load(const char *spec, amd_dataset *ds, amd_status *st) {
  return amd_dataset_load_opts(spec, NULL, ds, st);
}

int amd_dataset_load_opts(const char *spec, const amd_image_opts *opts, amd_dataset *ds, amd_status *st) {
  static const amd_image_opts defaults = {0};
  if (!opts) opts = &defaults;
  memset(ds, 0, sizeof *ds);
  if (!spec) return amd_fail(st, "no data set given");
  const char *colon = strchr(spec, ':');
  if (!colon || colon[1] == 0)
    return amd_fail(st,
                    "bad data spec '%s' (expected mnist:DIR, cifar10:DIR, cifar100:DIR, images:DIR or "
                    "tensors:X.pb,Y.pb)",
                    spec);
  size_t kl = (size_t)(colon - spec);
  const char *arg = colon + 1;
  if (strlen(arg) >= AMD_DATA_PATH_MAX) return amd_fail(st, "data spec too long");
  for (int i = 0; i < N_FORMATS; i++) {
    if (strlen(formats[i].prefix) != kl || strncmp(spec, formats[i].prefix, kl) != 0) continue;
    int is_images = formats[i].id == AMD_DATA_IMAGES;
    if (!is_images && (opts->resize || opts->resize_h || opts->crop_h))
      return amd_fail(st, "--resize and --crop apply to images: data only (not %s:)", formats[i].prefix);
    /* (the other formats' samples have one size already: pad and crop them with crop:P) */
    if (!is_images && opts->uncropped_train)
      return amd_fail(st, "--augment rrc applies to images: data only (not %s:; use crop:P)",
                      formats[i].prefix);
    if (opts->uncropped_train && !opts->crop_h)
      return amd_fail(st, "--augment rrc needs --crop N or HxW (the size of the random crops)");
    if ((is_images ? amd_dataset_load_images_opts(arg, opts, ds, st) : formats[i].load(arg, ds, st)) ||
        amd_data_apply_norm(ds, opts, st)) {
      amd_dataset_free(ds);
      return -1;
    }
    ds->format = formats[i].id;
    return 0;
  }
  return amd_fail(st,
                  "unknown data format '%.*s' in '%s' (expected mnist, cifar10, cifar100, images or "
                  "tensors)",
                  (int)kl, spec, spec);
}

const char *amd_dataset_describe(const amd_dataset *ds, char *buf, size_t n) {
  size_t k = 0;
  int w = snprintf(buf, n, "%s: %lld train / %lld test, %lldx%lldx%lld, %lld classes, mean",
                   amd_data_format_name(ds->format), (long long)ds->train.n, (long long)ds->test.n,
                   (long long)ds->c, (long long)ds->h, (long long)ds->w, (long long)ds->n_classes);
  if (w > 0) k = (size_t)w;
  for (int64_t c = 0; c < ds->c && c < 4 && k < n; c++)
    k += (size_t)snprintf(buf + k, n - k, " %.4f", ds->mean ? ds->mean[c] : 0.0f);
  if (k < n) k += (size_t)snprintf(buf + k, n - k, " std");
  for (int64_t c = 0; c < ds->c && c < 4 && k < n; c++)
    k += (size_t)snprintf(buf + k, n - k, " %.4f", ds->std ? ds->std[c] : 1.0f);
  if (ds->c > 4 && k < n) k += (size_t)snprintf(buf + k, n - k, " ...");
  if (ds->partial && k < n)
    k += (size_t)snprintf(buf + k, n - k, " (only the evaluated images decoded)");
  else if (ds->test_is_train && k < n)
    k += (size_t)snprintf(buf + k, n - k, " (one split: test = train)");
  if (ds->train.rag && k < n) /* (--augment rrc) */
    k += (size_t)snprintf(buf + k, n - k, ", training images kept uncropped (%.1f MB)",
                          (double)ds->train.rag_off[ds->train.n] / 1e6);
  if (ds->skipped && k < n) snprintf(buf + k, n - k, ", %lld bad files skipped", (long long)ds->skipped);
  return buf;
}

/* ---------------------------------------------------------------- image options */

/* "N" or "HxW" (each 1..65535). */
static int parse_size(const char *v, int *h, int *w) {
  char *end;
  long a = strtol(v, &end, 10), b = a;
  if (end == v || a < 1 || a > 65535) return -1;
  if (*end == 'x' || *end == 'X' || *end == ',') {
    const char *p = end + 1;
    b = strtol(p, &end, 10);
    if (end == p || b < 1 || b > 65535) return -1;
  }
  if (*end) return -1;
  *h = (int)a;
  *w = (int)b;
  return 0;
}

/* "A,B,C" or "A" into v (n values); -1 on junk. */
static int parse_floats(const char *s, float *v, int *n) {
  *n = 0;
  while (*n < 3) {
    char *end;
    double x = strtod(s, &end);
    if (end == s || !isfinite(x)) return -1;
    v[(*n)++] = (float)x;
    if (*end == 0) return 0;
    if (*end != ',') return -1;
    s = end + 1;
  }
  return -1;
}

int amd_image_opt_parse(const char *name, const char *value, amd_image_opts *o, amd_status *st) {
  if (!strcmp(name, "--fast-decode")) return o->fast_decode = 1, 1;
  if (!strcmp(name, "--skip-bad")) return o->skip_bad = 1, 1;
  int is_resize = !strcmp(name, "--resize"), is_crop = !strcmp(name, "--crop"),
      is_norm = !strcmp(name, "--normalize"), is_workers = !strcmp(name, "--workers");
  if (!is_resize && !is_crop && !is_norm && !is_workers) return 0;
  if (!value) return amd_fail(st, "%s needs a value", name);
  int h, w;
  if (is_resize) {
    if (parse_size(value, &h, &w)) return amd_fail(st, "bad value '%s' for --resize (N or HxW, 1..65535)", value);
    o->resize = strpbrk(value, "xX,") ? 0 : h;
    o->resize_h = o->resize ? 0 : h;
    o->resize_w = o->resize ? 0 : w;
  } else if (is_crop) {
    if (parse_size(value, &h, &w)) return amd_fail(st, "bad value '%s' for --crop (N or HxW, 1..65535)", value);
    o->crop_h = h;
    o->crop_w = w;
  } else if (is_workers) {
    char *end;
    long n = strtol(value, &end, 10);
    if (end == value || *end || n < 1 || n > 1024) return amd_fail(st, "bad value '%s' for --workers (1..1024)", value);
    o->workers = (int)n;
  } else if (!strcmp(value, "imagenet")) o->norm = AMD_NORM_IMAGENET;
  else if (!strcmp(value, "dataset")) o->norm = AMD_NORM_DATASET;
  else if (!strcmp(value, "none")) o->norm = AMD_NORM_NONE;
  else {
    char buf[256];
    snprintf(buf, sizeof buf, "%s", value);
    char *slash = strchr(buf, '/');
    int nm = 0, ns = 0;
    int bad = !slash;
    if (!bad) {
      *slash = 0;
      bad = parse_floats(buf, o->norm_mean, &nm) || parse_floats(slash + 1, o->norm_std, &ns) || nm != ns ||
            nm == 2;
      for (int i = 0; !bad && i < ns; i++) bad = !(o->norm_std[i] > 0);
    }
    if (bad)
      return amd_fail(st, "bad value '%s' for --normalize (imagenet, dataset, none, or M1,M2,M3/S1,S2,S3 or M/S "
                          "with positive S)", value);
    o->norm = AMD_NORM_CUSTOM;
    o->norm_n = nm;
  }
  return 2;
}

const char *amd_image_opts_help(void) {
  return "  --resize N|HxW         images: shorter side to N (the longer int(N*long/short)), or\n"
         "                         exactly HxW; PIL's antialiased bilinear resize, as\n"
         "                         torchvision's Resize on PIL images\n"
         "  --crop N|HxW           images: centre crop (torchvision's CenterCrop; zero padding\n"
         "                         when the image is smaller)\n"
         "  --normalize NORM       imagenet (mean 0.485,0.456,0.406 std 0.229,0.224,0.225),\n"
         "                         dataset (the training split's own statistics, default),\n"
         "                         none (x/255), or M1,M2,M3/S1,S2,S3 (or M/S)\n"
         "  --workers N            images: decoding threads (default: the online CPUs)\n"
         "  --fast-decode          images: decode JPEGs at 1/2, 1/4 or 1/8 scale when still >= the\n"
         "                         resize target; faster, but pixels differ from torchvision's\n"
         "  --skip-bad             images: skip corrupt or unreadable files (counted on stderr)\n"
         "                         instead of failing\n";
}

const char *amd_image_opts_describe(const amd_image_opts *o, char *buf, size_t n) {
  static const char *norms[] = {"dataset", "imagenet", "none", "custom"};
  snprintf(buf, n, "resize=%d/%dx%d crop=%dx%d norm=%s:%g,%g,%g/%g,%g,%g fast=%d skip=%d", o->resize, o->resize_h,
           o->resize_w, o->crop_h, o->crop_w, norms[o->norm & 3], o->norm_mean[0], o->norm_mean[1], o->norm_mean[2],
           o->norm_std[0], o->norm_std[1], o->norm_std[2], o->fast_decode, o->skip_bad);
  return buf;
}

/* ---------------------------------------------------------------- RNG, shuffles */

uint64_t amd_rng_next(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t amd_rng_below(uint64_t *state, uint64_t n) {
  AMD_ASSERT(n >= 1);
  /* reject the top partial block so every residue is equally likely */
  uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  for (;;) {
    uint64_t r = amd_rng_next(state);
    if (r < limit) return r % n;
  }
}

void amd_shuffle_i64(int64_t *perm, int64_t n, uint64_t *state) {
  for (int64_t i = n - 1; i > 0; i--) {
    int64_t j = (int64_t)amd_rng_below(state, (uint64_t)i + 1);
    int64_t t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
}

void amd_permutation(int64_t *perm, int64_t n, uint64_t seed) {
  for (int64_t i = 0; i < n; i++) perm[i] = i;
  uint64_t s = seed;
  amd_shuffle_i64(perm, n, &s);
}

int amd_val_split(int64_t n, int64_t k, uint64_t seed, int64_t *perm, amd_status *st) {
  if (n <= 0) return amd_fail(st, "validation split of an empty training set");
  if (k < 0 || k >= n)
    return amd_fail(st, "validation size %lld must be in [0, %lld) (training set has %lld samples)",
                    (long long)k, (long long)n, (long long)n);
  amd_permutation(perm, n, seed);
  return 0;
}

/* ---------------------------------------------------------------- augmentation */

int amd_augment_parse(const char *s, amd_augment *a, amd_status *st) {
  static const char *valid = "valid: crop:P, flip, flip:alt, cutout:S, rrc or rrc:SMIN with 0 < SMIN <= 1";
  memset(a, 0, sizeof *a);
  if (!s) return 0;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", s);
  for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
    int v;
    if (strcmp(tok, "flip") == 0) {
      a->hflip = 1;
    } else if (strcmp(tok, "flip:alt") == 0) {
      a->hflip_alt = 1;
    } else if (sscanf(tok, "crop:%d", &v) == 1 && v > 0) {
      a->pad_crop = v;
    } else if (sscanf(tok, "cutout:%d", &v) == 1 && v > 0) {
      a->cutout = v;
    } else if (strcmp(tok, "rrc") == 0) {
      a->rrc = 1;
      a->rrc_min_scale = 0.08; /* torchvision's default scale=(0.08, 1.0) */
    } else if (strncmp(tok, "rrc:", 4) == 0) {
      char *end;
      double smin = strtod(tok + 4, &end);
      if (end == tok + 4 || *end || !(smin > 0 && smin <= 1))
        return amd_fail(st, "--augment: bad item '%s' (%s)", tok, valid);
      a->rrc = 1;
      a->rrc_min_scale = smin;
    } else {
      return amd_fail(st, "--augment: unknown item '%s' (%s)", tok, valid);
    }
  }
  if (a->rrc && a->pad_crop) return amd_fail(st, "--augment: rrc and crop:P both crop; choose one");
  if (a->hflip && a->hflip_alt) return amd_fail(st, "--augment: flip and flip:alt both mirror; choose one");
  return 0;
}

/* Uniform in [0, 1) with 53 random bits. */
static double rng_unit(uint64_t *rng) { return (double)(amd_rng_next(rng) >> 11) * 0x1.0p-53; }

void amd_rrc_box(int64_t ih, int64_t iw, double min_scale, uint64_t *rng, int32_t *y, int32_t *x, int32_t *h,
                 int32_t *w) {
  const double area = (double)ih * (double)iw, lo = log(3.0 / 4.0), hi = log(4.0 / 3.0);
  for (int t = 0; t < 10; t++) {
    double target = area * (min_scale + (1.0 - min_scale) * rng_unit(rng));
    double aspect = exp(lo + (hi - lo) * rng_unit(rng));
    /* Python's round(): halves to even, as rint in the default rounding mode */
    int64_t cw = (int64_t)rint(sqrt(target * aspect)), ch = (int64_t)rint(sqrt(target / aspect));
    if (cw > 0 && cw <= iw && ch > 0 && ch <= ih) {
      *y = (int32_t)amd_rng_below(rng, (uint64_t)(ih - ch + 1));
      *x = (int32_t)amd_rng_below(rng, (uint64_t)(iw - cw + 1));
      *h = (int32_t)ch, *w = (int32_t)cw;
      return;
    }
  }
  /* the centre crop of the whole image, clamped to the ratio range */
  double in_ratio = (double)iw / (double)ih;
  int64_t cw = iw, ch = ih;
  if (in_ratio < 3.0 / 4.0)
    ch = (int64_t)rint((double)iw / (3.0 / 4.0));
  else if (in_ratio > 4.0 / 3.0)
    cw = (int64_t)rint((double)ih * (4.0 / 3.0));
  *y = (int32_t)((ih - ch) / 2), *x = (int32_t)((iw - cw) / 2);
  *h = (int32_t)ch, *w = (int32_t)cw;
}

/* ---------------------------------------------------------------- batches */

/* flip:alt: sample s's phase, the top bit of draw s + 1 of the stream seeded with the seed (no stream
 * state is kept: the phase depends on s alone). */
static uint64_t flip_phase(uint64_t seed, int64_t s) {
  uint64_t state = seed + (uint64_t)s * 0x9e3779b97f4a7c15ull;
  return amd_rng_next(&state) >> 63;
}

/* The draws of one sample, in amd_dataset_batch's order. */
static void plan_sample(const amd_dataset *ds, const amd_data_split *split, int64_t s, const amd_augment *aug,
                        uint64_t *rng, amd_batch_sample *p) {
  const int64_t H = ds->h, W = ds->w;
  const int P = aug && aug->pad_crop > 0 ? aug->pad_crop : 0;
  const int S = aug && aug->cutout > 0 ? aug->cutout : 0;
  AMD_ASSERT(s >= 0 && s < split->n);
  memset(p, 0, sizeof *p);
  p->src = s;
  if (aug && aug->rrc && split->rag)
    amd_rrc_box(split->rag_h[s], split->rag_w[s], aug->rrc_min_scale, rng, &p->box_y, &p->box_x, &p->box_h,
                &p->box_w);
  if (P) {
    p->dy = (int32_t)((int64_t)amd_rng_below(rng, 2 * (uint64_t)P + 1) - P);
    p->dx = (int32_t)((int64_t)amd_rng_below(rng, 2 * (uint64_t)P + 1) - P);
  } else if (aug) {
    p->dy = aug->shift_y, p->dx = aug->shift_x;
  }
  if (aug && aug->hflip_alt)
    p->mirror = (int32_t)((flip_phase(aug->flip_seed, s) ^ (uint64_t)aug->epoch) & 1);
  else
    p->mirror = aug && aug->hflip ? (int32_t)(amd_rng_next(rng) >> 63) : aug && aug->mirror_all;
  if (S) {
    int64_t cy = (int64_t)amd_rng_below(rng, (uint64_t)H);
    int64_t cx = (int64_t)amd_rng_below(rng, (uint64_t)W);
    int64_t y0 = cy - S / 2, x0 = cx - S / 2, y1 = y0 + S, x1 = x0 + S;
    p->cut_y0 = (int32_t)(y0 < 0 ? 0 : y0);
    p->cut_x0 = (int32_t)(x0 < 0 ? 0 : x0);
    p->cut_y1 = (int32_t)(y1 > H ? H : y1);
    p->cut_x1 = (int32_t)(x1 > W ? W : x1);
  }
}

void amd_dataset_batch_norm(const amd_dataset *ds, int64_t c, float *scale, float *shift, float *inv) {
  *scale = (float)(1.0 / (255.0 * (double)ds->std[c]));
  *shift = -ds->mean[c] / ds->std[c];
  *inv = 1.0f / ds->std[c];
}

/* The pixels of one planned sample into out [C, H, W]. */
static void fill_sample(const amd_dataset *ds, const amd_data_split *split, const amd_batch_sample *p,
                        float *out) {
  const int64_t C = ds->c, H = ds->h, W = ds->w, HW = H * W, CHW = C * HW, s = p->src;
  for (int64_t c = 0; c < C; c++) {
    float *o = out + c * HW;
    float sc, sh, inv; /* u8: raw * sc + sh; f32: (raw - mean) * inv; padding: sh */
    amd_dataset_batch_norm(ds, c, &sc, &sh, &inv);
    const float mu = ds->mean[c];
    for (int64_t i = 0; i < H; i++) {
      int64_t si = i + p->dy;
      float *orow = o + i * W;
      if (si < 0 || si >= H) {
        for (int64_t j = 0; j < W; j++) orow[j] = sh;
        continue;
      }
      for (int64_t j = 0; j < W; j++) {
        int64_t jj = p->mirror ? W - 1 - j : j; /* flip applies to the cropped image */
        int64_t sj = jj + p->dx;
        if (sj < 0 || sj >= W)
          orow[j] = sh;
        else if (split->u8)
          orow[j] = (float)split->u8[s * CHW + c * HW + si * W + sj] * sc + sh;
        else
          orow[j] = (split->f32[s * CHW + c * HW + si * W + sj] - mu) * inv;
      }
    }
    for (int64_t i = p->cut_y0; i < p->cut_y1; i++)
      for (int64_t j = p->cut_x0; j < p->cut_x1; j++) o[i * W + j] = 0.0f;
  }
}

void amd_dataset_ragged_pixels(const amd_dataset *ds, const amd_data_split *split, const amd_batch_sample *p,
                               uint8_t *pix) {
  const int64_t C = ds->c, H = ds->h, W = ds->w, s = p->src;
  AMD_ASSERT(split->rag && s >= 0 && s < split->n);
  const int64_t ih = split->rag_h[s], iw = split->rag_w[s];
  const uint8_t *img = split->rag + split->rag_off[s];
  if (p->box_h > 0) {
    const int64_t bh = p->box_h, bw = p->box_w;
    AMD_ASSERT(p->box_y >= 0 && p->box_x >= 0 && p->box_w > 0 && p->box_y + bh <= ih && p->box_x + bw <= iw);
    uint8_t *box = malloc((size_t)(bh * bw * C));
    AMD_ASSERT(box != NULL);
    for (int64_t i = 0; i < bh; i++)
      memcpy(box + i * bw * C, img + ((p->box_y + i) * iw + p->box_x) * C, (size_t)(bw * C));
    int rc = amd_img_resize(box, (int)bh, (int)bw, (int)C, pix, (int)H, (int)W);
    AMD_ASSERT(rc == 0); /* (fails only when out of memory) */
    free(box);
    return;
  }
  const int64_t oy = amd_img_centre_offset(ih, H), ox = amd_img_centre_offset(iw, W);
  for (int64_t i = 0; i < H; i++)
    for (int64_t j = 0; j < W; j++) {
      const int64_t si = i + oy, sj = j + ox, inside = si >= 0 && si < ih && sj >= 0 && sj < iw;
      for (int64_t c = 0; c < C; c++) pix[(i * W + j) * C + c] = inside ? img[(si * iw + sj) * C + c] : 0;
    }
}

/* The pixels of one planned sample of a ragged split into out [C, H, W]:
 * amd_dataset_ragged_pixels, then as fill_sample: normalised, mirrored, cut
 * out. */
static void fill_ragged(const amd_dataset *ds, const amd_data_split *split, const amd_batch_sample *p,
                        float *out) {
  const int64_t C = ds->c, H = ds->h, W = ds->w, HW = H * W;
  uint8_t *pix = malloc((size_t)(HW * C)); /* H x W x C */
  AMD_ASSERT(pix != NULL);
  amd_dataset_ragged_pixels(ds, split, p, pix);
  for (int64_t c = 0; c < C; c++) {
    float *o = out + c * HW;
    float sc, sh, inv;
    amd_dataset_batch_norm(ds, c, &sc, &sh, &inv);
    for (int64_t i = 0; i < H; i++)
      for (int64_t j = 0; j < W; j++) { /* as fill_sample: (i + dy, mirrored j + dx), padding outside */
        const int64_t si = i + p->dy, sj = (p->mirror ? W - 1 - j : j) + p->dx;
        const int outside = si < 0 || si >= H || sj < 0 || sj >= W;
        o[i * W + j] = outside ? sh : (float)pix[(si * W + sj) * C + c] * sc + sh;
      }
    for (int64_t i = p->cut_y0; i < p->cut_y1; i++)
      for (int64_t j = p->cut_x0; j < p->cut_x1; j++) o[i * W + j] = 0.0f;
  }
  free(pix);
}

/* Samples of a plan into x: a ragged split's on the OpenMP threads (each
 * sample is independent and the draws are made), the others in order. */
static void fill_plan(const amd_dataset *ds, const amd_data_split *split, const amd_batch_sample *plan,
                      int64_t n, float *x) {
  const int64_t chw = ds->c * ds->h * ds->w;
  if (split->rag) {
    AMD_PRAGMA(omp parallel for schedule(dynamic))
    for (int64_t b = 0; b < n; b++) fill_ragged(ds, split, &plan[b], x + b * chw);
    return;
  }
  for (int64_t b = 0; b < n; b++) fill_sample(ds, split, &plan[b], x + b * chw);
}

#define AUG_RANDOM(aug) ((aug) && ((aug)->pad_crop > 0 || (aug)->hflip || (aug)->cutout > 0 || (aug)->rrc))

void amd_dataset_batch_plan(const amd_dataset *ds, const amd_data_split *split, const int64_t *idx, int64_t n,
                            const amd_augment *aug, uint64_t *rng, amd_batch_sample *plan, int64_t *y) {
  AMD_ASSERT(!AUG_RANDOM(aug) || rng);
  AMD_ASSERT(!(aug && aug->rrc) || split->rag || n == 0); /* rrc crops stored images of their own sizes */
  for (int64_t b = 0; b < n; b++) {
    plan_sample(ds, split, idx[b], aug, rng, &plan[b]);
    y[b] = split->labels[idx[b]];
  }
}

void amd_dataset_batch_fill(const amd_dataset *ds, const amd_data_split *split, const amd_batch_sample *plan,
                            int64_t n, float *x) {
  AMD_ASSERT(split->u8 || split->f32 || split->rag || n == 0);
  fill_plan(ds, split, plan, n, x);
}

void amd_dataset_batch(const amd_dataset *ds, const amd_data_split *split, const int64_t *idx, int64_t n,
                       const amd_augment *aug, uint64_t *rng, float *x, int64_t *y) {
  AMD_ASSERT(!AUG_RANDOM(aug) || rng);
  AMD_ASSERT(split->u8 || split->f32 || split->rag || n == 0);
  if (split->rag) { /* the draws first, then the samples in parallel */
    amd_batch_sample *plan = malloc((size_t)(n > 0 ? n : 1) * sizeof *plan);
    AMD_ASSERT(plan != NULL);
    amd_dataset_batch_plan(ds, split, idx, n, aug, rng, plan, y);
    fill_plan(ds, split, plan, n, x);
    free(plan);
    return;
  }
  for (int64_t b = 0; b < n; b++) { /* sample by sample: no plan array to allocate */
    amd_batch_sample p;
    plan_sample(ds, split, idx[b], aug, rng, &p);
    y[b] = split->labels[idx[b]];
    fill_sample(ds, split, &p, x + b * ds->c * ds->h * ds->w);
  }
}
