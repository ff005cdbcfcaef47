/* Included first by a source whose float results must not depend on the
 * compiler fusing a multiply and an add into one FMA (gcc's GNU modes fuse
 * wherever the target has FMA): the CUDA kernels and DALI round each step, and
 * the CPU kernels are compared with them bit for bit. A file-scope pragma
 * holds to the end of the translation unit, so one include covers the file. */
#ifndef LADLE_CORE_NO_FMA_H
#define LADLE_CORE_NO_FMA_H

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#endif
