/* The blocks of one growing range (src/core/range_alloc.c):
 *  - the worked example of tests/exec/alloc_trace.sh: a block too big for the
 *    free range below goes at the end, the end comes back to 0 when all are
 *    freed, the high-water mark stays;
 *  - best fit: of free ranges of 3, 1 and 2 units, a request of 2 takes the
 *    2 and one of 1 the 1; a request over the limit changes nothing; freeing
 *    an offset that is no block's gives 0;
 *  - 200,000 random takes and gives (sizes 1 B to 1 MB, align 512) keep every
 *    invariant after each: blocks aligned, apart, under the end, the highest
 *    one ending at it; free ranges sorted, merged, apart from the blocks, and
 *    blocks and free ranges tiling [0, end) exactly;
 *  - ResNet-50's training step (results/memory/resnet50_cifar_b128_cpu.trace)
 *    reaches the same high-water mark, to the byte, as tools/alloc_replay.py's
 *    "one arena", a separate implementation of the same policy.
 * usage: test_range_alloc RESULTS_MEMORY_DIR */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../test_check.h"
#include "core/range_alloc.h"

#define MIB ((size_t)1 << 20)

/* Every invariant of range_alloc.h; prints the first broken one. */
static int check(const amd_ranges *r, const char *when) {
  size_t top = 0, covered = 0;
  for (int i = 0; i < r->n_used; i++) {
    const amd_range *u = &r->used[i];
    if (u->off % r->align || u->size % r->align || u->size == 0 || u->off + u->size > r->end) {
      printf("FAIL (%s): block %zu+%zu (align %zu, end %zu)\n", when, u->off, u->size, r->align, r->end);
      return -1;
    }
    if (u->off + u->size > top) top = u->off + u->size;
    covered += u->size;
  }
  if (top != r->end || r->high < r->end) {
    printf("FAIL (%s): end %zu, highest block end %zu, high %zu\n", when, r->end, top, r->high);
    return -1;
  }
  for (int i = 0; i < r->n_free; i++) {
    const amd_range *f = &r->free_ranges[i];
    if (f->size == 0 || f->off + f->size > r->end || f->off % r->align ||
        (i > 0 && r->free_ranges[i - 1].off + r->free_ranges[i - 1].size >= f->off)) {
      printf("FAIL (%s): free range %d at %zu+%zu (unsorted, unmerged or past the end %zu)\n", when, i, f->off,
             f->size, r->end);
      return -1;
    }
    for (int k = 0; k < r->n_used; k++)
      if (f->off < r->used[k].off + r->used[k].size && r->used[k].off < f->off + f->size) {
        printf("FAIL (%s): free range %zu+%zu overlaps block %zu+%zu\n", when, f->off, f->size, r->used[k].off,
               r->used[k].size);
        return -1;
      }
    covered += f->size;
  }
  /* blocks apart: with the free ranges apart from them and everything under
   * the end, they tile [0, end) exactly when the sizes add up to it and no
   * two blocks overlap (checked on a sorted copy) */
  amd_range *s = malloc((size_t)(r->n_used ? r->n_used : 1) * sizeof *s);
  memcpy(s, r->used, (size_t)r->n_used * sizeof *s);
  for (int i = 1; i < r->n_used; i++)
    for (int j = i; j > 0 && s[j - 1].off > s[j].off; j--) {
      amd_range t = s[j];
      s[j] = s[j - 1], s[j - 1] = t;
    }
  int bad = 0;
  for (int i = 1; i < r->n_used && !bad; i++) bad = s[i - 1].off + s[i - 1].size > s[i].off;
  free(s);
  if (bad || covered != r->end) {
    printf("FAIL (%s): blocks overlap (%d) or blocks and free ranges cover %zu of the end %zu\n", when, bad, covered,
           r->end);
    return -1;
  }
  return 0;
}

static void worked_example(void) {
  amd_ranges r;
  amd_ranges_init(&r, 512);
  size_t a, b, c, d;
  CHECK(amd_ranges_take(&r, MIB, SIZE_MAX, &a) == 0 && a == 0, "A at 0");
  CHECK(amd_ranges_take(&r, 2 * MIB, SIZE_MAX, &b) == 0 && b == MIB, "B at 1 MiB");
  CHECK(amd_ranges_give(&r, a) == MIB, "A freed");
  CHECK(r.n_free == 1 && r.end == 3 * MIB, "A's range free below the end");
  CHECK(amd_ranges_take(&r, 3 * MIB / 2, SIZE_MAX, &c) == 0 && c == 3 * MIB, "C (1.5 MiB) at the end, 3 MiB");
  CHECK(r.end == 9 * MIB / 2 && r.high == 9 * MIB / 2, "end and high 4.5 MiB");
  CHECK(amd_ranges_give(&r, b) == 2 * MIB && r.n_free == 1 && r.free_ranges[0].size == 3 * MIB,
        "B freed and merged with A's range");
  CHECK(amd_ranges_give(&r, c) == 3 * MIB / 2 && r.end == 0 && r.n_free == 0, "C freed: the range is empty");
  CHECK(amd_ranges_take(&r, 3 * MIB, SIZE_MAX, &d) == 0 && d == 0 && r.high == 9 * MIB / 2,
        "D (3 MiB) at 0, the high-water mark stays 4.5 MiB");
  CHECK(check(&r, "worked example") == 0, "invariants");
  amd_ranges_destroy(&r);
}

static void best_fit(void) {
  amd_ranges r;
  amd_ranges_init(&r, 1);
  size_t o[6], x;
  const size_t sizes[6] = {3, 1, 1, 1, 2, 1}; /* 3 free, 1 kept, 1 free, 1 kept, 2 free, 1 kept */
  for (int i = 0; i < 6; i++) CHECK(amd_ranges_take(&r, sizes[i], SIZE_MAX, &o[i]) == 0, "take");
  CHECK(amd_ranges_give(&r, o[0]) == 3 && amd_ranges_give(&r, o[2]) == 1 && amd_ranges_give(&r, o[4]) == 2,
        "three freed");
  CHECK(r.n_free == 3 && r.end == 9, "free ranges of 3, 1 and 2 below the end 9");
  CHECK(amd_ranges_take(&r, 2, SIZE_MAX, &x) == 0 && x == o[4], "a request of 2 takes the free 2");
  CHECK(amd_ranges_take(&r, 1, SIZE_MAX, &x) == 0 && x == o[2], "a request of 1 takes the free 1");
  CHECK(amd_ranges_take(&r, 4, 12, &x) == 1 && r.end == 9 && r.n_free == 1, "over the limit: nothing changes");
  CHECK(amd_ranges_take(&r, 3, 12, &x) == 0 && x == 0, "then 3 fits the first range");
  CHECK(amd_ranges_give(&r, 1) == 0, "an offset inside a block (0+3) is no block's");
  CHECK(check(&r, "best fit") == 0, "invariants");
  amd_ranges_destroy(&r);
}

static void random_walk(void) {
  amd_ranges r;
  amd_ranges_init(&r, 512);
  enum { SLOTS = 300 };
  size_t off[SLOTS];
  int live[SLOTS] = {0};
  uint64_t s = 12345;
  for (int step = 0; step < 200000 && !failures; step++) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    const int k = (int)((s >> 33) % SLOTS);
    if (live[k]) {
      if (amd_ranges_give(&r, off[k]) == 0) {
        printf("FAIL: step %d: a live block was not found\n", step);
        failures++;
      }
      live[k] = 0;
    } else {
      const size_t bytes = 1 + (size_t)((s >> 13) % (1u << 20));
      if (amd_ranges_take(&r, bytes, SIZE_MAX, &off[k]) != 0) {
        printf("FAIL: step %d: take\n", step);
        failures++;
      }
      live[k] = 1;
    }
    if (step % 97 == 0 || step > 199000) {
      char when[32];
      snprintf(when, sizeof when, "step %d", step);
      if (check(&r, when)) failures++;
    }
  }
  for (int k = 0; k < SLOTS; k++)
    if (live[k]) amd_ranges_give(&r, off[k]);
  CHECK(r.end == 0 && r.n_free == 0 && r.n_used == 0, "all freed: the range is empty");
  amd_ranges_destroy(&r);
}

/* The trace's host lines through the ranges (align 512, as the replay). */
static void replay_trace(const char *dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/resnet50_cifar_b128_cpu.trace", dir);
  FILE *f = fopen(path, "r");
  CHECK(f != NULL, "the committed trace opens");
  if (!f) return;
  amd_ranges r;
  amd_ranges_init(&r, 512);
  enum { MAXLIVE = 4096 };
  static char ids[MAXLIVE][32];
  static size_t offs[MAXLIVE];
  int n = 0, lines = 0;
  char line[256], kind[8], where[16], id[32];
  unsigned long long bytes;
  while (fgets(line, sizeof line, f)) {
    lines++;
    if (sscanf(line, "a %15s %llu %31s", where, &bytes, id) == 3 && strcmp(where, "host") == 0) {
      CHECK(n < MAXLIVE, "live blocks fit the test's table");
      if (n >= MAXLIVE) break;
      if (amd_ranges_take(&r, (size_t)bytes, SIZE_MAX, &offs[n])) failures++;
      snprintf(ids[n++], sizeof ids[0], "%s", id);
    } else if (sscanf(line, "%7s %31s", kind, id) == 2 && strcmp(kind, "f") == 0) {
      for (int i = n - 1; i >= 0; i--)
        if (strcmp(ids[i], id) == 0) {
          amd_ranges_give(&r, offs[i]);
          offs[i] = offs[n - 1];
          memcpy(ids[i], ids[n - 1], sizeof ids[0]);
          n--;
          break;
        }
    }
  }
  fclose(f);
  printf("trace: %d lines, high-water mark %zu bytes (%.1f MiB)\n", lines, r.high, (double)r.high / MIB);
  CHECK(lines == 3008 && n == 0 && r.end == 0, "every block of the trace freed");
  CHECK(r.high == 3340612608u, "the high-water mark of tools/alloc_replay.py's one arena (3,185.9 MiB)");
  amd_ranges_destroy(&r);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_range_alloc RESULTS_MEMORY_DIR\n");
    return 2;
  }
  worked_example();
  best_fit();
  random_walk();
  replay_trace(argv[1]);
  return check_summary();
}
