/* One image file of `images:` (see image_decode.h): header probing, JPEG
 * decoding through TurboJPEG, PNG decoding through libpng, CMYK to RGB, and
 * PIL's bilinear resize.
 *
 * What PIL 9.4 does, and what is done here to give the same bytes:
 *  - JPEG: PIL decodes with libjpeg's defaults (JDCT_ISLOW, fancy
 *    upsampling) through the system's libjpeg-turbo; TurboJPEG's tjDecompress2
 *    without flags makes the same choices, so the RGB or grey pixels are the
 *    library's own. Grey JPEGs stay 1 channel here (PIL's mode "L"); the
 *    caller replicates them to RGB as convert('RGB') does.
 *  - CMYK and YCCK JPEGs: PIL always assumes Adobe's inverted convention
 *    (rawmode "CMYK;I": C = 255 - stored byte) and converts to RGB with
 *    R = (255 - K) - round(C * (255 - K) / 255) (and G, B from M, Y), the
 *    division by 255 rounded as (t + (t >> 8)) >> 8 with t = C*(255-K) + 128.
 *    In stored bytes (c = 255 - C, k = 255 - K): R = k - round((255 - c) * k / 255).
 *  - PNG: 8-bit grey, grey+alpha, RGB, RGBA, palette and 1/2/4-bit grey;
 *    alpha is dropped (convert('RGB') drops it, no compositing); 16-bit is
 *    refused (PIL keeps 16-bit grey as mode "I" and its RGB conversion
 *    clips, which no one wants for a classifier).
 *  - Resize: Image.resize(size, BILINEAR) = ImagingResample: per output
 *    column a triangle filter of support max(1, in/out) centred at
 *    (x + 0.5) * in/out, normalised weights turned into 22-bit fixed point,
 *    accumulated in int32 from 2^21 (rounding), clipped to uint8; horizontal
 *    pass first, then vertical on the 8-bit result. */
#include "image_decode.h"

#include <errno.h>
#include <math.h>
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <turbojpeg.h>

/* ---------------------------------------------------------------- limits */

static int check_size(const char *path, int64_t w, int64_t h, amd_status *st) {
  if (w < 1 || h < 1) return amd_fail(st, "%s: image of size %lldx%lld", path, (long long)w, (long long)h);
  if (w > AMD_IMG_MAX_SIDE || h > AMD_IMG_MAX_SIDE || w * h > AMD_IMG_MAX_PIXELS)
    return amd_fail(st, "%s: image of %lldx%lld pixels refused (limits: a side of %d, %lld pixels)", path,
                    (long long)w, (long long)h, AMD_IMG_MAX_SIDE, (long long)AMD_IMG_MAX_PIXELS);
  return 0;
}

/* ---------------------------------------------------------------- probing */

static const uint8_t png_magic[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

static unsigned be16(const uint8_t *p) { return (unsigned)p[0] << 8 | p[1]; }
static uint32_t be32(const uint8_t *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }

/* Walks the JPEG markers after SOI up to the frame header (SOFn). */
static int probe_jpeg(FILE *f, const char *path, amd_img_info *info, amd_status *st) {
  for (int seg = 0; seg < 100000; seg++) {
    int c = fgetc(f), skipped = 0;
    while (c != 0xFF && c != EOF && skipped < (1 << 20)) c = fgetc(f), skipped++; /* junk before a marker */
    while (c == 0xFF) c = fgetc(f);                                                /* fill bytes */
    if (c == EOF) return amd_fail(st, "%s: truncated JPEG (no frame header)", path);
    if (c == 0x01 || c == 0xD8 || (c >= 0xD0 && c <= 0xD7)) continue; /* markers without a segment */
    if (c == 0xD9 || c == 0xDA) return amd_fail(st, "%s: bad JPEG: no frame header before the image data", path);
    uint8_t len[2];
    if (fread(len, 1, 2, f) != 2) return amd_fail(st, "%s: truncated JPEG header", path);
    unsigned n = be16(len);
    if (n < 2) return amd_fail(st, "%s: bad JPEG: segment length %u", path, n);
    int is_sof = c >= 0xC0 && c <= 0xCF && c != 0xC4 && c != 0xC8 && c != 0xCC;
    if (!is_sof) {
      if (fseek(f, (long)n - 2, SEEK_CUR)) return amd_fail(st, "%s: truncated JPEG header", path);
      continue;
    }
    uint8_t h[6];
    if (n < 8 || fread(h, 1, 6, f) != 6) return amd_fail(st, "%s: truncated JPEG frame header", path);
    if (h[0] != 8) return amd_fail(st, "%s: %d-bit JPEG not supported (8-bit expected)", path, h[0]);
    int ih = (int)be16(h + 1), iw = (int)be16(h + 3), nc = h[5];
    if (ih == 0) return amd_fail(st, "%s: JPEG with its height in a DNL marker not supported", path);
    if (nc != 1 && nc != 3 && nc != 4) return amd_fail(st, "%s: JPEG with %d components not supported", path, nc);
    info->kind = AMD_IMG_JPEG;
    info->w = iw;
    info->h = ih;
    info->colour = nc != 1;
    return check_size(path, iw, ih, st);
  }
  return amd_fail(st, "%s: bad JPEG: too many segments before the frame header", path);
}

int64_t amd_img_work_bytes(const amd_img_info *info) {
  /* decoded pixels (up to 4 a pixel for CMYK, plus the RGB copy), a
   * progressive JPEG's coefficients (2 bytes per sample, up to 4 samples a
   * pixel), the resize's intermediate rows, the file */
  return (int64_t)info->w * info->h * 20 + info->file_bytes;
}

int amd_img_probe(const char *path, amd_img_info *info, amd_status *st) {
  memset(info, 0, sizeof *info);
  struct stat ps;
  if (stat(path, &ps) == 0 && !S_ISREG(ps.st_mode)) /* a FIFO would block fopen */
    return amd_fail(st, "%s: not a regular file", path);
  FILE *f = fopen(path, "rb");
  if (!f) return amd_fail(st, "%s: cannot open: %s", path, strerror(errno));
  struct stat sb; /* the file's size, for the checks below and info->file_bytes; -1 unknown */
  const int64_t size = fstat(fileno(f), &sb) == 0 ? (int64_t)sb.st_size : -1;
  uint8_t b[33];
  size_t got = fread(b, 1, sizeof b, f);
  int rc;
  if (got >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF) {
    rc = fseek(f, 2, SEEK_SET) ? amd_fail(st, "%s: cannot read: %s", path, strerror(errno))
                               : probe_jpeg(f, path, info, st);
    /* every 8x8 block of a full-resolution component costs at least one bit of coded data (baseline: a DC
     * and an end-of-block code; progressive: its code in the DC scan), so a shorter file cannot hold the
     * image: libjpeg would still decode it, blocks missing as grey (a 151-byte progressive file of 64758 x
     * 1548 took 14 s) */
    const int64_t blocks = ((int64_t)info->w + 7) / 8 * (((int64_t)info->h + 7) / 8);
    if (!rc && size >= 0 && size * 8 < blocks)
      rc = amd_fail(
          st,
          "%s: bad JPEG: %lld bytes cannot hold %dx%d pixels (at least one bit per 8x8 block; truncated, "
          "or a decompression bomb)",
          path, (long long)size, info->w, info->h);
  } else if (got >= 8 && !memcmp(b, png_magic, 8)) {
    if (got < 33 || memcmp(b + 12, "IHDR", 4)) {
      rc = amd_fail(st, "%s: truncated or bad PNG header", path);
    } else {
      uint32_t w = be32(b + 16), h = be32(b + 20);
      int depth = b[24], ctype = b[25];
      info->kind = AMD_IMG_PNG;
      info->colour = (ctype & 2) != 0; /* 2 RGB, 3 palette, 6 RGBA; 0 grey, 4 grey+alpha */
      if (depth != 1 && depth != 2 && depth != 4 && depth != 8 && depth != 16)
        rc = amd_fail(st, "%s: bad PNG bit depth %d", path, depth);
      else if (ctype != 0 && ctype != 2 && ctype != 3 && ctype != 4 && ctype != 6)
        rc = amd_fail(st, "%s: bad PNG colour type %d", path, ctype);
      else rc = check_size(path, w, h, st);
      info->w = (int)(w > 0x7fffffff ? 0x7fffffff : w);
      info->h = (int)(h > 0x7fffffff ? 0x7fffffff : h);
      /* the filtered rows deflate compresses: h * (1 + ceil(w * bits / 8)) */
      static const int samples[7] = {1, 0, 3, 1, 2, 0, 4};
      int64_t row = 1 + ((int64_t)w * samples[ctype > 6 ? 1 : ctype] * depth + 7) / 8;
      if (!rc && size >= 0 && (int64_t)h * row > size * 1100 + 65536)
        rc = amd_fail(st,
                      "%s: bad PNG: %lld bytes cannot hold %ux%u pixels (truncated, or a decompression bomb)",
                      path, (long long)size, w, h);
    }
  } else if (ferror(f)) {
    rc = amd_fail(st, "%s: cannot read: %s", path, strerror(errno));
  } else {
    rc = amd_fail(st, "%s: not a JPEG or PNG image", path);
  }
  if (!rc && size >= 0) info->file_bytes = size;
  fclose(f);
  return rc;
}

/* ---------------------------------------------------------------- JPEG */

void *amd_img_tj_new(void) { return tjInitDecompress(); }
void amd_img_tj_free(void *tj) {
  if (tj) tjDestroy(tj);
}

/* The whole file into a malloc'd buffer (at most AMD_IMG_MAX_FILE bytes). */
static int read_file(const char *path, uint8_t **data, size_t *len, amd_status *st) {
  *data = NULL;
  FILE *f = fopen(path, "rb");
  if (!f) return amd_fail(st, "%s: cannot open: %s", path, strerror(errno));
  struct stat sb;
  if (fstat(fileno(f), &sb) || !S_ISREG(sb.st_mode)) {
    fclose(f);
    return amd_fail(st, "%s: not a regular file", path);
  }
  if (sb.st_size > AMD_IMG_MAX_FILE) {
    fclose(f);
    return amd_fail(st, "%s: file of %lld bytes refused (limit %lld)", path, (long long)sb.st_size,
                    (long long)AMD_IMG_MAX_FILE);
  }
  size_t n = (size_t)sb.st_size;
  uint8_t *buf = malloc(n ? n : 1);
  if (!buf) {
    fclose(f);
    return amd_fail(st, "%s: out of memory", path);
  }
  size_t got = fread(buf, 1, n, f);
  int err = ferror(f);
  fclose(f);
  if (err || got != n) {
    free(buf);
    return amd_fail(st, "%s: read error%s%s", path, err ? ": " : " (file shrank)", err ? strerror(errno) : "");
  }
  *data = buf;
  *len = n;
  return 0;
}

/* PIL's CMYK;I -> CMYK -> RGB on TurboJPEG's CMYK output (the stored bytes). */
static void cmyk_to_rgb(const uint8_t *in, uint8_t *out, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    int k = in[4 * i + 3]; /* 255 - K */
    for (int ch = 0; ch < 3; ch++) {
      int t = (255 - in[4 * i + ch]) * k + 128;
      int v = k - ((t + (t >> 8)) >> 8);
      out[3 * i + ch] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
    }
  }
}

static int decode_jpeg(const char *path, void **tjp, int scale_w, int scale_h, uint8_t **pix, int *h, int *w, int *c,
                       amd_status *st) {
  uint8_t *buf = NULL;
  size_t len = 0;
  if (read_file(path, &buf, &len, st)) return -1;
  void *tj = tjp ? *tjp : NULL;
  int own = !tj, tj_failed = 0;
  if (own && !(tj = tjInitDecompress())) {
    free(buf);
    return amd_fail(st, "%s: cannot start the JPEG decoder", path);
  }
  int iw, ih, subsamp, cs, rc = 0;
  uint8_t *out = NULL;
  if (tjDecompressHeader3(tj, buf, (unsigned long)len, &iw, &ih, &subsamp, &cs)) {
    tj_failed = 1;
    rc = amd_fail(st, "%s: bad JPEG: %s", path, tjGetErrorStr2(tj));
    goto done;
  }
  if (check_size(path, iw, ih, st)) {
    rc = -1;
    goto done;
  }
  int ow = iw, oh = ih;
  if (scale_w > 0 && scale_h > 0) {
    int nsf = 0;
    tjscalingfactor *sf = tjGetScalingFactors(&nsf);
    for (int i = 0; sf && i < nsf; i++) {
      /* only 1/2, 1/4, 1/8: libjpeg-turbo's other scaled IDCTs have no SIMD
       * code and were slower than decoding at full size here */
      if (sf[i].num != 1 || (sf[i].denom != 2 && sf[i].denom != 4 && sf[i].denom != 8)) continue;
      int sw = TJSCALED(iw, sf[i]), sh = TJSCALED(ih, sf[i]);
      if (sw >= scale_w && sh >= scale_h && (int64_t)sw * sh < (int64_t)ow * oh) ow = sw, oh = sh;
    }
  }
  int gray = cs == TJCS_GRAY, cmyk = cs == TJCS_CMYK || cs == TJCS_YCCK;
  int pf = gray ? TJPF_GRAY : cmyk ? TJPF_CMYK : TJPF_RGB, ps = gray ? 1 : cmyk ? 4 : 3;
  out = malloc((size_t)ow * (size_t)oh * (size_t)ps);
  if (!out) {
    rc = amd_fail(st, "%s: out of memory", path);
    goto done;
  }
  int flags = 0;
#ifdef TJFLAG_LIMITSCANS
  flags |= TJFLAG_LIMITSCANS; /* a progressive JPEG of thousands of scans is a CPU bomb */
#endif
  if (tjDecompress2(tj, buf, (unsigned long)len, out, ow, ow * ps, oh, pf, flags)) {
    tj_failed = 1;
    const char *msg = tjGetErrorStr2(tj);
    /* libjpeg warns and goes on where PIL goes on too (extraneous bytes, a
     * corrupt segment); a file that ends early is an error in PIL */
    if (tjGetErrorCode(tj) != TJERR_WARNING || strstr(msg, "Premature end")) {
      rc = amd_fail(st, "%s: bad JPEG: %s", path, msg);
      goto done;
    }
  }
  if (cmyk) {
    uint8_t *rgb = malloc((size_t)ow * (size_t)oh * 3);
    if (!rgb) {
      rc = amd_fail(st, "%s: out of memory", path);
      goto done;
    }
    cmyk_to_rgb(out, rgb, (int64_t)ow * oh);
    free(out);
    out = rgb;
  }
  *pix = out;
  out = NULL;
  *h = oh;
  *w = ow;
  *c = gray ? 1 : 3;
done:
  free(out);
  free(buf);
  if (own) {
    tjDestroy(tj);
  } else if (tj_failed) {
    /* a handle is not reliable after an error or a warning (the next header
     * can read as 0x0): the caller's gets replaced (NULL if that fails: a
     * temporary one is then made per call) */
    tjDestroy(tj);
    *tjp = tjInitDecompress();
  }
  return rc;
}

/* ---------------------------------------------------------------- PNG */

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

static int decode_png(const char *path, uint8_t **pix, int *h, int *w, int *c, amd_status *st) {
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
    return amd_fail(st, "%s: out of memory", path);
  }
  /* Everything assigned after setjmp and read after a longjmp is volatile. */
  uint8_t *volatile buf = NULL;
  png_bytep *volatile rows = NULL;
  uint8_t *volatile wide = NULL; /* a 16-bit grey image's rows */
  if (setjmp(err.jmp)) {
    free(rows);
    free(buf);
    free(wide);
    png_destroy_read_struct(&png, &info, NULL);
    fclose(fp);
    return amd_fail(st, "%s: bad PNG: %s", path, err.msg);
  }
  png_init_io(png, fp);
  png_set_sig_bytes(png, 8);
  /* the header is checked before libpng allocates rows */
  png_set_user_limits(png, AMD_IMG_MAX_SIDE, AMD_IMG_MAX_SIDE);
  png_read_info(png, info);
  png_uint_32 pw = png_get_image_width(png, info), ph = png_get_image_height(png, info);
  int depth = png_get_bit_depth(png, info), ctype = png_get_color_type(png, info);
  if ((int64_t)pw * ph > AMD_IMG_MAX_PIXELS) png_error(png, "image has too many pixels");
  /* 16 bits as PIL 9.4 reads them (then convert('RGB')): a grey image becomes
   * a 32-bit integer image whose conversion clips at 255 (the value, not its
   * high byte: 256 and more are white); the other types keep the high byte
   * of each sample (png_set_strip_16 does the same) */
  const int grey16 = depth == 16 && ctype == PNG_COLOR_TYPE_GRAY;
  if (depth == 16 && !grey16) png_set_strip_16(png);
  if (ctype == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (ctype == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  /* png_set_palette_to_rgb also turns a tRNS chunk into an alpha channel
   * (gray and RGB tRNS are not expanded): strip that too */
  if ((ctype & PNG_COLOR_MASK_ALPHA) || (ctype == PNG_COLOR_TYPE_PALETTE && png_get_valid(png, info, PNG_INFO_tRNS)))
    png_set_strip_alpha(png);
  png_set_interlace_handling(png); /* Adam7 images are de-interlaced by png_read_image */
  png_read_update_info(png, info);
  int ch = png_get_channels(png, info);
  size_t rowbytes = png_get_rowbytes(png, info);
  if ((ch != 1 && ch != 3) || rowbytes != (size_t)pw * (size_t)ch * (grey16 ? 2 : 1))
    png_error(png, "unsupported pixel format after conversion");
  buf = malloc((size_t)pw * ch * ph);
  if (grey16) wide = malloc(rowbytes * ph);
  rows = malloc(ph * sizeof *rows);
  if (!buf || !rows || (grey16 && !wide)) png_error(png, "out of memory");
  uint8_t *dst = grey16 ? wide : buf;
  for (png_uint_32 i = 0; i < ph; i++) rows[i] = dst + i * rowbytes;
  png_read_image(png, rows);
  png_read_end(png, NULL);
  if (grey16) /* big-endian samples, clipped */
    for (size_t i = 0; i < (size_t)pw * ph; i++) buf[i] = wide[2 * i] ? 255 : wide[2 * i + 1];
  *c = ch;
  free(wide);
  free(rows);
  png_destroy_read_struct(&png, &info, NULL);
  fclose(fp);
  *pix = buf;
  *h = (int)ph;
  *w = (int)pw;
  return 0;
}

int amd_img_decode(const char *path, void **tj, int scale_w, int scale_h, uint8_t **pix, int *h, int *w, int *c,
                   amd_status *st) {
  *pix = NULL;
  FILE *f = fopen(path, "rb");
  if (!f) return amd_fail(st, "%s: cannot open: %s", path, strerror(errno));
  uint8_t b[8];
  size_t got = fread(b, 1, 8, f);
  fclose(f);
  if (got >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF)
    return decode_jpeg(path, tj, scale_w, scale_h, pix, h, w, c, st);
  if (got == 8 && !memcmp(b, png_magic, 8)) return decode_png(path, pix, h, w, c, st);
  return amd_fail(st, "%s: not a JPEG or PNG image", path);
}

/* ---------------------------------------------------------------- resize */

#define PREC 22 /* PIL's PRECISION_BITS for 8-bit images: 32 - 8 - 2 */

/* The filter taps of one axis: for output o, taps [first[o], first[o] + count[o])
 * of the input with weights w[o * ksize ...] in PREC-bit fixed point. */
typedef struct taps {
  int ksize;
  int *first, *count;
  int32_t *w;
} taps;

static void taps_free(taps *t) {
  free(t->first);
  free(t->count);
  free(t->w);
}

static double triangle(double x) {
  x = fabs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}

static int taps_make(int in_size, int out_size, taps *t) {
  double scale = (double)in_size / out_size, fscale = scale < 1.0 ? 1.0 : scale;
  double support = 1.0 * fscale, inv = 1.0 / fscale;
  int ksize = (int)ceil(support) * 2 + 1;
  t->ksize = ksize;
  t->first = malloc((size_t)out_size * sizeof(int));
  t->count = malloc((size_t)out_size * sizeof(int));
  t->w = malloc((size_t)out_size * (size_t)ksize * sizeof(int32_t));
  double *k = malloc((size_t)ksize * sizeof(double));
  if (!t->first || !t->count || !t->w || !k) {
    free(k);
    taps_free(t);
    return -1;
  }
  for (int o = 0; o < out_size; o++) {
    double centre = (o + 0.5) * scale;
    int lo = (int)(centre - support + 0.5), hi = (int)(centre + support + 0.5);
    if (lo < 0) lo = 0;
    if (hi > in_size) hi = in_size;
    int n = hi - lo;
    double sum = 0.0;
    for (int i = 0; i < n; i++) sum += k[i] = triangle((i + lo - centre + 0.5) * inv);
    int32_t *w = t->w + (size_t)o * ksize;
    for (int i = 0; i < ksize; i++) {
      double v = i < n ? (sum != 0.0 ? k[i] / sum : k[i]) : 0.0;
      w[i] = (int32_t)(v < 0 ? -0.5 + v * (1 << PREC) : 0.5 + v * (1 << PREC));
    }
    t->first[o] = lo;
    t->count[o] = n;
  }
  free(k);
  return 0;
}

static inline uint8_t clip8(int32_t v) {
  if (v >= (int32_t)1 << (PREC + 8)) return 255;
  if (v <= 0) return 0;
  return (uint8_t)(v >> PREC);
}

/* Output columns [x0, x0 + n) of rows [r0, r1) of in (iw wide), resampled
 * horizontally into out (n wide, row r - r0). */
static void pass_h(const uint8_t *in, int iw, int c, int r0, int r1, const taps *t, int x0, int n_out, uint8_t *out) {
  for (int r = r0; r < r1; r++) {
    const uint8_t *src = in + (size_t)r * iw * c;
    uint8_t *dst = out + (size_t)(r - r0) * n_out * c;
    for (int j = 0; j < n_out; j++) {
      int o = x0 + j;
      const int32_t *w = t->w + (size_t)o * t->ksize;
      const uint8_t *s = src + (size_t)t->first[o] * c;
      int n = t->count[o];
      if (c == 1) {
        int32_t a = 1 << (PREC - 1);
        for (int i = 0; i < n; i++) a += s[i] * w[i];
        dst[j] = clip8(a);
      } else {
        int32_t a0 = 1 << (PREC - 1), a1 = a0, a2 = a0;
        for (int i = 0; i < n; i++) {
          a0 += s[3 * i] * w[i];
          a1 += s[3 * i + 1] * w[i];
          a2 += s[3 * i + 2] * w[i];
        }
        dst[3 * j] = clip8(a0);
        dst[3 * j + 1] = clip8(a1);
        dst[3 * j + 2] = clip8(a2);
      }
    }
  }
}

/* Output rows [y0, y0 + n_out) resampled vertically from in (its first row is
 * input row r0, rowlen bytes a row) into out; acc: rowlen int32 of scratch.
 * The sums run over whole rows (tap by tap), which vectorises. */
static void pass_v(const uint8_t *in, int r0, size_t rowlen, const taps *t, int y0, int n_out, int32_t *acc,
                   uint8_t *out) {
  for (int j = 0; j < n_out; j++) {
    int o = y0 + j;
    const int32_t *w = t->w + (size_t)o * t->ksize;
    const uint8_t *s = in + (size_t)(t->first[o] - r0) * rowlen;
    int n = t->count[o];
    for (size_t x = 0; x < rowlen; x++) acc[x] = 1 << (PREC - 1);
    for (int i = 0; i < n; i++) {
      const uint8_t *row = s + (size_t)i * rowlen;
      const int32_t wi = w[i];
      for (size_t x = 0; x < rowlen; x++) acc[x] += row[x] * wi;
    }
    uint8_t *dst = out + (size_t)j * rowlen;
    for (size_t x = 0; x < rowlen; x++) dst[x] = clip8(acc[x]);
  }
}

int amd_img_resize_region(const uint8_t *in, int ih, int iw, int c, int oh, int ow, int y0, int x0, int h, int w,
                          uint8_t *out) {
  int need_h = ow != iw, need_v = oh != ih;
  taps th = {0}, tv = {0};
  if ((need_h && taps_make(iw, ow, &th)) || (need_v && taps_make(ih, oh, &tv))) {
    taps_free(&th);
    return -1;
  }
  int rc = 0;
  /* the input rows the output rows [y0, y0 + h) read */
  int r0 = need_v ? tv.first[y0] : y0, r1 = need_v ? tv.first[y0 + h - 1] + tv.count[y0 + h - 1] : y0 + h;
  uint8_t *mid = NULL;
  int32_t *acc = NULL;
  const uint8_t *src = in; /* rows from input row r0 on, w columns (or iw without need_h) */
  size_t src_row = (size_t)iw * c;
  int src_r0 = 0;
  if (need_h) {
    mid = malloc((size_t)(r1 - r0) * w * c);
    if (!mid) {
      rc = -1;
      goto done;
    }
    pass_h(in, iw, c, r0, r1, &th, x0, w, mid);
    src = mid;
    src_row = (size_t)w * c;
    src_r0 = r0;
  }
  if (need_v) {
    if (need_h) {
      acc = malloc(src_row * sizeof *acc);
      if (!acc) {
        rc = -1;
        goto done;
      }
      pass_v(src, src_r0, src_row, &tv, y0, h, acc, out);
    } else {
      /* vertical only: the columns [x0, x0 + w) of full input rows */
      uint8_t *cols = malloc((size_t)(r1 - r0) * w * c);
      acc = malloc((size_t)w * c * sizeof *acc);
      if (!cols || !acc) {
        free(cols);
        rc = -1;
        goto done;
      }
      for (int r = r0; r < r1; r++) memcpy(cols + (size_t)(r - r0) * w * c, in + ((size_t)r * iw + x0) * c, (size_t)w * c);
      pass_v(cols, r0, (size_t)w * c, &tv, y0, h, acc, out);
      free(cols);
    }
  } else if (need_h) {
    memcpy(out, mid + (size_t)(y0 - r0) * w * c, (size_t)h * w * c);
  } else {
    for (int r = 0; r < h; r++) memcpy(out + (size_t)r * w * c, in + ((size_t)(y0 + r) * iw + x0) * c, (size_t)w * c);
  }
done:
  free(acc);
  free(mid);
  taps_free(&th);
  taps_free(&tv);
  return rc;
}

int amd_img_resize(const uint8_t *in, int ih, int iw, int c, uint8_t *out, int oh, int ow) {
  return amd_img_resize_region(in, ih, iw, c, oh, ow, 0, 0, oh, ow, out);
}

void amd_img_resize_size(int h, int w, int n, int64_t *oh, int64_t *ow) {
  int s = w <= h ? w : h, l = w <= h ? h : w;
  /* Python: int(n * long / short), a true division of two exact integers */
  int64_t nl = (int64_t)((double)((int64_t)n * l) / (double)s);
  if (w <= h) *ow = n, *oh = nl;
  else *oh = n, *ow = nl;
}

int64_t amd_img_centre_offset(int64_t size, int64_t crop) {
  if (crop > size) return -((crop - size) / 2);
  /* Python's round(d / 2.0) of an integer d >= 0: halves to even */
  int64_t d = size - crop, q = d / 2;
  return (d % 2) && (q % 2) ? q + 1 : q;
}
