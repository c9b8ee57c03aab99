/* Crash-safe training checkpoints: see checkpoint.h for the file format and
 * the guarantees. Writing goes through raw file descriptors (so that the
 * fault-injection byte limit is exact and every errno is seen); reading goes
 * through stdio with a fixed-size streaming buffer, so a file can never make
 * us allocate what it claims. */
#include "checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define CK_MAGIC "AMDCKPT1"
#define CK_HEADER_BYTES 16u  /* magic, version, count */
#define CK_TRAILER_BYTES 12u /* total length, header crc */
#define CK_MIN_SECTION 17u   /* name length, >= 1 name byte, size, crc */
#define CK_CHUNK ((size_t)1 << 20)
#define CK_PATH 4096

/* ------------------------------------------------------------------ helpers */

static void put_u32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void put_u64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static uint32_t get_u32(const unsigned char *p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}
static uint64_t get_u64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

/* zlib's crc32 takes a uInt length: feed large blocks in pieces. */
static uint32_t crc_update(uint32_t crc, const void *data, size_t len) {
  const unsigned char *p = data;
  uLong c = crc;
  while (len > 0) {
    size_t k = len > ((size_t)1 << 30) ? ((size_t)1 << 30) : len;
    c = crc32(c, p, (uInt)k);
    p += k;
    len -= k;
  }
  return (uint32_t)c;
}

/* "ckpt-<1..18 digits>.amdckpt" -> step; -1 if the name does not match. */
static int64_t parse_ckpt_name(const char *name) {
  if (strncmp(name, "ckpt-", 5) != 0) return -1;
  const char *p = name + 5;
  int64_t step = 0;
  int digits = 0;
  while (*p >= '0' && *p <= '9') {
    if (++digits > 18) return -1;
    step = step * 10 + (*p - '0');
    p++;
  }
  if (digits == 0 || strcmp(p, ".amdckpt") != 0) return -1;
  return step;
}

static int is_temp_name(const char *name) {
  size_t len = strlen(name);
  return strncmp(name, ".tmp-ckpt-", 10) == 0 && len > 18 && strcmp(name + len - 8, ".amdckpt") == 0;
}

typedef struct ck_entry {
  int64_t step;
  char name[40];
} ck_entry;

static int cmp_entry_desc(const void *a, const void *b) {
  int64_t x = ((const ck_entry *)a)->step, y = ((const ck_entry *)b)->step;
  return x < y ? 1 : x > y ? -1 : 0;
}

/* Lists the checkpoints in dir, newest first. Returns 0 (possibly *count 0),
 * 1 if dir does not exist, -1 on error. *out is malloc'd (or NULL). */
static int list_ckpts(const char *dir, ck_entry **out, int *count, amd_status *st) {
  *out = NULL;
  *count = 0;
  DIR *d = opendir(dir);
  if (!d) {
    if (errno == ENOENT) return 1;
    return amd_fail(st, "checkpoint dir %s: cannot open: %s", dir, strerror(errno));
  }
  ck_entry *v = NULL;
  int n = 0, cap = 0;
  struct dirent *e;
  errno = 0;
  while ((e = readdir(d)) != NULL) {
    int64_t step = parse_ckpt_name(e->d_name);
    size_t len = strlen(e->d_name);
    if (step < 0 || len >= sizeof v->name) continue;
    if (n == cap) {
      int ncap = cap ? 2 * cap : 16;
      ck_entry *nv = realloc(v, (size_t)ncap * sizeof *nv);
      if (!nv) {
        free(v);
        closedir(d);
        return amd_fail(st, "checkpoint dir %s: out of memory listing it", dir);
      }
      v = nv;
      cap = ncap;
    }
    v[n].step = step;
    memcpy(v[n].name, e->d_name, len + 1);
    n++;
    errno = 0;
  }
  if (errno != 0) {
    int err = errno;
    free(v);
    closedir(d);
    return amd_fail(st, "checkpoint dir %s: cannot list: %s", dir, strerror(err));
  }
  closedir(d);
  if (n > 1) qsort(v, (size_t)n, sizeof *v, cmp_entry_desc);
  *out = v;
  *count = n;
  return 0;
}

/* ------------------------------------------------------------------ writing */

typedef struct ck_writer {
  int fd;
  uint64_t written;
  int64_t limit; /* AMD_FAULT_WRITE_BYTES, -1 when unset */
} ck_writer;

/* Returns 0 or an errno value. */
static int wr(ck_writer *w, const void *buf, size_t len) {
  const unsigned char *p = buf;
  while (len > 0) {
    size_t k = len > ((size_t)1 << 30) ? ((size_t)1 << 30) : len;
    if (w->limit >= 0) {
      if (w->written >= (uint64_t)w->limit) return ENOSPC;
      uint64_t room = (uint64_t)w->limit - w->written;
      if (k > room) k = (size_t)room;
    }
    ssize_t r = write(w->fd, p, k);
    if (r < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (r == 0) return ENOSPC;
    p += r;
    len -= (size_t)r;
    w->written += (uint64_t)r;
  }
  return 0;
}

static int fsync_retry(int fd) {
  int r;
  do r = fsync(fd);
  while (r != 0 && errno == EINTR);
  return r;
}

static int check_sections(const amd_ckpt_section *secs, int n, amd_status *st) {
  if (n < 0 || (n > 0 && !secs)) return amd_fail(st, "checkpoint: bad section list (n = %d)", n);
  for (int i = 0; i < n; i++) {
    const char *name = secs[i].name;
    if (!name || !name[0]) return amd_fail(st, "checkpoint: section %d has no name", i);
    if (strlen(name) > AMD_CKPT_NAME_MAX)
      return amd_fail(st, "checkpoint: section name '%.40s...' is longer than %d bytes", name,
                      AMD_CKPT_NAME_MAX);
    if (!secs[i].data && secs[i].bytes > 0)
      return amd_fail(st, "checkpoint: section '%s' has %zu bytes but no data", name, secs[i].bytes);
    for (int j = 0; j < i; j++)
      if (strcmp(secs[j].name, name) == 0) return amd_fail(st, "checkpoint: section '%s' given twice", name);
  }
  return 0;
}

/* Removes checkpoints older than the newest keep-1 below new_step, and stale
 * temp files. Returns 0, or -1 with a warning in st when a removal failed. */
static int prune(const char *dir, int64_t new_step, int keep, amd_status *st) {
  ck_entry *v;
  int n, bad = 0;
  char path[CK_PATH];
  if (list_ckpts(dir, &v, &n, st) != 0) return amd_fail_prefix(st, "warning");
  int kept = 0;
  for (int i = 0; i < n; i++) {
    if (v[i].step >= new_step) continue;
    if (kept < keep - 1) {
      kept++;
      continue;
    }
    snprintf(path, sizeof path, "%s/%s", dir, v[i].name);
    if (unlink(path) != 0 && errno != ENOENT && !bad) {
      bad = 1;
      amd_fail(st, "warning: cannot remove old checkpoint %s: %s", path, strerror(errno));
    }
  }
  free(v);
  DIR *d = opendir(dir);
  if (d) {
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
      if (!is_temp_name(e->d_name)) continue;
      snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
      if (unlink(path) != 0 && errno != ENOENT && !bad) {
        bad = 1;
        amd_fail(st, "warning: cannot remove stale temp file %s: %s", path, strerror(errno));
      }
    }
    closedir(d);
  }
  return bad ? -1 : 0;
}

/* amd_ckpt_set_faults' AMD_FAULT_WRITE_BYTES (NULL: none) */
static const char *fault_write_bytes;

void amd_ckpt_set_faults(const amd_fault_hooks *f) { fault_write_bytes = f ? f->ckpt_write_bytes : NULL; }

int amd_ckpt_write(const char *dir, int64_t step, const amd_ckpt_section *secs, int n, int keep,
                   amd_status *st) {
  if (st) st->msg[0] = '\0';
  if (!dir || !dir[0]) return amd_fail(st, "checkpoint: no directory given");
  if (step < 0) return amd_fail(st, "checkpoint: negative step %" PRId64, step);
  if (keep < 1) return amd_fail(st, "checkpoint: keep must be >= 1 (got %d)", keep);
  if (check_sections(secs, n, st) != 0) return -1;

  ck_writer w = {.fd = -1, .written = 0, .limit = -1};
  const char *fault = fault_write_bytes;
  if (fault && fault[0]) {
    char *end;
    errno = 0;
    long long lim = strtoll(fault, &end, 10);
    if (errno != 0 || *end != '\0' || lim < 0)
      return amd_fail(st, "checkpoint: AMD_FAULT_WRITE_BYTES='%s' is not a byte count", fault);
    w.limit = lim;
  }

  char final_path[CK_PATH], tmp_path[CK_PATH];
  int a = snprintf(final_path, sizeof final_path, "%s/ckpt-%010" PRId64 ".amdckpt", dir, step);
  int b =
      snprintf(tmp_path, sizeof tmp_path, "%s/.tmp-ckpt-%" PRId64 "-%ld.amdckpt", dir, step, (long)getpid());
  if (a < 0 || b < 0 || (size_t)a >= sizeof final_path || (size_t)b >= sizeof tmp_path)
    return amd_fail(st, "checkpoint: directory path too long: %.200s", dir);

  /* A temp file of ours from a crashed earlier attempt with the same pid is garbage. */
  unlink(tmp_path);
  w.fd = open(tmp_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (w.fd < 0) return amd_fail(st, "checkpoint: cannot create %s: %s", tmp_path, strerror(errno));

  uint64_t total = CK_HEADER_BYTES + CK_TRAILER_BYTES;
  for (int i = 0; i < n; i++) total += 4 + strlen(secs[i].name) + 8 + 4 + (uint64_t)secs[i].bytes;

  unsigned char hdr[4 + AMD_CKPT_NAME_MAX + 8 + 4];
  const char *what = "write";
  int err = 0;
  memcpy(hdr, CK_MAGIC, 8);
  put_u32(hdr + 8, AMD_CKPT_VERSION);
  put_u32(hdr + 12, (uint32_t)n);
  uint32_t hcrc = crc_update(0, hdr, CK_HEADER_BYTES);
  err = wr(&w, hdr, CK_HEADER_BYTES);
  for (int i = 0; i < n && !err; i++) {
    size_t nl = strlen(secs[i].name);
    put_u32(hdr, (uint32_t)nl);
    memcpy(hdr + 4, secs[i].name, nl);
    put_u64(hdr + 4 + nl, (uint64_t)secs[i].bytes);
    put_u32(hdr + 12 + nl, crc_update(0, secs[i].data, secs[i].bytes));
    hcrc = crc_update(hcrc, hdr, 16 + nl);
    err = wr(&w, hdr, 16 + nl);
    if (!err) err = wr(&w, secs[i].data, secs[i].bytes);
  }
  if (!err) {
    put_u64(hdr, total);
    put_u32(hdr + 8, hcrc);
    err = wr(&w, hdr, CK_TRAILER_BYTES);
  }
  if (!err && w.written != total) err = EIO; /* cannot happen; never rename a short file */
  if (!err && fsync_retry(w.fd) != 0) {
    err = errno;
    what = "fsync";
  }
  if (close(w.fd) != 0 && !err) {
    err = errno;
    what = "close";
  }
  w.fd = -1;
  if (!err && rename(tmp_path, final_path) != 0) {
    err = errno;
    what = "rename to final name";
  }
  if (err) {
    unlink(tmp_path);
    return amd_fail(st, "checkpoint %s: %s failed after %" PRIu64 " of %" PRIu64 " bytes: %s", final_path,
                    what, w.written, total, strerror(err));
  }

  /* Make the rename durable. The new file is in place; if this fails we keep
   * it (it is complete) but report the failure and do not prune. */
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0)
    return amd_fail(st, "checkpoint %s: written, but cannot open directory to fsync it: %s", final_path,
                    strerror(errno));
  if (fsync_retry(dfd) != 0) {
    err = errno;
    close(dfd);
    return amd_fail(st, "checkpoint %s: written, but fsync of directory %s failed: %s", final_path, dir,
                    strerror(err));
  }
  close(dfd);

  prune(dir, step, keep, st); /* a failure leaves a "warning: ..." in st; the write succeeded */
  return 0;
}

/* ------------------------------------------------------------------ reading */

typedef struct ck_reader {
  FILE *f;
  const char *path;
  uint64_t size, pos;
  uint32_t hcrc;
} ck_reader;

static int rd(ck_reader *r, void *buf, size_t len, const char *what, amd_status *st) {
  if (len > r->size - r->pos)
    return amd_fail(st, "checkpoint %s: truncated: %s at byte %" PRIu64 " needs %zu bytes, file has %" PRIu64,
                    r->path, what, r->pos, len, r->size);
  if (fread(buf, 1, len, r->f) != len) {
    if (ferror(r->f))
      return amd_fail(st, "checkpoint %s: read error at byte %" PRIu64 ": %s", r->path, r->pos,
                      strerror(errno));
    return amd_fail(st, "checkpoint %s: file ended early at byte %" PRIu64 " (changed while reading?)",
                    r->path, r->pos);
  }
  r->pos += len;
  return 0;
}

/* Verifies the whole file. For each requested section records its data
 * offset (UINT64_MAX if absent), stored size and stored crc. */
static int scan(ck_reader *r, const amd_ckpt_section *req, int nreq, uint64_t *off, uint64_t *size,
                uint32_t *crc, amd_status *st) {
  unsigned char h[4 + AMD_CKPT_NAME_MAX + 8 + 4];
  for (int i = 0; i < nreq; i++) off[i] = UINT64_MAX;
  if (r->size < CK_HEADER_BYTES + CK_TRAILER_BYTES)
    return amd_fail(st, "checkpoint %s: truncated or empty (%" PRIu64 " bytes, a checkpoint has at least %u)",
                    r->path, r->size, CK_HEADER_BYTES + CK_TRAILER_BYTES);
  if (rd(r, h, CK_HEADER_BYTES, "header", st) != 0) return -1;
  if (memcmp(h, CK_MAGIC, 8) != 0)
    return amd_fail(st, "checkpoint %s: not a checkpoint (bad magic)", r->path);
  uint32_t version = get_u32(h + 8), count = get_u32(h + 12);
  if (version != AMD_CKPT_VERSION)
    return amd_fail(st, "checkpoint %s: format version %" PRIu32 ", this build reads version %u", r->path,
                    version, AMD_CKPT_VERSION);
  if ((uint64_t)count * CK_MIN_SECTION > r->size - CK_HEADER_BYTES - CK_TRAILER_BYTES)
    return amd_fail(st,
                    "checkpoint %s: claims %" PRIu32 " sections, more than its %" PRIu64 " bytes can hold",
                    r->path, count, r->size);
  r->hcrc = crc_update(0, h, CK_HEADER_BYTES);
  unsigned char *buf = malloc(CK_CHUNK);
  if (!buf) return amd_fail(st, "checkpoint %s: out of memory", r->path);
  int rc = -1;
  for (uint32_t s = 0; s < count; s++) {
    if (rd(r, h, 4, "section name length", st) != 0) goto out;
    uint32_t nl = get_u32(h);
    if (nl == 0 || nl > AMD_CKPT_NAME_MAX) {
      amd_fail(st, "checkpoint %s: section %" PRIu32 " has a bad name length %" PRIu32, r->path, s, nl);
      goto out;
    }
    if (rd(r, h + 4, nl + 12, "section header", st) != 0) goto out;
    r->hcrc = crc_update(r->hcrc, h, 16 + nl);
    uint64_t dsize = get_u64(h + 4 + nl);
    uint32_t dcrc = get_u32(h + 12 + nl);
    char name[AMD_CKPT_NAME_MAX + 1];
    memcpy(name, h + 4, nl);
    name[nl] = '\0';
    if (dsize > r->size - r->pos || r->size - r->pos - dsize < CK_TRAILER_BYTES) {
      amd_fail(st,
               "checkpoint %s: section '%s' claims %" PRIu64 " bytes but only %" PRIu64
               " remain in the file (truncated?)",
               r->path, name, dsize, r->size - r->pos);
      goto out;
    }
    for (int i = 0; i < nreq; i++) {
      if (strlen(req[i].name) != nl || memcmp(req[i].name, name, nl) != 0) continue;
      if (off[i] != UINT64_MAX) {
        amd_fail(st, "checkpoint %s: section '%s' is stored twice", r->path, name);
        goto out;
      }
      off[i] = r->pos;
      size[i] = dsize;
      crc[i] = dcrc;
    }
    uint32_t c = 0;
    for (uint64_t left = dsize; left > 0;) {
      size_t k = left > CK_CHUNK ? CK_CHUNK : (size_t)left;
      if (rd(r, buf, k, "section data", st) != 0) goto out;
      c = crc_update(c, buf, k);
      left -= k;
    }
    if (c != dcrc) {
      amd_fail(st, "checkpoint %s: section '%s' is corrupt (crc32 %08" PRIx32 ", stored %08" PRIx32 ")",
               r->path, name, c, dcrc);
      goto out;
    }
  }
  if (rd(r, h, CK_TRAILER_BYTES, "trailer", st) != 0) goto out;
  uint64_t total = get_u64(h);
  if (total != r->size || r->pos != r->size) {
    amd_fail(st,
             "checkpoint %s: length mismatch (trailer says %" PRIu64 ", file has %" PRIu64 ", parsed %" PRIu64
             ")",
             r->path, total, r->size, r->pos);
    goto out;
  }
  if (get_u32(h + 8) != r->hcrc) {
    amd_fail(st, "checkpoint %s: header is corrupt (crc mismatch)", r->path);
    goto out;
  }
  rc = 0;
out:
  free(buf);
  return rc;
}

static int open_reader(ck_reader *r, const char *path, amd_status *st) {
  r->path = path;
  r->pos = 0;
  r->f = fopen(path, "rb");
  if (!r->f) return amd_fail(st, "checkpoint %s: cannot open: %s", path, strerror(errno));
  struct stat sb;
  if (fstat(fileno(r->f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
    fclose(r->f);
    return amd_fail(st, "checkpoint %s: not a regular file", path);
  }
  r->size = (uint64_t)sb.st_size;
  return 0;
}

int amd_ckpt_verify(const char *path, amd_status *st) {
  ck_reader r;
  if (!path) return amd_fail(st, "checkpoint: no path given");
  if (open_reader(&r, path, st) != 0) return -1;
  int rc = scan(&r, NULL, 0, NULL, NULL, NULL, st);
  fclose(r.f);
  return rc;
}

int amd_ckpt_read(const char *path, amd_ckpt_section *secs, int n, amd_status *st) {
  if (!path) return amd_fail(st, "checkpoint: no path given");
  if (check_sections(secs, n, st) != 0) return -1;
  ck_reader r;
  if (open_reader(&r, path, st) != 0) return -1;
  int rc = -1;
  size_t cnt = n > 0 ? (size_t)n : 1;
  uint64_t *off = malloc(cnt * sizeof *off), *size = malloc(cnt * sizeof *size);
  uint32_t *crc = malloc(cnt * sizeof *crc);
  if (!off || !size || !crc) {
    amd_fail(st, "checkpoint %s: out of memory", path);
    goto out;
  }
  if (scan(&r, secs, n, off, size, crc, st) != 0) goto out;
  for (int i = 0; i < n; i++) {
    if (off[i] == UINT64_MAX) {
      amd_fail(st, "checkpoint %s: section '%s' is missing", path, secs[i].name);
      goto out;
    }
    if (size[i] != (uint64_t)secs[i].bytes) {
      amd_fail(st, "checkpoint %s: section '%s' holds %" PRIu64 " bytes, expected %zu", path, secs[i].name,
               size[i], secs[i].bytes);
      goto out;
    }
  }
  /* Verified; now copy, re-checking each crc in case the file changed since. */
  for (int i = 0; i < n; i++) {
    if (secs[i].bytes == 0) continue;
    if (fseeko(r.f, (off_t)off[i], SEEK_SET) != 0 ||
        fread(secs[i].data, 1, secs[i].bytes, r.f) != secs[i].bytes) {
      amd_fail(st, "checkpoint %s: cannot read section '%s': %s", path, secs[i].name,
               ferror(r.f) ? strerror(errno) : "file ended early (changed while reading?)");
      goto out;
    }
    if (crc_update(0, secs[i].data, secs[i].bytes) != crc[i]) {
      amd_fail(st, "checkpoint %s: section '%s' changed while reading (crc mismatch)", path, secs[i].name);
      goto out;
    }
  }
  rc = 0;
out:
  free(off);
  free(size);
  free(crc);
  fclose(r.f);
  return rc;
}

/* ------------------------------------------------------------------ finding */

static void append_warning(char *w, size_t wl, const char *text) {
  if (!w || wl == 0) return;
  size_t used = strlen(w);
  if (used + 1 >= wl) return;
  snprintf(w + used, wl - used, "%s%s", used ? "; " : "", text);
}

int amd_ckpt_find_latest(const char *dir, char *path, size_t path_len, char *warning, size_t warning_len,
                         amd_status *st) {
  if (warning && warning_len) warning[0] = '\0';
  if (!dir || !dir[0] || !path) return amd_fail(st, "checkpoint: no directory or path buffer given");
  ck_entry *v;
  int n;
  int r = list_ckpts(dir, &v, &n, st);
  if (r != 0) return r;
  if (n == 0) {
    free(v);
    return 1;
  }
  char cand[CK_PATH];
  amd_status vst;
  int skipped = 0;
  for (int i = 0; i < n; i++) {
    int k = snprintf(cand, sizeof cand, "%s/%s", dir, v[i].name);
    if (k < 0 || (size_t)k >= sizeof cand) {
      free(v);
      return amd_fail(st, "checkpoint dir %.200s: path too long", dir);
    }
    if (amd_ckpt_verify(cand, &vst) != 0) {
      char line[1200];
      snprintf(line, sizeof line, "skipped %s", vst.msg);
      append_warning(warning, warning_len, line);
      skipped++;
      continue;
    }
    free(v);
    if ((size_t)k >= path_len)
      return amd_fail(st, "checkpoint %s: path does not fit in %zu bytes", cand, path_len);
    memcpy(path, cand, (size_t)k + 1);
    return 0;
  }
  free(v);
  return amd_fail(st,
                  "checkpoint dir %s: %d checkpoint file(s) but none verifies (last error: %s); move them "
                  "away to start over",
                  dir, skipped, vst.msg);
}

/* ------------------------------------------------------ training checkpoints */

#define STATE_VERSION_SECTION "train_state_version"
#define STATE_SECTION "train_state"
#define STATE_V1_SECTION "position" /* version 1: a raw C struct */

/* The schema of "train_state": every field of amd_train_state in this order,
 * each as 8 bytes little-endian (integers as two's complement, doubles as
 * their IEEE-754 bits). A new field, a removed one or a changed meaning is a
 * new AMD_TRAIN_STATE_VERSION. */
static const size_t state_fields[] = {
    offsetof(amd_train_state, epoch),       offsetof(amd_train_state, batch),
    offsetof(amd_train_state, step),        offsetof(amd_train_state, seen),
    offsetof(amd_train_state, loss_sum),    offsetof(amd_train_state, top1),
    offsetof(amd_train_state, train_seconds), offsetof(amd_train_state, aug_rng),
    offsetof(amd_train_state, dropout_rng), offsetof(amd_train_state, model_hash),
    offsetof(amd_train_state, loss_scale),  offsetof(amd_train_state, scale_good),
    offsetof(amd_train_state, skipped),
};
#define N_STATE_FIELDS (sizeof state_fields / sizeof state_fields[0])
#define STATE_BYTES (8 * N_STATE_FIELDS)

static void state_encode(const amd_train_state *s, unsigned char *out) {
  for (size_t i = 0; i < N_STATE_FIELDS; i++) {
    uint64_t v;
    memcpy(&v, (const char *)s + state_fields[i], 8);
    put_u64(out + 8 * i, v);
  }
}

static void state_decode(const unsigned char *in, amd_train_state *s) {
  memset(s, 0, sizeof *s);
  for (size_t i = 0; i < N_STATE_FIELDS; i++) {
    uint64_t v = get_u64(in + 8 * i);
    memcpy((char *)s + state_fields[i], &v, 8);
  }
}

/* The sections of c in file order; state_buf: the encoded state (and the
 * version) for writing, or where reading puts them. */
static int train_sections(amd_train_ckpt *c, unsigned char *version, unsigned char *state_buf,
                          amd_ckpt_section *s) {
  int n = 0;
  s[n++] = (amd_ckpt_section){STATE_VERSION_SECTION, version, 4};
  s[n++] = (amd_ckpt_section){"params", c->params, (size_t)c->n_params * sizeof(float)};
  s[n++] = (amd_ckpt_section){"optimizer", c->opt, (size_t)c->n_opt * sizeof(float)};
  s[n++] = (amd_ckpt_section){"bn_statistics", c->bn, (size_t)c->n_bn * sizeof(float)};
  s[n++] = (amd_ckpt_section){STATE_SECTION, state_buf, STATE_BYTES};
  s[n++] = (amd_ckpt_section){"config", c->config, c->config_bytes};
  s[n++] = (amd_ckpt_section){"metrics", c->metrics, c->metrics_bytes};
  return n;
}

int amd_train_ckpt_write(const char *dir, const amd_train_ckpt *c, int keep, amd_status *st) {
  unsigned char version[4], state[STATE_BYTES];
  amd_ckpt_section s[8];
  put_u32(version, AMD_TRAIN_STATE_VERSION);
  state_encode(&c->state, state);
  int n = train_sections((amd_train_ckpt *)c, version, state, s); /* written, not changed */
  return amd_ckpt_write(dir, c->state.step, s, n, keep, st);
}

int amd_train_ckpt_version(const char *path, uint32_t *version, amd_status *st) {
  if (!path) return amd_fail(st, "checkpoint: no path given");
  ck_reader r;
  if (open_reader(&r, path, st) != 0) return -1;
  const amd_ckpt_section req[2] = {{STATE_VERSION_SECTION, NULL, 0}, {STATE_V1_SECTION, NULL, 0}};
  uint64_t off[2], size[2];
  uint32_t crc[2];
  unsigned char v[4];
  int rc = scan(&r, req, 2, off, size, crc, st);
  if (rc == 0 && off[0] == UINT64_MAX) {
    *version = 1;
    if (off[1] == UINT64_MAX) rc = amd_fail(st, "checkpoint %s: not a training checkpoint (no training state)", path);
  } else if (rc == 0 && size[0] != 4) {
    rc = amd_fail(st, "checkpoint %s: section '%s' holds %" PRIu64 " bytes, expected 4", path,
                  STATE_VERSION_SECTION, size[0]);
  } else if (rc == 0) {
    if (fseeko(r.f, (off_t)off[0], SEEK_SET) != 0 || fread(v, 1, 4, r.f) != 4 || crc_update(0, v, 4) != crc[0])
      rc = amd_fail(st, "checkpoint %s: cannot read section '%s' (changed while reading?)", path,
                    STATE_VERSION_SECTION);
    else
      *version = get_u32(v);
  }
  fclose(r.f);
  return rc;
}

int amd_train_ckpt_read(const char *path, amd_train_ckpt *c, amd_status *st) {
  uint32_t found;
  if (amd_train_ckpt_version(path, &found, st)) return -1;
  if (found != AMD_TRAIN_STATE_VERSION)
    return amd_fail(st,
                    "checkpoint %s: training state version %" PRIu32 "; this build reads version %u (%s: "
                    "resume it with the build that wrote it, or move it away to start over)",
                    path, found, AMD_TRAIN_STATE_VERSION,
                    found < AMD_TRAIN_STATE_VERSION ? "written by an older build" : "written by a newer build");
  unsigned char version[4], state[STATE_BYTES];
  amd_ckpt_section s[8];
  int n = train_sections(c, version, state, s);
  if (amd_ckpt_read(path, s, n, st)) return -1;
  if (get_u32(version) != AMD_TRAIN_STATE_VERSION) /* the file changed between the two reads */
    return amd_fail(st, "checkpoint %s: changed while reading (training state version %" PRIu32 ")", path,
                    get_u32(version));
  state_decode(state, &c->state);
  return 0;
}

int amd_train_ckpt_parts(amd_train_ckpt *c, void **bufs, size_t *sizes) {
  unsigned char dummy[4];
  amd_ckpt_section s[8];
  int n = train_sections(c, dummy, NULL, s), k = 0;
  for (int i = 1; i < n; i++) { /* not the version */
    int is_state = strcmp(s[i].name, STATE_SECTION) == 0;
    bufs[k] = is_state ? (void *)&c->state : s[i].data;
    sizes[k++] = is_state ? sizeof c->state : s[i].bytes;
  }
  return k;
}
