/* bench-image-stream: the decoding throughput of an image folder alone (no
 * model), through the streaming reader that `eval` uses (data/image_stream.h:
 * --workers threads decoding batches into a ring while a consumer takes
 * them; here the consumer does nothing else) and through the in-memory load
 * (amd_dataset_load_opts: decode everything, then evaluate), so that the two
 * can be compared on one machine. Built as build/tests/data/bench-image-stream;
 * tools/bench_imagefolder.sh runs it.
 *
 * --only rrc times what `train --augment rrc,flip` adds instead: the load of
 * the whole folder with the training images kept resized but uncropped (its
 * bytes), then the assembly of batches of random resized crops on the host
 * (amd_dataset_batch on the OpenMP threads; OMP_NUM_THREADS sets them).
 *
 * usage: bench-image-stream images:DIR [--batch B] [--ring R] [--limit N]
 *            [--split test|train] [--only stream|memory|rrc] [--repeat K]
 *            [--resize N|HxW] [--crop N|HxW] [--normalize NORM] [--workers N]
 *            [--fast-decode] [--skip-bad]
 * Prints one line per run: the images, the seconds (the stream's header pass
 * and decoding separately) and images/s of the whole. The normalisation
 * defaults to imagenet (the stream refuses dataset). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "data/dataset.h"
#include "data/image_stream.h"

static volatile int64_t sink; /* the batches are read */

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int run_stream(const char *spec, const amd_image_opts *o, int64_t batch, int ring) {
  amd_status st = {{0}};
  amd_dataset ds;
  amd_image_stream *s = NULL;
  const double t0 = now_s();
  int rc = amd_image_stream_open(spec, o, batch, ring, &ds, &s, &st);
  int64_t n = 0;
  while (!rc) {
    amd_data_split b;
    if ((rc = amd_image_stream_next(s, &b, &st)) != 0 || b.n == 0) break;
    n += b.n;
    sink += b.u8[0] + b.labels[b.n - 1];
  }
  const double secs = now_s() - t0;
  if (rc) {
    fprintf(stderr, "bench-image-stream: %s\n", st.msg);
  } else {
    amd_image_stream_stats ss;
    amd_image_stream_stats_get(s, &ss);
    printf("stream:    %lld images %lldx%lldx%lld in %.2f s (headers %.2f s, decoding %.2f s), batch %lld, %d "
           "threads: %.0f images/s (decoding alone %.0f images/s)\n",
           (long long)n, (long long)ds.c, (long long)ds.h, (long long)ds.w, secs, ss.header_s, ss.decode_s,
           (long long)batch, ss.workers, n / (secs > 0 ? secs : 1e-9),
           ss.decoded / (ss.decode_s > 0 ? ss.decode_s : 1e-9));
  }
  amd_image_stream_close(s);
  amd_dataset_free(&ds);
  return rc;
}

static int run_memory(const char *spec, const amd_image_opts *o) {
  amd_status st = {{0}};
  amd_dataset ds;
  const double t0 = now_s();
  if (amd_dataset_load_opts(spec, o, &ds, &st)) {
    fprintf(stderr, "bench-image-stream: %s\n", st.msg);
    return -1;
  }
  const double secs = now_s() - t0;
  const int64_t n = o->only_split == 2 ? ds.train.n : ds.test.n;
  printf("in memory: %lld images %lldx%lldx%lld in %.2f s, %d threads: %.0f images/s\n", (long long)n,
         (long long)ds.c, (long long)ds.h, (long long)ds.w, secs, o->workers, n / (secs > 0 ? secs : 1e-9));
  amd_dataset_free(&ds);
  return 0;
}

static int run_rrc(const char *spec, amd_image_opts o, int64_t batch) {
  amd_status st = {{0}};
  amd_dataset ds;
  o.only_split = 0, o.max_samples = 0, o.uncropped_train = 1;
  double t0 = now_s();
  if (amd_dataset_load_opts(spec, &o, &ds, &st)) {
    fprintf(stderr, "bench-image-stream: %s\n", st.msg);
    return -1;
  }
  const double load_s = now_s() - t0;
  const amd_data_split *s = &ds.train;
  amd_augment aug;
  if (amd_augment_parse("rrc,flip", &aug, &st)) return -1;
  int64_t *idx = malloc((size_t)batch * sizeof *idx), *y = malloc((size_t)batch * sizeof *y);
  float *x = malloc((size_t)(batch * ds.c * ds.h * ds.w) * sizeof *x);
  if (!idx || !y || !x) return -1;
  uint64_t rng = 1;
  t0 = now_s();
  for (int64_t at = 0; at < s->n; at += batch) {
    const int64_t n = s->n - at < batch ? s->n - at : batch;
    for (int64_t i = 0; i < n; i++) idx[i] = at + i;
    amd_dataset_batch(&ds, s, idx, n, &aug, &rng, x, y);
    sink += (int64_t)x[0];
  }
  const double secs = now_s() - t0;
  printf("rrc:       %lld training images kept uncropped in %.1f MB (%.0f KB each), loaded in %.2f s; "
         "batches of "
         "%lld random resized crops to %lldx%lldx%lld + flip: %.0f images/s\n",
         (long long)s->n, s->rag_off[s->n] / 1e6, s->rag_off[s->n] / 1e3 / (double)(s->n ? s->n : 1), load_s,
         (long long)batch, (long long)ds.c, (long long)ds.h, (long long)ds.w,
         s->n / (secs > 0 ? secs : 1e-9));
  free(idx), free(y), free(x);
  amd_dataset_free(&ds);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2 || strncmp(argv[1], "images:", 7)) {
    fprintf(stderr,
            "usage: bench-image-stream images:DIR [--batch B] [--ring R] [--limit N] [--split test|train]\n"
            "           [--only stream|memory|rrc] [--repeat K] [image options of eval]\n");
    return 2;
  }
  amd_image_opts o = {0};
  o.norm = AMD_NORM_IMAGENET;
  o.only_split = 1;
  int64_t batch = 256, ring = 0, limit = 0, repeat = 1;
  const char *only = NULL;
  amd_status st = {{0}};
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    int64_t *num = !strcmp(a, "--batch") ? &batch : !strcmp(a, "--ring") ? &ring : !strcmp(a, "--limit") ? &limit
                 : !strcmp(a, "--repeat") ? &repeat : NULL;
    if (num && v) {
      char *end;
      *num = strtoll(v, &end, 10);
      if (*end || *num < 0) {
        fprintf(stderr, "bench-image-stream: bad value '%s' for %s\n", v, a);
        return 2;
      }
      i++;
    } else if (!strcmp(a, "--split") && v && (!strcmp(v, "test") || !strcmp(v, "train"))) {
      o.only_split = !strcmp(v, "test") ? 1 : 2;
      i++;
    } else if (!strcmp(a, "--only") && v &&
               (!strcmp(v, "stream") || !strcmp(v, "memory") || !strcmp(v, "rrc"))) {
      only = v;
      i++;
    } else {
      int k = amd_image_opt_parse(a, v, &o, &st);
      if (k <= 0) {
        fprintf(stderr, "bench-image-stream: %s\n", k < 0 ? st.msg : "unknown option (see the usage line)");
        return 2;
      }
      i += k - 1;
    }
  }
  if (o.norm == AMD_NORM_DATASET) {
    fprintf(stderr, "bench-image-stream: the stream refuses --normalize dataset\n");
    return 2;
  }
  o.max_samples = limit;
  if (o.workers == 0) o.workers = (int)sysconf(_SC_NPROCESSORS_ONLN); /* (the default, printed) */
  int rc = 0;
  for (int64_t r = 0; !rc && r < (repeat ? repeat : 1); r++) {
    if (only && !strcmp(only, "rrc")) {
      rc = run_rrc(argv[1], o, batch ? batch : 256);
      continue;
    }
    if (!only || !strcmp(only, "stream")) rc = run_stream(argv[1], &o, batch ? batch : 256, (int)ring);
    if (!rc && (!only || !strcmp(only, "memory"))) rc = run_memory(argv[1], &o);
  }
  return rc ? 1 : 0;
}
