/* Tests of the checkpoint layer (src/train/checkpoint.c): round trips,
 * retention, skipping truncated / bit-flipped / garbage / empty newest files,
 * size-mismatch and missing-section errors, a simulated full disk
 * (AMD_FAULT_WRITE_BYTES), an unwritable destination, and the training
 * checkpoint (amd_train_ckpt): a round trip of its state, field for field and
 * bit for bit, and the refusal of another training-state version (a crafted
 * newer one, and the unversioned format of older builds) with a message
 * naming the found and the expected version. Everything happens in
 * a fresh temporary folder that is removed at the end. Each case prints its
 * name and result; the run ends with "N passed, N failed" and exits 1 on any
 * failure. */
#define _XOPEN_SOURCE 700
#include <dirent.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../test_check.h"
#include "train/checkpoint.h"

static int passed, failed;
static char root[512];

static const char *P(const char *fmt, ...) {
  static char bufs[8][1024];
  static int k = 0;
  char *b = bufs[k++ % 8];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(b, 1024, fmt, ap);
  va_end(ap);
  return b;
}

/* Case folders live in their own buffers: P's ring is reused after 8 calls. */
static const char *mkdir_case(const char *name) {
  static char dirs[16][1024];
  static int k = 0;
  char *d = dirs[k++ % 16];
  snprintf(d, 1024, "%s/%s", root, name);
  mkdir(d, 0755);
  return d;
}

static unsigned char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = malloc(n > 0 ? (size_t)n : 1);
  if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
    free(b);
    b = NULL;
  }
  fclose(f);
  *len = (size_t)n;
  return b;
}

static int spit(const char *path, const void *data, size_t len) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  int ok = fwrite(data, 1, len, f) == len;
  return (fclose(f) == 0 && ok) ? 0 : -1;
}

/* Number of entries in dir whose name starts with prefix. */
static int count_prefix(const char *dir, const char *prefix) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL)
    if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) n++;
  closedir(d);
  return n;
}

static int exists(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0;
}

static const char *ck(const char *dir, long long step) { return P("%s/ckpt-%010lld.amdckpt", dir, step); }

/* ------------------------------------------------------------ a typical state */

#define NPARAM 1000
#define NBIG (3u << 20) /* larger than the 1 MiB streaming chunk */

typedef struct state {
  float params[NPARAM];
  float adam_m[NPARAM];
  uint64_t rng[4];
  int64_t pos[2];
  char config[64];
  unsigned char *big;
} state;

static void fill(state *s, int seed) {
  for (int i = 0; i < NPARAM; i++) {
    s->params[i] = (float)(seed * 1000 + i) * 0.25f;
    s->adam_m[i] = -(float)i / (float)(seed + 1);
  }
  for (int i = 0; i < 4; i++) s->rng[i] = 0x9E3779B97F4A7C15ull * (uint64_t)(seed + i + 1);
  s->pos[0] = seed;
  s->pos[1] = seed * 100;
  snprintf(s->config, sizeof s->config, "mode=acc32 lr=0.01 seed=%d", seed);
  for (size_t i = 0; i < NBIG; i++) s->big[i] = (unsigned char)(i * 31u + (unsigned)seed);
}

static int secs_of(state *s, amd_ckpt_section *v) {
  v[0] = (amd_ckpt_section){"params", s->params, sizeof s->params};
  v[1] = (amd_ckpt_section){"adam_m", s->adam_m, sizeof s->adam_m};
  v[2] = (amd_ckpt_section){"rng", s->rng, sizeof s->rng};
  v[3] = (amd_ckpt_section){"position", s->pos, sizeof s->pos};
  v[4] = (amd_ckpt_section){"config", s->config, sizeof s->config};
  v[5] = (amd_ckpt_section){"empty", NULL, 0};
  v[6] = (amd_ckpt_section){"big", s->big, NBIG};
  return 7;
}

static int state_eq(const state *a, const state *b) {
  return memcmp(a->params, b->params, sizeof a->params) == 0 &&
         memcmp(a->adam_m, b->adam_m, sizeof a->adam_m) == 0 && memcmp(a->rng, b->rng, sizeof a->rng) == 0 &&
         memcmp(a->pos, b->pos, sizeof a->pos) == 0 && memcmp(a->config, b->config, sizeof a->config) == 0 &&
         memcmp(a->big, b->big, NBIG) == 0;
}

static state A, B;

static int write_state(const char *dir, long long step, int seed, int keep) {
  amd_ckpt_section v[8];
  fill(&A, seed);
  int n = secs_of(&A, v);
  amd_status st;
  int r = amd_ckpt_write(dir, step, v, n, keep, &st);
  if (r != 0) printf("  (write %s step %lld: %s)\n", dir, step, st.msg);
  return r;
}

/* Reads path into B and returns B.pos[0] (the seed), or -1. */
static int read_seed(const char *path) {
  amd_ckpt_section v[8];
  memset(B.params, 0, sizeof B.params);
  int n = secs_of(&B, v);
  amd_status st;
  if (amd_ckpt_read(path, v, n, &st) != 0) return -1;
  return (int)B.pos[0];
}

/* Small checkpoint for byte-level tests. */
static int write_small(const char *dir, long long step, int seed) {
  uint32_t w[8];
  for (int i = 0; i < 8; i++) w[i] = (uint32_t)(seed * 8 + i);
  int64_t pos = seed;
  amd_ckpt_section v[2] = {{"w", w, sizeof w}, {"position", &pos, sizeof pos}};
  amd_status st;
  int r = amd_ckpt_write(dir, step, v, 2, 2, &st);
  if (r != 0) printf("  (write_small: %s)\n", st.msg);
  return r;
}

static int read_small(const char *path, amd_status *st) {
  uint32_t w[8];
  int64_t pos = -1;
  amd_ckpt_section v[2] = {{"w", w, sizeof w}, {"position", &pos, sizeof pos}};
  if (amd_ckpt_read(path, v, 2, st) != 0) return -1;
  return (int)pos;
}

/* find_latest and return the seed of what it found (-1 error, -2 none). */
static int latest_seed(const char *dir, char *warning, size_t wl, amd_status *st) {
  char path[1024];
  int r = amd_ckpt_find_latest(dir, path, sizeof path, warning, wl, st);
  if (r == 1) return -2;
  if (r != 0) return -1;
  return read_small(path, st);
}

/* ------------------------------------------------------------------ cases */

static void case_round_trip(void) {
  const char *d = mkdir_case("roundtrip");
  CHECK(write_state(d, 7, 3, 2) == 0, "write");
  char path[1024], warn[512];
  amd_status st;
  int r = amd_ckpt_find_latest(d, path, sizeof path, warn, sizeof warn, &st);
  CHECK(r == 0 && strcmp(path, ck(d, 7)) == 0, "find_latest r=%d path=%s msg=%s", r, path, st.msg);
  CHECK(warn[0] == '\0', "unexpected warning: %s", warn);
  CHECK(amd_ckpt_verify(path, &st) == 0, "verify: %s", st.msg);
  CHECK(read_seed(path) == 3, "read");
  CHECK(state_eq(&A, &B), "data differ after round trip");

  /* A subset, in another order: extra stored sections are ignored. */
  int64_t pos[2] = {0, 0};
  char cfg[64] = {0};
  amd_ckpt_section sub[2] = {{"config", cfg, sizeof cfg}, {"position", pos, sizeof pos}};
  CHECK(amd_ckpt_read(path, sub, 2, &st) == 0, "subset read: %s", st.msg);
  CHECK(pos[1] == 300 && strcmp(cfg, "mode=acc32 lr=0.01 seed=3") == 0, "subset values %lld '%s'",
        (long long)pos[1], cfg);

  /* Rewriting the same step replaces it atomically. */
  CHECK(write_state(d, 7, 4, 2) == 0, "rewrite");
  CHECK(read_seed(ck(d, 7)) == 4 && state_eq(&A, &B), "rewritten data");
  CHECK(count_prefix(d, ".tmp-") == 0, "temp file left");

  /* Steps beyond 10 digits still sort by number. */
  CHECK(write_state(d, 12345678901LL, 5, 2) == 0, "large step");
  r = amd_ckpt_find_latest(d, path, sizeof path, NULL, 0, &st);
  CHECK(r == 0 && strcmp(path, P("%s/ckpt-12345678901.amdckpt", d)) == 0, "large step found %s", path);
  /* Too small a path buffer is an error, not a truncated path. */
  char tiny[8];
  CHECK(amd_ckpt_find_latest(d, tiny, sizeof tiny, NULL, 0, &st) == -1 && st.msg[0], "tiny buffer");
}

static void case_retention(void) {
  const char *d = mkdir_case("retention");
  for (int s = 1; s <= 5; s++) CHECK(write_small(d, s * 10, s) == 0, "write %d", s);
  CHECK(count_prefix(d, "ckpt-") == 2, "%d checkpoints kept", count_prefix(d, "ckpt-"));
  CHECK(exists(ck(d, 50)) && exists(ck(d, 40)), "newest two kept");
  CHECK(count_prefix(d, ".tmp-") == 0, "temp left");
  amd_status st;
  CHECK(latest_seed(d, NULL, 0, &st) == 5, "latest seed");

  /* keep=1 leaves only the newest; a stale temp file from a crash is removed. */
  CHECK(spit(P("%s/.tmp-ckpt-99-12345.amdckpt", d), "junk", 4) == 0, "stale temp");
  char path[1024];
  CHECK(amd_ckpt_find_latest(d, path, sizeof path, NULL, 0, &st) == 0 && strcmp(path, ck(d, 50)) == 0,
        "a temp file is not a checkpoint");
  uint32_t x = 1;
  amd_ckpt_section v[1] = {{"x", &x, sizeof x}};
  CHECK(amd_ckpt_write(d, 60, v, 1, 1, &st) == 0, "keep=1 write: %s", st.msg);
  CHECK(count_prefix(d, "ckpt-") == 1 && exists(ck(d, 60)), "keep=1 leaves %d", count_prefix(d, "ckpt-"));
  CHECK(count_prefix(d, ".tmp-") == 0, "stale temp not removed");

  /* A run resumed from an older step does not delete newer files, nor its own. */
  const char *d2 = mkdir_case("retention-resume");
  CHECK(write_small(d2, 100, 1) == 0 && write_small(d2, 200, 2) == 0, "setup");
  CHECK(write_small(d2, 50, 3) == 0, "older step write");
  CHECK(exists(ck(d2, 50)) && exists(ck(d2, 100)) && exists(ck(d2, 200)), "resume retention");
}

static void case_truncated(void) {
  const char *d = mkdir_case("truncated");
  CHECK(write_small(d, 1, 1) == 0 && write_small(d, 2, 2) == 0, "setup");
  size_t len;
  unsigned char *orig = slurp(ck(d, 2), &len);
  CHECK(orig != NULL && len > 40, "slurp");
  if (!orig) return;
  size_t cuts[] = {0, 1, 7, 8, 15, 16, 20, 30, len / 2, len - 13, len - 12, len - 5, len - 1};
  for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
    CHECK(truncate(ck(d, 2), (off_t)cuts[i]) == 0, "truncate");
    char warn[2048];
    amd_status st;
    int seed = latest_seed(d, warn, sizeof warn, &st);
    CHECK(seed == 1, "cut at %zu: got seed %d (%s)", cuts[i], seed, st.msg);
    CHECK(strstr(warn, "skipped") && strstr(warn, "ckpt-0000000002"), "cut at %zu: warning '%s'", cuts[i],
          warn);
    CHECK(read_small(ck(d, 2), &st) == -1 && st.msg[0], "cut at %zu: direct read must fail", cuts[i]);
    CHECK(spit(ck(d, 2), orig, len) == 0, "restore");
  }
  /* Extra bytes appended are corruption too. */
  unsigned char *longer = malloc(len + 3);
  memcpy(longer, orig, len);
  memcpy(longer + len, "xyz", 3);
  spit(ck(d, 2), longer, len + 3);
  amd_status st;
  CHECK(latest_seed(d, NULL, 0, &st) == 1, "appended bytes not detected");
  spit(ck(d, 2), orig, len);
  CHECK(latest_seed(d, NULL, 0, &st) == 2, "restored file does not verify: %s", st.msg);
  free(longer);
  free(orig);
}

static void case_bit_flip(void) {
  const char *d = mkdir_case("bitflip");
  CHECK(write_small(d, 1, 1) == 0 && write_small(d, 2, 2) == 0, "setup");
  size_t len;
  unsigned char *orig = slurp(ck(d, 2), &len);
  if (!orig) {
    CHECK(0, "slurp");
    return;
  }
  /* Every byte of the file, one bit each (cycling through bit positions). */
  int undetected = 0;
  amd_status st;
  for (size_t off = 0; off < len; off++) {
    orig[off] ^= (unsigned char)(1u << (off % 8));
    spit(ck(d, 2), orig, len);
    orig[off] ^= (unsigned char)(1u << (off % 8));
    if (amd_ckpt_verify(ck(d, 2), &st) == 0) {
      if (undetected++ < 5) printf("  flip at byte %zu not detected\n", off);
    }
  }
  CHECK(undetected == 0, "%d of %zu flips undetected", undetected, len);
  /* And find_latest falls back on one of them (a flip in the data). */
  orig[len - 20] ^= 0x10;
  spit(ck(d, 2), orig, len);
  char warn[2048];
  CHECK(latest_seed(d, warn, sizeof warn, &st) == 1, "fallback after flip");
  CHECK(strstr(warn, "corrupt") != NULL, "warning says corrupt: '%s'", warn);
  free(orig);
}

static void case_size_and_missing(void) {
  const char *d = mkdir_case("sizes");
  CHECK(write_small(d, 1, 1) == 0, "setup");
  amd_status st;
  uint32_t w[9], w_copy[9];
  int64_t pos = 777;
  for (int i = 0; i < 9; i++) w[i] = 0xAAAAAAAAu;
  memcpy(w_copy, w, sizeof w);
  /* position first, so a copy-before-check bug would overwrite it. */
  amd_ckpt_section v[2] = {{"position", &pos, sizeof pos}, {"w", w, sizeof w}};
  CHECK(amd_ckpt_read(ck(d, 1), v, 2, &st) == -1, "size mismatch accepted");
  CHECK(strstr(st.msg, "'w'") && strstr(st.msg, "32") && strstr(st.msg, "36"), "message: %s", st.msg);
  CHECK(pos == 777 && memcmp(w, w_copy, sizeof w) == 0, "buffers written despite the error");

  amd_ckpt_section v2[2] = {{"position", &pos, sizeof pos}, {"momentum", w, 32}};
  CHECK(amd_ckpt_read(ck(d, 1), v2, 2, &st) == -1, "missing section accepted");
  CHECK(strstr(st.msg, "momentum") && strstr(st.msg, "missing"), "message: %s", st.msg);
  CHECK(pos == 777, "buffers written despite the error");

  /* Bad write arguments. */
  amd_ckpt_section dup[2] = {{"a", w, 4}, {"a", w, 4}};
  CHECK(amd_ckpt_write(d, 2, dup, 2, 2, &st) == -1 && strstr(st.msg, "twice"), "duplicate names: %s", st.msg);
  amd_ckpt_section nul[1] = {{"a", NULL, 4}};
  CHECK(amd_ckpt_write(d, 2, nul, 1, 2, &st) == -1 && st.msg[0], "NULL data");
  CHECK(amd_ckpt_write(d, 2, v, 2, 0, &st) == -1 && st.msg[0], "keep=0");
  CHECK(!exists(ck(d, 2)) && count_prefix(d, ".tmp-") == 0, "files left by rejected writes");
}

/* AMD_FAULT_WRITE_BYTES as the CLI hands it to the writer (NULL: none). */
static void set_write_fault(const char *bytes) {
  static char text[64];
  amd_fault_hooks f = amd_env_defaults().faults;
  if (bytes) {
    snprintf(text, sizeof text, "%s", bytes);
    f.ckpt_write_bytes = text;
  }
  amd_ckpt_set_faults(&f);
}

static void case_disk_full(void) {
  const char *d = mkdir_case("diskfull");
  CHECK(write_state(d, 1, 1, 2) == 0 && write_state(d, 2, 2, 2) == 0, "setup");
  size_t l1, l2;
  unsigned char *c1 = slurp(ck(d, 1), &l1), *c2 = slurp(ck(d, 2), &l2);
  CHECK(c1 && c2, "slurp");
  long limits[] = {0, 1, 16, 100, 5000, (long)l2 / 2, (long)l2 - 12, (long)l2 - 1};
  for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
    set_write_fault(P("%ld", limits[i]));
    amd_status st;
    amd_ckpt_section v[8];
    fill(&A, 3);
    int n = secs_of(&A, v);
    int r = amd_ckpt_write(d, 3, v, n, 2, &st);
    CHECK(r == -1, "limit %ld: write succeeded", limits[i]);
    CHECK(strstr(st.msg, "No space left on device") != NULL, "limit %ld: message '%s'", limits[i], st.msg);
    CHECK(!exists(ck(d, 3)), "limit %ld: partial checkpoint left", limits[i]);
    CHECK(count_prefix(d, ".tmp-") == 0, "limit %ld: temp file left", limits[i]);
    size_t m1, m2;
    unsigned char *n1 = slurp(ck(d, 1), &m1), *n2 = slurp(ck(d, 2), &m2);
    CHECK(n1 && n2 && m1 == l1 && m2 == l2 && memcmp(n1, c1, l1) == 0 && memcmp(n2, c2, l2) == 0,
          "limit %ld: previous checkpoints changed", limits[i]);
    free(n1);
    free(n2);
  }
  /* A limit at the exact size lets the write through; bad values are errors. */
  amd_status st;
  set_write_fault(P("%zu", l2));
  CHECK(write_state(d, 3, 3, 2) == 0, "limit == size must succeed");
  set_write_fault("lots");
  uint32_t x = 0;
  amd_ckpt_section one[1] = {{"x", &x, 4}};
  CHECK(amd_ckpt_write(d, 4, one, 1, 2, &st) == -1 && strstr(st.msg, "AMD_FAULT_WRITE_BYTES"),
        "bad value: %s", st.msg);
  set_write_fault(NULL);
  CHECK(write_state(d, 4, 4, 2) == 0, "write after the disk has room again");
  char path[1024];
  CHECK(amd_ckpt_find_latest(d, path, sizeof path, NULL, 0, &st) == 0 && read_seed(path) == 4 &&
            state_eq(&A, &B),
        "resume after recovery");
  CHECK(count_prefix(d, "ckpt-") == 2 && count_prefix(d, ".tmp-") == 0, "files after recovery");
  free(c1);
  free(c2);
}

static void case_unwritable(void) {
  const char *d = mkdir_case("unwritable");
  const char *file = P("%s/plainfile", d);
  CHECK(spit(file, "x", 1) == 0, "setup");
  uint32_t x = 5;
  amd_ckpt_section v[1] = {{"x", &x, sizeof x}};
  amd_status st;
  /* The parent of the checkpoint dir is a regular file: not even root can create it. */
  CHECK(amd_ckpt_write(P("%s/sub", file), 1, v, 1, 2, &st) == -1, "write under a file succeeded");
  CHECK(strstr(st.msg, "Not a directory") != NULL, "message: %s", st.msg);
  CHECK(amd_ckpt_write(file, 1, v, 1, 2, &st) == -1 && strstr(st.msg, "Not a directory"), "dir is a file: %s",
        st.msg);
  CHECK(amd_ckpt_write(P("%s/missing", d), 1, v, 1, 2, &st) == -1 && strstr(st.msg, "No such file"),
        "missing dir: %s", st.msg);
  char path[64] = "untouched";
  CHECK(amd_ckpt_find_latest(P("%s/missing", d), path, sizeof path, NULL, 0, &st) == 1 &&
            strcmp(path, "untouched") == 0,
        "missing dir means no checkpoint yet");
  CHECK(amd_ckpt_find_latest(P("%s/sub", file), path, sizeof path, NULL, 0, &st) == -1 && st.msg[0],
        "dir under a file must be an error");
  CHECK(amd_ckpt_find_latest(d, path, sizeof path, NULL, 0, &st) == 1 && strcmp(path, "untouched") == 0,
        "dir without checkpoints");
  CHECK(amd_ckpt_read(P("%s/none.amdckpt", d), v, 1, &st) == -1 && strstr(st.msg, "No such file"),
        "read of a missing file: %s", st.msg);
}

static void case_garbage_and_empty(void) {
  const char *d = mkdir_case("garbage");
  amd_status st;
  char warn[2048], path[1024] = "untouched";
  CHECK(spit(ck(d, 9), "this is not a checkpoint at all, just text\n", 43) == 0, "garbage");
  CHECK(spit(ck(d, 8), "", 0) == 0, "empty");
  /* Only bad files: an error (not "start from scratch"). */
  int r = amd_ckpt_find_latest(d, path, sizeof path, warn, sizeof warn, &st);
  CHECK(r == -1 && strstr(st.msg, "none verifies"), "r=%d msg=%s", r, st.msg);
  CHECK(strcmp(path, "untouched") == 0, "path touched");
  CHECK(amd_ckpt_verify(ck(d, 9), &st) == -1 && strstr(st.msg, "magic"), "garbage: %s", st.msg);
  CHECK(amd_ckpt_verify(ck(d, 8), &st) == -1 && strstr(st.msg, "empty"), "empty: %s", st.msg);
  uint32_t x;
  amd_ckpt_section v[1] = {{"x", &x, sizeof x}};
  CHECK(amd_ckpt_read(ck(d, 9), v, 1, &st) == -1, "read garbage");
  CHECK(amd_ckpt_read(ck(d, 8), v, 1, &st) == -1, "read empty");
  /* With a good older one, both are skipped with a warning. */
  CHECK(write_small(d, 5, 5) == 0, "good");
  CHECK(latest_seed(d, warn, sizeof warn, &st) == 5, "fallback");
  CHECK(strstr(warn, "ckpt-0000000009") && strstr(warn, "ckpt-0000000008"), "warning: %s", warn);

  /* A crafted header claiming huge sizes is rejected without allocating. */
  unsigned char h[64] = "AMDCKPT1";
  h[8] = 1;     /* version 1 */
  h[12] = 1;    /* one section */
  h[16] = 1;    /* u32 name length 1 */
  h[20] = 'x';  /* name */
  h[28] = 0x40; /* u64 size at 21..28: 2^62 */
  CHECK(spit(P("%s/huge.amdckpt", d), h, sizeof h) == 0, "craft");
  CHECK(amd_ckpt_verify(P("%s/huge.amdckpt", d), &st) == -1 && strstr(st.msg, "claims"), "huge size: %s",
        st.msg);
  h[12] = 0xff, h[13] = 0xff, h[14] = 0xff, h[15] = 0x7f; /* 2^31 sections */
  spit(P("%s/huge.amdckpt", d), h, sizeof h);
  CHECK(amd_ckpt_verify(P("%s/huge.amdckpt", d), &st) == -1 && strstr(st.msg, "sections"), "huge count: %s",
        st.msg);
  h[12] = 1, h[13] = h[14] = h[15] = 0;
  h[8] = 2; /* a newer version */
  spit(P("%s/huge.amdckpt", d), h, sizeof h);
  CHECK(amd_ckpt_verify(P("%s/huge.amdckpt", d), &st) == -1 && strstr(st.msg, "version 2"), "version: %s",
        st.msg);
}

/* ------------------------------------------------------------------ main */

/* A training checkpoint of small buffers: state, blocks and texts. */
static float tc_params[6], tc_opt[12], tc_bn[3];
static char tc_config[64], tc_metrics[128];
static amd_train_ckpt train_ckpt_of(void) {
  return (amd_train_ckpt){tc_params, 6, tc_opt, 12, tc_bn, 3, tc_config, sizeof tc_config, tc_metrics,
                          sizeof tc_metrics, {0}};
}

static void case_train_state(void) {
  const char *d = mkdir_case("train_state");
  amd_status st;
  for (int i = 0; i < 6; i++) tc_params[i] = 0.25f * (float)i - 1;
  for (int i = 0; i < 12; i++) tc_opt[i] = 1e-3f * (float)i;
  for (int i = 0; i < 3; i++) tc_bn[i] = 3.5f + (float)i;
  snprintf(tc_config, sizeof tc_config, "data=x batch=8");
  snprintf(tc_metrics, sizeof tc_metrics, "epoch\thours\n1\t0.5\n");
  amd_train_ckpt w = train_ckpt_of();
  w.state = (amd_train_state){.epoch = 3, .batch = 17, .step = 1234, .seen = 999, .loss_sum = 0.1 + 0.2,
                              .top1 = 555, .train_seconds = 1.0 / 3.0, .aug_rng = 0xfedcba9876543210ull,
                              .dropout_rng = 0x0123456789abcdefull, .model_hash = 0x8000000000000001ull,
                              .loss_scale = 32768.0, .scale_good = 1999, .skipped = -1};
  CHECK(amd_train_ckpt_write(d, &w, 2, &st) == 0, "write: %s", st.msg);
  uint32_t version = 0;
  CHECK(amd_train_ckpt_version(ck(d, 1234), &version, &st) == 0 && version == AMD_TRAIN_STATE_VERSION,
        "version %u: %s", (unsigned)version, st.msg);
  float keep_params[6], keep_opt[12];
  memcpy(keep_params, tc_params, sizeof keep_params);
  memcpy(keep_opt, tc_opt, sizeof keep_opt);
  memset(tc_params, 0, sizeof tc_params), memset(tc_opt, 0, sizeof tc_opt), memset(tc_bn, 0, sizeof tc_bn);
  memset(tc_config, 0, sizeof tc_config), memset(tc_metrics, 0, sizeof tc_metrics);
  amd_train_ckpt r = train_ckpt_of();
  CHECK(amd_train_ckpt_read(ck(d, 1234), &r, &st) == 0, "read: %s", st.msg);
  CHECK(memcmp(&r.state, &w.state, sizeof r.state) == 0, "the state differs after a round trip");
  CHECK(memcmp(tc_params, keep_params, sizeof keep_params) == 0 && memcmp(tc_opt, keep_opt, sizeof keep_opt) == 0 && tc_bn[2] == 5.5f &&
            strcmp(tc_config, "data=x batch=8") == 0 && strncmp(tc_metrics, "epoch", 5) == 0,
        "blocks or texts differ after a round trip");

  /* a newer build's checkpoint: version 7, same sections otherwise */
  unsigned char v7[4] = {7, 0, 0, 0}, state[8 * 13] = {0};
  amd_ckpt_section s7[7] = {{"train_state_version", v7, 4}, {"params", tc_params, sizeof tc_params},
                            {"optimizer", tc_opt, sizeof tc_opt},   {"bn_statistics", tc_bn, sizeof tc_bn},
                            {"train_state", state, sizeof state},   {"config", tc_config, sizeof tc_config},
                            {"metrics", tc_metrics, sizeof tc_metrics}};
  CHECK(amd_ckpt_write(d, 2000, s7, 7, 5, &st) == 0, "write v7: %s", st.msg);
  tc_params[0] = 42;
  r = train_ckpt_of();
  CHECK(amd_train_ckpt_read(ck(d, 2000), &r, &st) == -1, "version 7 accepted");
  CHECK(strstr(st.msg, "training state version 7") && strstr(st.msg, P("reads version %u", AMD_TRAIN_STATE_VERSION)) &&
            strstr(st.msg, "newer"),
        "message: %s", st.msg);
  CHECK(tc_params[0] == 42 && r.state.step == 0, "buffers written despite the refusal");

  /* an older build's checkpoint: no version section, the raw struct "position" */
  unsigned char raw[104] = {0};
  amd_ckpt_section s1[6] = {{"params", tc_params, sizeof tc_params}, {"optimizer", tc_opt, sizeof tc_opt},
                            {"bn_statistics", tc_bn, sizeof tc_bn},  {"position", raw, sizeof raw},
                            {"config", tc_config, sizeof tc_config}, {"metrics", tc_metrics, sizeof tc_metrics}};
  CHECK(amd_ckpt_write(d, 3000, s1, 6, 5, &st) == 0, "write v1: %s", st.msg);
  CHECK(amd_train_ckpt_read(ck(d, 3000), &r, &st) == -1, "the unversioned format accepted");
  CHECK(strstr(st.msg, "training state version 1;") && strstr(st.msg, P("reads version %u", AMD_TRAIN_STATE_VERSION)) &&
            strstr(st.msg, "older"),
        "message: %s", st.msg);
  CHECK(tc_params[0] == 42 && r.state.step == 0, "buffers written despite the refusal");

  /* a checkpoint that is no training checkpoint at all */
  amd_ckpt_section other[1] = {{"w", tc_opt, sizeof tc_opt}};
  CHECK(amd_ckpt_write(d, 4000, other, 1, 5, &st) == 0, "write: %s", st.msg);
  CHECK(amd_train_ckpt_read(ck(d, 4000), &r, &st) == -1 && strstr(st.msg, "not a training checkpoint"),
        "message: %s", st.msg);
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb, (void)flag, (void)ftw;
  return remove(path);
}

typedef struct tcase {
  const char *name;
  void (*fn)(void);
} tcase;

int main(void) {
  const char *tmp = getenv("TMPDIR");
  snprintf(root, sizeof root, "%s/amd-ckpt-test-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
  if (!mkdtemp(root)) {
    perror("mkdtemp");
    return 1;
  }
  set_write_fault(NULL);
  A.big = malloc(NBIG);
  B.big = malloc(NBIG);
  if (!A.big || !B.big) return 1;
  const tcase cases[] = {
      {"round trip of several sections", case_round_trip},
      {"keep=2 retention after 5 writes", case_retention},
      {"truncated newest is skipped", case_truncated},
      {"bit-flipped newest is skipped (every byte)", case_bit_flip},
      {"size mismatch and missing section", case_size_and_missing},
      {"simulated disk full (AMD_FAULT_WRITE_BYTES)", case_disk_full},
      {"unwritable destination", case_unwritable},
      {"garbage and empty checkpoint files", case_garbage_and_empty},
      {"training state: round trip, other versions refused", case_train_state},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const int failures_before = failures;
    cases[i].fn();
    const int case_failed = failures != failures_before;
    printf("%-48s %s\n", cases[i].name, case_failed ? "FAIL" : "ok");
    fflush(stdout);
    if (case_failed)
      failed++;
    else
      passed++;
  }
  free(A.big);
  free(B.big);
  nftw(root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
