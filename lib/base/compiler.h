/* SPDX-License-Identifier: MIT */
/* Macros every file of the library uses: array size, branch hints, min/max, printf checks. */
#ifndef UW_BASE_COMPILER_H
#define UW_BASE_COMPILER_H

#define UW_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define UW_LIKELY(x) __builtin_expect(!!(x), 1)
#define UW_UNLIKELY(x) __builtin_expect(!!(x), 0)
/* each argument evaluated once (arguments may be reads with side effects) */
#define UW_MIN(a, b) ({ __typeof__(a) mina_ = (a); __typeof__(b) minb_ = (b); mina_ < minb_ ? mina_ : minb_; })
#define UW_MAX(a, b) ({ __typeof__(a) maxa_ = (a); __typeof__(b) maxb_ = (b); maxa_ > maxb_ ? maxa_ : maxb_; })
#define UW_PRINTF(f, a) __attribute__((format(printf, f, a)))

#endif
