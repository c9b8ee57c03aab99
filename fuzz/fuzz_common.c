/* See fuzz_common.h. */
#include "fuzz_common.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmpdir[4096];

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb;
  (void)flag;
  (void)ftw;
  remove(path);
  return 0;
}

static void cleanup(void) {
  if (tmpdir[0]) nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void die(const char *what, const char *path) {
  fprintf(stderr, "fuzz harness: %s '%s': %s\n", what, path, strerror(errno));
  abort();
}

const char *fuzz_tmpdir(void) {
  if (tmpdir[0]) return tmpdir;
  const char *base = getenv("TMPDIR");
  if (!base || !base[0]) base = "/tmp";
  snprintf(tmpdir, sizeof tmpdir, "%s/amdnn-fuzz-XXXXXX", base);
  if (!mkdtemp(tmpdir)) die("cannot create temp folder", tmpdir);
  atexit(cleanup);
  return tmpdir;
}

void fuzz_path(char *out, size_t n, const char *rel) {
  int k = snprintf(out, n, "%s/%s", fuzz_tmpdir(), rel);
  if (k < 0 || (size_t)k >= n) die("path too long", rel);
}

/* mkdir -p for the folders of tmpdir/rel. */
static void make_parents(const char *path) {
  char buf[4096];
  snprintf(buf, sizeof buf, "%s", path);
  for (char *p = buf + strlen(fuzz_tmpdir()) + 1; *p; p++) {
    if (*p != '/') continue;
    *p = 0;
    if (mkdir(buf, 0700) != 0 && errno != EEXIST) die("cannot create folder", buf);
    *p = '/';
  }
}

void fuzz_write(const char *rel, const uint8_t *data, size_t size) {
  char path[4096];
  fuzz_path(path, sizeof path, rel);
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0 && errno == ENOENT) {
    make_parents(path);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  }
  if (fd < 0) die("cannot create", path);
  size_t done = 0;
  while (done < size) {
    ssize_t w = write(fd, data + done, size - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) die("cannot write", path);
    done += (size_t)w;
  }
  if (close(fd) != 0) die("cannot close", path);
}

void fuzz_symlink(const char *target, const char *rel) {
  char path[4096];
  fuzz_path(path, sizeof path, rel);
  make_parents(path);
  if (symlink(target, path) != 0 && errno != EEXIST) die("cannot link", path);
}

int fuzz_verbose(void) {
  static int v = -1;
  if (v < 0) {
    const char *e = getenv("FUZZ_VERBOSE");
    v = e && e[0] && strcmp(e, "0") != 0;
  }
  return v;
}
