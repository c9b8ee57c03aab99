/* AMD_PRAGMA(omp ...): an OpenMP pragma inside a macro, which vanishes
 * (without unknown-pragma warnings) when the build has no OpenMP.
 *
 * AMD_PARALLEL_FOR(work) before a loop whose iterations are independent (an
 * element each, or a row, a channel, a block of rows): the loop runs on every
 * core once it touches at least AMD_PAR_MIN elements in all (work), below
 * which waking the threads costs more than it saves. An iteration writes only
 * its own outputs and reads nothing another one writes, and each sum stays
 * inside one iteration, so the results are the same bits for any number of
 * threads (docs/ARCHITECTURE.md, "CPU memory and threads"). */
#ifndef AMD_CORE_OMP_H
#define AMD_CORE_OMP_H

#ifdef _OPENMP
#include <omp.h>
#define AMD_PRAGMA(x) _Pragma(#x)
static inline int amd_max_threads(void) { return omp_get_max_threads(); }
#else
#define AMD_PRAGMA(x)
static inline int amd_max_threads(void) { return 1; }
#endif

#define AMD_PAR_MIN 32768
#define AMD_PARALLEL_FOR(work) AMD_PRAGMA(omp parallel for if ((work) >= AMD_PAR_MIN) schedule(static))

#endif
