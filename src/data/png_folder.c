/* images:DIR — PNG files in class folders: DIR/train/<class>/NAME.png and
 * DIR/test/<class>/NAME.png. Classes are the train folder names in strcmp order
 * (label = position); test folders must be among them. Files are taken in
 * strcmp order; names starting with '.' and files not ending in .png are
 * skipped. Decoding (libpng): 8-bit gray, gray+alpha, RGB, RGBA; alpha is
 * dropped, palette images become RGB, 1/2/4-bit gray is expanded to 8 bits,
 * 16-bit images are rejected. Every image must have the size and channel
 * count of the first training image. */
#include <dirent.h>
#include <errno.h>
#include <png.h>
#include <setjmp.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "reader_common.h"
#include "dataset.h"

/* ---------------------------------------------------------------- listing */

typedef struct name_list {
  char **v;
  int64_t n, cap;
} name_list;

static void names_free(name_list *l) {
  for (int64_t i = 0; i < l->n; i++) free(l->v[i]);
  free(l->v);
  memset(l, 0, sizeof *l);
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int is_png_name(const char *s) {
  size_t n = strlen(s);
  return n > 4 && strcasecmp(s + n - 4, ".png") == 0;
}

/* Lists DIR's entries that are folders (want_dirs) or regular .png files,
 * sorted. A missing DIR is an error. */
static int list_dir(const char *dir, int want_dirs, name_list *out, amd_status *st) {
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
    if (stat(path, &sb) != 0) continue; /* dangling link */
    if (want_dirs ? !S_ISDIR(sb.st_mode) : !(S_ISREG(sb.st_mode) && is_png_name(e->d_name))) continue;
    if (out->n == out->cap) {
      int64_t ncap = out->cap ? 2 * out->cap : 64;
      char **nv = realloc(out->v, (size_t)ncap * sizeof *nv);
      if (!nv) {
        rc = amd_fail(st, "out of memory");
        break;
      }
      out->v = nv;
      out->cap = ncap;
    }
    if (!(out->v[out->n] = strdup(e->d_name))) {
      rc = amd_fail(st, "out of memory");
      break;
    }
    out->n++;
  }
  closedir(d);
  if (rc) {
    names_free(out);
    return -1;
  }
  if (out->n > 1) qsort(out->v, (size_t)out->n, sizeof *out->v, cmp_str);
  return 0;
}

/* ---------------------------------------------------------------- decoding */

typedef struct png_err {
  jmp_buf jmp;
  char msg[200];
} png_err;

static void on_png_error(png_structp png, png_const_charp msg) {
  png_err *e = png_get_error_ptr(png);
  snprintf(e->msg, sizeof e->msg, "%s", msg);
  longjmp(e->jmp, 1);
}

static void on_png_warning(png_structp png, png_const_charp msg) {
  (void)png;
  (void)msg;
}

/* Decodes path into a malloc'd HWC uint8 buffer; *c is 1 or 3. */
static int decode_png(const char *path, uint8_t **pix, int64_t *h, int64_t *w, int64_t *c,
                      amd_status *st) {
  *pix = NULL;
  FILE *fp = fopen(path, "rb");
  if (!fp) return amd_fail(st, "%s: cannot open: %s", path, strerror(errno));
  uint8_t sig[8];
  if (fread(sig, 1, 8, fp) != 8 || png_sig_cmp(sig, 0, 8)) {
    fclose(fp);
    return amd_fail(st, "%s: not a PNG file", path);
  }
  png_err err;
  err.msg[0] = 0;
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &err, on_png_error, on_png_warning);
  png_infop info = png ? png_create_info_struct(png) : NULL;
  if (!info) {
    if (png) png_destroy_read_struct(&png, NULL, NULL);
    fclose(fp);
    return amd_fail(st, "out of memory");
  }
  /* Everything assigned after setjmp and read after a longjmp is volatile. */
  uint8_t *volatile buf = NULL;
  png_bytep *volatile rows = NULL;
  volatile int bad_depth = 0;
  if (setjmp(err.jmp)) {
    free(rows);
    free(buf);
    png_destroy_read_struct(&png, &info, NULL);
    fclose(fp);
    return amd_fail(st, "%s: bad PNG: %s", path, err.msg);
  }
  png_init_io(png, fp);
  png_set_sig_bytes(png, 8);
  png_read_info(png, info);
  png_uint_32 pw = png_get_image_width(png, info), ph = png_get_image_height(png, info);
  int depth = png_get_bit_depth(png, info), ctype = png_get_color_type(png, info);
  if (depth > 8) {
    bad_depth = depth;
  } else {
    if (ctype == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
    if (ctype == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
    /* png_set_palette_to_rgb also turns a tRNS chunk into an alpha channel
     * (gray and RGB tRNS are not expanded): strip that too */
    if ((ctype & PNG_COLOR_MASK_ALPHA) ||
        (ctype == PNG_COLOR_TYPE_PALETTE && png_get_valid(png, info, PNG_INFO_tRNS)))
      png_set_strip_alpha(png);
    png_set_interlace_handling(png); /* Adam7 images are de-interlaced by png_read_image */
    png_read_update_info(png, info);
    int ch = png_get_channels(png, info);
    size_t rowbytes = png_get_rowbytes(png, info);
    if ((ch != 1 && ch != 3) || rowbytes != (size_t)pw * (size_t)ch)
      png_error(png, "unsupported pixel format after conversion");
    if ((int64_t)rowbytes * (int64_t)ph > AMD_DATA_MAX_BYTES) png_error(png, "image too large");
    buf = malloc(rowbytes * ph);
    rows = malloc(ph * sizeof *rows);
    if (!buf || !rows) png_error(png, "out of memory");
    for (png_uint_32 i = 0; i < ph; i++) rows[i] = buf + i * rowbytes;
    png_read_image(png, rows);
    png_read_end(png, NULL);
    *c = ch;
  }
  free(rows);
  png_destroy_read_struct(&png, &info, NULL);
  fclose(fp);
  if (bad_depth)
    return amd_fail(st, "%s: %d-bit PNG not supported (8-bit gray, RGB or RGBA expected)", path,
                    bad_depth);
  *pix = buf;
  *h = ph;
  *w = pw;
  return 0;
}

/* ---------------------------------------------------------------- splits */

typedef struct file_entry {
  char *path;
  int64_t label;
} file_entry;

typedef struct file_list {
  file_entry *v;
  int64_t n, cap;
} file_list;

static void files_free(file_list *l) {
  for (int64_t i = 0; i < l->n; i++) free(l->v[i].path);
  free(l->v);
  memset(l, 0, sizeof *l);
}

static int files_add(file_list *l, const char *path, int64_t label, amd_status *st) {
  if (l->n == l->cap) {
    int64_t ncap = l->cap ? 2 * l->cap : 256;
    file_entry *nv = realloc(l->v, (size_t)ncap * sizeof *nv);
    if (!nv) return amd_fail(st, "out of memory");
    l->v = nv;
    l->cap = ncap;
  }
  if (!(l->v[l->n].path = strdup(path))) return amd_fail(st, "out of memory");
  l->v[l->n++].label = label;
  return 0;
}

/* Collects the PNG files of DIR/SPLIT/<class>/ for the known classes. */
static int collect(const char *split_dir, char **classes, int64_t n_classes, file_list *out,
                   amd_status *st) {
  name_list sub;
  if (list_dir(split_dir, 1, &sub, st)) return -1;
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
    name_list files;
    if (amd_data_join(cdir, sizeof cdir, split_dir, sub.v[k], st) || list_dir(cdir, 0, &files, st)) {
      rc = -1;
      break;
    }
    if (files.n == 0) rc = amd_fail(st, "%s: empty class folder (no .png files)", cdir);
    for (int64_t i = 0; !rc && i < files.n; i++) {
      char path[AMD_DATA_PATH_MAX];
      rc = amd_data_join(path, sizeof path, cdir, files.v[i], st);
      if (!rc) rc = files_add(out, path, label, st);
    }
    names_free(&files);
  }
  names_free(&sub);
  if (rc) files_free(out);
  return rc;
}

/* Decodes every file into s; the first decoded image fixes c/h/w when *c == 0. */
static int decode_all(const file_list *fl, amd_data_split *s, int64_t *c, int64_t *h, int64_t *w,
                      const char **first_path, amd_status *st) {
  for (int64_t i = 0; i < fl->n; i++) {
    uint8_t *pix;
    int64_t ih, iw, ic;
    if (decode_png(fl->v[i].path, &pix, &ih, &iw, &ic, st)) return -1;
    if (*c == 0) {
      *c = ic;
      *h = ih;
      *w = iw;
      *first_path = fl->v[i].path;
    }
    if (ih != *h || iw != *w || ic != *c) {
      free(pix);
      return amd_fail(st, "%s: image is %lldx%lld with %lld channel(s), but %s is %lldx%lld with %lld "
                          "(all images must have the same size)",
                      fl->v[i].path, (long long)iw, (long long)ih, (long long)ic, *first_path,
                      (long long)*w, (long long)*h, (long long)*c);
    }
    if (!s->u8) {
      if (fl->n > AMD_DATA_MAX_BYTES / (ic * ih * iw)) {
        free(pix);
        return amd_fail(st, "%s: %lld images of %lldx%lldx%lld exceed the %lld-byte limit",
                        fl->v[i].path, (long long)fl->n, (long long)ic, (long long)ih, (long long)iw,
                        (long long)AMD_DATA_MAX_BYTES);
      }
      s->u8 = malloc((size_t)(fl->n * ic * ih * iw));
      s->labels = malloc((size_t)fl->n * sizeof *s->labels);
      if (!s->u8 || !s->labels) {
        free(pix);
        return amd_fail(st, "out of memory");
      }
    }
    /* HWC -> CHW */
    int64_t hw = ih * iw;
    uint8_t *dst = s->u8 + i * ic * hw;
    for (int64_t p = 0; p < hw; p++)
      for (int64_t ch = 0; ch < ic; ch++) dst[ch * hw + p] = pix[p * ic + ch];
    free(pix);
    s->labels[i] = fl->v[i].label;
    s->n = i + 1;
  }
  return 0;
}

int amd_dataset_load_images(const char *dir, amd_dataset *ds, amd_status *st) {
  memset(ds, 0, sizeof *ds);
  char tdir[AMD_DATA_PATH_MAX], vdir[AMD_DATA_PATH_MAX];
  struct stat sb;
  if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
    return amd_fail(st, "data folder '%s' does not exist", dir);
  if (amd_data_join(tdir, sizeof tdir, dir, "train", st) ||
      amd_data_join(vdir, sizeof vdir, dir, "test", st))
    return -1;
  name_list classes;
  if (list_dir(tdir, 1, &classes, st)) return -1;
  if (classes.n == 0) {
    names_free(&classes);
    return amd_fail(st, "%s: no class folders", tdir);
  }
  ds->class_names = classes.v; /* owned by ds from here on */
  ds->n_classes = classes.n;
  file_list tr = {0}, te = {0};
  const char *first = NULL;
  int rc = collect(tdir, ds->class_names, ds->n_classes, &tr, st);
  if (!rc) rc = collect(vdir, ds->class_names, ds->n_classes, &te, st);
  if (!rc) rc = decode_all(&tr, &ds->train, &ds->c, &ds->h, &ds->w, &first, st);
  if (!rc) rc = decode_all(&te, &ds->test, &ds->c, &ds->h, &ds->w, &first, st);
  if (!rc) rc = amd_data_set_stats(ds, 0, st);
  files_free(&tr);
  files_free(&te);
  if (rc) {
    amd_dataset_free(ds);
    return -1;
  }
  return 0;
}
