/* AMD_PRAGMA(omp ...): an OpenMP pragma inside a macro, which vanishes
 * (without unknown-pragma warnings) when the build has no OpenMP. */
#ifndef AMD_CORE_OMP_H
#define AMD_CORE_OMP_H

#ifdef _OPENMP
#define AMD_PRAGMA(x) _Pragma(#x)
#else
#define AMD_PRAGMA(x)
#endif

#endif
