/* One image file of `images:` (image_decode.c): header probing, decoding to
 * 8-bit pixels as PIL's Image.open(f).convert('RGB') gives them, and PIL's
 * bilinear resize. Internal to src/data (image_folder.c is the caller).
 *
 * Pixels are HWC uint8 with c = 1 (grey) or 3 (RGB). Every function is
 * thread-safe (no shared state); errors go into the caller's amd_status as
 * one line that names the file. */
#ifndef AMD_IMAGE_DECODE_H
#define AMD_IMAGE_DECODE_H

#include <stdint.h>

#include "../core/status.h"

/* Limits checked on the header, before any pixel buffer is allocated. */
#define AMD_IMG_MAX_SIDE 65535
#define AMD_IMG_MAX_PIXELS ((int64_t)1 << 28)
#define AMD_IMG_MAX_FILE ((int64_t)1 << 30) /* bytes of one compressed file */

typedef enum amd_img_kind { AMD_IMG_JPEG = 1, AMD_IMG_PNG = 2 } amd_img_kind;

typedef struct amd_img_info {
  amd_img_kind kind;
  int w, h;
  int colour; /* 0: grey (1 channel), 1: colour (RGB, palette, CMYK: 3 channels) */
  int64_t file_bytes;
} amd_img_info;

/* The most memory decoding and resizing one image may take (pixel buffers,
 * libjpeg's coefficient buffers, the file), an upper estimate. */
int64_t amd_img_work_bytes(const amd_img_info *info);

/* Reads the header (the JPEG frame header or the PNG IHDR; the content
 * decides, not the name): kind, size, grey or colour. Fails on a file that is
 * not a JPEG or PNG, a truncated header, a bad PNG bit depth, 12-bit JPEG, a size
 * beyond the limits above, and a file too short to hold its pixels (PNG:
 * deflate compresses at most about 1032:1; JPEG: at least one bit per 8x8
 * block): a decompression bomb or a truncated file, refused before anything
 * is allocated. */
int amd_img_probe(const char *path, amd_img_info *info, amd_status *st);

/* Decodes path into a malloc'd HWC buffer (*pix, *h, *w, *c with c 1 or 3).
 * JPEG: TurboJPEG with libjpeg's defaults (the accurate integer IDCT, fancy
 * upsampling), as PIL decodes; CMYK/YCCK as PIL does (Adobe inverted values,
 * then PIL's CMYK->RGB); a truncated file is an error, other libjpeg warnings
 * are not. scale_w, scale_h > 0 (fast decoding): the smallest TurboJPEG
 * scaling factor whose output is at least scale_w x scale_h. *tj: a TurboJPEG
 * decompressor handle of the calling thread (amd_img_tj_new; replaced after a
 * failure), or tj / *tj NULL for a temporary one. */
int amd_img_decode(const char *path, void **tj, int scale_w, int scale_h, uint8_t **pix, int *h, int *w, int *c,
                   amd_status *st);
void *amd_img_tj_new(void);
void amd_img_tj_free(void *tj);

/* PIL's Image.resize(..., BILINEAR) of HWC uint8 in (ih x iw x c) into out
 * (oh x ow x c): a triangle filter whose support grows with the reduction
 * (antialiased), weights in 22-bit fixed point, horizontal pass then
 * vertical, each rounding to uint8; a pass whose size does not change is
 * skipped. Returns -1 only when out of memory. */
int amd_img_resize(const uint8_t *in, int ih, int iw, int c, uint8_t *out, int oh, int ow);

/* The same, computing only the output rectangle of h x w pixels at (y0, x0)
 * of the oh x ow result into out (h x w x c): the same bytes as resizing
 * everything and cropping after (each output pixel reads only its taps), at
 * a fraction of the work when a crop follows. */
int amd_img_resize_region(const uint8_t *in, int ih, int iw, int c, int oh, int ow, int y0, int x0, int h, int w,
                          uint8_t *out);

/* torchvision's CenterCrop along one side of `size` pixels cropped to
 * `crop`: output pixel i is input pixel i + offset (outside the input: zero
 * padding); offset int(round((size - crop) / 2.0)) (halves to even) when the
 * crop fits, else -((crop - size) / 2) (the padding before). */
int64_t amd_img_centre_offset(int64_t size, int64_t crop);

/* torchvision's Resize(N) output size for an h x w image: the shorter side
 * becomes n, the longer int(n * long / short). */
void amd_img_resize_size(int h, int w, int n, int64_t *oh, int64_t *ow);

#endif
