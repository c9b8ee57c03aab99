/* What the library reports, printed: the callbacks of the commands, the exit
 * status of a failed call, small helpers the commands share. */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

int cli_fail(const cli_args *a, amdnn_status *st) {
  if (!st) return 0;
  const amdnn_code code = amdnn_status_code(st);
  /* a stopped or diverged run has said why through the callbacks already */
  if (code != AMDNN_ERR_STOPPED && code != AMDNN_ERR_DIVERGED) fprintf(stderr, "%s: %s\n", a->prog, amdnn_status_message(st));
  amdnn_status_free(st);
  return code == AMDNN_ERR_ARGUMENT ? 2 : code == AMDNN_ERR_STOPPED ? 3 : code == AMDNN_ERR_DIVERGED ? 4 : 1;
}

int cli_open(cli_args *a, amdnn_session **s) {
  return cli_fail(a, amdnn_session_open(a->model, a->session, s));
}

static void on_message(void *user, amdnn_message_kind kind, const char *text) {
  const cli_reporter *r = user;
  switch (kind) {
  case AMDNN_MSG_INFO:
    printf("%s\n", text);
    fflush(stdout);
    break;
  case AMDNN_MSG_WARNING:
    fprintf(stderr, "%s: warning: %s\n", r->a->prog, text);
    break;
  case AMDNN_MSG_NOTE:
  case AMDNN_MSG_ERROR:
    fprintf(stderr, "%s: %s\n", r->a->prog, text);
    break;
  case AMDNN_MSG_DEBUG:
    fprintf(stderr, "%s\n", text);
    break;
  }
}

/* "42s", "3m05s", "2h07m"; "?" unknown. */
static void fmt_secs(double s, char *buf, size_t n) {
  if (s < 0 || s != s) snprintf(buf, n, "?");
  else if (s < 120) snprintf(buf, n, "%.0fs", s);
  else if (s < 7200) snprintf(buf, n, "%dm%02ds", (int)(s / 60), (int)s % 60);
  else snprintf(buf, n, "%dh%02dm", (int)(s / 3600), (int)(s / 60) % 60);
}

/* Training: a bar redrawn in place on a terminal, plain lines otherwise. */
static void train_progress(const cli_reporter *r, const amdnn_progress *p) {
  if (r->tty) {
    int width = 24, filled = p->total ? (int)(width * p->done / p->total) : width;
    char bar[32];
    for (int i = 0; i < width; i++) bar[i] = i < filled ? '#' : '.';
    bar[width] = 0;
    fprintf(stderr, "\r  epoch %lld [%s] %lld/%lld loss %.4f acc %.2f%% %.0f img/s %.0fs left ", (long long)p->epoch + 1,
            bar, (long long)p->done, (long long)p->total, p->loss, 100 * p->accuracy, p->images_per_s,
            p->eta_s > 0 ? p->eta_s : 0);
    if (p->done == p->total) fprintf(stderr, "\r%*s\r", 100, "");
  } else {
    printf("  epoch %lld batch %lld/%lld loss %.4f acc %.2f%% %.0f img/s %.0fs left\n", (long long)p->epoch + 1,
           (long long)p->done, (long long)p->total, p->loss, 100 * p->accuracy, p->images_per_s,
           p->eta_s > 0 ? p->eta_s : 0);
    fflush(stdout);
  }
}

static int on_progress(void *user, const amdnn_progress *p) {
  const cli_reporter *r = user;
  if (!strcmp(p->stage, "train")) {
    train_progress(r, p);
  } else if (!strcmp(p->stage, "sweep")) {
    const amdnn_sweep_row *w = &r->last_row;
    char el[32], eta[32];
    fmt_secs(p->elapsed_s, el, sizeof el);
    fmt_secs(p->eta_s, eta, sizeof eta);
    fprintf(stderr, "  [%d/%d] %-32s %-6s top1 %6.2f%%  drop %+6.2f  loss %.4f  elapsed %s  ETA %s\n", w->index + 1,
            w->count, r->last_name, w->op_type, 100 * w->top1, 100 * w->top1_drop, w->loss, el, eta);
  } else { /* reading or decoding image files */
    fprintf(stderr, "%s: images: %s, %lld of %lld files\n", r->a->prog, p->stage, (long long)p->done,
            (long long)p->total);
  }
  return 0;
}

static int on_epoch(void *user, const amdnn_epoch *e) {
  (void)user;
  printf("epoch %lld/%lld  train loss %.4f acc %.2f%%  test loss %.4f top1 %.2f%%", (long long)e->epoch + 1,
         (long long)e->epochs, e->train_loss, 100 * e->train_acc, e->test_loss, 100 * e->test_acc);
  if (e->has_val) printf("  val loss %.4f top1 %.2f%%", e->val_loss, 100 * e->val_acc);
  printf("  lr %.4g  %.0f img/s  %.1f s", e->lr, e->images_per_s, e->train_s);
  if (e->loss_scale != 1.0) printf("  loss scale %g (%lld steps skipped)", e->loss_scale, (long long)e->skipped);
  printf("\n");
  fflush(stdout);
  return 0;
}

static int on_sweep_row(void *user, const amdnn_sweep_row *row) {
  cli_reporter *r = user;
  r->last_row = *row;
  snprintf(r->last_name, sizeof r->last_name, "%s", row->node);
  r->last_row.node = r->last_name;
  return 0;
}

amdnn_callbacks cli_callbacks(cli_reporter *r, const cli_args *a) {
  memset(r, 0, sizeof *r);
  r->a = a;
  r->tty = isatty(2);
  return (amdnn_callbacks){.user = r,
                           .message = on_message,
                           .progress = on_progress,
                           .epoch = on_epoch,
                           .sweep_row = on_sweep_row,
                           .progress_every_step = r->tty,
                           .catch_signals = 1};
}

const char *cli_shape(int rank, const int64_t *dims, char *buf, size_t n) {
  size_t k = (size_t)snprintf(buf, n, "[");
  for (int d = 0; d < rank && k < n; d++) k += (size_t)snprintf(buf + k, n - k, "%s%lld", d ? "," : "", (long long)dims[d]);
  if (k < n) snprintf(buf + k, n - k, "]");
  return buf;
}

const char *cli_safe_name(const char *name, char *buf, size_t n) {
  size_t j = 0;
  for (; name[j] && j < n - 1; j++) {
    char c = name[j];
    int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
             c == '-';
    buf[j] = ok ? c : '_';
  }
  buf[j] = 0;
  return buf;
}

int cli_make_dir(const cli_args *a, const char *path) {
  struct stat sb;
  if (mkdir(path, 0777) != 0 && errno != EEXIST) {
    fprintf(stderr, "%s: cannot create '%s': %s\n", a->prog, path, strerror(errno));
    return -1;
  }
  if (stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
    fprintf(stderr, "%s: '%s' is not a folder\n", a->prog, path);
    return -1;
  }
  return 0;
}
