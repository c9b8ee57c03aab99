/* images:DIR[,labels=FILE] — JPEG and PNG folders, loaded as torchvision's
 * ImageFolder with the standard evaluation transform would give them
 * (PIL's Image.open(f).convert('RGB'), Resize, CenterCrop), every image
 * decoded once at load time into one uint8 [n, C, H, W] array per split.
 *
 * Layouts:
 *   DIR/train/<class>/... with DIR/val/<class>/... (or DIR/test/<class>/...
 *       when there is no val folder): two splits; the classes are the train
 *       folder names in strcmp order (label = position, as ImageFolder's
 *       sorted class list), a test class must be one of them.
 *   DIR/<class>/... (no DIR/train): one split, used as both train and test.
 *   DIR with labels=FILE: the images directly in DIR, one split; FILE holds
 *       either one integer label per line for the images in strcmp order of
 *       their names (ImageNet's validation ground-truth form), or lines
 *       "NAME LABEL" (NAME with or without its extension; LABEL an integer,
 *       or a word such as a WordNet id, then the classes are the distinct
 *       words in strcmp order). Blank lines and lines starting with '#' are
 *       ignored; spaces, tabs or one comma separate the fields.
 * Files are taken as ImageFolder takes them: the files of a class folder and
 * of its sub-folders (os.walk order: folders by path, then names, strcmp),
 * chosen by extension (.jpg, .jpeg, .png, any case); names starting with '.'
 * are skipped (hidden files, macOS "._" forks); other image extensions that
 * ImageFolder would take (.bmp, .ppm, .pgm, .tif, .tiff, .webp) are counted
 * in a note, not loaded. A file with an image extension whose content is not
 * a JPEG or PNG is a bad file.
 *
 * Channels: 3 (RGB) when any image is a JPEG or a colour PNG, or the
 * normalisation has 3 values (--normalize imagenet); else 1 (a set of grey
 * PNGs keeps one channel, as before). Grey images of an RGB set are
 * replicated to 3 channels (convert('RGB')).
 *
 * Sizes: --crop HxW fixes the sample size; else --resize HxW; else every
 * image (after --resize N) must have the same size, or the error names two
 * files and their sizes.
 *
 * Work: pass 1 reads every file's header (kind, size, grey or colour; the
 * size limits are checked there, so a decompression bomb allocates nothing),
 * pass 2 decodes, resizes and crops each file straight into its slot. Both
 * run on a pool of pthreads that take the files in order from an atomic
 * counter. Without --skip-bad the first bad file (in file order) fails the
 * load; with it the bad files are left out and counted (ds->skipped). */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "image_folder.h"

/* ---------------------------------------------------------------- names */

typedef struct name_list {
  char **v;
  int64_t n, cap;
} name_list;

static void names_free(name_list *l) {
  for (int64_t i = 0; i < l->n; i++) free(l->v[i]);
  free(l->v);
  memset(l, 0, sizeof *l);
}

static int names_add(name_list *l, const char *s, amd_status *st) {
  if (l->n == l->cap) {
    int64_t ncap = l->cap ? 2 * l->cap : 64;
    char **nv = realloc(l->v, (size_t)ncap * sizeof *nv);
    if (!nv) return amd_fail(st, "out of memory");
    l->v = nv;
    l->cap = ncap;
  }
  if (!(l->v[l->n] = strdup(s))) return amd_fail(st, "out of memory");
  l->n++;
  return 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int has_ext(const char *s, const char *const *exts) {
  const char *dot = strrchr(s, '.');
  if (!dot) return 0;
  for (int i = 0; exts[i]; i++)
    if (!strcasecmp(dot + 1, exts[i])) return 1;
  return 0;
}

static const char *const img_exts[] = {"jpg", "jpeg", "png", NULL};
static const char *const other_exts[] = {"bmp", "ppm", "pgm", "tif", "tiff", "webp", NULL};

typedef struct listing {
  int64_t other;           /* files with other image extensions (not loaded) */
  char other_first[512];   /* the first of them */
} listing;

/* DIR's sub-folders (want_dirs) or image files, sorted. Dangling links with
 * an image extension are listed (they fail as unreadable files). */
static int list_dir(const char *dir, int want_dirs, name_list *out, listing *li, amd_status *st) {
  memset(out, 0, sizeof *out);
  DIR *d = opendir(dir);
  if (!d) return amd_fail(st, "cannot open folder %s: %s", dir, strerror(errno));
  struct dirent *e;
  int rc = 0;
  while (!rc && (e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char path[AMD_DATA_PATH_MAX];
    struct stat sb;
    if (amd_data_join(path, sizeof path, dir, e->d_name, st)) {
      rc = -1;
      break;
    }
    int ok = stat(path, &sb) == 0;
    if (want_dirs) {
      if (!ok || !S_ISDIR(sb.st_mode)) continue;
    } else {
      if (ok && S_ISDIR(sb.st_mode)) continue;
      if (!has_ext(e->d_name, img_exts)) {
        if (li && has_ext(e->d_name, other_exts) && li->other++ == 0)
          snprintf(li->other_first, sizeof li->other_first, "%.500s", path);
        continue;
      }
    }
    rc = names_add(out, e->d_name, st);
  }
  closedir(d);
  if (rc) {
    names_free(out);
    return -1;
  }
  if (out->n > 1) qsort(out->v, (size_t)out->n, sizeof *out->v, cmp_str);
  return 0;
}

/* ---------------------------------------------------------------- file lists */

static void files_free(amd_img_split *l) {
  for (int64_t i = 0; i < l->n; i++) free(l->path[i]);
  free(l->path);
  free(l->label);
  free(l->info);
  free(l->bad);
  memset(l, 0, sizeof *l);
}

static int files_add(amd_img_split *l, const char *path, int64_t label, amd_status *st) {
  if (l->n == l->cap) {
    int64_t ncap = l->cap ? 2 * l->cap : 256;
    char **np = realloc(l->path, (size_t)ncap * sizeof *np);
    if (np) l->path = np;
    int64_t *nl = np ? realloc(l->label, (size_t)ncap * sizeof *nl) : NULL;
    if (!nl) return amd_fail(st, "out of memory");
    l->label = nl;
    l->cap = ncap;
  }
  if (!(l->path[l->n] = strdup(path))) return amd_fail(st, "out of memory");
  l->label[l->n++] = label;
  return 0;
}

/* dir and its sub-folders (depth-limited) into dirs, as paths. */
static int walk_dirs(const char *dir, int depth, name_list *dirs, amd_status *st) {
  if (names_add(dirs, dir, st)) return -1;
  if (depth >= 16) return 0;
  name_list sub;
  if (list_dir(dir, 1, &sub, NULL, st)) return -1;
  int rc = 0;
  for (int64_t i = 0; !rc && i < sub.n; i++) {
    char p[AMD_DATA_PATH_MAX];
    rc = amd_data_join(p, sizeof p, dir, sub.v[i], st) || walk_dirs(p, depth + 1, dirs, st) ? -1 : 0;
  }
  names_free(&sub);
  return rc;
}

/* The image files of one class folder, in sorted(os.walk(dir)) order. */
static int collect_class(const char *cdir, int64_t label, amd_img_split *out, listing *li, amd_status *st) {
  name_list dirs = {0};
  if (walk_dirs(cdir, 0, &dirs, st)) {
    names_free(&dirs);
    return -1;
  }
  if (dirs.n > 1) qsort(dirs.v, (size_t)dirs.n, sizeof *dirs.v, cmp_str);
  int64_t before = out->n;
  int rc = 0;
  for (int64_t d = 0; !rc && d < dirs.n; d++) {
    name_list files;
    if (list_dir(dirs.v[d], 0, &files, li, st)) {
      rc = -1;
      break;
    }
    for (int64_t i = 0; !rc && i < files.n; i++) {
      char path[AMD_DATA_PATH_MAX];
      rc = amd_data_join(path, sizeof path, dirs.v[d], files.v[i], st) || files_add(out, path, label, st) ? -1 : 0;
    }
    names_free(&files);
  }
  names_free(&dirs);
  if (!rc && out->n == before) rc = amd_fail(st, "%s: empty class folder (no .jpg, .jpeg or .png files)", cdir);
  return rc;
}

/* The files of DIR/<class>/ for the known classes (every sub-folder of DIR must be one). */
static int collect_split(const char *split_dir, char **classes, int64_t n_classes, amd_img_split *out, listing *li,
                         amd_status *st) {
  name_list sub;
  if (list_dir(split_dir, 1, &sub, NULL, st)) return -1;
  int rc = 0;
  if (sub.n == 0) rc = amd_fail(st, "%s: no class folders", split_dir);
  for (int64_t k = 0; !rc && k < sub.n; k++) {
    int64_t label = -1;
    for (int64_t c = 0; c < n_classes; c++)
      if (!strcmp(classes[c], sub.v[k])) label = c;
    if (label < 0) {
      rc = amd_fail(st, "%s/%s: class folder not found in the training set", split_dir, sub.v[k]);
      break;
    }
    char cdir[AMD_DATA_PATH_MAX];
    rc = amd_data_join(cdir, sizeof cdir, split_dir, sub.v[k], st) || collect_class(cdir, label, out, li, st) ? -1 : 0;
  }
  names_free(&sub);
  return rc;
}

/* ---------------------------------------------------------------- labels file */

static int is_int(const char *s, int64_t *v) {
  char *end;
  errno = 0;
  long long x = strtoll(s, &end, 10);
  if (end == s || *end || errno) return 0;
  *v = x;
  return 1;
}

typedef struct label_line {
  char *name, *label;
  int line;
  int used;
} label_line;

static int cmp_line_name(const void *a, const void *b) {
  return strcmp(((const label_line *)a)->name, ((const label_line *)b)->name);
}

/* The line of name (or of name without its extension), or NULL. */
static label_line *find_line(label_line *v, int64_t n, const char *name) {
  label_line key = {.name = (char *)name};
  label_line *hit = n ? bsearch(&key, v, (size_t)n, sizeof *v, cmp_line_name) : NULL;
  if (hit) return hit;
  char stem[AMD_DATA_PATH_MAX];
  snprintf(stem, sizeof stem, "%s", name);
  char *dot = strrchr(stem, '.');
  if (!dot) return NULL;
  *dot = 0;
  key.name = stem;
  return n ? bsearch(&key, v, (size_t)n, sizeof *v, cmp_line_name) : NULL;
}

/* The labels file's lines (text, len bytes and a 0 after them, split in place into fields): *lines
 * (allocated) and *nl of them, blank and '#' lines left out, all of one *form (1: a label; 2: NAME LABEL). */
static int split_label_lines(char *text, int64_t len, const char *file, label_line **lines_out, int64_t *nl_out,
                             int *form_out, amd_status *st) {
  int64_t max_lines = 1, nl = 0;
  for (int64_t i = 0; i < len; i++) max_lines += text[i] == '\n';
  label_line *lines = calloc((size_t)max_lines, sizeof *lines);
  if (!lines) return amd_fail(st, "out of memory");
  *lines_out = lines;
  int rc = 0, lineno = 0, form = 0;
  char *p = text, *endp = text + len;
  while (!rc && p < endp) {
    char *eol = memchr(p, '\n', (size_t)(endp - p));
    if (!eol) eol = endp;
    *eol = 0; /* (text[len] is the copy's 0) */
    lineno++;
    char *f[3] = {0};
    int nf = 0;
    for (char *q = p; *q && nf < 3;) {
      while (*q == ' ' || *q == '\t' || *q == '\r' || *q == ',') q++;
      if (!*q) break;
      f[nf++] = q;
      while (*q && *q != ' ' && *q != '\t' && *q != '\r' && *q != ',') q++;
      if (*q) *q++ = 0;
    }
    p = eol + 1;
    if (nf == 0 || f[0][0] == '#') continue;
    int this_form = nf == 1 ? 1 : nf == 2 ? 2 : 0;
    if (!this_form || (form && this_form != form)) {
      rc = amd_fail(st, "%s line %d: expected %s", file, lineno,
                    form == 1 ? "one integer label" : form == 2 ? "NAME LABEL" : "a label, or NAME LABEL");
      break;
    }
    form = this_form;
    lines[nl].name = form == 2 ? f[0] : NULL;
    lines[nl].label = form == 2 ? f[1] : f[0];
    lines[nl].line = lineno;
    nl++;
  }
  *nl_out = nl;
  *form_out = form;
  return rc;
}

/* Word labels: the classes are the distinct words in strcmp order. */
static int label_words(const label_line *lines, int64_t nl, name_list *classes, amd_status *st) {
  for (int64_t i = 0; i < nl; i++)
    if (names_add(classes, lines[i].label, st)) return -1;
  qsort(classes->v, (size_t)classes->n, sizeof *classes->v, cmp_str);
  int64_t k = 0;
  for (int64_t i = 0; i < classes->n; i++) {
    if (k && !strcmp(classes->v[k - 1], classes->v[i])) {
      free(classes->v[i]);
      continue;
    }
    classes->v[k++] = classes->v[i];
  }
  classes->n = k;
  return 0;
}

/* DIR's images labelled by FILE (the two forms of the header comment). */
static int collect_labelled(const char *dir, const char *file, amd_img_split *out, amd_dataset *ds, listing *li,
                            amd_status *st) {
  uint8_t *text = NULL;
  int64_t len = 0;
  name_list imgs = {0};
  label_line *lines = NULL;
  int64_t nl = 0;
  int rc = 0, form = 0; /* form 1: one label per line; 2: NAME LABEL */
  uint8_t *raw = NULL;
  if (amd_data_read_all(file, (int64_t)1 << 30, &raw, &len, st)) return -1;
  text = malloc((size_t)len + 1); /* a copy that ends in a 0 */
  if (text) {
    memcpy(text, raw, (size_t)len);
    text[len] = 0;
  }
  free(raw);
  if (!text) return amd_fail(st, "out of memory");
  if (list_dir(dir, 0, &imgs, li, st)) {
    free(text);
    return -1;
  }
  if (!rc) rc = split_label_lines((char *)text, len, file, &lines, &nl, &form, st);
  if (!rc && nl == 0) rc = amd_fail(st, "%s: no labels", file);
  if (!rc && imgs.n == 0) rc = amd_fail(st, "%s: no .jpg, .jpeg or .png files", dir);
  /* integer labels, or words (classes in strcmp order) */
  int words = 0;
  for (int64_t i = 0; !rc && i < nl; i++) {
    int64_t v;
    if (!is_int(lines[i].label, &v)) {
      if (form == 1) rc = amd_fail(st, "%s line %d: '%s' is not an integer label", file, lines[i].line, lines[i].label);
      words = 1;
    } else if (v < 0 && form == 1) {
      rc = amd_fail(st, "%s line %d: negative label %lld", file, lines[i].line, (long long)v);
    }
  }
  name_list classes = {0};
  if (!rc && words) rc = label_words(lines, nl, &classes, st);
  if (!rc && form == 1 && nl != imgs.n)
    rc = amd_fail(st, "%s has %lld labels but %s has %lld images (.jpg, .jpeg, .png): one label per image, in name order",
                  file, (long long)nl, dir, (long long)imgs.n);
  if (!rc && form == 2) {
    qsort(lines, (size_t)nl, sizeof *lines, cmp_line_name);
    for (int64_t i = 1; !rc && i < nl; i++)
      if (!strcmp(lines[i - 1].name, lines[i].name))
        rc = amd_fail(st, "%s line %d: '%s' is labelled twice", file, lines[i].line, lines[i].name);
  }
  int64_t max_label = -1;
  for (int64_t i = 0; !rc && i < imgs.n; i++) {
    label_line *l = form == 1 ? &lines[i] : find_line(lines, nl, imgs.v[i]);
    if (!l) {
      rc = amd_fail(st, "%s: no label for %s/%s", file, dir, imgs.v[i]);
      break;
    }
    l->used = 1;
    int64_t v = 0;
    if (words) {
      char **hit = bsearch(&l->label, classes.v, (size_t)classes.n, sizeof *classes.v, cmp_str);
      v = hit - classes.v;
    } else {
      is_int(l->label, &v);
      if (v < 0) {
        rc = amd_fail(st, "%s line %d: negative label %lld", file, l->line, (long long)v);
        break;
      }
    }
    if (v > max_label) max_label = v;
    char path[AMD_DATA_PATH_MAX];
    rc = amd_data_join(path, sizeof path, dir, imgs.v[i], st) || files_add(out, path, v, st) ? -1 : 0;
  }
  for (int64_t i = 0; !rc && form == 2 && i < nl; i++)
    if (!lines[i].used)
      rc = amd_fail(st, "%s line %d: no image '%s' in %s (.jpg, .jpeg, .png)", file, lines[i].line, lines[i].name, dir);
  if (!rc) {
    if (words) {
      ds->class_names = classes.v;
      ds->n_classes = classes.n;
      memset(&classes, 0, sizeof classes);
    } else {
      ds->n_classes = max_label + 1;
    }
  }
  names_free(&classes);
  names_free(&imgs);
  free(lines);
  free(text);
  return rc;
}

/* ---------------------------------------------------------------- the passes */

typedef struct plan {
  const amd_img_split *fl; /* the files (info: pass 1) */
  const amd_image_opts *o;
  int64_t c, h, w;         /* the sample */
  uint8_t *u8;             /* [n, c, h, w], or (off) the uncropped images */
  const int64_t *off;      /* uncropped: image i at u8 + off[i] */
} plan;

static void probe_one(amd_img_pool *p, int64_t i, int worker) {
  (void)worker;
  plan *pl = p->ctx;
  amd_status st;
  if (amd_img_probe(pl->fl->path[i], &pl->fl->info[i], &st)) amd_img_pool_fail(p, i, &st);
}

/* The size of file i after --resize (before --crop). */
static void resized_size(const amd_image_opts *o, const amd_img_info *in, int64_t *h, int64_t *w) {
  if (o->resize_h) *h = o->resize_h, *w = o->resize_w;
  else if (o->resize) amd_img_resize_size(in->h, in->w, o->resize, h, w);
  else *h = in->h, *w = in->w;
}

/* Decodes file path (whose header pass 1 read into in) into a malloc'd HWC
 * buffer; *rh x *rw: its size after --resize. */
static int decode_checked(const char *path, const amd_img_info *in, const amd_image_opts *o, void **tj,
                          uint8_t **pix, int *h, int *w, int *c, int64_t *rh, int64_t *rw, amd_status *st) {
  resized_size(o, in, rh, rw);
  int fast = o->fast_decode && (o->resize || o->resize_h) && in->kind == AMD_IMG_JPEG;
  if (amd_img_decode(path, tj, fast ? (int)*rw : 0, fast ? (int)*rh : 0, pix, h, w, c, st)) return -1;
  if (!fast && (*h != in->h || *w != in->w)) {
    free(*pix);
    *pix = NULL;
    return amd_fail(st, "%s: decoded %dx%d but the header said %dx%d (file changed while loading?)", path, *w,
                    *h, in->w, in->h);
  }
  return 0;
}

int amd_img_decode_sample(const char *path, const amd_img_info *in, const amd_image_opts *o, int64_t C, int64_t H,
                          int64_t W, void **tj, uint8_t *dst, amd_status *st) {
  int64_t rh, rw;
  uint8_t *pix = NULL, *rs = NULL;
  int h, w, c;
  if (decode_checked(path, in, o, tj, &pix, &h, &w, &c, &rh, &rw, st)) return -1;
  /* the centre crop (zero padding where the crop is larger) of the resized
   * image: only its visible rectangle is resized (the same bytes) */
  const int64_t HW = H * W;
  int64_t oy = amd_img_centre_offset(rh, H), ox = amd_img_centre_offset(rw, W);
  int64_t vy0 = oy > 0 ? oy : 0, vy1 = H + oy < rh ? H + oy : rh;
  int64_t vx0 = ox > 0 ? ox : 0, vx1 = W + ox < rw ? W + ox : rw;
  int64_t vh = vy1 - vy0, vw = vx1 - vx0;
  rs = malloc((size_t)(vh * vw * c));
  if (!rs || amd_img_resize_region(pix, h, w, c, (int)rh, (int)rw, (int)vy0, (int)vx0, (int)vh, (int)vw, rs)) {
    free(rs);
    free(pix);
    return amd_fail(st, "%s: out of memory resizing %dx%d to %lldx%lld", path, w, h, (long long)rw, (long long)rh);
  }
  free(pix);
  /* HWC -> CHW, grey -> RGB, zeros outside */
  for (int64_t y = 0; y < H; y++) {
    int64_t sy = y + oy;
    for (int64_t x = 0; x < W; x++) {
      int64_t sx = x + ox;
      int inside = sy >= vy0 && sy < vy1 && sx >= vx0 && sx < vx1;
      const uint8_t *q = rs + ((sy - vy0) * vw + (sx - vx0)) * c;
      for (int64_t ch = 0; ch < C; ch++) dst[ch * HW + y * W + x] = inside ? q[c == 1 ? 0 : ch] : 0;
    }
  }
  free(rs);
  return 0;
}

/* Pass 2 of one file for an uncropped training split: decode and resize
 * (not crop) into dst, rh x rw x C (HWC, grey replicated). */
static int decode_resized(const char *path, const amd_img_info *in, const amd_image_opts *o, int64_t C,
                          void **tj, uint8_t *dst, amd_status *st) {
  int64_t rh, rw;
  uint8_t *pix = NULL;
  int h, w, c;
  if (decode_checked(path, in, o, tj, &pix, &h, &w, &c, &rh, &rw, st)) return -1;
  uint8_t *rs = c == C ? dst : malloc((size_t)(rh * rw * c));
  if (!rs || amd_img_resize(pix, h, w, c, rs, (int)rh, (int)rw)) {
    if (rs != dst) free(rs);
    free(pix);
    return amd_fail(st, "%s: out of memory resizing %dx%d to %lldx%lld", path, w, h, (long long)rw,
                    (long long)rh);
  }
  free(pix);
  if (rs != dst) { /* a grey image of an RGB set */
    for (int64_t i = 0; i < rh * rw; i++)
      for (int64_t ch = 0; ch < C; ch++) dst[i * C + ch] = rs[i];
    free(rs);
  }
  return 0;
}

static void decode_one(amd_img_pool *p, int64_t i, int worker) {
  plan *pl = p->ctx;
  const amd_img_info *in = &pl->fl->info[i];
  int64_t bytes = amd_img_work_bytes(in);
  amd_status st;
  amd_img_mem_reserve(p, bytes);
  if (pl->off ? decode_resized(pl->fl->path[i], in, pl->o, pl->c, &p->tj[worker], pl->u8 + pl->off[i], &st)
              : amd_img_decode_sample(pl->fl->path[i], in, pl->o, pl->c, pl->h, pl->w, &p->tj[worker],
                                      pl->u8 + i * pl->c * pl->h * pl->w, &st))
    amd_img_pool_fail(p, i, &st);
  amd_img_mem_release(p, bytes);
}

/* One split's files: probed (pass 1) into sp->info, the failures in sp->bad. */
static int probe_split(amd_img_pool *p, amd_img_split *sp, amd_status *st) {
  sp->info = calloc((size_t)(sp->n ? sp->n : 1), sizeof *sp->info);
  sp->bad = calloc((size_t)(sp->n ? sp->n : 1), 1);
  if (!sp->info || !sp->bad) return amd_fail(st, "out of memory");
  plan pl = {.fl = sp};
  p->stage = "reading headers";
  p->bad = sp->bad;
  p->bad_count = 0;
  int rc = amd_img_pool_run(p, sp->n, probe_one, &pl, st);
  sp->n_bad = p->bad_count;
  return rc;
}

/* ---------------------------------------------------------------- the folder */

/* The sample shape of the good files of the splits (see the header comment). */
static int sample_shape(const amd_image_opts *o, const amd_img_split *sp, int n_splits, amd_dataset *ds,
                        amd_status *st) {
  int colour = o->norm == AMD_NORM_IMAGENET || (o->norm == AMD_NORM_CUSTOM && o->norm_n == 3);
  const char *first = NULL;
  int64_t fh = 0, fw = 0, n_good = 0;
  for (int s = 0; s < n_splits; s++)
    for (int64_t i = 0; i < sp[s].n; i++) {
      if (sp[s].bad[i]) continue;
      const amd_img_info *in = &sp[s].info[i];
      n_good++;
      if (in->kind == AMD_IMG_JPEG || in->colour) colour = 1;
      int64_t h, w;
      resized_size(o, in, &h, &w);
      if (h > AMD_IMG_MAX_SIDE || w > AMD_IMG_MAX_SIDE || h * w > AMD_IMG_MAX_PIXELS)
        return amd_fail(st, "%s: --resize %d makes %dx%d into %lldx%lld pixels (limits: a side of %d, %lld pixels)",
                        sp[s].path[i], o->resize, in->w, in->h, (long long)w, (long long)h, AMD_IMG_MAX_SIDE,
                        (long long)AMD_IMG_MAX_PIXELS);
      if (o->crop_h) continue;
      if (!first) {
        first = sp[s].path[i], fh = h, fw = w;
      } else if (h != fh || w != fw) {
        if (o->resize)
          return amd_fail(st, "images of different shapes after --resize %d: %s (%dx%d) becomes %lldx%lld but %s "
                              "becomes %lldx%lld; add --crop N (or use --resize HxW)",
                          o->resize, sp[s].path[i], in->w, in->h, (long long)w, (long long)h, first,
                          (long long)fw, (long long)fh);
        return amd_fail(st, "images of different sizes: %s is %lldx%lld but %s is %lldx%lld; use --resize N and/or "
                            "--crop N (e.g. --resize 256 --crop 224)",
                        sp[s].path[i], (long long)w, (long long)h, first, (long long)fw, (long long)fh);
      }
    }
  if (n_good == 0) return amd_fail(st, "%s: no readable images", sp[0].n ? sp[0].path[0] : "data folder");
  ds->c = colour ? 3 : 1;
  ds->h = o->crop_h ? o->crop_h : fh;
  ds->w = o->crop_h ? o->crop_w : fw;
  return 0;
}

static int is_dir(const char *p) {
  struct stat sb;
  return stat(p, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* Only one split (only_split) and of it only max_samples files spread
 * evenly (amd_spread_index's files, in order), where the options ask. */
static void keep_evaluated(const amd_image_opts *o, amd_img_folder *f, amd_dataset *ds) {
  if (!o->only_split || o->norm == AMD_NORM_DATASET) return;
  if (f->n_splits == 2) {
    if (o->only_split == 1) {
      amd_img_split t = f->split[0];
      f->split[0] = f->split[1];
      f->split[1] = t;
    }
    files_free(&f->split[1]);
    f->n_splits = 1;
    ds->partial = 1;
  }
  amd_img_split *fl = &f->split[0];
  if (o->max_samples > 0 && fl->n > o->max_samples) {
    const int64_t n = fl->n, k = o->max_samples;
    for (int64_t i = 0, j = 0; i < n; i++) {
      if (j < k && i == amd_spread_index(j, k, n)) {
        fl->path[j] = fl->path[i];
        fl->label[j++] = fl->label[i];
      } else {
        free(fl->path[i]);
      }
    }
    fl->n = k;
    ds->partial = 1;
  }
}

void amd_img_folder_free(amd_img_folder *f) {
  if (f->pool_started) amd_img_pool_stop(&f->pool);
  files_free(&f->split[0]);
  files_free(&f->split[1]);
  memset(f, 0, sizeof *f);
}

int amd_img_folder_open(const char *arg, const amd_image_opts *o, amd_img_folder *f, amd_dataset *ds,
                        amd_status *st) {
  memset(f, 0, sizeof *f);
  f->n_splits = 1;
  /* DIR[,labels=FILE] */
  const char *labels = NULL;
  snprintf(f->dir, sizeof f->dir, "%s", arg);
  char *comma = strstr(f->dir, ",labels=");
  if (comma) {
    *comma = 0;
    labels = arg + (comma - f->dir) + 8;
    if (!*labels) return amd_fail(st, "images:%s: labels= needs a file", arg);
  } else if ((comma = strchr(f->dir, ',')) && !is_dir(f->dir)) {
    return amd_fail(st, "images:%s: unknown option '%s' (expected images:DIR or images:DIR,labels=FILE)", arg, comma + 1);
  }
  if (!is_dir(f->dir)) return amd_fail(st, "data folder '%s' does not exist", f->dir);

  int rc = 0;
  listing li = {0};
  char tdir[AMD_DATA_PATH_MAX];
  if (labels) {
    rc = collect_labelled(f->dir, labels, &f->split[0], ds, &li, st);
  } else if (amd_data_join(tdir, sizeof tdir, f->dir, "train", st)) {
    rc = -1;
  } else {
    int two = is_dir(tdir);
    const char *cdir = two ? tdir : f->dir;
    if (two) {
      f->n_splits = 2;
      if (amd_data_join(f->vdir, sizeof f->vdir, f->dir, "val", st)) return -1;
      if (!is_dir(f->vdir) && amd_data_join(f->vdir, sizeof f->vdir, f->dir, "test", st)) return -1;
      if (!is_dir(f->vdir)) return amd_fail(st, "%s has a train folder but neither val nor test next to it", f->dir);
    }
    name_list classes;
    if (list_dir(cdir, 1, &classes, NULL, st)) return -1;
    if (classes.n == 0) {
      names_free(&classes);
      return amd_fail(st, "%s: no class folders (expected %s/<class>/*.jpg, or train/ and val/ folders)", cdir, cdir);
    }
    ds->class_names = classes.v; /* owned by ds from here on */
    ds->n_classes = classes.n;
    rc = collect_split(cdir, ds->class_names, ds->n_classes, &f->split[0], &li, st);
    if (!rc && two) rc = collect_split(f->vdir, ds->class_names, ds->n_classes, &f->split[1], &li, st);
  }
  f->other = li.other;
  memcpy(f->other_first, li.other_first, sizeof f->other_first);
  if (!rc) {
    f->pool_started = 1;
    rc = amd_img_pool_start(&f->pool, o, st);
  }
  /* a command that evaluates one split (amd_image_opts.only_split) decodes only
   * that one, or only its max_samples files */
  if (!rc) keep_evaluated(o, f, ds);
  for (int s = 0; !rc && s < f->n_splits; s++) rc = probe_split(&f->pool, &f->split[s], st);
  if (!rc) rc = sample_shape(o, f->split, f->n_splits, ds, st);
  if (rc) amd_img_folder_free(f);
  return rc;
}

void amd_img_folder_note(const amd_img_folder *f, int64_t skipped, const char *first_error, amd_dataset *ds) {
  ds->skipped = skipped;
  ds->note[0] = 0;
  if (skipped) snprintf(ds->note, sizeof ds->note, "%lld bad files skipped, e.g. %.900s", (long long)skipped, first_error);
  if (f->other)
    snprintf(ds->note + strlen(ds->note), sizeof ds->note - strlen(ds->note),
             "%s%lld files with other image extensions not loaded (only .jpg, .jpeg, .png), e.g. %.500s",
             ds->note[0] ? "; " : "", (long long)f->other, f->other_first);
}

/* ---------------------------------------------------------------- loading */

/* The uncropped images of the good files of `good` (train --augment rrc):
 * their sizes after --resize, from the headers, and one block for all. */
static int alloc_uncropped(const amd_img_split *good, const amd_image_opts *o, int64_t C, amd_data_split *s,
                           amd_status *st) {
  const int64_t k = good->n;
  s->rag_off = malloc((size_t)(k + 1) * sizeof *s->rag_off);
  s->rag_h = malloc((size_t)(k ? k : 1) * sizeof *s->rag_h);
  s->rag_w = malloc((size_t)(k ? k : 1) * sizeof *s->rag_w);
  if (!s->rag_off || !s->rag_h || !s->rag_w) return amd_fail(st, "out of memory");
  int64_t total = 0;
  for (int64_t i = 0; i < k; i++) {
    int64_t h, w;
    resized_size(o, &good->info[i], &h, &w); /* (each within the limits: sample_shape) */
    s->rag_off[i] = total;
    s->rag_h[i] = (int32_t)h, s->rag_w[i] = (int32_t)w;
    total += h * w * C;
    if (total > AMD_DATA_MAX_BYTES)
      return amd_fail(st,
                      "the %lld training images kept uncropped for --augment rrc (%s) exceed the %lld-byte "
                      "limit; use a smaller --resize",
                      (long long)k, o->resize || o->resize_h ? "after --resize" : "at full size, no --resize",
                      (long long)AMD_DATA_MAX_BYTES);
  }
  s->rag_off[k] = total;
  s->rag = malloc((size_t)(total ? total : 1));
  if (!s->rag)
    return amd_fail(st, "out of memory (%lld bytes of uncropped training images)", (long long)total);
  return 0;
}

/* Decodes split sp's good files into s (pass 2), then drops the files that
 * failed; uncropped: as images of their own sizes (amd_data_split.rag). */
static int decode_split(amd_img_pool *p, amd_img_split *sp, const amd_image_opts *o, amd_dataset *ds,
                        amd_data_split *s, int uncropped, amd_status *st) {
  int64_t n = sp->n, chw = ds->c * ds->h * ds->w;
  if (!uncropped && n > AMD_DATA_MAX_BYTES / chw)
    return amd_fail(st, "%lld images of %lldx%lldx%lld exceed the %lld-byte limit", (long long)n, (long long)ds->c,
                    (long long)ds->h, (long long)ds->w, (long long)AMD_DATA_MAX_BYTES);
  s->u8 = uncropped ? NULL : malloc((size_t)(n * chw));
  s->labels = malloc((size_t)n * sizeof *s->labels);
  if ((!uncropped && !s->u8) || !s->labels)
    return amd_fail(st, "out of memory (%lld images of %lld bytes)", (long long)n, (long long)chw);
  /* the files pass 1 found bad are not decoded again */
  amd_img_split good = {0};
  good.info = malloc((size_t)(n ? n : 1) * sizeof *good.info);
  if (!good.info) return amd_fail(st, "out of memory");
  int64_t k = 0;
  for (int64_t i = 0; i < n; i++) {
    if (sp->bad[i]) continue;
    good.info[k] = sp->info[i];
    s->labels[k] = sp->label[i];
    if (files_add(&good, sp->path[i], sp->label[i], st)) {
      files_free(&good);
      return -1;
    }
    k++;
  }
  if (uncropped && alloc_uncropped(&good, o, ds->c, s, st)) {
    files_free(&good);
    return -1;
  }
  uint8_t *bad2 = calloc((size_t)(k ? k : 1), 1);
  plan pl = {.fl = &good,
             .o = o,
             .c = ds->c,
             .h = ds->h,
             .w = ds->w,
             .u8 = uncropped ? s->rag : s->u8,
             .off = uncropped ? s->rag_off : NULL};
  int rc = bad2 ? 0 : amd_fail(st, "out of memory");
  if (!rc) {
    p->bad = bad2;
    p->bad_count = 0;
    p->stage = "decoding";
    rc = amd_img_pool_run(p, k, decode_one, &pl, st);
  }
  if (!rc) {
    int64_t m = 0, at = 0; /* at: where the next kept uncropped image goes */
    for (int64_t i = 0; i < k; i++) {
      if (bad2[i]) continue;
      if (uncropped) {
        int64_t bytes = s->rag_off[i + 1] - s->rag_off[i];
        if (at != s->rag_off[i]) memmove(s->rag + at, s->rag + s->rag_off[i], (size_t)bytes);
        s->rag_off[m] = at, s->rag_h[m] = s->rag_h[i], s->rag_w[m] = s->rag_w[i];
        at += bytes;
      } else if (m != i) {
        memmove(s->u8 + m * chw, s->u8 + i * chw, (size_t)chw);
      }
      s->labels[m] = s->labels[i];
      m++;
    }
    if (uncropped) s->rag_off[m] = at;
    sp->n_bad += k - m;
    s->n = m;
  }
  free(bad2);
  files_free(&good);
  return rc;
}

int amd_dataset_load_images(const char *dir, amd_dataset *ds, amd_status *st) {
  return amd_dataset_load_images_opts(dir, NULL, ds, st);
}

int amd_dataset_load_images_opts(const char *arg, const amd_image_opts *opts, amd_dataset *ds, amd_status *st) {
  static const amd_image_opts defaults = {0};
  const amd_image_opts *o = opts ? opts : &defaults;
  memset(ds, 0, sizeof *ds);
  amd_img_folder f;
  if (amd_img_folder_open(arg, o, &f, ds, st)) {
    amd_dataset_free(ds);
    return -1;
  }
  amd_img_split *sp = f.split;
  int two = f.n_splits == 2;
  /* (split 0 is the training split; only_split, which keeps another, is eval's, not train's) */
  int rc = decode_split(&f.pool, &sp[0], o, ds, &ds->train, o->uncropped_train && !o->only_split, st);
  if (!rc && two) rc = decode_split(&f.pool, &sp[1], o, ds, &ds->test, 0, st);
  if (!rc && ds->train.n == 0) rc = amd_fail(st, "%s: every training image is bad", f.dir);
  if (!rc && two && ds->test.n == 0) rc = amd_fail(st, "%s: every test image is bad", f.vdir);
  if (!rc) {
    amd_img_folder_note(&f, sp[0].n_bad + sp[1].n_bad, f.pool.err.msg, ds);
    if (!two) {
      ds->test = ds->train;
      ds->test_is_train = 1;
    }
    /* (statistics only where the normalisation uses them: any other replaces them) */
    rc = amd_data_set_stats(ds, o->norm != AMD_NORM_DATASET, st);
  }
  amd_img_folder_free(&f);
  if (rc) {
    amd_dataset_free(ds);
    return -1;
  }
  return 0;
}
