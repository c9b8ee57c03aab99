/* ONNX backend conformance runner over the node tests of the ONNX test suite
 * (Debian libonnx-testdata: DIR/test_x/model.onnx and test_data_set_N/{input,output}_K.pb).
 *
 * Each test runs in its own child process with a time limit, so a crash or a
 * hang is a failure of that test, not the end of the run. Every data set and
 * every output is compared (NaN-aware, |got - want| <= atol + rtol * |want|,
 * the backend suite's default rtol 1e-3, atol 1e-7; integers and bools exact).
 *
 * With --expected FILE (one passing test name per line, '#' comments) the run
 * fails on a regression (listed, did not pass) and on an unexpected pass (not
 * listed, passed: update the list). It also fails when the corpus is missing
 * or smaller than expected, so a run can never pass on zero tests. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "exec/exec.h"
#include "onnx/load.h"
#include "onnx/tensor_proto.h"

#define RTOL 1e-3
#define ATOL 1e-7
#define MIN_CORPUS 900 /* the Debian suite has 932 node tests */

static int cmp_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* dir + "/" + leaf into buf; -1 when it does not fit. */
static int join(char *buf, size_t n, const char *dir, const char *leaf) {
  int k = snprintf(buf, n, "%s/%s", dir, leaf);
  return k < 0 || (size_t)k >= n ? -1 : 0;
}

static int exists(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0;
}

/* Compares got with want; writes a reason into st on mismatch. */
static int compare(const amd_tensor *got, const amd_tensor *want, const char *what, amd_status *st) {
  char a[160], b[160];
  if (got->dtype != want->dtype)
    return amd_fail(st, "%s: dtype %s, expected %s", what, amd_dtype_name(got->dtype), amd_dtype_name(want->dtype));
  if (!amd_same_shape(got, want))
    return amd_fail(st, "%s: shape %s, expected %s", what, amd_shape_str(got, a, sizeof a),
                    amd_shape_str(want, b, sizeof b));
  int64_t n = amd_tensor_numel(want);
  int is_float = want->dtype == AMD_FLOAT || want->dtype == AMD_DOUBLE || want->dtype == AMD_FLOAT16 ||
                 want->dtype == AMD_BFLOAT16;
  for (int64_t i = 0; i < n; i++) {
    if (is_float) {
      double g = amd_tensor_get_f64(got, i), w = amd_tensor_get_f64(want, i);
      if (isnan(w) && isnan(g)) continue;
      if (isinf(w) && g == w) continue;
      if (!(fabs(g - w) <= ATOL + RTOL * fabs(w)))
        return amd_fail(st, "%s: element %lld is %.9g, expected %.9g", what, (long long)i, g, w);
    } else if (amd_tensor_get_i64(got, i) != amd_tensor_get_i64(want, i)) {
      return amd_fail(st, "%s: element %lld is %lld, expected %lld", what, (long long)i,
                      (long long)amd_tensor_get_i64(got, i), (long long)amd_tensor_get_i64(want, i));
    }
  }
  return 0;
}

/* Runs one test directory in this process; 0 = pass. */
static int run_test(const char *dir, amd_status *st) {
  char path[4096];
  if (join(path, sizeof path, dir, "model.onnx")) return amd_fail(st, "path too long");
  amd_graph *g;
  if (amd_graph_load(path, 0, &g, st)) return -1;
  int rc = 0, n_sets = 0;
  for (int s = 0; rc == 0; s++) {
    char set[4096], leaf[64];
    snprintf(leaf, sizeof leaf, "test_data_set_%d", s);
    if (join(set, sizeof set, dir, leaf)) return amd_fail(st, "path too long");
    if (!exists(set)) break;
    n_sets++;
    amd_tensor in[64] = {{0}}, out[64] = {{0}};
    int n_in = 0;
    /* input_K.pb names its graph input; unnamed ones go in graph order */
    while (rc == 0) {
      snprintf(leaf, sizeof leaf, "input_%d.pb", n_in);
      if (join(path, sizeof path, set, leaf) || !exists(path)) break;
      char *name = NULL;
      amd_tensor t;
      if (amd_tensor_read_file(path, &t, &name, st)) {
        rc = -1;
        break;
      }
      int slot = n_in;
      for (int k = 0; k < g->n_inputs; k++)
        if (name[0] && strcmp(g->values[g->inputs[k]].name, name) == 0) slot = k;
      free(name);
      if (slot >= g->n_inputs || slot >= 64 || in[slot].data) {
        amd_tensor_free(&t);
        rc = amd_fail(st, "input_%d.pb does not match a graph input", n_in);
        break;
      }
      /* ONNX 1.12's test data stores bfloat16 tensors as uint16 bit patterns */
      if (t.dtype == AMD_UINT16 && g->values[g->inputs[slot]].dtype == AMD_BFLOAT16) t.dtype = AMD_BFLOAT16;
      in[slot] = t;
      n_in++;
    }
    if (rc == 0 && n_in != g->n_inputs) rc = amd_fail(st, "%d input files for %d graph inputs", n_in, g->n_inputs);
    if (rc == 0 && g->n_outputs > 64) rc = amd_fail(st, "too many outputs");
    amd_ctx ctx = {0};
    if (rc == 0) rc = amd_exec_forward(g, &ctx, in, out, st);
    for (int k = 0; rc == 0 && k < g->n_outputs; k++) {
      snprintf(leaf, sizeof leaf, "output_%d.pb", k);
      amd_tensor want;
      if (join(path, sizeof path, set, leaf) || amd_tensor_read_file(path, &want, NULL, st)) {
        rc = -1;
        break;
      }
      char what[64];
      snprintf(what, sizeof what, "data set %d output %d", s, k);
      if (want.dtype == AMD_UINT16 && out[k].dtype == AMD_BFLOAT16) want.dtype = AMD_BFLOAT16; /* as above */
      rc = compare(&out[k], &want, what, st);
      amd_tensor_free(&want);
    }
    if (rc == 0 || out[0].data)
      for (int k = 0; k < g->n_outputs && k < 64; k++) amd_tensor_free(&out[k]);
    for (int k = 0; k < 64; k++) amd_tensor_free(&in[k]);
  }
  if (rc == 0 && n_sets == 0) rc = amd_fail(st, "no test_data_set_* folders");
  amd_graph_free(g);
  return rc;
}

enum { PASS, FAIL, CRASH, TIMEOUT };
static const char *verdict_name[] = {"pass", "FAIL", "CRASH", "TIMEOUT"};

/* Forks, runs the test with a time limit, returns a verdict and the child's message. */
static int run_isolated(const char *dir, int timeout_s, char *msg, size_t msg_len) {
  int fds[2];
  msg[0] = 0;
  if (pipe(fds) != 0) {
    snprintf(msg, msg_len, "pipe: %s", strerror(errno));
    return FAIL;
  }
  fflush(NULL); /* the child's exit() would flush inherited buffers again */
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    alarm((unsigned)timeout_s);
    amd_status st = {{0}};
    int rc = run_test(dir, &st);
    if (rc) {
      ssize_t w = write(fds[1], st.msg, strlen(st.msg));
      (void)w;
    }
    exit(rc ? 1 : 0); /* exit, not _exit: LeakSanitizer checks the child */
  }
  close(fds[1]);
  size_t n = 0;
  ssize_t r;
  while (n + 1 < msg_len && (r = read(fds[0], msg + n, msg_len - 1 - n)) > 0) n += (size_t)r;
  msg[n] = 0;
  close(fds[0]);
  int status;
  if (pid < 0 || waitpid(pid, &status, 0) < 0) return FAIL;
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    if (sig == SIGALRM) {
      snprintf(msg, msg_len, "timed out after %d s", timeout_s);
      return TIMEOUT;
    }
    snprintf(msg, msg_len, "killed by signal %d (%s)", sig, strsignal(sig));
    return CRASH;
  }
  return WEXITSTATUS(status) == 0 ? PASS : FAIL;
}

static int in_list(char **list, int n, const char *name) {
  return bsearch(&name, list, (size_t)n, sizeof *list, cmp_names) != NULL;
}

static int read_list(const char *path, char ***out) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  char line[512];
  int n = 0, cap = 0;
  char **list = NULL;
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, " \t\r\n#")] = 0;
    if (!line[0]) continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 256;
      list = realloc(list, (size_t)cap * sizeof *list);
    }
    list[n++] = strdup(line);
  }
  fclose(f);
  qsort(list, (size_t)n, sizeof *list, cmp_names);
  *out = list;
  return n;
}

static const char usage[] =
    "usage: conformance [--dir DIR] [--expected FILE] [--write-expected FILE]\n"
    "                   [--filter SUBSTRING] [--timeout SECONDS] [-v]\n"
    "Runs the ONNX node tests in DIR (default: the build's testdata option).\n"
    "-v prints every test with its verdict and the reason for a failure.\n";

int main(int argc, char **argv) {
  const char *dir = AMD_TESTDATA, *expected = NULL, *write_expected = NULL, *filter = NULL;
  int timeout_s = 20, verbose = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc) dir = argv[++i];
    else if (strcmp(argv[i], "--expected") == 0 && i + 1 < argc) expected = argv[++i];
    else if (strcmp(argv[i], "--write-expected") == 0 && i + 1 < argc) write_expected = argv[++i];
    else if (strcmp(argv[i], "--filter") == 0 && i + 1 < argc) filter = argv[++i];
    else if (strcmp(argv[i], "--timeout") == 0 && i + 1 < argc) timeout_s = atoi(argv[++i]);
    else if (strcmp(argv[i], "-v") == 0) verbose = 1;
    else {
      fputs(usage, strcmp(argv[i], "--help") == 0 ? stdout : stderr);
      return strcmp(argv[i], "--help") == 0 ? 0 : 2;
    }
  }
  DIR *d = opendir(dir);
  if (!d) {
    fprintf(stderr, "conformance: cannot open the test corpus '%s': %s (install libonnx-testdata)\n", dir,
            strerror(errno));
    return 1;
  }
  /* static: the lists stay reachable in the forked children, whose exit runs LeakSanitizer */
  static char **names = NULL;
  int n = 0, cap = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (strncmp(e->d_name, "test_", 5) != 0) continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 1024;
      names = realloc(names, (size_t)cap * sizeof *names);
    }
    names[n++] = strdup(e->d_name);
  }
  closedir(d);
  qsort(names, (size_t)n, sizeof *names, cmp_names);
  if (!filter && n < MIN_CORPUS) {
    fprintf(stderr, "conformance: found only %d tests in '%s' (expected at least %d)\n", n, dir, MIN_CORPUS);
    return 1;
  }
  static char **exp_list = NULL;
  int n_exp = 0;
  if (expected && (n_exp = read_list(expected, &exp_list)) < 0) {
    fprintf(stderr, "conformance: cannot read the expected-pass list '%s'\n", expected);
    return 1;
  }
  FILE *wf = NULL;
  if (write_expected && !(wf = fopen(write_expected, "w"))) {
    fprintf(stderr, "conformance: cannot write '%s'\n", write_expected);
    return 1;
  }
  if (wf) fprintf(wf, "# ONNX node tests that amdnn-onnx passes (tests/conformance --write-expected)\n");
  int counts[4] = {0}, run = 0, regressions = 0, unexpected = 0;
  char msg[2048], path[4096];
  for (int i = 0; i < n; i++) {
    if (filter && !strstr(names[i], filter)) continue;
    if (join(path, sizeof path, dir, names[i])) continue;
    int v = run_isolated(path, timeout_s, msg, sizeof msg);
    counts[v]++;
    run++;
    if (v == PASS && wf) fprintf(wf, "%s\n", names[i]);
    int listed = expected && in_list(exp_list, n_exp, names[i]);
    if (expected && listed && v != PASS) {
      printf("REGRESSION %s: %s %s\n", names[i], verdict_name[v], msg);
      regressions++;
    } else if (expected && !listed && v == PASS) {
      printf("UNEXPECTED PASS %s (add it to %s)\n", names[i], expected);
      unexpected++;
    } else if (verbose || v == CRASH || v == TIMEOUT) {
      printf("%-7s %s%s%s\n", verdict_name[v], names[i], msg[0] ? ": " : "", msg);
    }
  }
  if (wf) fclose(wf);
  printf("conformance: %d of %d node tests pass (%d fail cleanly, %d crash, %d time out) in %s\n", counts[PASS],
         run, counts[FAIL], counts[CRASH], counts[TIMEOUT], dir);
  if (expected)
    printf("expected-pass list: %d listed, %d regressions, %d unexpected passes\n", n_exp, regressions,
           unexpected);
  for (int i = 0; i < n; i++) free(names[i]);
  free(names);
  for (int i = 0; i < n_exp; i++) free(exp_list[i]);
  free(exp_list);
  if (run == 0) {
    fprintf(stderr, "conformance: no test ran\n");
    return 1;
  }
  int bad = regressions || unexpected || counts[CRASH] || counts[TIMEOUT];
  return bad ? 1 : 0;
}
